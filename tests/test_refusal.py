"""Issue 21 §5: refusals and plans are not answers — one detector for every benchmark, flags in the outcomes,
and the protocol deciding what a flagged report scores (issue 34: detectors flag, protocols score; no benchmark
here zeroes a flagged report: LRB's coverage judge grades each checklist item as written).

Fixtures (tests/fixtures/refusal/, self-authored): one report per pattern and a real answer that mentions
"next steps" and "no significant effect was found" and must not be flagged.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reportbench.reports import load_report
from reportbench.reports.refusal import NO_REFERENCES, NOT_FOUND, PLAN, REFUSAL, detect, flags_of, non_answer
from reportbench.systems import run_system
from reportbench.types import Task

FIX = Path(__file__).parent / "fixtures" / "refusal"


def _report(name: str):  # noqa: ANN202
    return load_report(FIX / name, task_id="t", system="s")


@pytest.mark.core
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("refusal.md", {REFUSAL, NO_REFERENCES}),
        ("plan.md", {PLAN, NO_REFERENCES}),
        ("plan_sentences.md", {PLAN, NO_REFERENCES}),
        ("not_found.md", {NOT_FOUND, NO_REFERENCES}),
        ("no_references.md", {NO_REFERENCES}),
        ("real_answer.md", set()),
    ],
)
def test_each_pattern_is_flagged_and_a_real_answer_is_not(name: str, expected: set[str]) -> None:
    assert set(flags_of(_report(name))) == expected


@pytest.mark.core
def test_the_issue_example_is_not_found_wherever_its_sources_line_is() -> None:
    body = "Here is the summary.\n\n" + "The market grew in 2024. " * 100 + "\n\nSources: None provided\n"
    assert NOT_FOUND in {f.flag for f in detect(body, 0)}
    later = "A long report. " * 200 + "We could not find any data on this."  # past the opening: not flagged
    assert NOT_FOUND not in {f.flag for f in detect(later, 3)}


@pytest.mark.core
def test_non_answer_is_what_protocols_score() -> None:
    assert non_answer(_report("plan.md")) == PLAN
    assert non_answer(_report("no_references.md")) is None  # cites nothing, but it answers


@pytest.mark.core
def test_flags_reach_the_outcomes(tmp_path: Path) -> None:
    tasks = [Task(task_id=t, title=t, task_prompt=t) for t in ("refusal", "real_answer")]
    folder = tmp_path / "f"
    folder.mkdir()
    for t in ("refusal", "real_answer"):
        (folder / f"{t}.md").write_text((FIX / f"{t}.md").read_text())
    outcomes = {o.task_id: o for o in run_system("s", {"kind": "folder", "path": str(folder)}, tasks, tmp_path / "o")}
    assert outcomes["refusal"].flags == [NO_REFERENCES, REFUSAL] and outcomes["real_answer"].flags == []


@pytest.mark.integration
def test_lrb_flags_a_not_found_report_and_scores_it_as_written(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """"No primary-source materials were provided … Sources: None provided": flagged `not_found` with the span;
    its coverage is the coverage judge's grading (the detector never sets a score, issue 34)."""
    import json
    import shutil

    import polars as pl

    from spine_helpers import benchmark_params, run_benchmark

    monkeypatch.chdir(repo_root)
    params = benchmark_params(repo_root, "liveresearchbench")
    demo = repo_root / "data" / "demo" / "liveresearchbench" / "systems" / "careful_analyst"
    folder = tmp_path / "noanswer"
    shutil.copytree(demo, folder)
    first = sorted(folder.glob("*.md"))[0]
    original = first.read_text(encoding="utf-8")
    # the not-found note of an unsourced text (no reference list, no markers): a sourced report's caveat is an
    # answer, not a non-answer (reports/refusal.py; test_evidence_rule.py::test_no_protocol_zeroes_a_flagged_report)
    unsourced = re.sub(r" ?\[\d+\]", "", original.split("### Sources")[0])
    first.write_text(
        unsourced.split("\n", 1)[0] + "\n\nNo primary-source materials were provided for this request; the figures "
        "below are indicative only.\n\n" + unsourced.split("\n", 1)[1] + "\n\nSources: None provided\n",
        encoding="utf-8",
    )
    params["benchmarks"]["liveresearchbench"]["systems"]["noanswer"] = {"kind": "folder", "path": str(folder)}
    root = run_benchmark(params, "liveresearchbench", tmp_path / "out")
    tid = first.name.removeprefix("qid_").removesuffix("_report.md")
    rows = pl.read_parquet(root / "scores" / "noanswer.parquet").filter(pl.col("task_id") == tid)
    cov = rows.filter(pl.col("metric") == "coverage").to_dicts()[0]
    assert cov["status"] == "ok" and cov["value"] > 0 and "not_found" not in str(cov["reason"])
    ref = pl.read_parquet(root / "scores" / "careful_analyst.parquet")
    assert ref.filter((pl.col("task_id") == tid) & (pl.col("metric") == "coverage"))["value"][0] > 0
    summary = json.loads((root / "metrics" / "systems.json").read_text())["noanswer"]
    assert summary["refusal_like_reports"] == [tid] and summary["non_answer_reports"]["not_found"] == 1
    assert "No primary-source materials" in summary["detector_flags"][tid]["span"]


