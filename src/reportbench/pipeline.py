"""The work of each DVC stage, as plain functions over any benchmark (testable without DVC).

Each `stages/<name>.py` script parses paths from the command line, loads `params.yaml` and calls one function
here with a benchmark name; the benchmark's `BenchmarkSpec` (reportbench.benchmarks) supplies what differs.
Outputs are written deterministically (sorted, no wall-clock values) wherever they feed later stages, so DVC
skips everything downstream of a stage whose output did not change.
"""

from __future__ import annotations

import gc
import json
import logging
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

import reportbench.prompt_packs.judging  # noqa: F401 - hands the authors' prompt packs to the judges
from reportbench import (
    partial_reuse,  # cross/score: per-system values reused by key (partial_reuse)
    unit_reuse,  # a judge unit whose inputs did not change is copied back, not judged again
)
from reportbench.config import ConfigError, require
from reportbench.digest import collector_paused, tree_digest
from reportbench.dvc_metrics import dvc_keys, overall_range, write_brief, write_dvc_metrics
from reportbench.executor import executor_for
from reportbench.injection import HIDDEN_TEXT, JUDGE_DIRECTED
from reportbench.jsonio import write_json
from reportbench.judges.errors import FatalError, IncompleteJudgeStage, failure_class
from reportbench.judges.settings import JudgeSettings
from reportbench.metrics.notice import mark_release, notice
from reportbench.metrics.reference_rows import (
    ReferenceRowsError,
    differences,
    load_table,
    reference_block,
    reference_file,
)
from reportbench.metrics.registry import metrics_for
from reportbench.partial_reuse import reported_tasks
from reportbench.plan import PAGE_READING_KINDS
from reportbench.plan import judge_units as plan_judge_units
from reportbench.progress import stage_label
from reportbench.redaction import install_log_redaction
from reportbench.stale import prune_stale_outputs
from reportbench.types import system_label
from reportbench.validate import judge_config

log = logging.getLogger("reportbench")

__all__ = [
    "benchmark_params",
    "build_release",
    "cross_stage",
    "fetch_stage",
    "judge_config",
    "run_judge_stage",
    "run_system",
    "score_stage",
    "setup_logging",
    "system_spec",
    "write_json",
]


def setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    install_log_redaction()  # no fragment of a secret-looking env value reaches a stage log


def benchmark_params(params: Mapping[str, Any], benchmark: str) -> dict[str, Any]:
    """The `benchmarks.<benchmark>` subtree, with an error naming the key when the benchmark is not enabled."""
    return dict(require(params, f"benchmarks.{benchmark}"))


def read_release(release_dir: Path, benchmark: str | None = None) -> Any:
    """Read a release; importing the benchmark's protocol first registers its extra release tables."""
    from reportbench.release.format import read_release as _read  # lazy: +60 ms to import (python -X importtime)

    if benchmark is not None:
        from reportbench.benchmarks import get_benchmark  # lazy: +210 ms to import (python -X importtime)

        get_benchmark(benchmark)
    return _read(release_dir)


# ----------------------------------------------------------------------------------------------- release
def build_release(params: Mapping[str, Any], benchmark: str, out_dir: Path) -> dict[str, Any]:
    """Import or build the benchmark's configured release and write it in the release format."""
    from reportbench.release.format import write_release  # lazy: +60 ms to import (python -X importtime)

    cfg = require(params, f"benchmarks.{benchmark}.release")
    written = write_release(configured_release(benchmark, cfg), out_dir)
    try:  # read back (validated) and stored for the judge stage's first run (unit_reuse.cached_release)
        unit_reuse.cached_release(Path(out_dir), benchmark, lambda: read_release(Path(out_dir), benchmark))
    except Exception as exc:  # noqa: BLE001 - a cache: the stage that reads the release reports what is wrong
        log.debug("release@%s: not stored validated (%s: %s)", benchmark, type(exc).__name__, exc)
    return written


def configured_release(benchmark: str, cfg: Mapping[str, Any]) -> Any:
    """The benchmark's release as `cfg` configures it, cut to `limit` tasks when set (release/subset.py)."""
    from reportbench.benchmarks import get_benchmark  # lazy: +210 ms to import (python -X importtime)
    from reportbench.release.subset import release_limit, subset_release  # lazy: +2 ms to import (python -X importtime)

    limit = release_limit(cfg, f"benchmarks.{benchmark}.release")  # checked before the source is read
    return subset_release(get_benchmark(benchmark).build_release(cfg), limit)


# ----------------------------------------------------------------------------------------------- systems
def system_spec(params: Mapping[str, Any], benchmark: str, system: str) -> dict[str, Any]:
    """A system's entry: `benchmarks.<b>.systems.<S>`, or the shared agent `agents.<S>`."""
    from reportbench.systems.folder import expand_per_model  # lazy: +411 ms to import (python -X importtime)

    systems = expand_per_model(benchmark_params(params, benchmark).get("systems") or {})
    if system in systems:
        return dict(systems[system])
    agents = params.get("agents") or {}
    if system in agents:
        return dict(agents[system])
    raise ConfigError(f"params.yaml: no system {system!r} in benchmarks.{benchmark}.systems or agents")


# agent kinds whose search proxy answers page-text requests (their stages declare `fetch`: plan.py)
AGENT_PAGE_KINDS = PAGE_READING_KINDS


