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

    @property
    def key(self) -> str:
        """Registry key: metric names are only unique within a protocol."""
        return f"{self.protocol}/{self.name}"

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
