"""The benchmark plug-in API: what a protocol package gives the spine, and the registry that finds it.

A benchmark is one `BenchmarkSpec`, found through the Python entry point group `reportbench.benchmarks`
(entry name = benchmark name, value `package.module:BENCHMARK`). The five built-in benchmarks are registered
the same way in reportbench's own pyproject.toml; a benchmark installed as a separate distribution is found
without any file of reportbench changing (docs/plugins.md). `register_benchmark` adds one in-process (tests).
The generic stages in `reportbench.pipeline` do the rest:

- `release@<b>`: `spec.build_release(release_cfg)` -> data/releases/<b>/<R>/
- `system@<b>.<S>`: the system kind (a command gets `spec.task_payload`) -> data/runs/<b>/<R>/<S>/
- `fetch@<b>` (when `stages.fetch`): `reportbench.fetch` -> data/pages/<b>/<R>/pages.parquet
- `judge@<b>`, per (system S, member): each `JudgeStep` in order -> data/judgments/<b>/<R>/<S>/<member>/<step>.parquet,
  derived tables in `derived/`, usage in metrics/<b>/<R>/usage/
- `cross@<b>` (when `stages.cross`): `spec.cross(ctx)` -> data/cross/<b>/<R>/
- `score@<b>`: `spec.score(ctx)` + the leaderboard -> data/scores/<b>/<R>/, metrics/<b>/<R>/

Judge steps run in order inside one stage per (system, member): a step's items may read the derived tables
of earlier steps (claims extracted by one judge task, then verified by the next), so chained judges cost no
extra process. Unchanged steps are free on a rerun (the response cache), so one stage per system keeps the
stage count, and DVC's fixed cost per stage, low.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import polars as pl

from reportbench.protocols import JudgeItem
from reportbench.reports.task_names import DEFAULT_NAMING, TaskNaming

StepKind = Literal["judge", "compute"]


@dataclass
class JudgeContext:
    """Everything a judge step of one (benchmark, system, member) may read."""

    benchmark: str
    system: str
    member: str
    params: Mapping[str, Any]  # benchmarks.<b> subtree (release, systems, judges, judging, scoring, ...)
    release: Any  # reportbench.release.format.Release
    reports: list[Any]  # reportbench.types.Report (status ok only)
    outcomes: list[Any]  # reportbench.systems.TaskOutcome, one per task
    pages: Mapping[str, Any] | None = None  # normalised URL -> page snapshot (fetch stage), None if no fetch
    derived: dict[str, pl.DataFrame] = field(default_factory=dict)  # tables written by earlier steps
    judgments: dict[str, list[Any]] = field(default_factory=dict)  # step -> Judgment list of earlier steps

    @property
    def judging(self) -> Mapping[str, Any]:
        return self.params.get("judging") or {}

    def page(self, url: str | None) -> Any:
        """The fetch stage's snapshot of a cited URL (any spelling: normalised first), or None when the benchmark
        fetches nothing or the URL is not http(s). A snapshot's `error_class` is "ok" or why it failed."""
        if not self.pages or not url or not url.startswith(("http://", "https://")):
            return None
        from reportbench.fetch.urls import normalise_url  # lazy: +326 ms to import (python -X importtime)

        return self.pages.get(normalise_url(url))


@dataclass(frozen=True)
class JudgeStep:
    """One step of a benchmark's judge stage.

    - kind `judge`: `items(ctx)` -> JudgeItems of judge task `task`; records go to `<step>.parquet`. When
      `derive` is set, `derive(ctx, judgments)` turns them into a typed table stored as
      `derived/<derived_table>.parquet` and visible to later steps as `ctx.derived[derived_table]`
      (e.g. claims extracted from a report, then verified by the next step).
    - kind `compute`: no judge; `compute(ctx)` returns a table (e.g. citation counts) stored like a derived one.
    """

    name: str
    kind: StepKind = "judge"
    task: str | None = None  # judge task name (reportbench.judges.tasks registry); defaults to `name`
    items: Callable[[JudgeContext], Sequence[JudgeItem]] | None = None
    derive: Callable[[JudgeContext, list[Any]], pl.DataFrame] | None = None
    compute: Callable[[JudgeContext], pl.DataFrame] | None = None
    derived_table: str | None = None

    @property
    def judge_task(self) -> str:
        return self.task or self.name


@dataclass
class SystemsContext:
    """What a stage reading every system of a benchmark sees: the release and each system's reports."""

    benchmark: str
    params: Mapping[str, Any]
    release: Any
    systems: list[str]
    reports: dict[str, list[Any]]
    outcomes: dict[str, list[Any]]
    # per-system values derived from the reports, reused by key across runs (partial_reuse.SystemPartials); None:
    # computed from `reports` (estimate, direct calls). Read through `partial_reuse.per_system(ctx, s, name, fn)`.
    # keyword-only: the subclasses' positional fields (judgments, tables, ...) keep their places
    partials: Any = field(default=None, kw_only=True)


