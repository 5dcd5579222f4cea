"""Issue 34: the evidence rule for plug-ins' metrics, per-category numbers and depth ties; detectors flag, protocols
score.

- DeepResearch Bench FACT: a task whose citations were never validated (pages not fetched) has no effective
  citations ("— no_pages"), and the authors'-format totals are None, not 0.0. On the authors' released claude-3-7
  submission offline (mirror at $REPORTBENCH_AUTHORS_MIRROR or ../shared/authors/mirror; skipped without it) every
  FACT cell, the leaderboard and the export say so.
- Per-category breakdowns follow the system value's rules (`summarise_by_group`).
- LiveResearchBench depth, code aggregation: ties only is "no_games: ties only", never 0.
- The refusal detector does not read "acting as an AI layer" or "I'll search…" chatter before a sourced report
  as a non-answer, and no protocol zeroes a flagged report.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from reportbench.metrics.aggregate import metric_row, rows_frame, summarise_by_group
from reportbench.metrics.registry import MetricSpec
from reportbench.reports.refusal import NON_ANSWER_FLAGS, PLAN, REFUSAL, detect

# ----------------------------------------------------------------------------------------------- FACT


@pytest.mark.core
def test_fact_effective_citations_need_a_validation() -> None:
    from reportbench_deepresearch_bench import fact

    unchecked = fact.TaskFact("1", 0, 0, n_citations=12, n_validated=0)
    assert fact.effective_citations(unchecked) is None  # 0 supported of nothing checked is not 0
    cites_nothing = fact.TaskFact("2", 0, 0, n_citations=0, n_validated=0)
    assert fact.effective_citations(cites_nothing) == 0.0  # the paper's 0: the report cites nothing
    all_unknown = fact.TaskFact("3", 0, 0, n_citations=2, n_validated=2)
    assert fact.effective_citations(all_unknown) == 0.0  # validated, none supported: a real 0
    checked = fact.TaskFact("4", 3, 1, n_citations=4)  # callers with only the two counts: validated = 4
    assert fact.effective_citations(checked) == 3.0


@pytest.mark.core
def test_fact_totals_are_none_when_nothing_was_validated() -> None:
    from reportbench_deepresearch_bench import fact

    tasks = [fact.TaskFact(str(i), 0, 0, n_citations=5, n_validated=0) for i in range(99)]
    tasks.append(fact.TaskFact("99", 0, 0, n_citations=0, n_validated=0))  # one cites nothing
    out = fact.summary(tasks)
    assert out["total_citations"] is None and out["total_valid_citations"] is None and out["valid_rate"] is None
    assert str(out["reason"]).startswith("no_pages") and out["n_unchecked"] == 99
    # one validated task: the totals rest on it (and the task citing nothing), the unchecked ones are left out
    tasks[0] = fact.TaskFact("0", 2, 1, n_citations=5, n_validated=3)
    out = fact.summary(tasks)
    assert out["total_valid_citations"] == 1.0 and out["n_tasks"] == 2 and out["n_unchecked"] == 98


def _mirror() -> Path:
    env = os.environ.get("REPORTBENCH_AUTHORS_MIRROR")
    root = Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "authors" / "mirror"
    hits = sorted(root.glob("Ayanami0730/deep_research_bench/*/data/test_data/raw_data/claude-3-7-sonnet-latest.jsonl"))
    if not hits:
        pytest.skip(f"no DeepResearch Bench mirror with the claude-3-7 submission under {root}")
    return hits[0].parents[3]


@pytest.mark.integration
def test_claude37_offline_fact_is_dash_with_reasons(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's case: offline, none of the 1,728 cited pages is fetched and no statement validated; every FACT
    cell, the system value, the leaderboard and the authors'-format export must say so, not print 0.0."""
    import yaml
    from reportbench_deepresearch_bench import CONF_DIR
    from reportbench_deepresearch_bench.benchmark import BENCHMARK

    from reportbench.benchmarks import register_benchmark
    from reportbench.config import composed_params
    from spine_helpers import refresh_plan, run_benchmark

    checkout = _mirror()
    monkeypatch.chdir(repo_root)
    register_benchmark(BENCHMARK, replace=True)
    p = composed_params(conf_dir=repo_root / "conf")
    p["judge"]["runtime"]["progress"] = False
    p["fetch"]["cache_path"] = str(tmp_path / "pages.sqlite")
    b = yaml.safe_load((CONF_DIR / "benchmarks" / "deepresearch_bench.yaml").read_text())["benchmarks"][
        "deepresearch_bench"
    ]
    b["release"] = yaml.safe_load((CONF_DIR / "deepresearch_bench" / "release" / "authors.yaml").read_text())
    # the mirror holds the tasks and criteria but not the reference reports (RACE's other article): a stand-in
    # reference is written so the release builds; only FACT, which never reads it, is asserted here
    layout = tmp_path / "layout"
    for rel in ("data/prompt_data/query.jsonl", "data/criteria_data/criteria.jsonl"):
        (layout / rel).parent.mkdir(parents=True, exist_ok=True)
        (layout / rel).write_bytes((checkout / rel).read_bytes())
    queries = [json.loads(x) for x in (checkout / "data/prompt_data/query.jsonl").read_text().splitlines() if x]
    ref = layout / "data/test_data/cleaned_data/reference.jsonl"
    ref.parent.mkdir(parents=True)
    ref.write_text(
        "".join(
            json.dumps({"id": q["id"], "prompt": q["prompt"], "article": "stand-in reference (not asserted)"}) + "\n"
            for q in queries
        ),
        encoding="utf-8",
    )
    b["release"]["path"] = b["release"]["source"] = str(layout)
    sub = checkout / "data" / "test_data" / "raw_data" / "claude-3-7-sonnet-latest.jsonl"
    b["systems"] = {"claude37": {"kind": "drb_jsonl", "path": str(sub)}}
    b["fetch_seeds"] = []
    p["benchmarks"] = {"deepresearch_bench": b}
    root = run_benchmark(refresh_plan(p), "deepresearch_bench", tmp_path / "run")

    per = pl.read_parquet(root / "scores" / "claude37.parquet")
    fact_rows = per.filter(pl.col("metric").is_in(["citation_accuracy", "effective_citations"]))
    assert fact_rows.height == 200
    numbers = fact_rows.filter(pl.col("value").is_not_nan())
    assert numbers.height == 0, numbers.head(5).to_dicts()
    assert fact_rows.filter(pl.col("reason").is_null()).height == 0  # every "—" has its reason
    summary = json.loads((root / "metrics" / "systems.json").read_text())["claude37"]
    for m in ("citation_accuracy", "effective_citations"):
        mean = summary["metrics"][m]["mean"]
        assert (mean is None or math.isnan(mean)) and summary["metrics"][m]["reason"] in ("no_pages", "not_checked")
    export = json.loads((root / "metrics" / "extra.json").read_text())["authors_results"]["claude37"]["fact"]
    assert export["total_citations"] is None and export["total_valid_citations"] is None
    assert str(export["reason"]).startswith("no_pages")
    lb = json.loads((root / "metrics" / "leaderboard.json").read_text())
    text = json.dumps(lb)
    row = next(r for r in lb["rows"] if r["system"] == "claude37")
    for m in ("citation_accuracy", "effective_citations"):
        cell = row.get("metrics", row).get(m, row.get(m))
        assert not isinstance(cell, (int, float)) or (isinstance(cell, float) and math.isnan(cell)), (m, cell)
    assert "no_pages" in text or "not_checked" in text


