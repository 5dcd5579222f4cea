"""The benchmark plug-in API: what a protocol package gives the spine, and the registry that finds it.

A benchmark is one `BenchmarkSpec`, exported as `BENCHMARK` by `reportbench.protocols.<name>` (or registered
from anywhere with `register_benchmark`, e.g. the toy benchmark in tests/). The generic stages in
`reportbench.pipeline` do the rest:

- `release@<b>`: `spec.build_release(release_cfg)` -> data/releases/<b>/<R>/
- `system@<b>.<S>`: the system kind (a command gets `spec.task_payload`) -> data/runs/<b>/<R>/<S>/
- `fetch@<b>` (when `stages.fetch`): `reportbench.fetch` -> data/pages/<b>/<R>/pages.parquet
- `judge@<b>.<S>[.<member>]`: each `JudgeStep` in order -> data/judgments/<b>/<R>/<S>/<member>/<step>.parquet,
  derived tables in `derived/`, usage in metrics/<b>/<R>/usage/
- `cross@<b>` (when `stages.cross`): `spec.cross(ctx)` -> data/cross/<b>/<R>/
- `score@<b>`: `spec.score(ctx)` + the leaderboard -> data/scores/<b>/<R>/, metrics/<b>/<R>/

Judge steps run in order inside one stage per (system, member): a step's items may read the derived tables
of earlier steps (claims extracted by one judge task, then verified by the next), so chained judges cost no
extra process. Unchanged steps are free on a rerun (the response cache), so one stage per system keeps the
stage count, and DVC's fixed cost per stage, low.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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
        from reportbench.fetch.urls import normalise_url

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
    # how task ids are spelled in a folder system's file names, and the authors' numeric convention
    # (reports.task_names; docs/mapping.md): a bare number is read only under this declaration
    task_naming: TaskNaming = DEFAULT_NAMING
    # what a report flagged by the refusal/plan detector (reports.refusal) scores, in one line for docs and
    # the site; the protocol's score function applies it
    flagged_reports: str = "scored as written; the flag is shown"


_BENCHMARKS: dict[str, BenchmarkSpec] = {}


class BenchmarkError(KeyError):
    """Unknown benchmark, or a protocol package that does not export BENCHMARK."""


def register_benchmark(spec: BenchmarkSpec, *, replace: bool = False) -> BenchmarkSpec:
    old = _BENCHMARKS.get(spec.name)
    if old is not None and old is not spec and not replace:
        raise BenchmarkError(f"benchmark {spec.name!r} is already registered")
    _BENCHMARKS[spec.name] = spec
    return spec


def get_benchmark(name: str) -> BenchmarkSpec:
    """The registered spec, importing `reportbench.protocols.<name>` on first use."""
    if name not in _BENCHMARKS:
        try:
            mod = importlib.import_module(f"reportbench.protocols.{name}")
        except ModuleNotFoundError as exc:
            raise BenchmarkError(
                f"unknown benchmark {name!r}: no package reportbench.protocols.{name} and nothing registered"
            ) from exc
        spec = getattr(mod, "BENCHMARK", None)
        if not isinstance(spec, BenchmarkSpec):
            raise BenchmarkError(f"reportbench.protocols.{name} does not export BENCHMARK (a BenchmarkSpec)")
        register_benchmark(spec)
    return _BENCHMARKS[name]


def installed_benchmarks() -> list[str]:
    """Protocol packages shipped with reportbench that export a BENCHMARK."""
    import pkgutil

    import reportbench.protocols as pkg

    names = []
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.ispkg:
            try:
                get_benchmark(info.name)
            except BenchmarkError:
                continue
            names.append(info.name)
    return sorted(names)


# ----------------------------------------------------------------------------------- value conventions
def failed_value() -> float:
    """A judge failure: NaN, excluded from means, counted as `failed` (never 0)."""
    return math.nan


__all__ = [
    "BenchmarkError",
    "BenchmarkSpec",
    "CrossContext",
    "JudgeContext",
    "JudgeStep",
    "ScoreContext",
    "ScoreResult",
    "SystemScore",
    "get_benchmark",
    "installed_benchmarks",
    "register_benchmark",
]