@dataclass
class ScoreContext(SystemsContext):
    """What the score stage hands a benchmark: every system's reports, outcomes, judgments and tables."""

    # system -> member -> step -> judgments
    judgments: dict[str, dict[str, dict[str, list[Any]]]] = field(default_factory=dict)
    # system -> member -> derived table name -> frame
    derived: dict[str, dict[str, dict[str, pl.DataFrame]]] = field(default_factory=dict)
    cross: dict[str, pl.DataFrame] = field(default_factory=dict)

    @property
    def scoring(self) -> Mapping[str, Any]:
        return self.params.get("scoring") or {}


@dataclass
class CrossContext(SystemsContext):
    """What a cross-system stage reads (battles, depth vs a reference); it may judge with `judge_params`."""

    judge_params: Mapping[str, Any] = field(default_factory=dict)  # the root `judge` group


@dataclass
class SystemScore:
    """One system's scores: the long per-task table and its summary (the leaderboard's input)."""

    system: str
    per_task: pl.DataFrame  # columns at least: system, task_id, metric, value, status, reason
    summary: dict[str, Any]  # {"system", "protocol", "metrics": {name: {"mean", "n_defined", ...}}, ...}


@dataclass
class ScoreResult:
    systems: list[SystemScore]
    extra_metrics: dict[str, Any] = field(default_factory=dict)  # e.g. ratings, written to metrics/<b>/<R>/
    overall: str | None = "geomean"  # leaderboard's overall column: geomean | mean | a metric name | None
    overall_metrics: tuple[str, ...] | None = None  # which metrics enter it (default: all of metric_names)



@dataclass
class ReproducibleCell:
    """One cell of a published table: expected vs obtained within a tolerance (`reportbench reproduce`)."""

    name: str
    expected: float | None
    obtained: float | None
    tol: float
    checked: bool = True
    note: str = ""

    @property
    def ok(self) -> bool:
        if not self.checked:
            return True
        if self.expected is None or self.obtained is None or math.isnan(self.obtained):
            return False
        return abs(self.obtained - self.expected) <= self.tol + 1e-12


@dataclass
class ReproducibleTable:
    """A published table a benchmark declares (`BenchmarkSpec.reproduce`), listed and run by `reportbench
    reproduce <benchmark>/<key>`. `run(args)` gets the command's options (`args.data`, `args.conf`, ...) and
    returns the cells, or raises `CannotRun` (data or key missing: exit 2 with what and how); without `run` the
    table needs a key and `commands` say how to run it (price it first with `reportbench estimate`)."""

    key: str  # "<table>" in a spec (the benchmark's name is prefixed); "<benchmark>/<table>" once listed
    title: str
    preset: str
    needs: str
    offline: bool
    run: Callable[[Any], list[ReproducibleCell]] | None = None
    commands: list[str] = field(default_factory=list)
    # what the authors never released that the table needs ("" = its input is public): `reproduce --list`
    # shows such a table as `unreleased`, never as offline-runnable, whatever a user may hold privately
    unreleased: str = ""


class CannotRun(Exception):
    """A reproducible table needs something this machine does not have (data, key): exit 2 with what and how."""