def run_system(
    params: Mapping[str, Any], benchmark: str, system: str, release_dir: Path, out_dir: Path
) -> dict[str, int]:
    """Produce (or read) one system's reports for every task of the release; one outcome per task."""
    from reportbench.systems import FANOUT_KINDS  # lazy: +61 ms to import (python -X importtime)
    from reportbench.systems import run_system as _run  # lazy: +61 ms to import (python -X importtime)

    spec = system_spec(params, benchmark, system)
    release = read_release(release_dir, benchmark)
    # Systems that retrieve from the release's corpus (offline baseline, oracles) get the release path.
    spec = {**spec, "release_dir": str(release_dir)}
    if spec.get("kind") in ("command", "folder"):  # its benchmark's task JSON / file-naming rules
        spec["benchmark"] = benchmark
    if spec.get("kind") in AGENT_PAGE_KINDS:  # result pages read through the spine's fetch path (agents.search.pages)
        seeds = benchmark_params(params, benchmark).get("fetch_seeds") or []
        spec["_fetch"] = {"config": dict(params.get("fetch") or {}), "seeds": [str(p) for p in seeds]}
    fanned_out = spec.get("kind") in FANOUT_KINDS  # only these run task by task as executor units (ray: no import)

    try:
        with stage_label(f"system@{benchmark}.{system}"):  # names the progress bar (with ETA) of the run
            outcomes = _run(system, spec, release.tasks, out_dir, executor_for(params) if fanned_out else None)
    except BaseException:  # a failed stage leaves no half-written run folder for a later stage to read
        import shutil

        shutil.rmtree(out_dir, ignore_errors=True)
        raise
    counts: dict[str, int] = {}
    missing: dict[str, list[str]] = {}  # reason -> task ids: a real release misses hundreds (one line per reason)
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
        if o.status == "unmapped":  # names the file: it maps to no task
            log.warning("%s / %s: unmapped (%s)", system, o.path, o.reason)
        elif o.status == "missing":
            missing.setdefault(str(o.reason), []).append(o.task_id)
        elif o.status != "ok":
            log.warning("%s / %s: %s (%s)", system, o.task_id, o.status, o.reason)
    for reason, task_ids in missing.items():
        more = f", … ({len(task_ids)} in all; outcomes.jsonl lists each)" if len(task_ids) > MISSING_SHOWN else ""
        log.warning("%s: %d task(s) missing (%s): %s%s", system, len(task_ids), reason,
                    ", ".join(task_ids[:MISSING_SHOWN]), more)  # fmt: skip
    log.info("%s/%s: %s", benchmark, system, counts)
    _fail_if_nothing_ran(benchmark, system, outcomes, out_dir)
    if (Path(out_dir) / "reports.jsonl").is_file():  # read by the judge stage without validating it again
        # lazy: +260 ms to import (python -X importtime)
        from reportbench.reports.stored import register_written

        register_written(Path(out_dir) / "reports.jsonl")
    return counts


MISSING_SHOWN = 5  # task ids named per missing-report reason in system@'s log


def _fail_if_nothing_ran(benchmark: str, system: str, outcomes: list[Any], out_dir: Path) -> None:
    """A system with no report at all and at least one failed task is a failed stage: `dvc repro` stops with the
    first error (task, exit code, stderr tail) instead of a leaderboard row that reads like a score of 0. Its
    outcomes.jsonl stays in the run folder for inspection; DVC records nothing for the stage."""
    from reportbench.systems import FAILED_STATUSES, AllTasksFailed  # lazy: +61 ms to import (python -X importtime)

    tasks = [o for o in outcomes if o.task_id]
    if not tasks or any(o.status == "ok" for o in tasks):
        return
    failed = [o for o in tasks if o.status in FAILED_STATUSES]
    if not failed:
        return
    first = failed[0]
    others = len(tasks) - len(failed)
    raise AllTasksFailed(
        f"system@{benchmark}.{system}: every task failed ({len(failed)} of {len(tasks)} failed"
        + (f", {others} without a report" if others else "")
        + f"); the first, task {first.task_id}: {first.status}: {first.reason or 'no reason recorded'}. "
        f"All outcomes: {Path(out_dir) / 'outcomes.jsonl'}. Fix the system (or remove it from the config) and "
        "rerun `dvc repro`."
    )


def _run_dirs(runs_dir: Path, systems: list[str]) -> dict[str, Path]:
    return {s: runs_dir / s for s in systems}


def _systems(params: Mapping[str, Any], benchmark: str) -> list[str]:
    return list(require(params, f"plan.benchmarks.{benchmark}.systems"))


def _prune_stale(params: Mapping[str, Any], benchmark: str, **folders: Any) -> None:
    """Outputs of systems no longer configured leave the folders this stage declares (reportbench.stale)."""

    prune_stale_outputs(params, benchmark, **folders)


# ------------------------------------------------------------------------------------------------- fetch
def fetch_stage(params: Mapping[str, Any], benchmark: str, runs_dir: Path, release_dir: Path, out: Path) -> Any:
    """Fetch (or, offline, look up) every page the benchmark's systems cite: one snapshot table."""
    from reportbench.fetch.stage import run_fetch_stage  # lazy: +293 ms to import (python -X importtime)

    _prune_stale(params, benchmark, runs_dir=runs_dir)
    # each system's reports read one at a time as the URLs are collected (a parsed report is ~200 KB: holding
    # every system's made the stage ~1 GB at 1,000 LiveResearchBench-shaped tasks × 3 systems, issue 36)
    reports = {s: partial_reuse.iter_reports(d) for s, d in _run_dirs(runs_dir, _systems(params, benchmark)).items()}
    cfg = dict(params.get("fetch") or {})
    # Recorded pages shipped with a release (the demo's pages.jsonl): read offline like any snapshot.
    seeds = [Path(p) for p in benchmark_params(params, benchmark).get("fetch_seeds") or []]
    # local: the pages in this process (threads); ray: hosts' pages as units on the cluster (docs/scale.md)
    return run_fetch_stage(reports, cfg, out, seeds, executor=executor_for(params))


# ------------------------------------------------------------------------------------------------ judges
def _load_pages(pages_dir: Path | None) -> dict[str, Any] | None:
    if pages_dir is None:
        return None
    path = Path(pages_dir) / "pages.parquet"
    if not path.is_file():
        return None
    from reportbench.fetch.stage import read_snapshots  # lazy: +293 ms to import (python -X importtime)

    return read_snapshots(path)


def judge_units(params: Mapping[str, Any], benchmark: str) -> list[tuple[str, str]]:
    """(system, member) pairs the plan judges for a benchmark (`plan.judge_units`), in plan order."""
    units = plan_judge_units(params.get("plan") or {}, benchmark)
    return [(u["system"], u["member"]) for u in units.values()]


def run_benchmark_judge_stage(
    params: Mapping[str, Any],
    benchmark: str,
    release_dir: Path,
    runs_dir: Path,
    out_dir: Path,
    usage_dir: Path,
    pages_dir: Path | None = None,
) -> list[dict[str, Any]]:
    """The DVC stage `judge@<b>`: every (system, member) unit of the benchmark in one process.

    Why one stage per benchmark and not per system: each stage costs DVC about a second of CPU (it rewrites the
    whole dvc.lock) and the interpreter another ~0.7 s of imports, while re-judging an unchanged system is free
    (every answer is in the response cache). An incomplete unit does not stop the others: all are judged (their
    answers cached), then the stage exits 3 naming each incomplete unit. A fatal stop (quota, no key) stops at once.
    """
    with _gc_frozen():
        return _run_benchmark_judge_stage(params, benchmark, release_dir, runs_dir, out_dir, usage_dir, pages_dir)


_GC_FROZEN: list[bool] = [False]  # inside a judge stage whose older objects the cyclic GC leaves alone


