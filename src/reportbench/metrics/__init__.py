"""Metric registry, NaN-aware statistics and the leaderboard writer.

- `registry`: `MetricSpec`, `register_metric`, `get_metric`, `METRICS`.
- `stats`: NaN-aware means, geometric mean, paired t-test, bootstrap CI, the authors' aggregate.
- `leaderboard`: JSON / markdown / CSV / HTML from several systems' summaries.
- `nuggetizer`: nugget scores (owned by the release work).
"""

from reportbench.metrics.registry import (
    METRICS,
    MetricResult,
    MetricSpec,
    get_metric,
    metrics_for,
    register_metric,
)

__all__ = ["METRICS", "MetricResult", "MetricSpec", "get_metric", "metrics_for", "register_metric"]