@dataclass(frozen=True)
class BenchmarkSpec:
    """A benchmark protocol as the spine sees it."""

    name: str
    title: str
    build_release: Callable[[Mapping[str, Any]], Any]  # benchmarks.<b>.release subtree -> Release
    judge_steps: tuple[JudgeStep, ...]
    score: Callable[[ScoreContext], ScoreResult]
    metric_names: tuple[str, ...]
    cross: Callable[[CrossContext], dict[str, pl.DataFrame]] | None = None
    # Task -> the JSON a `command` system receives (default: systems.common.task_payload, all but the answer key)
    task_payload: Callable[[Any], dict[str, Any]] | None = None
    description: str = ""
    # a short tag for narrow tables (`dvc exp show` columns like `drb.<system>`; dvc_metrics.brief); "" = the name
    tag: str = ""
    # Where the spine finds the benchmark's files. None: the project's own (`conf/`, `prompts/<name>/`), which is
    # what the built-ins use; a plug-in distribution ships both inside its package (docs/plugins.md).
    conf_dir: str | Path | None = None  # a Hydra tree: benchmarks/<name>.yaml, <name>/release/, <name>/systems/
    prompts_dir: str | Path | None = None  # its prompt files: a task's prompt_id `<name>/<file>` is `<dir>/<file>`
    # system kinds its package registers (reportbench.systems.register_kind) on import, so the config validator
    # accepts them without importing the systems package
    system_kinds: tuple[str, ...] = ()
    # how task ids are spelled in a folder system's file names, and the authors' numeric convention
    # (reports.task_names; docs/mapping.md): a bare number is read only under this declaration
    task_naming: TaskNaming = DEFAULT_NAMING
    # what a report flagged by the refusal/plan detector (reports.refusal) scores, in one line for docs and
    # the site; the protocol's score function applies it
    flagged_reports: str = "scored as written; the flag is shown"
    # the published tables it can rerun (`reportbench reproduce --list` shows them as `<name>/<key>`)
    reproduce: tuple[ReproducibleTable, ...] = ()
    # `reportbench export -b <name>` for a plug-in: (scores {system: {task: {metric: value|None}}}, failures
    # {(system, task, metric): reason}, out folder) -> the files written in its authors' result format
    export: Callable[[dict[str, Any], dict[tuple[str, str, str], str], Path], list[Path]] | None = None
    # every judge step's items of a task depend on that task's report and judgments alone (compute and derive
    # steps included): the viewer re-renders the messages of the pages it writes from those tasks only
    judge_items_per_task: bool = False
    # its judge steps only iterate `ctx.reports` (a pass each, no indexing, nothing kept): the judge stage reads
    # the unit's reports from the run folder on each pass instead of holding them all (issue 36: ~70 KB a report)
    judge_streams_reports: bool = False
    # its score reads judgment lists by iterating them, `len`, and the JudgmentRecords methods (n_ok, rows_by, at):
    # `score@` hands it each file's records as columns, a Judgment built per record read (judges.runner)
    score_streams_judgments: bool = False


@dataclass(frozen=True)
class BenchmarkFiles:
    """A benchmark's files as DVC and Hydra see them: relative to the project root when inside it, else absolute."""

    code: str  # the package that defines it: a DVC dependency of its stages
    prompts: str  # its prompts folder: a DVC dependency of its judge stages
    conf: str | None  # its own Hydra config tree (None: the project's conf/)


ENTRY_POINT_GROUP = "reportbench.benchmarks"
_BENCHMARKS: dict[str, BenchmarkSpec] = {}
_MODULES: dict[str, str] = {}  # benchmark name -> the module that defines it (its code dependency)
log = logging.getLogger(__name__)


class BenchmarkError(KeyError):
    """Unknown benchmark, or a protocol package that does not export BENCHMARK."""


def register_benchmark(spec: BenchmarkSpec, *, replace: bool = False, module: str | None = None) -> BenchmarkSpec:
    """Register a spec in this process (tests; installed benchmarks come through entry points). `module` is the
    module that defines it (default: the module of `build_release`); its package is the benchmark's code."""
    old = _BENCHMARKS.get(spec.name)
    if old is not None and old is not spec and not replace:
        raise BenchmarkError(f"benchmark {spec.name!r} is already registered")
    _BENCHMARKS[spec.name] = spec
    _MODULES[spec.name] = module or getattr(spec.build_release, "__module__", "") or ""
    if spec.prompts_dir is not None:
        from reportbench.prompts import register_prompts_dir  # lazy: +25 ms to import (python -X importtime)

        register_prompts_dir(spec.name, Path(spec.prompts_dir))
    return spec


@lru_cache(maxsize=1)
def benchmark_entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """name -> entry point of every installed benchmark (group `reportbench.benchmarks`), read once per process.

    One name claimed by two different values is an error naming both (never a silent pick)."""
    out: dict[str, importlib.metadata.EntryPoint] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        seen = out.get(ep.name)
        if seen is not None and seen.value != ep.value:
            raise BenchmarkError(
                f"benchmark {ep.name!r} is installed twice: {seen.value} and {ep.value} (entry points "
                f"{ENTRY_POINT_GROUP}); uninstall one"
            )
        out[ep.name] = ep
    return out


def get_benchmark(name: str) -> BenchmarkSpec:
    """The registered spec, loading its entry point (`reportbench.benchmarks`) on first use."""
    if name not in _BENCHMARKS:
        eps = benchmark_entry_points()
        ep = eps.get(name)
        if ep is None:
            hint = "" if eps else "; no benchmark is installed at all: reinstall reportbench (`pip install -e .`)"
            raise BenchmarkError(
                f"unknown benchmark {name!r}: no entry point {name!r} in group {ENTRY_POINT_GROUP} "
                f"(installed: {sorted(eps)}) and nothing registered{hint}"
            )
        try:
            spec = ep.load()
        except ImportError as exc:
            raise BenchmarkError(f"benchmark {name!r}: entry point {ep.value} does not import ({exc})") from exc
        if not isinstance(spec, BenchmarkSpec):
            raise BenchmarkError(f"benchmark {name!r}: entry point {ep.value} is not a BenchmarkSpec")
        if spec.name != name:
            raise BenchmarkError(f"benchmark {name!r}: entry point {ep.value} is a spec named {spec.name!r}")
        register_benchmark(spec, module=ep.module)
    return _BENCHMARKS[name]