@contextmanager
def _gc_frozen() -> Iterator[None]:
    """The judge stage with the objects it holds for its whole run (the imports, the release, then each unit's
    reports and items: `_freeze_held`) kept out of the cyclic garbage collector's passes (`gc.freeze`).

    Why: every collection of the oldest generation walked all of them again while the stage allocated its items
    and records: ~80 µs of CPU per judgment at 1,000 tasks (bench/judge_overhead.py, gc_outside_judge_us).
    Safe: reference counting still frees everything as before (a frozen object is freed when its last reference
    goes); only reference cycles among the frozen objects wait, until the stage ends and `gc.unfreeze` hands
    them all back to the collector. The collector keeps running for what the stage allocates after a freeze."""
    if _GC_FROZEN[0] or gc.get_freeze_count():  # nested, or someone else froze: leave their state as it is
        yield
        return
    _GC_FROZEN[0] = True
    gc.freeze()
    try:
        yield
    finally:
        _GC_FROZEN[0] = False
        gc.unfreeze()


def _freeze_held() -> None:
    """Inside a judge stage: what exists now (this unit's reports and items) stays until the unit ends."""
    if _GC_FROZEN[0]:
        gc.freeze()


def _run_benchmark_judge_stage(
    params: Mapping[str, Any],
    benchmark: str,
    release_dir: Path,
    runs_dir: Path,
    out_dir: Path,
    usage_dir: Path,
    pages_dir: Path | None,
) -> list[dict[str, Any]]:
    _prune_stale(params, benchmark, runs_dir=runs_dir)
    stage_key = unit_reuse.stage_digest(params, benchmark, release_dir, pages_dir) if unit_reuse.enabled() else ""
    calls = [
        (
            stage_key, params, benchmark, system, member, release_dir, Path(runs_dir) / system,
            Path(out_dir) / system / member, Path(usage_dir) / f"{system}.{member}.json", pages_dir,
        )  # fmt: skip
        for system, member in judge_units(params, benchmark)
    ]
    # local: one unit after another in this process; ray: the units as Ray tasks (runtime.executor, docs/scale.md)
    results = executor_for(params).map(
        _judge_unit, calls, keep_going=(IncompleteJudgeStage,), shared_budget=_cost_bounded(params, benchmark)
    )
    incomplete = [str(r.error) for r in results if r.error is not None]
    summaries = [r.value for r in results if r.error is None]
    if incomplete:
        raise IncompleteJudgeStage(" | ".join(incomplete))
    return summaries


def _cost_bounded(params: Mapping[str, Any], benchmark: str) -> bool:
    """Whether `judge.runtime.max_cost_usd` is set for the judge or any of the benchmark's members."""
    members = (params.get("benchmarks") or {}).get(benchmark, {}).get("judges") or {}
    runtimes = [(params.get("judge") or {}).get("runtime") or {}]
    runtimes += [(m or {}).get("runtime") or {} for m in members.values()]
    return any(r.get("max_cost_usd") is not None for r in runtimes)


def _judge_unit(stage_key: str, *args: Any) -> dict[str, Any]:
    """One (system, member) unit of the DVC stage (bounds enforced): what an executor runs, here or on a node.
    With a stage key, a unit whose inputs are unchanged is copied back from the unit cache (unit_reuse)."""
    if not stage_key:
        return run_judge_stage(*args, enforce_bounds=True)
    params, benchmark, system, member, _release, run_dir, unit_out, usage_out, _pages = args
    key = unit_reuse.unit_key(stage_key, system, member, run_dir)
    summary, reused = unit_reuse.judge_unit(
        benchmark, system, member, key, unit_out, usage_out, lambda: run_judge_stage(*args, enforce_bounds=True)
    )
    if reused:
        log.info("judge@%s (%s/%s): inputs unchanged, outputs reused (%s)", benchmark, system, member,
                 unit_reuse.CACHE_DIR)  # fmt: skip
    return summary


_RELEASE_READ: list[tuple[Any, Any]] = []  # the last release judge_context read, with its key


def _unit_release(release_dir: Path, benchmark: str) -> Any:
    """The release every unit of a judge stage reads, read and validated once per process, not once per unit.

    Keyed by the folder, the bytes of its `release.json` (the sha256 of every table, which `read_release`
    checks) and each file's size and mtime: a release changed in any way is read (and checked) again."""
    folder = Path(release_dir)
    manifest = folder / "release.json"
    stats = [(f.name, f.stat()) for f in folder.iterdir()] if folder.is_dir() else []
    files = sorted((name, st.st_size, st.st_mtime_ns) for name, st in stats)
    key = (str(folder.resolve()), benchmark, manifest.read_bytes() if manifest.is_file() else b"", files)
    if _RELEASE_READ and _RELEASE_READ[0][0] == key:
        return _RELEASE_READ[0][1]
    # stored validated, keyed by its bytes and the code (unit_reuse.cached_release): not validated again per run
    release = unit_reuse.cached_release(folder, benchmark, lambda: read_release(release_dir, benchmark))
    _RELEASE_READ[:] = [(key, release)]
    return release


def judge_context(
    params: Mapping[str, Any],
    benchmark: str,
    system: str,
    member: str,
    release_dir: Path,
    run_dir: Path,
    pages_dir: Path | None,
    reports: list[Any] | None = None,
) -> Any:
    """What every judge step of one (system, member) reads: the judge stage and the viewer's re-rendering of its
    messages build it the same way, so the viewer shows the messages the judge was sent. `reports`: the viewer's
    reports of the pages it writes (parsed per page), instead of every report of the run."""
    from reportbench.benchmarks import JudgeContext, get_benchmark  # lazy: +210 ms to import (python -X importtime)
    from reportbench.reports.stored import read_stored_reports  # lazy: +260 ms to import (python -X importtime)
    from reportbench.systems import read_outcomes  # lazy: +61 ms to import (python -X importtime)

    if reports is None:  # system@ wrote them: sentences validated when a step reads them
        streams = get_benchmark(benchmark).judge_streams_reports
        reports = StreamedReports(Path(run_dir)) if streams else read_stored_reports(run_dir)
    return JudgeContext(
        benchmark=benchmark,
        system=system,
        member=member,
        params=benchmark_params(params, benchmark),
        release=_unit_release(release_dir, benchmark),
        reports=reports,
        outcomes=read_outcomes(run_dir),
        pages=_load_pages(pages_dir),
    )


