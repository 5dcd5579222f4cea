"""ResearchQA demo release end to end through the real stage functions (in-process, offline judge)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from reportbench.release.format import read_release
from spine_helpers import benchmark_params, run_benchmark

pytestmark = pytest.mark.integration


@pytest.fixture()
def params(repo_root: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.chdir(repo_root)
    p = benchmark_params(repo_root, "researchqa")
    p["benchmarks"]["researchqa"]["scoring"]["rating"]["rounds"] = 100  # keep the test quick
    return p


def test_demo_release_end_to_end(params: dict, tmp_path: Path) -> None:
    root = run_benchmark(params, "researchqa", tmp_path / "out")
    release = read_release(root / "releases")
    assert [t.task_id for t in release.tasks] == ["demo-0001-s3", "demo-0002-s1", "demo-0003-s7", "demo-0004-s2"]
    t3 = next(t for t in release.tasks if t.task_id == "demo-0003-s7")
    assert t3.published_date == "2022-06-30"  # the time part normalised away
    assert t3.categories == [
        "Health Sciences & Medicine (synthetic)",
        "Public Health (synthetic)",
        "Nutrition (synthetic)",
    ]
    assert "(Date: 2022-06-30)" in t3.task_prompt and "250 words" in t3.task_prompt
    items = release.table("rubric_items")
    assert len(items) == 17
    cite = next(r for r in items if r.task_id == "demo-0001-s3" and r.item_id == "r4")
    assert cite.kind == "citation" and json.loads(cite.meta)["citation_metadata"]["year"] == 2019

    # coverage: one call per answer (<= 8 items), no query in the inputs, <think> stripped
    cov = pl.read_parquet(root / "judgments" / "thinking_model" / "main" / "coverage.parquet")
    assert cov.height == 3 and set(cov["status"]) == {"ok"}

    battles = pl.read_parquet(root / "cross" / "battles.parquet")
    main = battles.filter(~pl.col("reserve"))
    assert main.height == 4 * 3  # 3 domains x max(4, n queries)
    assert battles.height - main.height == 3  # ceil(5 % of 4) reserve battles per domain
    ok = battles.filter(pl.col("status") == "ok")
    # thinking_model has no answer for demo-0004-s2: its battles there were re-queued or marked unplayable
    bad = ok.filter(
        (pl.col("task_id") == "demo-0004-s2")
        & ((pl.col("system_a") == "thinking_model") | (pl.col("system_b") == "thinking_model"))
    )
    assert bad.height == 0
    pairwise = pl.read_parquet(root / "cross" / "pairwise.parquet")
    assert pairwise.height == 2 * ok.height and set(pairwise["order"]) == {"ab", "ba"}
    assert not pairwise["flagged"].any()
    # the offline rule is antisymmetric: both orders vote for the same side
    votes = pairwise.group_by("battle_id").agg(pl.col("vote").n_unique().alias("n"))
    assert set(votes["n"]) == {1}

    summary = json.loads((root / "metrics" / "systems.json").read_text())
    thorough = summary["thorough_reviewer"]["metrics"]
    brief = summary["brief_answerer"]["metrics"]
    thinking = summary["thinking_model"]["metrics"]
    assert thorough["coverage"]["mean"] > thinking["coverage"]["mean"] > brief["coverage"]["mean"]
    assert thinking["coverage"]["n_undefined"] == 1  # no answer for one query: skipped, counted
    # 9 battles: many bootstrap resamples are separable, so the reported (bootstrap) Elo is not identifiable
    assert thorough["elo"]["mean"] is None and thorough["elo"]["reason"] == "not_identifiable"
    extra = json.loads((root / "metrics" / "extra.json").read_text())
    point = {row["system"]: row["rating"] for row in extra["ratings"]["tables"]["half"]}
    assert point["thorough_reviewer"] > point["brief_answerer"]  # the point fit itself is identifiable
    elos = list(point.values())
    assert sum(elos) / len(elos) == pytest.approx(1000.0, abs=1e-6)
    assert set(extra["ratings"]["tables"]) == {"half", "duplicate"}
    assert extra["ensemble"]["rated"] == main.filter(pl.col("status") == "ok").height
    assert "citation" in extra["coverage_by_type"]["thorough_reviewer"]
    assert set(extra["coverage_by_domain"]["brief_answerer"]) == {t.categories[0] for t in release.tasks}
    board = json.loads((root / "metrics" / "leaderboard.json").read_text())
    assert board["rows"][0]["system"] == "thorough_reviewer"


def test_a_failed_coverage_judgment_is_failed_not_zero(params: dict, tmp_path: Path) -> None:
    from reportbench.judges.tasks import get_task
    from reportbench.protocols.researchqa import tasks as rqa

    task = get_task(rqa.COVERAGE_TASK)
    original = task.offline

    def broken(inputs, p):  # the rule fails on one answer: a failure record, never a 0
        if "Fibre is good" in inputs.response:
            raise RuntimeError("rule broke")
        return original(inputs, p)

    object.__setattr__(task, "offline", broken)
    try:
        root = run_benchmark(params, "researchqa", tmp_path / "out")
    finally:
        object.__setattr__(task, "offline", original)
    brief = json.loads((root / "metrics" / "systems.json").read_text())["brief_answerer"]["metrics"]["coverage"]
    assert brief["n_failed"] == 1 and brief["n_defined"] == 3
    extra = json.loads((root / "metrics" / "extra.json").read_text())
    assert extra["ensemble"]["missing_coverage"] >= 1  # battles on that query could not be scored, and say so
