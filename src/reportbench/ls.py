"""`reportbench ls [WHAT]`: what is installed and configurable, and where each piece lives (lm-eval style discovery).

WHAT: benchmarks, releases, systems, judges, prompt-packs, formats, metrics (with their definitions), tasks (a
benchmark's task ids, from its release: what report files are named after), judge-tasks (the judge tasks and
their prompt files), presets; without WHAT, a short summary of every category. `-b/--benchmark NAME` keeps one
benchmark. Config choices are read from `conf/` (the Hydra groups an
override picks from: `-S judge=<name>`, `-S <b>/release=<name>`, `-S <b>/systems=<name>`, `-S agents=<name>`).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from reportbench.benchmark_arg import add_benchmark_argument
from reportbench.config import PARAMS_FILE, overrides_path, remembered_overrides
from reportbench.systems_cli import current_selection

CATEGORIES = (
    "benchmarks", "releases", "systems", "judges", "prompt-packs", "formats", "metrics", "tasks", "judge-tasks",
    "presets",
)


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


def _benchmarks(conf: Path, benchmark: str | None = None) -> list[str]:
    # lazy: +617 ms to import (python -X importtime)
    from reportbench.benchmarks import get_benchmark, installed_benchmarks

    lines = []
    for name in [benchmark] if benchmark else installed_benchmarks():
        spec = get_benchmark(name)
        steps = ", ".join(f"{s.name}({s.kind})" for s in spec.judge_steps)
        cross = " + cross stage" if spec.cross else ""
        lines.append(f"{name:20s} {spec.title}: steps {steps}{cross}; metrics {', '.join(spec.metric_names)}")
    return lines


def _conf_value(value: Any, key: str) -> str:
    """A config value as a reader can use it: OmegaConf's `???` is a value the user must set (named with its
    key), an interpolation `${a.b}` is shown as `<b>` (the key it copies), not as raw OmegaConf syntax."""
    if value == "???":
        return f"(required: set {key})"
    return re.sub(r"\$\{\.*(?:[\w-]+\.)*([\w-]+)\}", r"<\1>", str(value))


def _releases(conf: Path, benchmark: str | None = None) -> list[str]:
    from reportbench.benchmarks import installed_benchmarks  # lazy: +617 ms to import (python -X importtime)

    lines = []
    for b in [benchmark] if benchmark else installed_benchmarks():
        for option, data, comment in _conf_options(_conf_for(conf, b) / b / "release"):
            shown = {k: _conf_value(data.get(k), f"benchmarks.{b}.release.{k}") for k in ("name", "kind", "source")}
            what = f"name={shown['name']} kind={shown['kind']} source={shown['source']}"
            lines.append(f"{'-S ' + b + '/release=' + option:48s} {what}" + (f"  # {comment}" if comment else ""))
    return lines


def _systems(conf: Path, benchmark: str | None = None) -> list[str]:
    from reportbench.benchmarks import installed_benchmarks  # lazy: +617 ms to import (python -X importtime)

    lines = []
    names = [benchmark] if benchmark else installed_benchmarks()
    groups = [(f"{b}/systems", _conf_for(conf, b) / b / "systems") for b in names]
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
    return lines + _selected(conf, names)


def _selected(conf: Path, names: list[str]) -> list[str]:
    """Which option each benchmark uses now: the override `compose` remembered, else conf/'s default."""
    where = f"remembered in {overrides_path(conf)}" if remembered_overrides(conf) else "conf/ defaults"
    picks = ", ".join(f"{b}/systems={current_selection(b, conf)}" for b in names)
    return [f"selected now ({where}): {picks}"]


def _judges(conf: Path, benchmark: str | None = None) -> list[str]:
    lines = []
    for option, data, comment in _conf_options(conf / "judge"):
        lines.append(
            f"-S judge={option:16s} backend={data.get('backend')} model={data.get('model')}"
            + (f"  # {comment}" if comment else "")
        )
    return lines