class StreamedReports:
    """A run folder's stored reports, read from its `reports.jsonl` on each pass (`iter_stored_reports`), one
    report held at a time: for a benchmark whose judge steps only pass over `ctx.reports`
    (`BenchmarkSpec.judge_streams_reports`).

    Why: a judge unit held every report's fields (~70 KB a LiveResearchBench-shaped report: ~350 MB at 5,000
    tasks, issue 36) for all its steps. Each pass reads the file again (file order, as `read_stored_reports`):
    a few milliseconds a report, against the memory of all of them."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.passes = 0  # passes over the file (tests count them)
        self._len: int | None = None

    def __iter__(self) -> Iterator[Any]:
        from reportbench.reports.stored import iter_stored_reports  # lazy: +260 ms to import (python -X importtime)

        self.passes += 1
        n = 0
        for report in iter_stored_reports(self.run_dir):
            n += 1
            yield report
        self._len = n

    def __len__(self) -> int:
        if self._len is None:
            self._len = sum(1 for _ in self)
        return self._len

    def __bool__(self) -> bool:
        return len(self) > 0


def run_judge_stage(
    params: Mapping[str, Any],
    benchmark: str,
    system: str,
    member: str,
    release_dir: Path,
    run_dir: Path,
    out_dir: Path,
    usage_out: Path,
    pages_dir: Path | None = None,
    *,
    enforce_bounds: bool = False,
) -> dict[str, Any]:
    """Run every judge step of the benchmark for one (system, member): records, derived tables, usage.

    Every step's records are written even when items failed (inspectable). With `enforce_bounds` (the
    DVC stage) it then raises `IncompleteJudgeStage` when unanswered calls remain or a step's failures
    exceed `judge.runtime.max_failure_rate`: the stage exits 3, so DVC neither locks it nor stores it in
    its run-cache, and the next `dvc repro` asks exactly the unanswered items (docs/reliability.md).
    """
    from reportbench.benchmarks import get_benchmark  # lazy: +210 ms to import (python -X importtime)

    # lazy: +164 ms to import (python -X importtime)
    from reportbench.judges.runner import write_judgments

    spec = get_benchmark(benchmark)
    with collector_paused():  # what the unit reads stays until it ends: frozen before the collector walks it
        ctx = judge_context(params, benchmark, system, member, release_dir, run_dir, pages_dir)
        _freeze_held()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    usage_all: dict[str, Any] = {}
    problems: list[_StepProblem] = []
    for step in spec.judge_steps:
        items: list[Any] = []  # the previous step's items go before this step's are built (not two steps' at once)
        if step.kind == "compute":
            if step.compute is None:
                raise ConfigError(f"{benchmark}: compute step {step.name!r} has no compute function")
            table = step.compute(ctx)
            _write_derived(out_dir, step.derived_table or step.name, table, ctx)
            continue
        if step.items is None:
            raise ConfigError(f"{benchmark}: judge step {step.name!r} has no items function")
        items = list(step.items(ctx))
        _freeze_held()
        # parsed once here, typed from here down (judges/settings.py); a bad bound fails before any call is paid for
        cfg = JudgeSettings.parse(judge_config(params, step.judge_task, benchmark, member))
        desc = f"{step.name}@{benchmark}.{system}.{member}"
        try:
            judgments = _judge(step.judge_task, cfg, items, desc, member)
        except FatalError as exc:  # a stop (full cache disk, budget, quota): the calls it paid still count
            if exc.judgments is None:
                raise
            usage_all[step.name] = {**_step_usage(exc.judgments, cfg, desc), "stopped": str(exc)[:1000]}
            write_json(usage_out, {"benchmark": benchmark, "system": system, "member": member, "steps": usage_all,
                                   "incomplete": [f"{step.name}: stopped: {str(exc)[:500]}"]})  # fmt: skip
            raise
        write_judgments(out_dir / f"{step.name}.parquet", judgments)
        ctx.judgments[step.name] = list(judgments)
        usage_all[step.name] = _step_usage(judgments, cfg, desc)
        problems += _bound_problems(step.name, judgments, cfg)
        if step.derive is not None:
            _write_derived(out_dir, step.derived_table or step.name, step.derive(ctx, list(judgments)), ctx)
    summary: dict[str, Any] = {"benchmark": benchmark, "system": system, "member": member, "steps": usage_all}
    if problems:  # only an incomplete stage carries this key (the metric of a complete one is unchanged)
        summary["incomplete"] = [p.line for p in problems]
    write_json(usage_out, summary)
    if problems:
        where = _judge_stage_name(params, benchmark, system, member)
        if not enforce_bounds:
            for problem in problems:
                log.warning("%s: %s", where, problem.line)
            return summary

        hints = []
        if any(p.unanswered for p in problems):
            hints.append(
                "rerun `dvc repro` (or `reportbench retry`) once the provider answers again: answered items "
                "come from the response cache, only the unanswered ones are asked"
            )
        if any("truncated=" in p.line for p in problems):  # judges/budgets.py: the records' error names the key
            hints.append("answers were cut at the step's output budget: raise judge.output_budgets.<step> and rerun")
        if any(p.over_rate for p in problems):
            hints.append(
                "read the failed records' `error` and `raw_output` there; `reportbench retry --parse` re-asks "
                "unparseable answers, judge.runtime.max_failure_rate sets the bound"
            )
        raise IncompleteJudgeStage(
            f"{where} is incomplete: {'; '.join(p.line for p in problems)}. DVC records nothing for it; its "
            f"records stay in {out_dir}. Next: {'; '.join(hints)}."
        )
    return summary


def _step_usage(judgments: Any, cfg: Mapping[str, Any], desc: str) -> dict[str, Any]:
    """One judge step's usage metric (calls, tokens, cost; logged with its wall time), and which model answered."""
    from reportbench.judges.runner import format_usage, usage_summary  # lazy: +58 ms to import (python -X importtime)

    usage = usage_summary(judgments, wall_s=getattr(judgments, "wall_s", None))
    api_base = cfg.get("api_base") if cfg.get("backend") != "offline" else None
    if api_base and (usage.get("cost_usd") or usage.get("cost_usd_cached")):
        from reportbench.judges.client import _is_loopback  # lazy: +152 ms to import (python -X importtime)

        if _is_loopback(str(api_base)):  # the stub or a self-hosted model: list prices, not what anyone paid
            usage["cost_basis"] = (
                f"the model's list price; answered by a loopback endpoint ({api_base}): nothing was paid"
            )
    log.info("%s: %s%s", desc, format_usage(usage), f" ({usage['cost_basis']})" if "cost_basis" in usage else "")
    usage.pop("wall_s", None)  # the git-tracked metric keeps only reproducible counts
    # the model that actually answered (the offline judge ignores a configured model name)
    configured = cfg.get("model") if cfg.get("backend") != "offline" else "offline-lexical-v1"
    models = sorted({j.model for j in judgments if j.model}) or [configured]
    usage.update({"judge": cfg.get("name"), "model": models[0] if len(models) == 1 else models})
    return usage


def _judge_stage_name(params: Mapping[str, Any], benchmark: str, system: str, member: str) -> str:
    """The DVC stage (`judge@<b>`) and the unit inside it (`<S>`, with `/<member>` only for an ensemble)."""
    members = ((params.get("plan") or {}).get("benchmarks") or {}).get(benchmark, {}).get("members") or [member]
    return f"judge@{benchmark} ({system}" + (")" if list(members) == ["main"] else f"/{member})")


