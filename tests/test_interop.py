"""The authors' artefacts in and out (issue 22 §3), each round-tripped through a self-authored fixture in the
authors' format: ResearcherBench result files, LiveResearchBench summary JSON, ResearchQA released judgments ->
battles -> Elo and the notebook's leaderboard table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportbench.interop import liveresearchbench as lrb
from reportbench.interop import researcherbench as rb
from reportbench.interop import researchqa as rqa

pytestmark = pytest.mark.core


def test_researcherbench_evaluation_results_txt(tmp_path: Path) -> None:
    path = rb.write_evaluation_results(tmp_path, "my-system", [0.5, 0.33333, float("nan"), 1.0])
    assert path == tmp_path / "rubric_eval" / "my-system" / "my-system_evaluation_results.txt"
    assert path.read_text() == "Model: my-system\nAverage coverage: 0.6111\n" + "=" * 50 + "\n"
    assert rb.read_evaluation_results(path) == ("my-system", 0.6111)
    (tmp_path / "bad.txt").write_text("Model: x\nAverage: 1\n")
    with pytest.raises(ValueError, match="bad.txt"):
        rb.read_evaluation_results(tmp_path / "bad.txt")
    with pytest.raises(ValueError, match="no evaluated question"):
        rb.evaluation_results_text("x", [float("nan")])


def test_researcherbench_factual_results_json(tmp_path: Path) -> None:
    claims = [
        {"claim": "A holds.", "context": "ctx", "source": "https://a.example", "result": "Yes"},
        {"claim": "B holds.", "context": "ctx", "source": "https://b.example", "result": "Unknown"},
        {"claim": "C holds.", "context": "ctx", "source": "", "result": ""},
    ]
    rec = rb.factual_record(3, "my-system", claims, faithfulness=1.0, groundedness=2 / 3)
    path = rb.write_factual_results(tmp_path, "my-system", [rec])
    back = rb.read_factual_results(path)
    assert back == [rec] and back[0]["verified_claims"] == 1 and back[0]["total_claims"] == 3
    (tmp_path / "f.json").write_text(json.dumps([{"id": 1}]))
    with pytest.raises(ValueError, match="record 0: missing"):
        rb.read_factual_results(tmp_path / "f.json")


def test_liveresearchbench_summary_round_trip(tmp_path: Path) -> None:
    scores = {"sys-a": {"presentation": [80.0, 90.0, float("nan")], "coverage": [50.0]}, "sys-b": {"coverage": []}}
    summary = lrb.summary_json("openai", "gpt-5", "2026-01-01T00:00:00", scores)
    assert summary["results_by_model"]["sys-a"]["presentation"] == {
        "mean": 85.0, "count": 2, "min": 80.0, "max": 90.0, "n_left_out": 1,
        "left_out": {"undefined (reason not given)": 1}}  # the NaN is counted, not silently dropped
    assert summary["results_by_model"]["sys-b"]["coverage"]["mean"] is None  # nothing graded: no mean, never a 0
    assert summary["results_by_model"]["sys-b"]["presentation"]["reason"] == "no report was graded"
    path = lrb.write_summary(tmp_path / "summary_x.json", summary)
    assert lrb.read_summary(path) == {"sys-a": {"presentation": (85.0, 2), "coverage": (50.0, 1)}, "sys-b": {}}
    depth = {"results_by_model": {"s": {"depth": {"wins": 3, "losses": 1, "ties": 0, "total": 4, "win_rate": 0.75}}}}
    (tmp_path / "d.json").write_text(json.dumps(depth))
    assert lrb.read_summary(tmp_path / "d.json") == {"s": {"depth": (0.75, 4)}}
    (tmp_path / "e.json").write_text("{}")
    with pytest.raises(ValueError, match="results_by_model"):
        lrb.read_summary(tmp_path / "e.json")


def _released(tmp_path: Path) -> tuple[dict[str, dict[str, int]], list[dict[str, str]]]:
    """Self-authored released judgments: three systems, four sessions, labels chosen by hand."""
    labels = {
        "sys-x": ["Completely", "Mostly", "Barely", "Completely"],
        "sys-y": ["Mostly", "Mostly", "Moderately", "Not at all"],
        "sys-z": ["Barely", "Completely", "Completely", "Moderately"],
    }
    coverage = {}
    for system, per_session in labels.items():
        items = [
            {"corpusid_sectionid": f"s{i}", "rubric_judges_gpt": [{"score": lab}, {"score": "Moderately"}]}
            for i, lab in enumerate(per_session)
        ]
        (tmp_path / f"{system}_judge_gpt4.1mini.json").write_text(json.dumps(items))
        coverage[system] = rqa.read_coverage_judgments(tmp_path / f"{system}_judge_gpt4.1mini.json")
    pairwise = [
        {"session_id": "s0", "implementation_A": "sys-x", "implementation_B": "sys-y", "winner_judge": "B",
         "winner_judge_swapped": "B"},
        {"session_id": "s1", "implementation_A": "sys-y", "implementation_B": "sys-z", "winner_judge": "A",
         "winner_judge_swapped": "B"},
        {"session_id": "s2", "implementation_A": "sys-z", "implementation_B": "sys-x", "winner_judge": "A",
         "winner_judge_swapped": "A"},
        {"session_id": "s3", "implementation_A": "sys-x", "implementation_B": "sys-z", "winner_judge": "A",
         "winner_judge_swapped": "B"},
    ]
    return coverage, pairwise


def test_researchqa_released_judgments_to_battles(tmp_path: Path) -> None:
    coverage, pairwise = _released(tmp_path)
    assert coverage["sys-x"] == {"s0": 8, "s1": 7, "s2": 5, "s3": 8}
    # s0: x 8 vs y 7, two votes for y (+10) -> lose; s1: y 7 vs z 8, one vote each -> lose;
    # s2: z 8 vs x 5 + two votes for z -> win; s3: x 8 vs z 6, one vote each -> win
    assert rqa.ensemble_battles(coverage, pairwise) == [
        ("sys-x", "sys-y", "lose"), ("sys-y", "sys-z", "lose"), ("sys-z", "sys-x", "win"), ("sys-x", "sys-z", "win")
    ]
    # the paper's 4 points per vote changes s0: 8 vs 7 + 8 -> still lose; ties appear where sums meet
    assert rqa.ensemble_battles({"a": {"q": 5}, "b": {"q": 5}}, [
        {"session_id": "q", "implementation_A": "a", "implementation_B": "b", "winner_judge": "A",
         "winner_judge_swapped": "B"}]) == [("a", "b", "tie")]
    with pytest.raises(ValueError, match="verdict 'tie'"):
        rqa.ensemble_battles(coverage, [{**pairwise[0], "winner_judge": "tie"}])
    with pytest.raises(ValueError, match="no coverage judgment"):
        rqa.ensemble_battles(coverage, [{**pairwise[0], "session_id": "s9"}])
    bad = [{"corpusid_sectionid": "s0", "rubric_judges_gpt": [{"score": "?"}]}]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="unknown label"):
        rqa.read_coverage_judgments(tmp_path / "bad.json")


def test_researchqa_leaderboard_table_round_trip(tmp_path: Path) -> None:
    from reportbench.protocols.researchqa.rating import bootstrap_bt

    coverage, pairwise = _released(tmp_path)
    battles = rqa.ensemble_battles(coverage, pairwise) * 10
    y = {"win": 1.0, "lose": 0.0, "tie": 0.5}
    r = bootstrap_bt([a for a, _, _ in battles], [b for _, b, _ in battles], [y[s] for _, _, s in battles],
                     ties="duplicate", rounds=20, solver="per_round", order="factorize")
    rows = [{"system": t["system"], "mean": t["boot_mean"], "std": t["boot_std"]} for t in r.table(ddof=1)]
    path = rqa.write_leaderboard(tmp_path / "leaderboard.csv", rows)
    back = rqa.read_leaderboard(path)
    assert back == {row["system"]: (row["mean"], row["std"]) for row in rows}
    lines = path.read_text().splitlines()
    assert lines[0] == "system,mean,std,mean ± std" and len(lines) == 4
    assert [ln.split(",")[0] for ln in lines[1:]] == [s for s, _ in sorted(back.items(), key=lambda kv: -kv[1][0])]


def test_deepscholar_gt_nuggets_and_results_csv(tmp_path: Path) -> None:
    from reportbench.interop import deepscholar as ds

    nuggets = [
        {"text": "Method A beats B", "importance": "vital", "assignment": "support"},
        {"text": "Dataset C is used", "importance": "vital", "assignment": "partial_support"},
        {"text": "Prior work D", "importance": "okay", "assignment": "not_support"},
        {"text": "Survey E exists", "importance": "okay", "assignment": "support"},
    ]
    stored = {"strict_vital_score": 0.5, "strict_all_score": 0.5, "vital_score": 0.75, "all_score": 0.625}
    res = {"qid": "2501.00001v1", "nuggets": nuggets, "nuggets_metrics": stored}
    (tmp_path / "res.json").write_text(json.dumps(res))
    got = ds.read_gt_nuggets(tmp_path / "res.json")
    assert got.qid == "2501.00001v1" and got.metrics == stored and got.stored_metrics_agree
    off = {"qid": "q", "nuggets": nuggets, "nuggets_metrics": {**stored, "all_score": 1}}
    (tmp_path / "res2.json").write_text(json.dumps(off))
    assert not ds.read_gt_nuggets(tmp_path / "res2.json").stored_metrics_agree
    rows = {"sys-a": {"organization": 0.4567, "nugget_coverage": float("nan")}, "sys-b": {"organization": 0.5}}
    path = ds.write_results_csv(tmp_path / "results.csv", rows)
    assert path.read_text().splitlines() == ["baseline_name,nugget_coverage,organization", "sys-a,,0.46", "sys-b,,0.5"]
    assert ds.read_results_csv(path) == {
        "sys-a": {"nugget_coverage": None, "organization": 0.46},
        "sys-b": {"nugget_coverage": None, "organization": 0.5},
    }


def test_deepscholar_gt_nuggets_of_the_public_release_recompute(shared_dir: Path) -> None:
    """Every released res.json parses and its stored metrics are its nuggets' own (skips without ../shared)."""
    from reportbench.interop import deepscholar as ds

    files = sorted((shared_dir / "data" / "deepscholar-bench" / "dataset" / "gt_nuggets_outputs").glob("**/res.json"))
    if not files:
        pytest.skip("../shared/data/deepscholar-bench gt_nuggets_outputs not present")
    parsed = [ds.read_gt_nuggets(f) for f in files]
    assert len({p.qid for p in parsed}) == len(parsed)
    assert sum(p.stored_metrics_agree for p in parsed) == len(parsed)


