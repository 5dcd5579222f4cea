"""Values inside their declared range (issue 21 §4): DeepScholar's Document Importance clips the SYSTEM mean at
1 (Table 2), so a per-report ratio above 1 is declared (`task_range`) and the reported value and its bootstrap
interval stay in [0, 1]; the leaderboard lists any value or interval outside a metric's declared range."""

from __future__ import annotations

import polars as pl
import pytest

from reportbench.metrics.leaderboard import build_leaderboard, per_task_columns, range_violations
from reportbench.metrics.registry import get_metric
from reportbench.protocols.deepscholar.items import DeepScholarParams, ReleaseContext
from reportbench.protocols.deepscholar.metrics import score_system
from test_undefined_deepscholar import report, task

pytestmark = pytest.mark.core


def test_document_importance_value_and_interval_stay_in_range() -> None:
    # per-report ratios 1.43, 1.87, 0.2 and 0.5 (of 647.5): the unclipped mean is 1.0; its interval would reach 1.87
    counts = {"2401.00001": 926, "2401.00002": 1211, "2401.00003": 130, "2401.00004": 324}
    ids = [["2401.00001"], ["2401.00002"], ["2401.00003"], ["2401.00004"]]
    tasks = [task(i) for i in range(len(ids))]
    reports = [report(t, a, "s") for t, a in zip(tasks, ids, strict=True)]
    sc = score_system("s", tasks, reports, {}, ReleaseContext(), counts, DeepScholarParams())
    di = sc.per_task.filter(pl.col("metric") == "document_importance")["value"].to_list()
    assert max(di) > 1.4  # a per-report ratio, declared by task_range (not clipped: Table 2 clips the mean)
    spec = get_metric("document_importance", "deepscholar")
    assert spec.clip_mean and spec.task_range == (0.0, None) and spec.value_range == (0.0, 1.0)
    lb = build_leaderboard([sc.summary], sc.per_task.select(per_task_columns(sc.per_task)), protocol="deepscholar")
    row = lb.rows[0]
    assert row["metrics"]["document_importance"] == 1.0
    lo, hi = row["ci"]["document_importance"]
    assert 0.0 <= lo <= hi <= 1.0 and lo < 1.0  # the clipped mean's interval, not [0.25, 1.43]
    assert row["ci_method"]["document_importance"] == "bootstrap over tasks, clipped mean"
    assert lb.stats["range_violations"] == []


def test_range_violations_are_listed() -> None:
    rows = [{"system": "a", "metrics": {"m": 1.2, "n": 0.5}, "ci": {"m": [0.9, 1.5], "n": [0.1, 0.9]}}]
    info = {"m": {"value_range": [0.0, 1.0]}, "n": {"value_range": [0.0, 1.0]}}
    assert range_violations(rows, info) == ["a/m: value 1.2 outside [0.0, 1.0]", "a/m: ci 1.5 outside [0.0, 1.0]"]