def _failure_bounds(cfg: Mapping[str, Any]) -> tuple[float, float]:
    """(max_failure_rate, max_call_failure_rate) of a judge config's runtime, validated (one-line errors)."""
    if isinstance(cfg, JudgeSettings):  # validated when it was parsed
        return cfg.max_failure_rate, cfg.max_call_failure_rate
    runtime = cfg.get("runtime") or {}
    defaults = {"max_failure_rate": 0.1, "max_call_failure_rate": 0.0}
    out = []
    for key, default in defaults.items():
        value = runtime.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
            raise ConfigError(f"params.yaml: judge.runtime.{key} must be a number in [0, 1], got {value!r}")
        out.append(float(value))
    return out[0], out[1]


@dataclass(frozen=True)
class _StepProblem:
    line: str
    unanswered: int
    over_rate: bool


def _bound_problems(step: str, judgments: list[Any], cfg: Mapping[str, Any]) -> list[_StepProblem]:
    """Why one step's records are not a result DVC may record (empty when they are)."""
    return _outcome_problems(step, [(j.status, j.error) for j in judgments], cfg)


def _outcome_problems(step: str, outcomes: list[tuple[str, str | None]], cfg: Mapping[str, Any]) -> list[_StepProblem]:
    """`_bound_problems` over (status, error) pairs: judgment records or a cross table's rows."""
    from collections import Counter

    from reportbench.judges.runner import reason_class  # lazy: +164 ms to import (python -X importtime)

    n = len(outcomes)
    if n == 0:
        return []
    max_failed, max_unanswered = _failure_bounds(cfg)
    classes = Counter(failure_class(status, error) for status, error in outcomes)
    failed = n - classes["ok"] - classes["undefined"]  # over a size bound: a recorded outcome, not a failure
    unanswered = classes["unanswered"] if classes["unanswered"] > max_unanswered * n else 0
    over_rate = failed > max_failed * n
    if not unanswered and not over_rate:
        return []
    reasons = Counter(
        reason_class(error) for status, error in outcomes if failure_class(status, error) not in ("ok", "undefined")
    )
    detail = ", ".join(f"{k}={v}" for k, v in sorted(reasons.items()))
    why = []
    if unanswered:
        why.append(f"{unanswered} got no answer")
    if over_rate:
        why.append(f"more than max_failure_rate={max_failed:g}")
    line = f"step {step}: {failed} of {n} items failed ({detail}): {', '.join(why)}"
    return [_StepProblem(line, unanswered, over_rate)]


def _judge(task: str, cfg: JudgeSettings, items: list[Any], desc: str, member: str) -> Any:
    from reportbench.judges.factory import make_judge  # lazy: +73 ms to import (python -X importtime)

    # lazy: +164 ms to import (python -X importtime)
    from reportbench.judges.runner import JudgmentRun, run_judgments_sync
    from reportbench.judges.tasks import get_task  # lazy: +567 ms to import (python -X importtime)

    judge = make_judge(task, cfg)
    t0 = time.perf_counter()
    models: dict[str, Any] = {}  # each item's typed input, its task's input model looked up once per task
    items_in = [
        (i.item_id, (models.get(i.task) or models.setdefault(i.task, get_task(i.task).input_model))(**i.inputs),
         dict(i.input_ids))
        for i in items
    ]  # fmt: skip
    computed = callable(getattr(judge, "judge_now", None))  # its records are this run's own objects
    run = run_judgments_sync(judge, items_in, desc=desc, judge_name=f"{cfg.get('name')}/{member}")
    if cfg.max_cost_usd is not None:  # judge.runtime.max_cost_usd (docs/scale.md)
        from reportbench.judges.client import raise_if_over_budget  # lazy: +152 ms to import (python -X importtime)

        try:
            raise_if_over_budget(run, desc, cfg.max_cost_usd)
        except FatalError as exc:
            exc.judgments = run  # the stage still writes the usage of what was paid
            raise
    wall = time.perf_counter() - t0
    if computed:  # set in place: what model_copy(update=...) gives, without copying a record per judgment
        for j in run:
            j.__dict__["member"] = member
            j.__pydantic_fields_set__.add("member")
        out = JudgmentRun(run)
    else:
        out = JudgmentRun(j.model_copy(update={"member": member}) for j in run)
    out.wall_s = wall
    return out


def _write_derived(out_dir: Path, name: str, table: pl.DataFrame, ctx: Any) -> None:
    path = out_dir / "derived" / f"{name}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        table.write_parquet(tmp, statistics=False)
        tmp.replace(path)  # atomic: a killed stage never leaves half a table
    finally:
        tmp.unlink(missing_ok=True)
    ctx.derived[name] = table


class MemberTables(Mapping[str, dict[str, Any]]):
    """member -> {table name: its contents} of one system's judgment folder: the `*.parquet` files of
    `<dir>/<member>[/<sub>]`, each table read (`read`) when first asked for (TableFiles).

    Why: `score@` held every system's judgment records and derived tables at once (~100 MB a system at 1,000
    LiveResearchBench-shaped tasks: ~1.5 GB at 5,000 × 3, issue 36). The systems' tables share one `slot`: reading
    one system's drops the previous system's (a system asked for again is read again), so memory is bounded by one
    system's tables. The keys (the plan's members) are known without reading anything."""

    def __init__(self, root: Path, members: list[str], read: Any, sub: str | None, slot: list[Any]) -> None:
        self._root, self._members, self._read, self._sub, self._slot = Path(root), list(members), read, sub, slot
        self._cache: dict[str, dict[str, Any]] = {}

    def __getitem__(self, member: str) -> dict[str, Any]:
        if member not in self._members:
            raise KeyError(member)
        if member not in self._cache:
            if self._slot and self._slot[0] is not self:
                self._slot[0]._cache.clear()  # the previous system's tables: one system's in memory at a time
            self._slot[:] = [self]
            d = self._root / member / self._sub if self._sub else self._root / member
            self._cache[member] = TableFiles({p.stem: p for p in sorted(d.glob("*.parquet"))}, self._read)
        return self._cache[member]

    def __iter__(self) -> Iterator[str]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)


class TableFiles(Mapping[str, Any]):
    """table name -> its contents (`read` of its file), each read when first asked for; `columns(name, cols)`
    reads only those columns of a table (parquet: the other columns are never decoded).

    Why: LiveResearchBench's score reads four columns of its `claims` table, whose claim texts are most of its
    bytes (~20 KB a task per member, issue 36); reading the whole table for them held the texts for nothing."""

    def __init__(self, paths: Mapping[str, Path], read: Any) -> None:
        self._paths, self._read = dict(paths), read
        self._read_tables: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._read_tables:
            self._read_tables[name] = self._read(self._paths[name])  # KeyError for a table that is not there
        return self._read_tables[name]

    def __contains__(self, name: object) -> bool:  # without reading the table (Mapping's would)
        return name in self._paths

    def columns(self, name: str, cols: list[str]) -> pl.DataFrame:
        """Only `cols` of a parquet table (from the whole table when it was read already)."""
        if name in self._read_tables:
            return self._read_tables[name].select(cols)
        return pl.read_parquet(self._paths[name], columns=cols, glob=False)

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


