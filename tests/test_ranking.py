"""Leaderboards compare like with like (issue 21 §3): only systems evaluated on the same task set are ranked
(default: the release's full set; `min_task_share` ranks partial submissions, marked), the others are listed
unranked with why and compared in a shared-task table; ties share a rank unless a documented tie-break is
configured; the overall column is named for what it is in every output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from reportbench.metrics.leaderboard import build_leaderboard, to_csv_frame, to_markdown, write_leaderboard

pytestmark = pytest.mark.core

TASKS = [f"t{i}" for i in range(6)]


def summary(system: str, x: float, y: float, n_missing: int = 0) -> dict:
    return {
        "system": system,
        "n_tasks": len(TASKS),
        "n_missing_reports": n_missing,
        "metrics": {"x": {"mean": x, "n_defined": len(TASKS)}, "y": {"mean": y, "n_defined": len(TASKS)}},
    }


def per_task(values: dict[str, dict[str, float]]) -> pl.DataFrame:
    rows = [
        {"system": s, "task_id": t, "metric": m, "value": v}
        for s, by_task in values.items()
        for t, v in by_task.items()
        for m in ("x", "y")
    ]
    return pl.DataFrame(rows)


def test_partial_systems_are_unranked_with_why_and_compared_on_shared_tasks() -> None:
    # "tiny" answered 2 of 6 tasks, brilliantly; "full" answered all 6
    sets = {"full": set(TASKS), "tiny": {"t0", "t1"}}
    pt = per_task({"full": {t: 0.5 + 0.05 * i for i, t in enumerate(TASKS)}, "tiny": {"t0": 0.9, "t1": 0.9}})
    s = [summary("tiny", 0.9, 0.9, n_missing=4), summary("full", 0.625, 0.625)]
    lb = build_leaderboard(s, pt, overall="mean", release_tasks=TASKS, task_sets=sets)
    by = {r["system"]: r for r in lb.rows}
    assert by["full"]["rank"] == 1 and by["tiny"]["rank"] is None  # never ranked above the complete run
    assert by["tiny"]["unranked_reason"].startswith("2/6 tasks: 4 no report")
    assert by["tiny"]["partial"] and not by["full"]["partial"]
    assert [r["system"] for r in lb.rows] == ["full", "tiny"]  # ranked rows first
    # the shared-task comparison: both systems over t0, t1 only
    assert lb.shared is not None and lb.shared["task_ids"] == ["t0", "t1"]
    assert lb.shared["values"]["full"]["x"] == pytest.approx(0.525)
    assert lb.shared["values"]["tiny"]["x"] == pytest.approx(0.9)
    md = to_markdown(lb)
    assert "Not ranked: tiny (2/6 tasks: 4 no report" in md and "Shared-task comparison" in md
    assert "tiny (partial: 2/6)" in md
    # min_task_share ranks partial submissions, marked
    lb = build_leaderboard(s, pt, overall="mean", release_tasks=TASKS, task_sets=sets, min_task_share=0.3)
    by = {r["system"]: r for r in lb.rows}
    assert by["tiny"]["rank"] == 1 and by["tiny"]["partial"] and by["full"]["rank"] == 2


def test_disjoint_task_sets_are_not_ranked_against_each_other() -> None:
    sets = {"a": {"t0", "t1", "t2"}, "b": {"t3", "t4", "t5"}}
    pt = per_task({"a": {t: 0.8 for t in sets["a"]}, "b": {t: 0.7 for t in sets["b"]}})
    s = [summary("a", 0.8, 0.8, 3), summary("b", 0.7, 0.7, 3)]
    lb = build_leaderboard(s, pt, overall="mean", release_tasks=TASKS, task_sets=sets)
    assert all(r["rank"] is None for r in lb.rows)
    assert lb.shared is not None and lb.shared["n_tasks"] == 0  # nothing in common: no comparison possible
    assert lb.shared["why_no_tasks"].startswith("no task has a report from every listed system (a: t0, t1, t2")
    assert "Shared-task comparison: none, no task has a report from every listed system" in to_markdown(lb)


def test_ties_share_a_rank_unless_a_tie_break_is_configured() -> None:
    # four systems tied at GeoMean 0 (one metric is 0), different arithmetic means
    s = [summary("w", 0.0, 0.9), summary("x", 0.0, 0.5), summary("y", 0.0, 0.7), summary("z", 0.8, 0.8)]
    lb = build_leaderboard(s, overall="geomean")
    ranks = {r["system"]: r["rank"] for r in lb.rows}
    assert ranks == {"z": 1, "w": 2, "x": 2, "y": 2}
    assert [r["tied"] for r in lb.rows] == [False, True, True, True]
    assert "| =2 | w |" in to_markdown(lb)
    lb = build_leaderboard(s, overall="geomean", tie_break="arithmetic_mean")
    assert {r["system"]: r["rank"] for r in lb.rows} == {"z": 1, "w": 2, "y": 3, "x": 4}
    assert lb.stats["ranking"]["tie_break"] == "arithmetic_mean"
    with pytest.raises(ValueError, match="tie_break"):
        build_leaderboard(s, tie_break="by_name")


@pytest.mark.parametrize(
    ("overall", "column", "header"),
    [
        ("geomean", "geomean", "GeoMean"),
        ("mean", "mean", "Mean"),
        ("y", "overall_y", "Overall (y)"),
        (None, None, None),
    ],
)
def test_overall_column_is_named_for_what_it_is(
    overall: str | None, column: str | None, header: str | None, tmp_path: Path
) -> None:
    lb = build_leaderboard([summary("a", 0.4, 0.9), summary("b", 0.5, 0.5)], overall=overall)
    csv = to_csv_frame(lb)
    overall_cols = [c for c in csv.columns if c in ("geomean", "mean") or c.startswith("overall_")]
    assert overall_cols == ([column] if column else [])
    paths = write_leaderboard(lb, tmp_path)
    data = json.loads(paths["json"].read_text())
    assert data["meta"]["overall"]["column"] == column and data["meta"]["overall"]["kind"] == overall
    assert ("geomean" in data["rows"][0]) == (overall == "geomean")  # never `geomean` for what is not one
    head = paths["md"].read_text().splitlines()[0]
    if header:
        assert f"| {header} |" in head
    else:
        assert all(
            r["rank"] is None and r["unranked_reason"] == "the benchmark has no overall score" for r in data["rows"]
        )


def crashed(system: str, n_failed: int, n_missing: int, reason: str = "exit code 2; stderr: boom") -> dict:
    """A summary as the score stage writes it for a system that failed on `n_failed` tasks (no report)."""
    out = summary(system, 0.5, 0.5, n_missing=n_missing)
    out["n_failed_tasks"] = n_failed
    out["first_failure"] = {"task_id": "t5", "status": "failed", "reason": reason} if n_failed else None
    return out


def test_one_system_without_reports_never_unranks_the_others() -> None:
    """Issue 32: two full systems, one crashed on every task, one crashed on one, one without a report for one:
    the two full ones are ranked; every other row says why it is not, failed apart from missing; the shared-task
    comparison leaves the system with no report out (named) instead of collapsing to 0 tasks."""
    sets = {"a": set(TASKS), "b": set(TASKS), "dead": set(), "flaky": set(TASKS[:5]), "lazy": set(TASKS[1:])}
    vals = {s: {t: 0.5 for t in ts} for s, ts in sets.items()}
    vals["a"] = {t: 0.9 for t in TASKS}
    pt = per_task(vals)
    s = [
        summary("a", 0.9, 0.9),
        summary("b", 0.5, 0.5),
        crashed("dead", 6, 6),
        crashed("flaky", 1, 1),
        summary("lazy", 0.5, 0.5, n_missing=1),
    ]
    lb = build_leaderboard(s, pt, overall="mean", release_tasks=TASKS, task_sets=sets)
    by = {r["system"]: r for r in lb.rows}
    assert (by["a"]["rank"], by["b"]["rank"]) == (1, 2)
    assert by["flaky"]["unranked_reason"].startswith("5/6 tasks: 1 failed (exit code 2)")
    assert by["lazy"]["unranked_reason"].startswith("5/6 tasks: 1 no report")
    assert by["dead"]["unranked_reason"].startswith("0/6 tasks: 6 failed (exit code 2)")
    assert (by["flaky"]["n_failed_tasks"], by["flaky"]["n_no_report"]) == (1, 0)
    assert (by["lazy"]["n_failed_tasks"], by["lazy"]["n_no_report"]) == (0, 1)
    assert lb.shared is not None and lb.shared["n_tasks"] == 4 and lb.shared["left_out"] == {
        "dead": "no report for any task"
    }
    md = to_markdown(lb)
    rank_cells = [line.split("|")[1].strip() for line in md.splitlines()[2:7]]
    assert rank_cells == ["1", "2", "—", "—", "—"]  # never blank
    assert "| 6 (1 failed) |" in md and "| 6 (1 no_report) |" in md
    assert "flaky: 1 of 6 tasks failed, first t5: exit code 2; stderr: boom" in md
    assert "dead is left out (no report for any task)" in md
    csv = to_csv_frame(lb)
    row = csv.filter(pl.col("system") == "flaky").to_dicts()[0]
    assert row["n_failed_tasks"] == 1 and "exit code 2; stderr: boom" in row["first_failure"]
    assert row["ranked_why_not"].startswith("5/6 tasks: 1 failed")
    assert all(r["ranked_why_not"] for r in csv.to_dicts() if r["rank"] is None)


def test_a_benchmark_without_an_overall_score_says_why_nothing_is_ranked(tmp_path: Path) -> None:
    sets = {"a": set(TASKS), "b": set(TASKS[1:])}
    s = [summary("a", 0.9, 0.9), crashed("b", 1, 1)]
    lb = build_leaderboard(s, per_task({"a": dict.fromkeys(TASKS, 0.5), "b": dict.fromkeys(TASKS[1:], 0.5)}),
                           overall=None, release_tasks=TASKS, task_sets=sets)
    md = to_markdown(lb)
    assert md.startswith("| system |")  # no column of blank ranks
    assert "has no overall score" in md and "Partial task sets: b (5/6 tasks: 1 failed (exit code 2))" in md
    html = write_leaderboard(lb, tmp_path)["html"].read_text()
    assert "has no overall score" in html and 'title="rank by the overall score' not in html  # no rank column
    assert re.search(r'<td class="fail"[^>]*title="first failed task t5: exit code 2; stderr: boom">.*?1</span> '
                     r'failed <span class="cnt">exit code 2</span></td>', html)


def test_an_undefined_shared_task_cell_says_why() -> None:
    """DeepScholar's public release: RefCov/DocImp cells of the shared-task table were a bare "—" (md and site).
    Now the system's own reason, or that no shared task defines the metric."""
    sets = {"full": set(TASKS), "tiny": {"t0", "t1"}}
    pt = per_task({"full": {t: 0.5 for t in TASKS}, "tiny": {"t0": 0.9, "t1": float("nan")}})
    pt = pt.with_columns(
        pl.when((pl.col("system") == "full") & (pl.col("metric") == "y") & pl.col("task_id").is_in(["t0", "t1"]))
        .then(float("nan")).otherwise(pl.col("value")).alias("value")
    )  # fmt: skip
    s = [summary("tiny", 0.9, float("nan"), n_missing=4), summary("full", 0.5, 0.5)]
    s[0]["metrics"]["y"]["reason"] = "no_counts: no citation counts"
    lb = build_leaderboard(s, pt, overall="mean", release_tasks=TASKS, task_sets=sets)
    assert lb.shared["why"] == {"tiny": {"y": "no_counts"}, "full": {"y": "undefined on the shared tasks"}}
    md = to_markdown(lb)
    assert "| tiny | 0.900 | — (no_counts) |" in md and "| full | 0.500 | — (undefined on the shared tasks) |" in md
    from reportbench.site.leaderboard_page import BenchmarkData, reading_html

    page = reading_html(BenchmarkData("b", "r", "metrics/b/r", json.loads(json.dumps(lb.as_dict(), default=str))))
    assert "— (no_counts)" in page and "— (undefined on the shared tasks)" in page