@pytest.mark.core
@pytest.mark.parametrize(
    "text",
    ["\n" * 400_000, " " * 400_000, ("Sources" + " " * 50 + "\n") * 5_000, "#" * 400_000, "I will " * 60_000,
     "no " * 130_000, ("*_ " * 100_000) + "Sources"],
    ids=["newlines", "spaces", "many-heading-like-lines", "hashes", "repeated-plan", "repeated-no", "emphasis-run"],
)
def test_the_detector_is_linear_on_hostile_text(text: str) -> None:
    """Untrusted text: every pattern is bounded (the opening) or one line at a time (issue 26: no quadratic regex)."""
    import time

    start = time.thread_time()  # this thread's CPU time: what a quadratic regex burns, whatever the machine's load
    detect(text, 0, text)
    assert time.thread_time() - start < 1.0


def _labelled_bench():
    """bench/detector_precision.py as a module (bench/ is not a package)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "bench" / "detector_precision.py"
    spec = importlib.util.spec_from_file_location("detector_precision", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.core
def test_the_tune_split_of_the_labelled_set_is_flagged_exactly() -> None:
    """bench/data/detector_labelled.jsonl, split `tune`: a sourced disclaimer ("I cannot provide medical advice,
    but …"), an asked-for "Action plan", an "I will review …" lead-in and a reasoned "None found" (the issue's LRB
    case) are answers; every labelled non-answer is flagged with its kind."""
    bench = _labelled_bench()
    items = [it for it in bench.labelled_items(bench.LABELLED) if it["split"] == "tune"]
    result = bench.score_labelled(items)["tune"]
    wrong = [(it["id"], it["label"], it["flags"]) for it in items
             if bool(it["flags"]) != (it["label"] in bench.NON_ANSWER_LABELS)]
    assert not wrong
    assert result["precision"] == 1.0 and result["exact"] == result["true_positives"] == result["positives"] == 9


@pytest.mark.core
def test_the_held_out_split_figures_in_docs_mapping() -> None:
    """The held-out split (never used to change the patterns) as docs/mapping.md §5 reports it: 9 of 9 flags
    true (precision 1.00; 0.69 before the unsourced-only rule), recall 9/9. A change to the patterns re-measures
    (`python bench/detector_precision.py --labelled`) and updates the docs: this pins the published figure."""
    bench = _labelled_bench()
    items = [it for it in bench.labelled_items(bench.LABELLED) if it["split"] == "heldout"]
    result = bench.score_labelled(items)["heldout"]
    assert (result["n"], result["positives"], result["flagged"], result["true_positives"]) == (20, 9, 9, 9)