# ------------------------------------------------------------------------------------------------- cross
class SystemReports(Mapping[str, list[Any]]):
    """system -> its parsed reports, read from its run folder when asked for, one system resident at a time.

    A parsed report is ~200 KB in memory (sentences, sources): holding every system's at once made `cross@` and
    `score@` grow with systems × tasks (issue 36: ~15 GB each at ResearchQA's test split). Benchmarks read one
    system after another (`ctx.reports[s]`, `.items()`), so keeping only the last one read bounds memory by one
    system's reports; a system asked for again is read again (seconds, not memory)."""

    def __init__(self, dirs: Mapping[str, Path]) -> None:
        self._dirs = dict(dirs)
        self._last: tuple[str, list[Any]] | None = None

    def __getitem__(self, system: str) -> list[Any]:
        from reportbench.reports.stored import read_stored_reports  # lazy: +260 ms to import (python -X importtime)

        if system not in self._dirs:
            raise KeyError(system)
        if self._last is not None and self._last[0] == system:
            return self._last[1]
        self._last = None  # drop the previous system's reports before reading the next
        reports = read_stored_reports(self._dirs[system])  # system@ wrote them: sentences validated when read
        self._last = (system, reports)
        return reports

    def __iter__(self) -> Iterator[str]:
        return iter(self._dirs)

    def __len__(self) -> int:
        return len(self._dirs)


def cross_stage(
    params: Mapping[str, Any],
    benchmark: str,
    release_dir: Path,
    runs_dir: Path,
    out_dir: Path,
    *,
    enforce_bounds: bool = False,
    reuse: bool = False,
) -> dict[str, int]:
    """A stage that reads every system's outputs (battles, comparisons with a reference system).

    Its tables are written whatever happened; with `enforce_bounds` (the DVC stage) the judge-failure bounds
    of `run_judge_stage` apply to every table with `status`/`error` columns (rows `ok` or `failed`). With `reuse`
    (the DVC stage) per-system values derived from a system's reports come from the partial cache when its reports
    did not change (partial_reuse)."""
    from reportbench.benchmarks import CrossContext, get_benchmark  # lazy: +210 ms to import (python -X importtime)
    from reportbench.systems import read_outcomes  # lazy: +61 ms to import (python -X importtime)

    spec = get_benchmark(benchmark)
    if spec.cross is None:
        raise ConfigError(f"benchmarks.{benchmark}.stages.cross is true but {benchmark} defines no cross stage")
    systems = _systems(params, benchmark)
    _prune_stale(params, benchmark, runs_dir=runs_dir)
    dirs = _run_dirs(Path(runs_dir), systems)
    reports = SystemReports(dirs)  # one system's reports in memory at a time
    ctx = CrossContext(
        benchmark=benchmark,
        params=benchmark_params(params, benchmark),
        release=read_release(release_dir, benchmark),
        systems=systems,
        reports=reports,  # type: ignore[arg-type]
        outcomes={s: read_outcomes(d) for s, d in dirs.items()},
        partials=_stage_partials(benchmark, dirs, reuse),
        judge_params=dict(require(params, "judge")),
    )
    tables = spec.cross(ctx)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    problems: list[_StepProblem] = []
    for name, table in sorted(tables.items()):
        path = out_dir / f"{name}.parquet"
        tmp = path.with_name(path.name + ".tmp")
        try:
            table.write_parquet(tmp, statistics=False)
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)
        if {"status", "error"} <= set(table.columns):
            rows = table.filter(pl.col("status").is_in(["ok", "failed"])).select("status", "error").rows()
            problems += _outcome_problems(name, rows, ctx.judge_params)
    if problems:
        where = f"cross@{benchmark}"
        if not enforce_bounds:
            for problem in problems:
                log.warning("%s: %s", where, problem.line)
        else:
            raise IncompleteJudgeStage(
                f"{where} is incomplete: {'; '.join(p.line for p in problems)}. DVC records nothing for it; its "
                f"tables stay in {out_dir}. Next: rerun `dvc repro` once the judge answers again (answered items "
                "come from the response cache); judge.runtime.max_failure_rate sets the bound."
            )
    return {name: t.height for name, t in tables.items()}


# ------------------------------------------------------------------------------------------------- score
def _variant_of(run_dir: Path) -> str | None:
    """The system's variant tag (its run's variant.json, reportbench.agents.variant): how it departs from the agent
    as published, e.g. "encoder: hashed"; None for the agent as published and for kinds that record none."""
    path = Path(run_dir) / "variant.json"
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("variant")
    except (ValueError, AttributeError) as exc:
        raise ConfigError(f"{path}: not a variant record ({exc}); rerun its system stage") from None
    return str(value) if value else None


def _sandbox_of(run_dir: Path) -> str | None:
    """How the system's code ran (its run's sandbox.json, reportbench.systems.sandbox): "bwrap", "unsandboxed"
    (opted out with `sandbox: none`), "in-process"; None for kinds that run no code of their own (folder, ...)."""
    path = Path(run_dir) / "sandbox.json"
    if not path.is_file():
        return None
    backend = json.loads(path.read_text(encoding="utf-8")).get("backend")
    return "unsandboxed" if backend == "none" else str(backend)


