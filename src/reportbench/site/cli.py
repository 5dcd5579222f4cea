"""`reportbench view`: the per-sample viewer on demand, for one task × system (HTML or plain text), one
benchmark, or the whole scorecard site — without running DVC.

Why on demand as well as in the `site` stage: a big release renders only the first `--max-samples` tasks per
system into `site/`; any other sample, or a sample of a run in progress, is one command away.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from reportbench.benchmark_arg import add_benchmark_argument

DEFAULT_OUT = Path(".reportbench") / "view"


class ViewError(ValueError):
    """A bad benchmark, system or task name; the message names the valid choices."""


def _choices(names: list[str], limit: int = 12) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", … ({len(names)} in all)" if len(names) > limit else "")


def _resolve(
    params: dict[str, Any], benchmark: str | None, release: str | None, root: Path = Path(".")
) -> tuple[str, str, dict[str, Any]]:
    """The benchmark, release and plan entry to show. A `--release` other than the planned one (a run params.yaml
    no longer plans, e.g. after `reportbench compose --reset`) takes its systems from what that run scored."""
    plan = (params.get("plan") or {}).get("benchmarks") or {}
    if benchmark is None:
        raise ViewError(f"--benchmark is required here; enabled: {_choices(sorted(plan))}")
    if benchmark not in plan:
        raise ViewError(f"unknown benchmark {benchmark!r}; enabled in params.yaml: {_choices(sorted(plan))}")
    entry = dict(plan[benchmark])
    planned = str(entry.get("release"))
    if release is None or release == planned:
        return benchmark, planned, entry
    systems = _scored_systems(root, benchmark, release)
    if systems is None:
        runs = root / "data" / "runs" / benchmark
        found = sorted(d.name for d in runs.iterdir() if d.is_dir()) if runs.is_dir() else []
        scored = root / "metrics" / benchmark / release / "systems.json"
        raise ViewError(
            f"no run of {benchmark} release {release!r}: neither {scored} nor {runs / release}/ exists "
            f"(releases with runs: {_choices(found) or 'none'}; params.yaml plans {planned!r})"
        )
    return benchmark, release, {**entry, "release": release, "systems": systems}


def _scored_systems(root: Path, benchmark: str, release: str) -> list[str] | None:
    """The systems of a release's run: those its score stage wrote (systems.json), else its run folders."""
    import json

    scored = root / "metrics" / benchmark / release / "systems.json"
    if scored.is_file():
        return [str(s) for s in json.loads(scored.read_text(encoding="utf-8"))]
    runs = root / "data" / "runs" / benchmark / release
    return sorted(d.name for d in runs.iterdir() if d.is_dir()) if runs.is_dir() else None


def _cmd(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except (ViewError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    from reportbench.config import ConfigError, load_params  # lazy: +24 ms to import (python -X importtime)

    root = Path(args.root)
    try:
        params = load_params(root / "params.yaml")
    except ConfigError as exc:
        raise ViewError(str(exc)) from None
    out = Path(args.out)
    if args.benchmark is None and args.system is None and args.task is None:
        from reportbench.site.build import build_site  # lazy: +394 ms to import (python -X importtime)

        counts = build_site(params, root, out, max_samples=args.max_samples)
        print(f"{out / 'index.html'}  ({counts['benchmark_pages']} benchmarks, {counts['sample_pages']} samples)")
        return 0
    benchmark, release, entry = _resolve(params, args.benchmark, args.release, root)
    systems = [str(s) for s in entry.get("systems") or []]
    if args.system is None:
        if args.task is not None:
            raise ViewError(f"--task needs --system; systems of {benchmark}: {_choices(systems)}")
        from reportbench.site.build import build_benchmark_site  # lazy: +394 ms to import (python -X importtime)

        plan = {**(params.get("plan") or {}), "benchmarks": {**params["plan"]["benchmarks"], benchmark: entry}}
        build_benchmark_site({**params, "plan": plan}, benchmark, root, out, max_samples=args.max_samples)
        index = out / "benchmarks" / benchmark / release / "index.html"
        if not index.is_file():  # never print a path that was not written
            raise ViewError(
                f"no scored run of {benchmark}/{release}: {root / 'metrics' / benchmark / release / 'leaderboard.json'}"
                f" is missing (`dvc repro score@{benchmark}` writes it); one task: add -s <system> -t <task>"
            )
        runs = root / "data" / "runs" / benchmark / release
        absent = [s for s in entry.get("systems") or [] if not (runs / str(s) / "outcomes.jsonl").is_file()]
        if absent:  # pages without tasks: say so here, not only on the page
            print(
                f"warning: no run data for {', '.join(map(str, absent))} in {runs}/ (the leaderboard is from an "
                f"earlier run): their pages list no task; `dvc repro` (or `dvc exp apply <exp>`) brings the run back",
                file=sys.stderr,
            )
        print(index)
        return 0
    if args.system not in systems:
        raise ViewError(f"unknown system {args.system!r} for {benchmark}; choices: {_choices(systems)}")
    # lazy: +150 ms to import (python -X importtime)
    from reportbench.site.samples import attach_messages, load_system, render_sample_page, render_text, task_file

    members = [str(m) for m in entry.get("members") or []] or None
    sd = load_system(root, benchmark, release, args.system, members, ledger_tasks=[args.task] if args.task else None)
    if not sd.task_ids:
        raise ViewError(
            f"no run found for {benchmark}/{release}/{args.system} under {root / 'data'} (run `dvc repro` first)"
        )
    if args.task is None:
        raise ViewError(f"--task is required with --system; tasks: {_choices(sd.task_ids)}")
    if args.task not in sd.task_ids:
        raise ViewError(f"unknown task {args.task!r} for {benchmark}/{args.system}; tasks: {_choices(sd.task_ids)}")
    if args.text:
        sys.stdout.write(render_text(sd, args.task))
        return 0
    attach_messages(sd, params, root, tasks=[args.task])  # the one page written
    from reportbench.pipeline import read_release  # lazy: +161 ms to import (python -X importtime)

    try:
        rel = read_release(root / "data" / "releases" / benchmark / release, benchmark)
    except Exception:  # noqa: BLE001 - the page renders without task titles
        rel = None
    import json

    lb_path = root / "metrics" / benchmark / release / "leaderboard.json"
    info = json.loads(lb_path.read_text()).get("metric_info", {}) if lb_path.is_file() else {}
    path = out / "samples" / benchmark / release / args.system / task_file(args.task)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_sample_page(sd, args.task, release=rel, metric_info=info), encoding="utf-8")
    print(path)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "view",
        help="per-sample viewer: a task's report as parsed next to every judgment on it (HTML or --text)",
        description="Without arguments: the whole scorecard site. With --benchmark: that benchmark's pages. With "
        "--benchmark --system --task: one sample page (or --text for the terminal). Reads data/ and metrics/ "
        "as `dvc repro` left them.",
    )
    add_benchmark_argument(p, help="this benchmark's pages")
    p.add_argument("--system", "-s", default=None, help="one system's pages (with --benchmark)")
    p.add_argument("--task", "-t", default=None, help="one task's sample page (with --benchmark and --system)")
    p.add_argument("--release", default=None, help="default: the release in params.yaml")
    p.add_argument("--text", action="store_true", help="print a plain-text view instead of writing HTML")
    p.add_argument("--out", default=str(DEFAULT_OUT), help=f"where HTML goes (default {DEFAULT_OUT})")
    p.add_argument("--root", default=".", help="the repository (params.yaml, data/, metrics/)")
    p.add_argument("--max-samples", type=int, default=500, help="sample pages per system when building pages")
    p.set_defaults(func=_cmd)