def _prompt_packs(conf: Path, benchmark: str | None = None) -> list[str]:
    from reportbench.benchmarks import installed_benchmarks  # lazy: +617 ms to import (python -X importtime)
    from reportbench.judges.tasks import TASKS  # lazy: +443 ms to import (python -X importtime)
    from reportbench.prompt_packs import load_all, pack_id, steps_for  # lazy: +33 ms to import (python -X importtime)

    load_all()
    lines = ["-S judge.prompts=ours      our wording: prompts/<benchmark>/*.yaml (default)"]
    for b in [benchmark] if benchmark else installed_benchmarks():
        steps = steps_for(b)
        if steps:
            # bound either way: a step names our task (AuthorsStep.judge_task) or a task names a step (authors_step)
            bound = {s.judge_task for s in steps if s.judge_task}
            bound |= {t.name for t in TASKS.values() if str(getattr(t, "authors_step", None) or "").startswith(f"{b}/")}
            tasks = ", ".join(sorted(bound)) or "none bound: the pack is not used by any judge task"
            lines.append(f"-S judge.prompts=authors   {b}: {pack_id(b)}, {len(steps)} prompts (judge tasks: {tasks})")
        else:
            lines.append(f"-S judge.prompts=authors   {b}: no authors' pack (our wording is used)")
    return lines


def _formats(conf: Path, benchmark: str | None = None) -> list[str]:
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

    lines = []
    for name in [benchmark] if benchmark else installed_benchmarks():
        get_benchmark(name)  # importing the protocol registers its metrics
        for m in metrics_for(name):
            arrow = "↑" if m.higher_is_better else "↓"
            rng = f"[{m.value_range[0]:g}, {m.value_range[1]:g}]" if m.value_range else "unbounded"
            lines.append(
                f"{m.key:45s} {arrow} {m.aggregation:10s} {m.unit} {rng}; missing report: {m.missing_report}. "
                f"{m.description}"
            )
    return lines


def _judge_tasks(conf: Path, benchmark: str | None = None) -> list[str]:
    """Every judge task (what a judge step asks) with its prompt file; `benchmark`: that benchmark's steps only."""
    # lazy: +617 ms to import (python -X importtime)
    from reportbench.benchmarks import get_benchmark, installed_benchmarks
    from reportbench.judges.tasks import TASKS  # lazy: +443 ms to import (python -X importtime)

    installed_benchmarks()  # protocol packages register their judge tasks on import
    wanted = None if benchmark is None else {s.judge_task for s in get_benchmark(benchmark).judge_steps}
    return [
        f"{t.name:28s} prompts/{t.prompt_id:40s} {t.description}"
        for t in TASKS.values() if wanted is None or t.name in wanted
    ]


def _planned_release(benchmark: str) -> tuple[dict[str, Any] | None, str | None]:
    """(release config, release name) `params.yaml` plans for the benchmark, or (None, None) when it is not enabled."""
    if not PARAMS_FILE.is_file():
        return None, None
    params = yaml.safe_load(PARAMS_FILE.read_text(encoding="utf-8")) or {}
    name = (((params.get("plan") or {}).get("benchmarks") or {}).get(benchmark) or {}).get("release")
    cfg = ((params.get("benchmarks") or {}).get(benchmark) or {}).get("release")
    return (cfg, str(name)) if name and isinstance(cfg, dict) else (None, None)


def task_ids(benchmark: str, conf: Path) -> tuple[list[tuple[str, str]], str]:
    """((task id, title) per task, where they come from) of the release the benchmark runs on: the built one in
    data/releases/ when `dvc repro` made it, else the configured release built in memory (no file written).
    A benchmark `params.yaml` does not enable gets its default release from conf/."""
    from reportbench.benchmarks import get_benchmark  # lazy: +617 ms to import (python -X importtime)
    from reportbench.release.format import read_release  # lazy: +60 ms to import (python -X importtime)

    cfg, name = _planned_release(benchmark)
    where = f"release {name!r} ({PARAMS_FILE})"
    if cfg is None:
        from reportbench.config import composed_params  # lazy: +34 ms to import (python -X importtime)

        params = composed_params([f"benchmarks=[{benchmark}]"], conf_dir=conf, remembered=False)
        cfg = params["benchmarks"][benchmark]["release"]
        name = params["plan"]["benchmarks"][benchmark]["release"]
        where = f"release {name!r} (conf/ default: {benchmark} is not enabled in {PARAMS_FILE})"
    built = Path("data/releases") / benchmark / str(name)
    if (built / "release.json").is_file():
        release = read_release(built)
        where += f", read from {built}"
    else:
        release = get_benchmark(benchmark).build_release(cfg)
        where += ", built in memory (not in data/releases yet)"
    return [(t.task_id, str(getattr(t, "title", "") or "")) for t in release.tasks], where


