"""`reportbench export`: self-authored score tables (the score stage's per-task format) written in the authors'
result formats and read back with the authors'-format readers; undefined and failed tasks are never written as 0."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from reportbench.interop import deepscholar as ds
from reportbench.interop import liveresearchbench as lrb
from reportbench.interop import researcherbench as rb
from reportbench.interop.export import export
from reportbench.metrics.aggregate import metric_row, rows_frame

pytestmark = pytest.mark.core


def _scores(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    by_system: dict[str, list[dict]] = {}
    for r in rows:
        by_system.setdefault(r["system"], []).append(r)
    for system, rs in by_system.items():
        rows_frame(rs).write_parquet(folder / f"{system}.parquet")
    return folder


def test_researcherbench_export(tmp_path: Path) -> None:
    scores = _scores(tmp_path / "scores", [
        metric_row("sys-a", "1", "coverage", 0.5),
        metric_row("sys-a", "2", "coverage", 0.25),
        metric_row("sys-a", "3", "coverage", math.nan, "failed", "rubric call failed", n_failed=1),
        metric_row("sys-a", "1", "faithfulness", 1.0),
    ])
    paths = export("researcherbench", scores, tmp_path / "out")
    assert rb.read_evaluation_results(paths[0]) == ("sys-a", 0.375)  # the failed question is out, not a 0
    assert json.loads(paths[-1].read_text())["systems"]["sys-a"]["coverage"]["left_out"] == {
        "failed: rubric call failed": 1}


def test_an_export_says_when_the_leaderboard_counts_a_value_it_leaves_out(tmp_path: Path) -> None:
    """ResearcherBench scores a missing report's coverage 0 (`missing report: zero`): the leaderboard's mean counts
    it, the authors' file (a mean over graded questions) does not; the two numbers differed without a word."""
    scores = _scores(tmp_path / "scores", [
        metric_row("sys-a", "1", "coverage", 0.5),
        metric_row("sys-a", "2", "coverage", 0.0, "no_report", "no report"),
    ])
    paths = export("researcherbench", scores, tmp_path / "out")
    assert rb.read_evaluation_results(paths[0]) == ("sys-a", 0.5)
    (why,) = json.loads(paths[-1].read_text())["systems"]["sys-a"]["coverage"]["left_out"]
    assert why.startswith("no_report: no report (the leaderboard counts it by the protocol's missing-report rule")


def test_deepscholar_export(tmp_path: Path) -> None:
    scores = _scores(tmp_path / "scores", [
        metric_row("sys-a", "t1", "organization", 0.4),
        metric_row("sys-a", "t2", "organization", 0.6),
        metric_row("sys-a", "t1", "reference_coverage", math.nan, "undefined", "no importance labels"),
        metric_row("sys-b", "t1", "organization", 0.5),
    ])
    path = export("deepscholar", scores, tmp_path / "out")[0]
    assert ds.read_results_csv(path) == {
        "sys-a": {"organization": 0.5, "reference_coverage": None},
        "sys-b": {"organization": 0.5, "reference_coverage": None},
    }


def test_liveresearchbench_export(tmp_path: Path) -> None:
    scores = _scores(tmp_path / "scores", [
        metric_row("sys-a", "q1", "presentation", 80.0),
        metric_row("sys-a", "q2", "presentation", 70.0),
        metric_row("sys-a", "q1", "coverage", math.nan, "failed", "judge failed", n_failed=1),
    ])
    path = export("liveresearchbench", scores, tmp_path / "out")[0]
    assert lrb.read_summary(path) == {"sys-a": {"presentation": (75.0, 2)}}


def test_deer_export(tmp_path: Path) -> None:
    scores = _scores(tmp_path / "scores", [
        metric_row("sys-a", "csai/1", "request_fulfillment", 5.43),
        metric_row("sys-a", "csai/1", "format_style", math.nan, "undefined", "all N/A"),
        metric_row("sys-a", "csai/1", "deer_mean", 6.16),
    ])
    path = export("deer", scores, tmp_path / "out")[0]
    rec = json.loads(path.read_text())
    assert path.name == "csai_1.json" and rec["score_avgs"]["request_fulfillment"] == 5.43
    assert rec["score_avgs"]["format_style"] == "N/A" and rec["score_avgs"]["ethics_compliance"] == "N/A"


def test_export_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no <system>.parquet"):
        export("deer", tmp_path, tmp_path / "out")
    with pytest.raises(ValueError, match="no exporter"):
        export("nope", _scores(tmp_path / "s", [metric_row("a", "t", "m", 1.0)]), tmp_path / "out")


def summary_reason(path: Path, system: str, criterion: str) -> str:
    return json.loads(path.read_text())["results_by_model"][system][criterion]["reason"]