def test_liveresearchbench_graded_results_agree_with_their_summary(tmp_path: Path) -> None:
    """Self-authored graded rows in their incremental JSONL format give the summary's means (the importer's
    consistency check between their two files)."""
    inc = tmp_path / "incremental"
    inc.mkdir()
    rows = [
        {"query_id": q, "model_name": m, "presentation_grading_results": {"summary": {"average_pass_rate": v}}}
        for q, m, v in (("q1", "sys-a", 80), ("q2", "sys-a", 60), ("q1", "sys-b", 90))
    ]
    (inc / "presentation_results.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    pw = [{"query_id": "q1", "model_name": "sys-a", "consistency_grading_results": {"total_issues": 2, "score": 70}}]
    (inc / "consistency_results.jsonl").write_text(json.dumps(pw[0]) + "\n")
    graded = lrb.read_graded(inc / "presentation_results.jsonl") + lrb.read_graded(inc / "consistency_results.jsonl")
    means = lrb.means_from_graded(graded)
    want = {"sys-a": {"presentation": (70.0, 2), "consistency": (70.0, 1)}, "sys-b": {"presentation": (90.0, 1)}}
    assert means == want
    summary = lrb.summary_json("openai", "gpt-5", "t", {"sys-a": {"presentation": [80, 60], "consistency": [70]},
                                                       "sys-b": {"presentation": [90]}})
    assert lrb.read_summary(lrb.write_summary(tmp_path / "s.json", summary)) == means
    (inc / "presentation_results.jsonl").write_text("\n".join(json.dumps(r) for r in [*rows, rows[0]]) + "\n")
    with pytest.raises(ValueError, match="line 4: \\(sys-a, q1\\) graded twice"):
        lrb.read_graded(inc / "presentation_results.jsonl")
