"""`reportbench ls [WHAT]`: what is installed and configurable, and where each piece lives (lm-eval style discovery).

WHAT: benchmarks, releases, systems, judges, prompt-packs, formats, metrics (with their definitions), tasks;
without WHAT, a short summary of every category. Config choices are read from `conf/` (the Hydra groups an
override picks from: `-S judge=<name>`, `-S <b>/release=<name>`, `-S <b>/systems=<name>`, `-S agents=<name>`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from reportbench.config import ConfigError, overrides_path, remembered_overrides
from reportbench.systems_cli import current_selection

CATEGORIES = ("benchmarks", "releases", "systems", "judges", "prompt-packs", "formats", "metrics", "tasks", "presets")


def _conf_options(folder: Path) -> list[tuple[str, dict[str, Any], str]]:
    """(option name, its YAML, its first comment line) for every `*.yaml` of a config group folder."""
    out = []
    for path in sorted(folder.glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        comment = next((ln.lstrip("# ").strip() for ln in text.splitlines() if ln.startswith("#")), "")
        if comment.startswith("@package"):
            rest = [ln.lstrip("# ").strip() for ln in text.splitlines() if ln.startswith("#")][1:2]
            comment = rest[0] if rest else ""
        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError:
            data = {}
        out.append((path.stem, data if isinstance(data, dict) else {}, comment))
    return out


def _conf_for(conf: Path, benchmark: str) -> Path:
    """The config tree holding a benchmark's groups: its own when its distribution ships one (a plug-in)."""
    from reportbench.benchmarks import get_benchmark  # lazy: +617 ms to import (python -X importtime)

    own = get_benchmark(benchmark).conf_dir
    return Path(own) if own is not None else conf


def _benchmarks(conf: Path) -> list[str]:
    # lazy: +617 ms to import (python -X importtime)
    from reportbench.benchmarks import get_benchmark, installed_benchmarks

    lines = []
    for name in installed_benchmarks():
        spec = get_benchmark(name)
        steps = ", ".join(f"{s.name}({s.kind})" for s in spec.judge_steps)
        cross = " + cross stage" if spec.cross else ""
        lines.append(f"{name:20s} {spec.title}: steps {steps}{cross}; metrics {', '.join(spec.metric_names)}")
    return lines


def _releases(conf: Path) -> list[str]:
    from reportbench.benchmarks import installed_benchmarks  # lazy: +617 ms to import (python -X importtime)

    lines = []
    for b in installed_benchmarks():
        for option, data, comment in _conf_options(_conf_for(conf, b) / b / "release"):
            what = f"name={data.get('name')} kind={data.get('kind')} source={data.get('source')}"
            lines.append(f"{'-S ' + b + '/release=' + option:48s} {what}" + (f"  # {comment}" if comment else ""))
    return lines


def _systems(conf: Path) -> list[str]:
    from reportbench.benchmarks import installed_benchmarks  # lazy: +617 ms to import (python -X importtime)

    lines = []
    groups = [(f"{b}/systems", _conf_for(conf, b) / b / "systems") for b in installed_benchmarks()]
    groups.append(("agents", conf / "agents"))
    from reportbench.conf_checks import missing_headers  # lazy: +2 ms to import (python -X importtime)

    roots = {conf, *(folder.parent.parent for _, folder in groups[:-1])}
    unheaded = {path.resolve(): want for root in roots for path, want in missing_headers(root)}
    for group, folder in groups:
        for option, data, comment in _conf_options(folder):
            want = unheaded.get((folder / f"{option}.yaml").resolve())
            if want:
                warning = f"{folder / option}.yaml has no `{want}` line: compose and dvc exp run refuse it"
                print(f"warning: {warning} (make it the file's first line)", file=sys.stderr)
                comment = f"WARNING: no package line, refused ({want})"
            systems = ", ".join(
                f"{n} ({(s or {}).get('kind')})" for n, s in data.items() if n != "defaults" and isinstance(s, dict)
            )
            inherits = [d for d in data.get("defaults") or [] if d != "_self_"]
            extra = f" + {', '.join(map(str, inherits))}" if inherits else ""
            head = f"-S {group}={option}"
            lines.append(f"{head:48s} {systems or '(none)'}{extra}" + (f"  # {comment}" if comment else ""))
    return lines + _selected(conf)


def _selected(conf: Path) -> list[str]:
    """Which option each benchmark uses now: the override `compose` remembered, else conf/'s default."""
    from reportbench.benchmarks import installed_benchmarks  # lazy: +617 ms to import (python -X importtime)

    where = f"remembered in {overrides_path(conf)}" if remembered_overrides(conf) else "conf/ defaults"
    picks = ", ".join(f"{b}/systems={current_selection(b, conf)}" for b in installed_benchmarks())
    return [f"selected now ({where}): {picks}"]


