"""Leaderboard: ordering by geometric mean, NaN handling, paired tests, and the written files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

import reportbench.protocols.deepscholar.metrics as dsm  # registers the seven metrics
from reportbench.metrics.leaderboard import build_leaderboard, from_scores, to_markdown, write_leaderboard
from reportbench.metrics.registry import METRICS, get_metric
from reportbench.protocols.deepscholar.metrics import METRIC_NAMES, SystemScores, summarise

pytestmark = pytest.mark.core

TASKS = ["t1", "t2", "t3", "t4"]


def _scores(system: str, values: dict[str, list[float]]) -> SystemScores:
    """values: metric -> per-task values (missing metrics get 0.5 everywhere)."""
    rows = []
    for m in METRIC_NAMES:
        for tid, v in zip(TASKS, values.get(m, [0.5] * len(TASKS)), strict=True):
            rows.append(
                {
                    "system": system,
                    "task_id": tid,
                    "report_id": f"{system}:{tid}",
                    "metric": m,
                    "value": v,
                    "n_items": 2,
                    "n_failed": int(math.isnan(v)),
                    "reason": "judgment_failed" if math.isnan(v) else None,
                    "details": "{}",
                }
            )
    per_task = pl.DataFrame(rows, schema=dsm.PER_TASK_SCHEMA, orient="row")
    return SystemScores(system, per_task, summarise(system, per_task))


@pytest.fixture()
def three() -> list[SystemScores]:
    return [
        _scores("low", {"organization": [0.1, 0.2, 0.1, 0.2]}),
        _scores("high", {"organization": [0.9, 1.0, 0.8, 0.9]}),
        _scores("undef", {"claim_coverage": [math.nan] * 4}),
    ]


def test_registry_has_seven_metrics_with_direction() -> None:
    specs = [get_metric(m, "deepscholar") for m in METRIC_NAMES]
    assert all(s.higher_is_better and s.aggregation == "mean" for s in specs)
    assert {s.key for s in specs} <= set(METRICS)
    assert get_metric("citation_precision").judge_tasks == ("citation_support", "support")


def test_rows_sorted_by_geomean_nan_last(three: list[SystemScores]) -> None:
    lb = from_scores(three)
    assert [r["system"] for r in lb.rows] == ["high", "low", "undef"]
    high = lb.rows[0]
    assert high["metrics"]["organization"] == pytest.approx(0.9)
    assert high["geomean"] == pytest.approx((0.9 * 0.5**6) ** (1 / 7))
    assert math.isnan(lb.rows[2]["geomean"]) and lb.rows[2]["n_failed_items"] == 4
    assert lb.rows[2]["n_defined"]["claim_coverage"] == 0


def test_pairwise_ttests(three: list[SystemScores]) -> None:
    lb = from_scores(three)
    org = {(p["system_a"], p["system_b"]): p for p in lb.pairwise if p["metric"] == "organization"}
    hl = org[("high", "low")]
    assert hl["n"] == 4 and hl["mean_diff"] == pytest.approx(0.75) and hl["t"] > 0 and hl["p"] < 0.01
    cc = [
        p
        for p in lb.pairwise
        if p["metric"] == "claim_coverage" and "undef" in (p["system_a"], p["system_b"])
    ]
    assert all(p["n"] == 0 and math.isnan(p["t"]) for p in cc)
    # identical per-task values -> zero variance note, not a fake p-value
    same = [p for p in lb.pairwise if p["metric"] == "nugget_coverage" and p["system_a"] == "high"][0]
    assert math.isnan(same["p"]) and "zero variance" in same["note"]


def test_written_files(three: list[SystemScores], tmp_path: Path) -> None:
    lb = from_scores(three)
    paths = write_leaderboard(lb, tmp_path)
    data = json.loads(paths["json"].read_text())  # strict JSON: NaN became null
    assert data["rows"][2]["geomean"] is None and data["metrics"] == list(METRIC_NAMES)
    csv = pl.read_csv(paths["csv"])
    assert csv["system"].to_list() == ["high", "low", "undef"] and "geomean" in csv.columns
    assert pl.read_csv(paths["pairwise_csv"]).height == 3 * len(METRIC_NAMES)
    md = paths["md"].read_text()
    assert md.splitlines()[0].startswith("| # | system | Org | NuggetCov")
    assert "— (failed)" in md  # undefined metric shown as "—" with its reason code (judgments failed), never 0
    page = paths["html"].read_text()
    # self-contained: inline CSS/JS only (sorting), nothing fetched from anywhere
    assert page.startswith("<!doctype html>") and "http" not in page and "<script src" not in page
    assert 'id="leaderboard"' in page and "table.sortable" in page


def test_build_from_plain_summaries_and_roundtrip(three: list[SystemScores], tmp_path: Path) -> None:
    three[0].write(tmp_path / "low")
    back = SystemScores.read(tmp_path / "low")
    assert back.summary["metrics"]["organization"]["mean"] == pytest.approx(0.15)
    lb = build_leaderboard([back.summary])
    assert lb.pairwise == [] and lb.rows[0]["rank"] == 1
    assert "Paired" not in to_markdown(lb)
    with pytest.raises(ValueError):
        build_leaderboard([])


def test_an_unsandboxed_system_says_so_wherever_its_name_appears(three: list[SystemScores], tmp_path: Path) -> None:
    """`sandbox: none` (issue 33): systems.json's "unsandboxed" reaches the leaderboard's md, csv, json and html."""
    summaries = [dict(s.summary) for s in three]
    summaries[1]["sandbox"] = "unsandboxed"  # "high" opted out
    summaries[0]["sandbox"] = "bwrap"
    paths = write_leaderboard(build_leaderboard(summaries), tmp_path)
    md = paths["md"].read_text()
    assert "| high [unsandboxed] |" in md and "low [unsandboxed]" not in md
    csv = pl.read_csv(paths["csv"])
    assert dict(zip(csv["system"], csv["sandbox"].fill_null(""), strict=True)) == {
        "high": "unsandboxed", "low": "", "undef": ""}  # fmt: skip
    rows = {r["system"]: r for r in json.loads(paths["json"].read_text())["rows"]}
    assert rows["high"]["sandbox"] == "unsandboxed" and "sandbox" not in rows["low"]
    assert ">unsandboxed</span>" in paths["html"].read_text()


def test_an_undefined_combined_score_names_what_it_lacks() -> None:
    """A geomean that is undefined (a part has no value) shows "— (<metric>: <code>)", never a bare "—": in the
    markdown (overall and "GeoMean (all 7)") and in leaderboard.json (`overall_reason`, `geomean_all_reason`)."""
    names = list(METRIC_NAMES)
    means = {m: 0.5 for m in names} | {"reference_coverage": math.nan, "document_importance": math.nan}
    summary = {"system": "x", "protocol": "deepscholar", "n_tasks": 2,
               "metrics": {m: {"mean": v, "n_defined": 0 if math.isnan(v) else 2,
                               **({"reason": "no_labels: no labels"} if math.isnan(v) else {})}
                           for m, v in means.items()}}  # fmt: skip
    covered = [m for m in names if not math.isnan(means[m])]
    sub = build_leaderboard([summary], metrics=names, protocol="deepscholar", overall_metrics=covered)
    row = sub.rows[0]
    assert row["geomean_all_reason"] == "RefCov: no_labels; DocImp: no_labels"
    assert "overall_reason" not in row  # the covered geomean is defined
    md = to_markdown(sub)
    assert "| — (RefCov: no_labels; DocImp: no_labels) |" in md
    full = build_leaderboard([summary], metrics=names, protocol="deepscholar")
    assert full.rows[0]["overall_reason"] == "RefCov: no_labels; DocImp: no_labels"
    assert "| — (RefCov: no_labels; DocImp: no_labels) |" in to_markdown(full)
    from reportbench.site.leaderboard_page import BenchmarkData, leaderboard_table

    page = leaderboard_table(BenchmarkData("deepscholar", "r", "metrics/deepscholar/r", full.as_dict()))
    assert "— (RefCov: no_labels; DocImp: no_labels)" in page


def test_no_paired_difference_through_an_undefined_system_value() -> None:
    """DeepScholar's public release: DocImp was "— (no_counts)" for every system, yet the paired table showed a
    mean difference 0.000 over the per-task zeros the evidence rule had set aside. Now: no number, the reason."""
    a, b = _scores("a", {"document_importance": [0.0] * 4}), _scores("b", {"document_importance": [0.0] * 4})
    for s in (a, b):
        s.summary["metrics"]["document_importance"].update(mean=math.nan, reason="no_counts: no citation counts")
    lb = from_scores([a, b])
    pw = next(p for p in lb.pairwise if p["metric"] == "document_importance")
    assert math.isnan(pw["mean_diff"]) and pw["n"] == 0 and pw["diff_ci"] is None
    assert pw["note"] == "undefined system value: a no_counts, b no_counts"
    row = "| DocImp | a | b | — | — | — | — | — | 0 | undefined system value: a no_counts, b no_counts |"
    assert row in to_markdown(lb)