# ------------------------------------------------------------------------------------ per category


def _spec() -> MetricSpec:
    return MetricSpec("ground", "toy", "toy groundedness", no_evidence="no_pages", evidence="pages")


@pytest.mark.core
def test_a_category_resting_on_no_evidence_is_undefined() -> None:
    """The issue's case: Literature Review's 0.0 rested on tasks with no cited claim while the others had no page."""
    rows = [
        metric_row("s", "t1", "ground", 0.0, reason="zero: no claim cites a source"),
        metric_row("s", "t2", "ground", math.nan, "undefined", "no_pages: none of 3 pages fetched"),
        metric_row("s", "t3", "ground", 0.5),
        metric_row("s", "t4", "ground", math.nan, "undefined", "no_pages: none of 2 pages fetched"),
    ]
    out = summarise_by_group(rows_frame(rows), [_spec()], {"t1": "Lit", "t2": "Lit", "t3": "Tech", "t4": "Tech"})
    assert out["Lit"]["ground"] is None and out["Lit"]["reasons"] == {"ground": "no_pages"}
    assert out["Tech"]["ground"] == 0.5 and out["Tech"]["n_tasks"] == 2


@pytest.mark.core
def test_group_mean_groups_follow_the_evidence_rule() -> None:
    """DEER-style `group_mean`: a domain whose only defined task needed no evidence is NaN, not 0.0."""
    from reportbench.metrics.aggregate import summarise_metric

    spec = MetricSpec("g", "toy", "toy", aggregation="group_mean", group_by="domain", no_evidence="no_pages")
    rows = [
        metric_row("s", "t1", "g", 0.0, reason="zero: no claim cites a source", group="A"),
        metric_row("s", "t2", "g", math.nan, "undefined", "no_pages: nothing fetched", group="A"),
        metric_row("s", "t3", "g", 0.8, group="B"),
    ]
    out = summarise_metric(rows_frame(rows), spec)
    assert math.isnan(out["groups"]["A"]) and out["groups"]["B"] == 0.8