def _judges(conf: Path) -> list[str]:
    lines = []
    for option, data, comment in _conf_options(conf / "judge"):
        lines.append(
            f"-S judge={option:16s} backend={data.get('backend')} model={data.get('model')}"
            + (f"  # {comment}" if comment else "")
        )
    return lines


def _prompt_packs(conf: Path) -> list[str]:
    from reportbench.benchmarks import installed_benchmarks  # lazy: +617 ms to import (python -X importtime)
    from reportbench.prompt_packs import load_all, pack_id, steps_for  # lazy: +33 ms to import (python -X importtime)

    load_all()
    lines = ["-S judge.prompts=ours      our wording: prompts/<benchmark>/*.yaml (default)"]
    for b in installed_benchmarks():
        steps = steps_for(b)
        if steps:
            tasks = ", ".join(sorted({s.judge_task for s in steps if s.judge_task}))
            lines.append(f"-S judge.prompts=authors   {b}: {pack_id(b)}, {len(steps)} prompts (judge tasks: {tasks})")
        else:
            lines.append(f"-S judge.prompts=authors   {b}: no authors' pack (our wording is used)")
    return lines


def _formats(conf: Path) -> list[str]:
    from reportbench.reports.base import get_adapter, list_formats  # lazy: +135 ms to import (python -X importtime)

    lines = ["auto                    the first adapter (in this order) that recognises the path"]
    for name in list_formats():
        adapter = get_adapter(name)
        doc = (getattr(adapter, "__doc__", None) or type(adapter).__doc__ or "").strip().splitlines()
        lines.append(f"{name:23s} {doc[0] if doc else ''}")
    return lines


def _metrics(conf: Path, benchmark: str | None = None) -> list[str]:
    # lazy: +617 ms to import (python -X importtime)
    from reportbench.benchmarks import get_benchmark, installed_benchmarks
    from reportbench.metrics.registry import metrics_for  # lazy: +15 ms to import (python -X importtime)

    installed = installed_benchmarks()
    if benchmark is not None and benchmark not in installed:
        raise ConfigError(f"--benchmark {benchmark!r}: not installed; choose one of {', '.join(installed)}")
    lines = []
    for name in [benchmark] if benchmark else installed:
        get_benchmark(name)  # importing the protocol registers its metrics
        for m in metrics_for(name):
            arrow = "↑" if m.higher_is_better else "↓"
            rng = f"[{m.value_range[0]:g}, {m.value_range[1]:g}]" if m.value_range else "unbounded"
            lines.append(
                f"{m.key:45s} {arrow} {m.aggregation:10s} {m.unit} {rng}; missing report: {m.missing_report}. "
                f"{m.description}"
            )
    return lines


def _tasks(conf: Path) -> list[str]:
    from reportbench.benchmarks import installed_benchmarks  # lazy: +617 ms to import (python -X importtime)
    from reportbench.judges.tasks import TASKS  # lazy: +443 ms to import (python -X importtime)

    installed_benchmarks()  # protocol packages register their judge tasks on import
    return [f"{t.name:28s} prompts/{t.prompt_id:40s} {t.description}" for t in TASKS.values()]


LISTERS = {
    "benchmarks": _benchmarks,
    "releases": _releases,
    "systems": _systems,
    "judges": _judges,
    "prompt-packs": _prompt_packs,
    "formats": _formats,
    "metrics": _metrics,
    "tasks": _tasks,
    "presets": lambda conf: [  # one per preset here; `ls presets` prints every switch (reportbench.presets)
        f"{b}/preset={n}" for b, ps in __import__("reportbench.presets", fromlist=["presets"]).presets(conf).items()
        for n in ps
    ],
}


def _cmd(args: argparse.Namespace) -> int:
    conf = Path(args.conf)
    if args.what is None:
        lines = []
        for what in CATEGORIES:
            items = LISTERS[what](conf)
            lines.append(f"{what} ({len(items)}): `reportbench ls {what}`")
        lines.append(f"(config choices read from {conf}/)")
    elif args.what == "metrics":
        lines = _metrics(conf, args.benchmark)
    elif args.what == "presets":  # reportbench.presets: every switch of every preset with its source
        from reportbench.presets import format_presets  # lazy: +12 ms to import (python -X importtime)

        lines = format_presets(conf, args.benchmark)
    else:
        lines = LISTERS[args.what](conf)
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ls",
        help="list benchmarks, releases, systems, judges, prompt packs, report formats, metrics (with definitions), "
        "judge tasks",
    )
    p.add_argument("what", nargs="?", choices=CATEGORIES, default=None, help="what to list (default: a summary)")
    p.add_argument("--benchmark", default=None, help="only this benchmark's metrics")
    p.add_argument("--conf", default="conf", help="the Hydra config folder (default: conf)")
    p.set_defaults(func=_cmd)