def test_liveresearchbench_export_says_why_a_value_is_missing(tmp_path: Path) -> None:
    """Every criterion listed under `criteria_evaluated` is under every system: a mean, or null with its reason;
    reports left out of a mean are counted; `overall_results` says why it has no value; the notes file lists all."""
    scores = _scores(tmp_path / "scores", [
        metric_row("ref", "q1", "presentation", 80.0),
        metric_row("ref", "q1", "depth_win_rate", math.nan, "undefined", "the reference is never compared with itself"),
        metric_row("sys-a", "q1", "presentation", 60.0),
        metric_row("sys-a", "q2", "presentation", math.nan, "no_report", "no report"),
        metric_row("sys-a", "q1", "depth_win_rate", 100.0),
        metric_row("sys-a", "q1", "cit_e1", math.nan, "undefined", "not_checked: none of 3 cited URL(s) was checked"),
        metric_row("sys-a", "q2", "cit_e1", math.nan, "undefined", "not_checked: none of 5 cited URL(s) was checked"),
    ])
    paths = export("liveresearchbench", scores, tmp_path / "out")
    assert summary_reason(paths[0], "sys-a", "cit_e1") == (  # one entry per kind of reason, counted
        "undefined: not_checked: none of <n> cited URL(s) was checked (x2)")
    summary = json.loads(paths[0].read_text())
    assert summary["metadata"]["criteria_evaluated"] == ["cit_e1", "depth_win_rate", "presentation"]
    depth = summary["results_by_model"]["ref"]["depth_win_rate"]
    assert depth["mean"] is None and depth["count"] == 0
    assert "the reference is never compared with itself" in depth["reason"]
    pres = summary["results_by_model"]["sys-a"]["presentation"]
    assert (pres["mean"], pres["count"], pres["n_left_out"]) == (60.0, 1, 1)
    assert pres["left_out"] == {"no_report: no report": 1}
    assert summary["overall_results"]["value"] is None and "avg" in summary["overall_results"]["reason"]
    assert lrb.read_summary(paths[0]) == {"ref": {"presentation": (80.0, 1)},
                                          "sys-a": {"presentation": (60.0, 1), "depth_win_rate": (100.0, 1)}}
    notes = json.loads(paths[-1].read_text())["systems"]
    assert notes["ref"]["depth_win_rate"]["left_out"] == {
        "undefined: the reference is never compared with itself": 1}
    assert notes["sys-a"]["presentation"]["n_defined"] == 1


def test_deepscholar_export_reads_its_score_stage_table(tmp_path: Path) -> None:
    """DeepScholar's score stage writes a per-report table without `status` (protocols.deepscholar.metrics):
    NaN is undefined (its reason kept), several reports of one task are averaged first."""
    import polars as pl

    from reportbench.protocols.deepscholar.metrics import PER_TASK_SCHEMA

    folder = tmp_path / "scores"
    folder.mkdir()
    row = {"n_items": 1, "n_failed": 0, "details": "{}"}
    pl.DataFrame([
        {"system": "s", "task_id": "t1", "report_id": "s/t1/a", "metric": "organization", "value": 0.2,
         "reason": None, **row},
        {"system": "s", "task_id": "t1", "report_id": "s/t1/b", "metric": "organization", "value": 0.4,
         "reason": None, **row},
        {"system": "s", "task_id": "t2", "report_id": None, "metric": "organization", "value": math.nan,
         "reason": "no_report", **row},
    ], schema=PER_TASK_SCHEMA, orient="row").write_parquet(folder / "s.parquet")
    paths = export("deepscholar", folder, tmp_path / "out")
    assert ds.read_results_csv(paths[0]) == {"s": {"organization": 0.3}}
    notes = json.loads(paths[-1].read_text())["systems"]
    assert notes["s"]["organization"]["left_out"] == {"undefined: no_report": 1}


def test_researchqa_export_says_why_a_system_has_no_row(tmp_path: Path) -> None:
    scores = _scores(tmp_path / "data" / "scores" / "researchqa" / "R", [metric_row("a", "t", "coverage", 1.0)])
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    table = [{"system": "a", "rating": 1000.0, "boot_median": None, "boot_std": None,
              "ci_reason": "not_identifiable: 3 of 10 bootstrap resamples are separable"}]
    (metrics / "extra.json").write_text(json.dumps(
        {"ratings": {"reported": "half", "value": "median", "tables": {"half": table}}}))
    paths = export("researchqa", scores, tmp_path / "out", metrics)
    assert paths[0].read_text().splitlines()[1:] == []  # no row written as a 0
    why = json.loads(paths[-1].read_text())["rows_left_out"]["a"]
    assert "boot_median" in why and "3 of 10 bootstrap resamples" in why