def score_stage(
    params: Mapping[str, Any],
    benchmark: str,
    release_dir: Path,
    runs_dir: Path,
    judgments_dir: Path,
    scores_dir: Path,
    metrics_dir: Path,
    cross_dir: Path | None = None,
    *,
    reuse: bool = False,
) -> Any:
    """Every system's metrics (per task and summary) and the benchmark's leaderboard. With `reuse` (the DVC
    stage), per-system values derived from a system's reports come from the partial cache (partial_reuse).

    Systems are enumerated from params (`plan.benchmarks.<b>.systems`), never by globbing a folder, so
    stale outputs of a removed system are never read.
    """
    # lazy: +210 ms to import (python -X importtime)
    from reportbench.benchmarks import ScoreContext, benchmark_files, get_benchmark

    # lazy: +164 ms to import (python -X importtime)
    from reportbench.judges.runner import read_judgment_records, read_judgments

    # lazy: +155 ms to import (python -X importtime)
    from reportbench.metrics.leaderboard import build_leaderboard, per_task_columns, write_leaderboard
    from reportbench.systems import read_outcomes  # lazy: +61 ms to import (python -X importtime)

    spec = get_benchmark(benchmark)
    bench = benchmark_params(params, benchmark)
    systems = _systems(params, benchmark)
    members = list(require(params, f"plan.benchmarks.{benchmark}.members"))
    usage_dir = Path(metrics_dir) / "usage"
    _prune_stale(params, benchmark, runs_dir=runs_dir, judgments_dir=judgments_dir, usage_dir=usage_dir)
    dirs = _run_dirs(Path(runs_dir), systems)
    # read per (system, member) when the protocol asks, one system's tables held at a time (MemberTables)
    slot_j: list[Any] = []
    slot_d: list[Any] = []
    # as columns, each Judgment built when read, for a score that reads them so (score_streams_judgments)
    read = read_judgment_records if spec.score_streams_judgments else read_judgments
    judgments = {s: MemberTables(Path(judgments_dir) / s, members, read, None, slot_j) for s in systems}
    derived = {
        s: MemberTables(Path(judgments_dir) / s, members, lambda p: pl.read_parquet(p, glob=False), "derived", slot_d)
        for s in systems
    }
    cross: dict[str, pl.DataFrame] = {}
    if cross_dir is not None and Path(cross_dir).is_dir() and Path(cross_dir) != Path(release_dir):
        cross = {p.stem: pl.read_parquet(p, glob=False) for p in sorted(Path(cross_dir).glob("*.parquet"))}
    release = read_release(release_dir, benchmark)
    reports = SystemReports(dirs)  # one system's reports in memory at a time
    ctx = ScoreContext(
        benchmark=benchmark,
        params=bench,
        release=release,
        systems=systems,
        reports=reports,  # type: ignore[arg-type]
        outcomes={s: read_outcomes(d) for s, d in dirs.items()},
        partials=_stage_partials(benchmark, dirs, reuse),
        judgments=judgments,  # type: ignore[arg-type]
        derived=derived,  # type: ignore[arg-type]
        cross=cross,
    )
    result = spec.score(ctx)
    scores_dir, metrics_dir = Path(scores_dir), Path(metrics_dir)
    scores_dir.mkdir(parents=True, exist_ok=True)
    # the digest of the benchmark's own package: a plug-in's code (outside src/reportbench) reaches the `site`
    # stage through this file, since one stage over every benchmark cannot list their packages as deps
    code = tree_digest([benchmark_files(benchmark).code])
    write_json(scores_dir / "code.json", {"benchmark": benchmark, "code": code})
    judge = params.get("judge") or {}
    summaries = {}
    release_tasks = [t.task_id for t in release.tasks]
    task_sets = {s: _reported_tasks(reported_tasks(ctx, s), release_tasks) for s in systems}  # no report parsed
    per_tasks = {}
    for sc in result.systems:
        # one rule for a task without a report in every output: the per-task table the site shows holds the
        # value the summary counted (the protocol's 0, or NaN) and, for a crashed task, why
        per_tasks[sc.system] = per_task = one_missing_rule(sc.per_task, ctx.outcomes[sc.system], benchmark)
        per_task.write_parquet(scores_dir / f"{sc.system}.parquet", statistics=False)
        summary = dict(sc.summary)
        summary.update(
            {
                # task counts come from the release, never from score rows (docs/reading-scores.md)
                "n_tasks": len(release_tasks),
                "n_missing_reports": len(release_tasks) - len(task_sets[sc.system]),
                **_failed_tasks(ctx.outcomes[sc.system], release_tasks, task_sets[sc.system]),
                "benchmark": benchmark,
                "release": release.meta.name,
                "judge": {"name": judge.get("name"), "backend": judge.get("backend"), "model": judge.get("model")},
                "members": members,
                "report_outcomes": _count_statuses(ctx.outcomes[sc.system]),
                "flagged_reports": _count_flagged(ctx.outcomes[sc.system]),
                "non_answer_reports": _count_non_answers(ctx.outcomes[sc.system]),
                "sandbox": _sandbox_of(dirs[sc.system]),
            }
        )
        # how the system departs from the agent as published: shown next to its name wherever it scores (keys only
        # for a variant: the systems.json of systems as published is unchanged)
        if variant := _variant_of(dirs[sc.system]):
            summary.update({"variant": variant, "label": system_label(sc.system, variant)})
        summaries[sc.system] = summary
    write_json(metrics_dir / "systems.json", summaries)
    # always written (a declared output): cross-system results such as ratings, or {} when a benchmark has none
    write_json(metrics_dir / "extra.json", result.extra_metrics or {})
    frames = [per_tasks[sc.system].select(per_task_columns(per_tasks[sc.system])) for sc in result.systems]
    lb = build_leaderboard(
        [summaries[sc.system] for sc in result.systems],
        pl.concat(frames, how="diagonal_relaxed") if frames else None,
        metrics=list(spec.metric_names),
        protocol=benchmark,
        overall=result.overall,
        overall_metrics=result.overall_metrics,
        extra_metrics=result.extra_metrics,
        release_tasks=release_tasks,
        task_sets=task_sets,
        **_ranking_params(bench),
    )
    mark_release(lb.meta, release)  # a quick subset's "subset n of M" line on every output (metrics/notice.py)
    lb.reference = published_reference(params, benchmark, lb, len(release_tasks))
    _write_dvc_metrics(metrics_dir, summaries, spec.metric_names, benchmark, lb)
    return write_leaderboard(lb, metrics_dir)


SYSTEM_FAILED = "system_failed"  # reason code of a task the system crashed on (metrics.registry.REASON_CODES)


def one_missing_rule(per_task: pl.DataFrame, outcomes: list[Any], benchmark: str) -> pl.DataFrame:
    """The per-task table as the summary counted it: a task without a report holds the protocol's value
    (`MetricSpec.missing_report`: 0 for "zero", NaN for "undefined"), so the site's per-task page and the
    leaderboard show the same numbers (0.625, 0.375, 0 → 0.333); and a task the system failed on (crash, exit
    code, timeout, unparseable output) carries `system_failed: <its outcome reason>` instead of a bare
    `no_report`. Tables without a `status` column mark a missing report by reason `no_report` (DeepScholar)."""
    from reportbench.metrics.aggregate import apply_missing_policy  # lazy: +155 ms to import (python -X importtime)
    from reportbench.systems import FAILED_STATUSES  # lazy: +61 ms to import (python -X importtime)

    if "status" in per_task.columns:
        no_report = pl.col("status") == "no_report"
        per_task = apply_missing_policy(per_task, {m.name: m for m in metrics_for(benchmark)})
    elif "reason" in per_task.columns:
        no_report = pl.col("reason") == "no_report"
    else:
        return per_task
    failed = {o.task_id: o for o in outcomes if o.task_id and o.status in FAILED_STATUSES}
    if not failed or "reason" not in per_task.columns:
        return per_task
    why = pl.DataFrame(
        {
            "task_id": list(failed),
            "_failed_reason": [f"{SYSTEM_FAILED}: {o.status}: {o.reason or 'no reason recorded'}"[:500]
                               for o in failed.values()],
        },
        schema={"task_id": per_task.schema["task_id"], "_failed_reason": pl.String},
    )
    joined = per_task.join(why, on="task_id", how="left", maintain_order="left")
    reason = pl.when(no_report & pl.col("_failed_reason").is_not_null()).then(pl.col("_failed_reason"))
    return joined.with_columns(reason.otherwise(pl.col("reason")).alias("reason")).drop("_failed_reason")


