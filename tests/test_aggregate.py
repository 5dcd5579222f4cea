"""Failed is not undefined is not zero: per-task rows -> summaries; multi-score outputs -> per-factor rows."""

from __future__ import annotations

import json
import math

import pytest

from reportbench.judges.base import Judgment
from reportbench.metrics.aggregate import (
    explode_factor_scores,
    metric_row,
    rows_frame,
    summarise_metric,
    summarise_rows,
)
from reportbench.metrics.leaderboard import build_leaderboard
from reportbench.metrics.registry import MetricSpec

pytestmark = pytest.mark.core

COV = MetricSpec("cov", "t", "coverage", missing_report="zero")
SUP = MetricSpec("sup", "t", "support")
DOM = MetricSpec("dom", "t", "domain macro mean", aggregation="group_mean", group_by="group")


def test_failed_undefined_and_missing_are_counted_apart() -> None:
    rows = rows_frame(
        [
            metric_row("s", "t1", "cov", 0.5),
            metric_row("s", "t2", "cov", math.nan, "failed", "judge failed"),
            metric_row("s", "t3", "cov", math.nan, "no_report"),
            metric_row("s", "t1", "sup", 1.0),
            metric_row("s", "t2", "sup", math.nan, "undefined", "no claims"),
            metric_row("s", "t3", "sup", math.nan, "no_report"),
        ]
    )
    summary = summarise_rows("s", "t", rows, [COV, SUP])["metrics"]
    # coverage: t3 (no report) scores 0 by protocol; t2 failed -> excluded: mean(0.5, 0) = 0.25
    assert summary["cov"]["mean"] == 0.25 and summary["cov"]["n_failed"] == 1
    assert summary["cov"]["n_zero_missing"] == 1 and summary["cov"]["n_undefined"] == 0
    # support: the missing report is undefined (not 0) for this metric
    assert summary["sup"]["mean"] == 1.0 and summary["sup"]["n_undefined"] == 2 and summary["sup"]["n_failed"] == 0


def test_group_mean_is_a_macro_mean_over_groups_with_the_task_weighted_mean_alongside() -> None:
    rows = rows_frame(
        [
            metric_row("s", "a1", "dom", 1.0, group="A"),
            metric_row("s", "a2", "dom", 1.0, group="A"),
            metric_row("s", "a3", "dom", 1.0, group="A"),
            metric_row("s", "b1", "dom", 0.0, group="B"),
        ]
    )
    out = summarise_metric(rows, DOM)
    assert out["mean"] == 0.5 and out["task_weighted_mean"] == 0.75 and out["groups"] == {"A": 1.0, "B": 0.0}


def test_ok_rows_need_a_value() -> None:
    with pytest.raises(ValueError, match="status ok needs a defined value"):
        metric_row("s", "t", "m", math.nan)
    with pytest.raises(ValueError, match="status"):
        metric_row("s", "t", "m", 1.0, status="zero")


def _j(item: str, scores: dict | None, ok: bool = True) -> Judgment:
    return Judgment(
        task="rubric",
        item_id=item,
        judge_id="x",
        status="ok" if ok else "failed",
        value=1.0 if ok else None,
        parsed=json.dumps({"scores": scores}) if ok else None,
        error=None if ok else "parse: not an integer",
    )


def test_multi_score_outputs_explode_into_factor_rows() -> None:
    df = explode_factor_scores(
        [_j("r1", {"C1": 7, "Q1": None}), _j("r2", None, ok=False)], expected={"r2": ["C1", "Q1"]}
    )
    rows = {(r["item_id"], r["factor"]): r for r in df.iter_rows(named=True)}
    assert rows[("r1", "C1")]["value"] == 7.0 and rows[("r1", "C1")]["status"] == "ok"
    assert rows[("r1", "Q1")]["status"] == "undefined" and math.isnan(rows[("r1", "Q1")]["value"])
    assert {rows[("r2", f)]["status"] for f in ("C1", "Q1")} == {"failed"}


def test_leaderboard_overall_modes() -> None:
    summaries = [
        {"system": "a", "metrics": {"x": {"mean": 0.2}, "y": {"mean": 0.8}}},
        {"system": "b", "metrics": {"x": {"mean": 0.5}, "y": {"mean": 0.4}}},
    ]
    assert [r["system"] for r in build_leaderboard(summaries, overall="x").rows] == ["b", "a"]
    assert [r["system"] for r in build_leaderboard(summaries, overall="mean").rows] == ["a", "b"]
    lb = build_leaderboard(summaries, overall="mean", overall_metrics=["y"])
    assert [r["system"] for r in lb.rows] == ["a", "b"] and lb.rows[0]["overall_value"] == 0.8