def _tasks(conf: Path, benchmark: str | None = None) -> list[str]:
    """The task ids a report file is named after (docs/mapping.md), per benchmark, with the naming rule."""
    # lazy: +617 ms to import (python -X importtime)
    from reportbench.benchmarks import get_benchmark, installed_benchmarks

    names = [benchmark] if benchmark else _enabled_or_installed(installed_benchmarks())
    lines = []
    for b in names:
        try:
            tasks, where = task_ids(b, conf)
        except Exception as exc:  # noqa: BLE001 - one benchmark's release (data absent) never hides the others
            lines.append(f"{b}: tasks not listed: {type(exc).__name__}: {str(exc).strip().splitlines()[0]}")
            continue
        naming = get_benchmark(b).task_naming.describe()
        lines.append(f"{b}: {len(tasks)} tasks, {where}")
        lines.append(f"  name report files <task id>.md: {naming} (docs/mapping.md)")
        lines += [f"  {tid:40s} {title[:80]}" for tid, title in tasks]
    return lines


def _enabled_or_installed(installed: list[str]) -> list[str]:
    """The benchmarks params.yaml enables (installed ones, in its order), else every installed one."""
    if not PARAMS_FILE.is_file():
        return installed
    plan = ((yaml.safe_load(PARAMS_FILE.read_text(encoding="utf-8")) or {}).get("plan") or {}).get("benchmarks") or {}
    return [b for b in plan if b in installed] or installed


LISTERS = {
    "benchmarks": _benchmarks,
    "releases": _releases,
    "systems": _systems,
    "judges": _judges,
    "prompt-packs": _prompt_packs,
    "formats": _formats,
    "metrics": _metrics,
    "tasks": _tasks,
    "judge-tasks": _judge_tasks,
    "presets": lambda conf, benchmark=None: [  # one per preset here; `ls presets` prints every switch (presets.py)
        f"{b}/preset={n}" for b, ps in __import__("reportbench.presets", fromlist=["presets"]).presets(conf).items()
        for n in ps if benchmark in (None, b)
    ],
}


def _cmd(args: argparse.Namespace) -> int:
    conf = Path(args.conf)
    if args.what is None:
        lines = []
        for what in CATEGORIES:
            if what == "tasks":  # building every release to count its tasks would take seconds
                lines.append("tasks (per benchmark): `reportbench ls tasks [-b NAME]`")
                continue
            items = LISTERS[what](conf)
            lines.append(f"{what} ({len(items)}): `reportbench ls {what}`")
        lines.append(f"(config choices read from {conf}/)")
    elif args.what == "presets":  # reportbench.presets: every switch of every preset with its source
        from reportbench.presets import format_presets  # lazy: +12 ms to import (python -X importtime)

        lines = format_presets(conf, args.benchmark)
    else:  # judges and formats are the same for every benchmark: -b changes nothing there
        lines = LISTERS[args.what](conf, args.benchmark)
    sys.stdout.write("\n".join(lines) + "\n")
    return 2 if args.what == "tasks" and any(": tasks not listed: " in ln for ln in lines) else 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ls",
        help="list benchmarks, releases, systems, judges, prompt packs, report formats, metrics (with definitions), "
        "a benchmark's task ids, judge tasks, presets",
    )
    p.add_argument("what", nargs="?", choices=CATEGORIES, default=None, help="what to list (default: a summary)")
    add_benchmark_argument(p, help="only this benchmark")
    p.add_argument("--conf", default="conf", help="the Hydra config folder (default: conf)")
    p.set_defaults(func=_cmd)