def _failed_tasks(outcomes: list[Any], release_tasks: list[str], reported: set[str]) -> dict[str, Any]:
    """How many release tasks the system failed on (crashed, not merely without a report) and the first reason:
    shown as "k failed (reason)" on every leaderboard, apart from the tasks with no report supplied."""
    from reportbench.systems import FAILED_STATUSES  # lazy: +61 ms to import (python -X importtime)

    known = set(release_tasks)
    failed = [o for o in outcomes if o.task_id in known and o.task_id not in reported and o.status in FAILED_STATUSES]
    first = failed[0] if failed else None
    return {
        "n_failed_tasks": len(failed),
        "first_failure": None
        if first is None
        else {"task_id": first.task_id, "status": first.status, "reason": str(first.reason or "")[:500]},
    }


def _reported_tasks(reported: list[str], release_tasks: list[str]) -> set[str]:
    """Release tasks the system has a report for (its evaluated task set)."""
    known = set(release_tasks)
    return {t for t in reported if t in known}


def _stage_partials(benchmark: str, dirs: Mapping[str, Path], reuse: bool) -> Any:
    """Per-system values of a cross/score stage, derived report by report (flat memory) and, with `reuse`, kept
    in the partial cache by the key of the system's reports (partial_reuse)."""
    return partial_reuse.SystemPartials(benchmark, dirs, store=reuse)


def published_reference(params: Mapping[str, Any], benchmark: str, lb: Any, n_tasks: int) -> dict[str, Any] | None:
    """The paper's own rows for `benchmarks.<b>.ranking.reference_rows` (a table key of the benchmark's
    `published_rows.yaml`, set by its `published` preset; null: none), with the differences between the paper's
    setting and this run's printed beside them (metrics/reference_rows.py). Never ranked."""
    from reportbench.benchmarks import benchmark_files, get_benchmark  # lazy: +210 ms to import (python -X importtime)

    bench = benchmark_params(params, benchmark)
    table = (bench.get("ranking") or {}).get("reference_rows")
    if not table:
        return None
    path = reference_file(benchmark_files(benchmark).code)
    if not path.is_file():
        raise ReferenceRowsError(
            f"benchmarks.{benchmark}.ranking.reference_rows = {table!r}, but {path} does not exist"
        )
    t = load_table(path, str(table))
    members = list(require(params, f"plan.benchmarks.{benchmark}.members"))
    spec = get_benchmark(benchmark)
    # the model each judge step of each member actually calls (its role in task_models, else the member's model)
    tasks = [st.task or st.name for st in spec.judge_steps if st.kind == "judge"] or [""]
    models: set[str] = set()
    prompts: set[str] = set()
    for m in members:
        for task in tasks:
            cfg = judge_config(dict(params), task, benchmark, m)
            models.add(str(cfg.get("model") or ""))
            prompts.add(str(cfg.get("prompts") or ""))
    diffs = differences(
        t,
        run_judge=params.get("judge") or {},
        run_models=models,
        n_tasks=n_tasks,
        release=str(lb.meta.get("release") or ""),
        notice=notice(lb.meta),
        prompts=", ".join(sorted(p for p in prompts if p)),
    )
    return reference_block(t, lb.metrics, source_file=path.as_posix(), diffs=diffs)


def _ranking_params(bench: Mapping[str, Any]) -> dict[str, Any]:
    """`benchmarks.<b>.ranking` (min_task_share, tie_break): which rows are ranked and how ties read;
    `reference_rows` (the paper's rows shown beside them, never ranked) is read by `published_reference`."""
    cfg = {k: v for k, v in (bench.get("ranking") or {}).items() if k != "reference_rows"}
    unknown = set(cfg) - {"min_task_share", "tie_break"}
    if unknown:
        raise ValueError(f"benchmarks.<b>.ranking: unknown key(s) {sorted(unknown)}")
    return {"min_task_share": float(cfg.get("min_task_share", 1.0)), "tie_break": cfg.get("tie_break")}


MAPPING_SUSPECT = "mapping_suspect"  # the shift check's flag: the report matches another task far better


def _count_flagged(outcomes: list[Any]) -> int:
    """Reports flagged at ingestion: text that tried to steer the judge (reportbench.injection) or a report that
    matches another task's question far better than its own (`mapping_suspect`, reports.check; below the
    shifted-block error, so it is scored, and counted here so the leaderboard and the site say so)."""

    flags = {JUDGE_DIRECTED, HIDDEN_TEXT, MAPPING_SUSPECT}
    return sum(1 for o in outcomes if flags & set(getattr(o, "flags", None) or ()))


def _count_non_answers(outcomes: list[Any]) -> dict[str, int]:
    """Reports flagged as refusal / plan / not found / without references (reportbench.reports.refusal)."""
    from reportbench.reports.refusal import ALL_FLAGS  # lazy: +193 ms to import (python -X importtime)

    return {f: n for f in ALL_FLAGS if (n := sum(1 for o in outcomes if f in (getattr(o, "flags", None) or ())))}

def _write_dvc_metrics(metrics_dir: Path, summaries: dict[str, Any], names: Any, benchmark: str, lb: Any) -> None:
    """The flat per-system summaries `dvc metrics show` reads and the `dvc plots` data (reportbench.dvc_metrics)."""

    rows = getattr(lb, "rows", None) or []
    overall = {r.get("system"): r.get("overall_value") for r in rows if isinstance(r, dict) and r.get("overall")}
    higher = {m.name: m.higher_is_better for m in metrics_for(benchmark)}
    ranges = {m.name: m.value_range for m in metrics_for(benchmark)}  # plots drawn on the declared range
    keys = dvc_keys(benchmark, names, overall_range(rows, ranges))  # one name, one scale (docs/dvc.md)
    write_dvc_metrics(metrics_dir, summaries, names, overall, higher, ranges, keys)
    write_brief(metrics_dir, benchmark, summaries, list(names), overall)  # the narrow view (docs/dvc.md)


def _count_statuses(outcomes: list[Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    return dict(sorted(counts.items()))