def installed_benchmarks() -> list[str]:
    """Every benchmark installed through an entry point that loads (a broken one is logged and left out)."""
    names = []
    for name in benchmark_entry_points():
        try:
            get_benchmark(name)
        except BenchmarkError as exc:
            log.warning("%s", exc)
            continue
        names.append(name)
    return sorted(names)


def benchmark_conf_dirs() -> dict[str, Path]:
    """name -> its own Hydra config tree, for every installed (or registered) benchmark that ships one.

    The protocols under `reportbench.protocols` are configured in the project's conf/ and are not imported here
    (loading all five costs seconds at every composition); every other entry point is loaded (a broken one is
    logged, not fatal for the others), the DeepResearch Bench plug-in that ships with reportbench's distribution
    included."""
    for name, ep in benchmark_entry_points().items():
        if name in _BENCHMARKS or ep.value.startswith("reportbench.protocols."):
            continue
        try:
            get_benchmark(name)
        except BenchmarkError as exc:
            log.warning("%s", exc)
    return {n: Path(s.conf_dir) for n, s in sorted(_BENCHMARKS.items()) if s.conf_dir is not None}


def project_path(path: str | Path) -> str:
    """`path` relative to the project root (the working directory DVC and Hydra run in) when inside it, else
    absolute: what a DVC dependency of a stage names. reportbench's own files are named by the project's copy
    (`src/reportbench/...`, as every other dependency in dvc.yaml), wherever the running reportbench lives."""
    p = Path(path).resolve()
    root = Path.cwd().resolve()
    try:
        return p.relative_to(root).as_posix()
    except ValueError:
        pass
    own = Path(__file__).resolve().parent
    if p.is_relative_to(own) and (root / "src" / "reportbench").is_dir():
        return (Path("src/reportbench") / p.relative_to(own)).as_posix()
    # a file of the checkout reportbench is installed from (e.g. a plug-in under its `plugins/`, installed in
    # editable mode there) that this project has at the same place: named by this project's copy, like the above
    installed_root = own.parent.parent
    if (installed_root / "pyproject.toml").is_file() and p.is_relative_to(installed_root):
        rel = p.relative_to(installed_root)
        if (root / rel).exists():
            return rel.as_posix()
    return p.as_posix()


def _module_code(module: str) -> Path | None:
    """The package a benchmark's module belongs to (a package: itself; a module in a package: that package; a
    top-level module: its file), located without importing it."""
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if found is None or not found.origin:
        return None
    if found.submodule_search_locations:
        return Path(next(iter(found.submodule_search_locations)))
    return Path(found.origin).parent if "." in module else Path(found.origin)


def benchmark_files(name: str) -> BenchmarkFiles:
    """Where the benchmark's code, prompts and config are (the plan's DVC dependencies, Hydra's search path)."""
    spec = get_benchmark(name)
    code = _module_code(_MODULES.get(name, ""))
    if code is None:
        raise BenchmarkError(f"benchmark {name!r}: cannot locate the module that defines it ({_MODULES.get(name)!r})")
    prompts = Path(spec.prompts_dir) if spec.prompts_dir is not None else Path("prompts") / name
    conf = project_path(spec.conf_dir) if spec.conf_dir is not None else None
    return BenchmarkFiles(code=project_path(code), prompts=project_path(prompts), conf=conf)


# ----------------------------------------------------------------------------------- value conventions
def failed_value() -> float:
    """A judge failure: NaN, excluded from means, counted as `failed` (never 0)."""
    return math.nan


__all__ = [
    "ENTRY_POINT_GROUP",
    "BenchmarkError",
    "BenchmarkFiles",
    "BenchmarkSpec",
    "CannotRun",
    "CrossContext",
    "JudgeContext",
    "JudgeStep",
    "ReproducibleCell",
    "ReproducibleTable",
    "ScoreContext",
    "ScoreResult",
    "SystemScore",
    "benchmark_conf_dirs",
    "benchmark_entry_points",
    "benchmark_files",
    "get_benchmark",
    "installed_benchmarks",
    "register_benchmark",
]