# ---------------------------------------------------------------------------------------- depth ties


@pytest.mark.core
def test_code_depth_ties_only_is_no_games_with_the_authors_zero_beside() -> None:
    from reportbench.protocols.liveresearchbench import rules as R
    from reportbench.protocols.liveresearchbench.benchmark import _code_depth_means

    code: dict[str, Any] = R.code_win_rates({"a": ["tie", "tie"], "b": ["tie"]})
    code["nondegenerate"] = R.code_win_rates({"a": ["tie"], "b": []})
    summary = {"metrics": {"depth_win_rate": {"mean": math.nan}, "depth_win_rate_nondegenerate": {"mean": math.nan}}}
    _code_depth_means(summary, code)
    m = summary["metrics"]["depth_win_rate"]
    assert math.isnan(m["mean"]) and m["reason"] == "no_games" and "ties only" in m["reason_detail"]
    assert m["authors_mean"] == 0.0


# ---------------------------------------------------------------------------------------- detectors


@pytest.mark.core
@pytest.mark.parametrize(
    "opening",
    [
        "Salesforce's Einstein sits on the CRM data, effectively acting as an AI layer on top of workflows.",
        "OpenAI positions itself as an AI disruptor in search.",
        "Regulators treat such systems as an AI\npolicy matter.",
    ],
)
def test_as_an_ai_in_a_sentence_is_not_a_refusal(opening: str) -> None:
    assert REFUSAL not in {f.flag for f in detect(opening + "\n\nMore text.", 3)}


@pytest.mark.core
def test_as_an_ai_language_model_refusal_is_still_a_refusal() -> None:
    assert REFUSAL in {f.flag for f in detect("As an AI language model, I cannot browse.", 0)}
    assert REFUSAL in {f.flag for f in detect("As an AI, I am unable to access these files.", 0)}


@pytest.mark.core
def test_search_chatter_before_a_sourced_report_is_not_a_plan() -> None:
    """DeepResearch Bench's claude-3-7 articles open with "I'll research … Now I'll search …" and then answer
    at length with 20 sources: a preamble, not a plan instead of an answer."""
    body = (
        "I'll research how governments invest. Now I'll search for strategies of sovereign funds.\n\n"
        + "## Findings\n\n"
        + "Norway's fund holds 1.5% of listed equities [1]. " * 80
    )
    assert PLAN not in {f.flag for f in detect(body, 20)}
    assert PLAN in {f.flag for f in detect(body[:300], 0)}  # the same sentences as the whole text: a plan


