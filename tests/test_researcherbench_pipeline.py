"""ResearcherBench demo release end to end through the real stage functions, in-process, offline judge."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from reportbench.judges.runner import read_judgments
from spine_helpers import benchmark_params, run_benchmark

pytestmark = pytest.mark.integration


@pytest.fixture()
def rb_params(repo_root: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.chdir(repo_root)
    return benchmark_params(repo_root, "researcherbench")


def _summary(root: Path) -> dict:
    return json.loads((root / "metrics" / "systems.json").read_text())


def test_demo_runs_end_to_end(rb_params: dict, tmp_path: Path) -> None:
    assert rb_params["plan"]["benchmarks"]["researcherbench"]["systems"] == ["footnote_writer", "link_writer"]
    root = run_benchmark(rb_params, "researcherbench", tmp_path / "out")
    jdir = root / "judgments" / "footnote_writer" / "main"
    rubric = read_judgments(jdir / "rubric.parquet")
    assert len(rubric) == 12 and all(j.ok for j in rubric)  # 3 tasks x 4 items, one call per item
    assert read_judgments(jdir / "rubric_compat.parquet") == []  # compat parsing is off by default
    claims = pl.read_parquet(jdir / "derived" / "claims.parquet")
    results = pl.read_parquet(jdir / "derived" / "claim_results.parquet")
    assert claims.height == results.height > 0  # every claim ends with an explicit result
    assert set(results["result"]) <= {"yes", "no", "unknown", "no_url", "fetch_error", "judge_error"}
    missing = results.filter(pl.col("url") == "https://example.com/missing-page")
    assert missing.height == 1 and missing["result"][0] == "fetch_error"  # not in the recorded pages
    assert missing["page_status"][0] == "not_fetched"
    verify = read_judgments(jdir / "verify.parquet")
    assert all(j.input_ids["url"] != "https://example.com/missing-page" for j in verify)  # no call for it

    summary = _summary(root)
    fw, lw = summary["footnote_writer"], summary["link_writer"]
    assert set(fw["by_category"]) == {"Open Consulting", "Literature Review", "Technical Details"}
    assert fw["metrics"]["coverage"]["n_defined"] == 3
    assert lw["report_outcomes"] == {"missing": 1, "ok": 2}
    assert lw["metrics"]["coverage"]["n_zero_missing"] == 1  # no report: coverage 0, counted
    assert lw["metrics"]["faithfulness"]["n_undefined"] == 1
    assert fw["claims"]["fetch_error"] == 1 and lw["claims"]["no_url"] == 2
    board = json.loads((root / "metrics" / "leaderboard.json").read_text())
    assert board["metrics"] == ["coverage", "faithfulness", "groundedness"]


def test_code_modes_run_and_differ(rb_params: dict, tmp_path: Path) -> None:
    bench = rb_params["benchmarks"]["researcherbench"]
    bench["judging"]["rubric"]["compat_authors_parsing"] = True
    bench["judging"]["extraction"].update({"reference_split": "authors", "section_join": "authors"})
    bench["scoring"]["factual"] = {"mode": "code"}
    root = run_benchmark(rb_params, "researcherbench", tmp_path / "code")
    jdir = root / "judgments" / "footnote_writer" / "main"
    assert read_judgments(jdir / "rubric.parquet") == []
    assert len(read_judgments(jdir / "rubric_compat.parquet")) == 12
    fw = _summary(root)["footnote_writer"]["metrics"]
    # the authors' "" glue merges the two paragraphs' boundary sentences (2 offline claims in q3), and in code
    # mode the fetch error is not cited: q3 groundedness 1/2 (paper mode: the fetch error is excluded, 1/1)
    claims = pl.read_parquet(jdir / "derived" / "claim_results.parquet").filter(pl.col("task_id") == "q3")
    assert sorted(claims["result"]) == ["fetch_error", "yes"]
    per_task = pl.read_parquet(root / "scores" / "footnote_writer.parquet")
    q3 = per_task.filter((pl.col("task_id") == "q3") & (pl.col("metric") == "groundedness"))["value"][0]
    assert q3 == pytest.approx(1 / 2)
    assert fw["faithfulness"]["n_defined"] == 3


def test_failed_judgments_are_failed_never_zero(rb_params: dict, tmp_path: Path) -> None:
    from reportbench.judges.tasks import get_task
    from reportbench.protocols.researcherbench import tasks as T

    def broken_extract(inputs, params):  # noqa: ANN001, ANN202
        if "Rotary" in inputs.section:
            raise RuntimeError("rule broke")
        return T.offline_extract(inputs, params)

    def broken_rubric(inputs, params):  # noqa: ANN001, ANN202
        if "warmup" in inputs.item:
            raise RuntimeError("rule broke")
        return T.offline_rubric(inputs, params)

    ext, rub = get_task(T.EXTRACT_TASK), get_task(T.RUBRIC_TASK)
    object.__setattr__(ext, "offline", broken_extract)
    object.__setattr__(rub, "offline", broken_rubric)
    try:
        root = run_benchmark(rb_params, "researcherbench", tmp_path / "out")
    finally:
        object.__setattr__(ext, "offline", T.offline_extract)
        object.__setattr__(rub, "offline", T.offline_rubric)
    per_task = pl.read_parquet(root / "scores" / "footnote_writer.parquet")
    row = {(r["task_id"], r["metric"]): r for r in per_task.iter_rows(named=True)}
    assert row[("q3", "coverage")]["status"] == "failed"  # the warmup item of q3 failed: NaN, not 0
    assert row[("q2", "faithfulness")]["status"] == "failed" and row[("q2", "groundedness")]["status"] == "failed"
    assert row[("q1", "coverage")]["status"] == "ok"
    fw = _summary(root)["footnote_writer"]["metrics"]
    assert (
        fw["coverage"]["n_failed"] == 1 and fw["faithfulness"]["n_failed"] == 1 and fw["groundedness"]["n_failed"] == 1
    )
    assert fw["coverage"]["n_defined"] == 2  # the failed question is excluded from the mean, never scored 0
