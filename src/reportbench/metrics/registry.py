"""A small metric registry (lm-eval style): metric name -> spec with aggregation and direction.

Why: the leaderboard, the summaries and the DVC metrics files must not hard-code which way a metric
points or how it is aggregated; every metric declares it once, where it is defined.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

Aggregation = Literal["mean", "group_mean", "count_mean", "win_rate", "rating"]
"""How per-task values become a system value (reportbench.metrics.aggregate):

- `mean`: macro mean over tasks of the defined values.
- `group_mean`: mean over groups (a task field, `group_by`) of each group's mean (DEER's 13 domains).
- `count_mean`: mean of per-task counts, usually lower-is-better (LRB's citation errors); unit "count".
- `win_rate`: W / (W + L) over decisive games; NaN when there is none.
- `rating`: computed across systems by a cross/rank stage (Bradley–Terry); the leaderboard only reads it.
"""
MissingReport = Literal["undefined", "zero"]
EvidenceKind = Literal["judgments", "pages", "validations", "counts", "labels", "games", "report"]
EVIDENCE_KINDS: tuple[str, ...] = ("judgments", "pages", "validations", "counts", "labels", "games", "report")
"""What a value can rest on (issue 34): judge verdicts, fetched pages, validator verdicts on (claim, page)
pairs, citation counts, release labels, decisive games, or the report itself (a measurement, no judgment).
tests/test_evidence_registry.py withholds each kind from every benchmark and checks no value is a number."""

REASON_CODES: Mapping[str, str] = MappingProxyType(
    {
        # no evidence: what the metric rests on was never judged, fetched or counted (docs/reading-scores.md)
        "not_checked": "none of the cited URLs or (claim, source) pairs was checked (e.g. no page fetched)",
        "no_pages": "every cited page is unfetched, so no claim could be verified against its source",
        "no_counts": "no citation count exists for any cited paper (offline without a count cache)",
        "no_games": "no decisive comparison (win or loss) was played",
        "not_identifiable": "the rating cannot be estimated from these battles (separable or too few)",
        "no_labels": "the release has no labels the metric needs (e.g. no importance labels for Reference Coverage)",
        # the system left something out; the protocol decides whether that scores 0 or stays undefined
        "no_report": "the system returned no report for the task",
        "system_failed": "the system failed on the task (crash, exit code, timeout, unparseable output): no report",
        "nothing_to_score": "the report gives the metric nothing to score (no citation, no link)",
        # judging and protocol
        "failed": "a judgment the value needs failed after retries or did not parse (never 0)",
        "undefined": "the protocol leaves the value undefined here (e.g. 0/0)",
        "reference": "the reference system is never compared with itself",
    }
)
"""Why a value is undefined: every "—" on a leaderboard carries one of these codes."""


_ALIASES = {
    "no_counts_for_report_sources": "no_counts",
    "no_counts_for_exemplar_refs": "no_counts",
    "judgment_failed": "failed",
    "no_important_labels": "no_labels",
    "no report": "no_report",
    "zero": "nothing_to_score",
}


def reason_code(reason: str | None) -> str:
    """The code of a free-text reason (`"not_checked: 12 URLs not fetched"` -> `not_checked`); protocols' own
    spellings map through `_ALIASES`; anything else is `undefined` (the free text is kept beside it)."""
    head = (reason or "").split(":", 1)[0].strip()
    head = _ALIASES.get(head, head)
    return head if head in REASON_CODES else "undefined"


def short_failure(reason: str | None) -> str:
    """The head of a system outcome's reason, for a table cell: "exit code 2; stderr: …" -> "exit code 2"."""
    head = str(reason or "no reason recorded").split(";", 1)[0].strip()
    return head if len(head) <= 60 else head[:59] + "…"


@dataclass(frozen=True)
class MetricSpec:
    """What a metric is. `compute` is optional (some metrics are computed by a protocol's scorer)."""

    name: str
    protocol: str
    description: str
    aggregation: Aggregation = "mean"
    higher_is_better: bool = True
    judge_tasks: tuple[str, ...] = ()
    unit: str = "fraction"
    value_range: tuple[float, float] | None = (0.0, 1.0)
    short: str | None = None
    full_name: str | None = None  # the paper's name when the code key differs (DEER: request_fulfillment)
    compute: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    # What a task scores when the SYSTEM left something out (no report, no citation): the protocol decides
    # ("zero" for most published protocols). A JUDGE failure is always NaN, excluded and counted as failed.
    missing_report: MissingReport = "undefined"
    group_by: str | None = None  # for group_mean: the per-task column that names the group
    # What must have been judged, fetched or counted for a value to exist, and the reason code (REASON_CODES)
    # a value gets when that evidence is absent: then it is undefined ("—"), never 0.
    # The system value is the task mean clipped to `value_range` (per-task values may lie outside it: they are
    # then declared by `task_range`); its bootstrap interval is the clipped interval.
    clip_mean: bool = False
    task_range: tuple[float, float | None] | None = None
    evidence: str = ""  # empty: the judgments of `judge_tasks` (see `needs`)
    no_evidence: str = "failed"
    # the kinds of evidence (EVIDENCE_KINDS) a value needs; empty: ("judgments",) when it declares judge tasks
    evidence_kinds: tuple[EvidenceKind, ...] = ()

    @property
    def kinds(self) -> tuple[str, ...]:
        """The declared evidence kinds (`evidence_kinds`, else judgments when the metric has judge tasks)."""
        return tuple(self.evidence_kinds) or (("judgments",) if self.judge_tasks else ())

    @property
    def key(self) -> str:
        """Registry key: metric names are only unique within a protocol."""
        return f"{self.protocol}/{self.name}"

    @property
    def needs(self) -> str:
        """What must exist for a value: the declared evidence, else the metric's judge tasks' judgments."""
        if self.evidence:
            return self.evidence
        return f"judgments of {', '.join(self.judge_tasks)}" if self.judge_tasks else "a graded report"

    @property
    def label(self) -> str:
        """Column header for tables."""
        return self.short or self.name


_LOCK = threading.Lock()
_METRICS: dict[str, MetricSpec] = {}
METRICS: Mapping[str, MetricSpec] = MappingProxyType(_METRICS)
"""Read-only view of every registered metric, keyed by `protocol/name`."""


class MetricRegistryError(KeyError):
    """Unknown, ambiguous or conflicting metric name."""


def register_metric(spec: MetricSpec, *, replace: bool = False) -> MetricSpec:
    """Register `spec`. Re-registering an identical spec is a no-op (reloads); a different one errors."""
    with _LOCK:
        old = _METRICS.get(spec.key)
        if old is not None and old != spec and not replace:
            raise MetricRegistryError(f"metric {spec.key!r} is already registered with a different spec")
        _METRICS[spec.key] = spec
    return spec


def get_metric(name: str, protocol: str | None = None) -> MetricSpec:
    """Look up by `protocol/name`, by (name, protocol), or by a bare name that only one protocol uses."""
    if "/" in name:
        key = name
    elif protocol is not None:
        key = f"{protocol}/{name}"
    else:
        hits = [s for s in _METRICS.values() if s.name == name]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            raise MetricRegistryError(f"unknown metric {name!r}")
        raise MetricRegistryError(f"metric name {name!r} is ambiguous: {sorted(s.key for s in hits)}")
    try:
        return _METRICS[key]
    except KeyError:
        raise MetricRegistryError(f"unknown metric {key!r}") from None


def metrics_for(protocol: str) -> list[MetricSpec]:
    """The protocol's metrics in registration order (which is the leaderboard's column order)."""
    return [s for s in _METRICS.values() if s.protocol == protocol]


def _clear() -> None:
    """For tests only."""
    with _LOCK:
        _METRICS.clear()


@dataclass
class MetricResult:
    """One metric for one report. `value` is NaN when undefined or when a needed judgment failed.

    `n_items` = judgments (or matches) the value rests on; `n_failed` = of those, failed or missing ones.
    `details` holds counts, flags and `reason` (why the value is NaN), all JSON-serialisable.
    """

    value: float
    n_items: int = 0
    n_failed: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def defined(self) -> bool:
        return self.value == self.value  # False only for NaN

    @classmethod
    def undefined(cls, reason: str, *, n_items: int = 0, n_failed: int = 0, **details: Any) -> MetricResult:
        return cls(float("nan"), n_items, n_failed, {"reason": reason, **details})