@pytest.mark.integration
def test_no_protocol_zeroes_a_flagged_report(repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A held-out-style LRB report with a reasoned "None found" (a sourced report) is not flagged: the finding is
    an answer (reports/refusal.py: the opening patterns flag only an unsourced text); its coverage is the coverage
    judge's (the authors' prompt grades each checklist item; it never zeroes a report). A flagged report scored as
    written: tests/test_refusal.py::test_lrb_flags_a_not_found_report_and_scores_it_as_written."""
    import shutil

    from spine_helpers import benchmark_params, run_benchmark

    monkeypatch.chdir(repo_root)
    params = benchmark_params(repo_root, "liveresearchbench")
    demo = repo_root / "data" / "demo" / "liveresearchbench" / "systems" / "careful_analyst"
    folder = tmp_path / "nonefound"
    shutil.copytree(demo, folder)
    first = sorted(folder.glob("*.md"))[0]
    head, rest = first.read_text(encoding="utf-8").split("\n", 1)
    first.write_text(
        head + "\n\nFinal decisions above EUR 50M: none found in the regulators' registers, for the reasons "
        "below.\n\n" + rest,
        encoding="utf-8",
    )
    params["benchmarks"]["liveresearchbench"]["systems"]["nonefound"] = {"kind": "folder", "path": str(folder)}
    root = run_benchmark(params, "liveresearchbench", tmp_path / "out")
    tid = first.name.removeprefix("qid_").removesuffix("_report.md")

    def coverage(system: str) -> dict[str, Any]:
        rows = pl.read_parquet(root / "scores" / f"{system}.parquet")
        return rows.filter((pl.col("task_id") == tid) & (pl.col("metric") == "coverage")).to_dicts()[0]

    cov = coverage("nonefound")
    assert cov["status"] == "ok" and cov["value"] > 0 and "not_found" not in str(cov["reason"])
    summary = json.loads((root / "metrics" / "systems.json").read_text())["nonefound"]
    assert tid not in (summary.get("detector_flags") or {})
    assert tid not in (summary.get("refusal_like_reports") or [])


def _shared_data() -> Path:
    env = os.environ.get("REPORTBENCH_SHARED")
    root = Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared"
    if not (root / "data").is_dir():
        pytest.skip(f"no shared data at {root / 'data'}")
    return root / "data"


@pytest.mark.integration
def test_detector_precision_on_the_authors_reports() -> None:
    """Every released report in ../shared/data (LRB reference reports, ResearcherBench answers, DeepScholar
    baselines; DeepResearch Bench's claude-3-7 articles when the mirror is there): only true non-answers are
    flagged (read by hand: docs/mapping.md). Today that is one LRB reference report that opens "I cannot satisfy
    your requirements as stated" — the issue's "as an AI" and the claude-3-7 "I'll search" openings are not."""
    import tempfile

    from reportbench.reports import load_report
    from reportbench.reports.refusal import detect_report

    data = _shared_data()
    bench = _load_bench()
    mirror = data.parent / "authors" / "mirror"
    flagged, n = set(), 0
    with tempfile.TemporaryDirectory() as tmp:
        for source, name, text in bench._texts(data, mirror if mirror.is_dir() else None):
            if not text.strip():
                continue
            n += 1
            path = Path(tmp) / "r.md"
            path.write_text(text, encoding="utf-8")
            hits = [f.flag for f in detect_report(load_report(path, task_id=name, system=source))]
            if set(hits) & set(NON_ANSWER_FLAGS):
                flagged.add((source, name))
    assert n >= 150
    assert flagged == {("liveresearchbench/reference_reports", "qid_review5q6iS0uJfnrUKg5h_report.md")}


def _load_bench() -> Any:
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "bench" / "detector_precision.py"
    spec = importlib.util.spec_from_file_location("detector_precision", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
