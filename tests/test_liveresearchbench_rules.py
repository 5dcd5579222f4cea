"""Hand-computed cases of DeepEval's rules: bins, checklists with missing/extra keys, depth aggregation in the
paper's and the code's form, E1/E2/E3 counting, and the strict parsers."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

from reportbench.judges.base import Judgment, ParseError
from reportbench.protocols.liveresearchbench import benchmark as B
from reportbench.protocols.liveresearchbench import rules as R
from reportbench.protocols.liveresearchbench import tasks as T

pytestmark = pytest.mark.core

BINS = {
    0: 100,
    1: 90,
    2: 90,
    3: 80,
    4: 80,
    5: 70,
    6: 70,
    7: 60,
    8: 60,
    9: 50,
    10: 50,
    11: 40,
    12: 40,
    13: 30,
    14: 30,
    15: 20,
    16: 20,
    17: 20,
    18: 10,
    19: 10,
    250: 10,
}


@pytest.mark.parametrize(("n", "score"), sorted(BINS.items()))
def test_issue_bins_every_boundary(n: int, score: int) -> None:
    assert R.issue_bin_score(n) == score


def test_issue_bins_reject_negative() -> None:
    with pytest.raises(ValueError):
        R.issue_bin_score(-1)


def test_pointwise_keeps_both_scores_and_flags_mismatches() -> None:
    ps = R.pointwise_score(["a", "b", "c"], total_issues=2, score_judge=90)
    assert (ps.n_issues, ps.score_count, ps.score_judge) == (3, 80, 90)
    assert ps.headline("count") == 80 and ps.headline("judge") == 90
    assert any("total_issues=2" in f for f in ps.flags) and any("judge score 90 != rubric 80" in f for f in ps.flags)
    assert R.pointwise_score([], 0, 100).flags == ()


def test_checklist_missing_and_extra_keys_in_both_modes() -> None:
    expected = ["q1", "q2", "q10"]
    answered = {"q1": 1, "q10": 1, "q99": 1}
    paper = R.checklist_score(expected, answered, "paper")
    assert math.isnan(paper.value) and math.isnan(paper.per_item["q2"])
    assert paper.missing == ("q2",) and paper.extra == ("q99",)
    code = R.checklist_score(expected, answered, "code")
    assert code.value == pytest.approx(200 / 3) and code.per_item["q2"] == 0.0  # q99 is NOT counted
    assert code.flags == ["missing keys ['q2']", "extra keys ignored ['q99']"]
    full = R.checklist_score(expected, {"q1": 1, "q2": 0, "q10": 1}, "paper")
    assert full.value == pytest.approx(200 / 3) and not full.flags
    pres = R.checklist_score([f"p{i}" for i in range(1, 11)], {f"p{i}": 1 for i in range(1, 11)} | {"p11": 1})
    assert pres.value == 100.0 and pres.extra == ("p11",)  # never above 100


def _call(e: int, r: int) -> R.DepthCall:
    """Dimension scores summing to e and r (granularity carries the remainder)."""

    def dims(total: int) -> dict[str, int]:
        base = {d: min(5, total // 5) for d in R.DEPTH_DIMENSIONS}
        base["granularity"] += total - sum(base.values())
        return base

    return R.DepthCall(dims(e), dims(r), "tie")


def test_depth_paper_aggregation_tie_at_delta_one() -> None:
    # judge g: orders (12 vs 10) and (14 vs 12) -> 13 vs 11; judge o: (10 vs 10) twice -> 10 vs 10
    # ensemble: 11.5 vs 10.5 -> |Δ| = 1 -> tie
    calls = {"g": [_call(12, 10), _call(14, 12)], "o": [_call(10, 10), _call(10, 10)]}
    assert R.paper_outcome(calls) == ("tie", 11.5, 10.5)
    # judge o now (11 vs 10) and (12 vs 10) -> 11.5 vs 10 ; ensemble 12.25 vs 10.5 -> Δ 1.75 -> eval wins
    calls["o"] = [_call(11, 10), _call(12, 10)]
    assert R.paper_outcome(calls) == ("eval", 12.25, 10.5)
    assert R.paper_outcome({"g": [_call(5, 8), _call(5, 8)]}) == ("ref", 5.0, 8.0)
    assert R.paper_outcome({"g": [], "o": [_call(1, 1)]})[0] == "failed"


def test_win_rate_ties_excluded_and_nan_without_decisive_game() -> None:
    rate, w, lost, t = R.win_rate(["eval", "ref", "tie", "eval"])
    assert (rate, w, lost, t) == (pytest.approx(2 / 3), 2, 1, 1)
    assert math.isnan(R.win_rate(["tie", "tie"])[0]) and math.isnan(R.win_rate([])[0])


def test_depth_code_aggregation() -> None:
    out = R.code_win_rates({"a": ["eval", "eval", "ref", "tie"], "b": ["tie", "tie"]})
    assert out["by_judge"]["a"]["win_rate"] == pytest.approx(200 / 3)
    # judge b played ties only: no rate of its own ("ties only"); the authors' 0 is kept beside and, while judge a
    # has decisive games, inside their ensemble mean, which lists b
    assert out["by_judge"]["b"]["win_rate"] is None and out["by_judge"]["b"]["authors_win_rate"] == 0.0
    assert out["win_rate"] == pytest.approx(100 / 3) and out["ties_only_judges"] == ["b"]


def test_citation_accuracy_counts_claim_with_several_sources() -> None:
    pairs = [("c1", "u1"), ("c1", "u2"), ("c1", "u3"), ("c2", "u1"), ("c2", "u4"), ("c3", "u5"), ("c3", "u6")]
    status = {"u1": "ok", "u2": "invalid", "u3": "ok", "u4": "ok", "u5": "blocked", "u6": "not_fetched"}
    relevant = {"u1": True, "u3": False, "u4": True}
    supported = {("c1", "u1"): False, ("c2", "u1"): True, ("c2", "u4"): False}
    c = R.count_errors(pairs, status, relevant, supported)
    assert (c.n_urls, c.e1, c.e2, c.e3, c.total) == (6, 1, 1, 2, 4)
    assert (c.blocked, c.not_checked, c.n_pairs) == (1, 1, 7)
    c2 = R.count_errors(pairs, status, relevant, supported, blocked_is_e1=True)
    assert (c2.e1, c2.blocked) == (2, 0)
    # a failed relevance judgment: the URL and its claims are not checked, not errors
    c3 = R.count_errors([("c1", "u1")], {"u1": "ok"}, {"u1": None}, {})
    assert (c3.total, c3.not_checked) == (0, 1)
    assert R.count_errors([], {}, {}, {}).n_urls == 0


# ----------------------------------------------------------------------------------------------- parsers
def _checklist(ev: dict) -> str:
    return json.dumps({"evaluations": ev})


def test_checklist_parser_normalises_key_spelling_only() -> None:
    out = T.parse_checklist(
        _checklist(
            {
                "P1": {"score": 1, "justification": "x"},
                "q01": {"score": 0, "justification": "y"},
                "extra": {"score": 1, "justification": "z"},
            }
        )
    )
    assert out.scores() == {"p1": 1, "q1": 0, "extra": 1}
    bad = [
        _checklist({"p1": {"score": "1", "justification": "x"}}),
        _checklist({"p1": {"score": True, "justification": "x"}}),
        _checklist({"p1": {"score": 2, "justification": "x"}}),
        _checklist({"p1": {"score": 1}}),
        _checklist({"p1": {"score": 1, "justification": "x"}, "P1": {"score": 0, "justification": "y"}}),
        "Here you go: " + _checklist({"p1": {"score": 1, "justification": "x"}}),
        json.dumps({"evaluations": {}, "summary": 1}),
    ]
    for raw in bad:
        with pytest.raises(ParseError):
            T.parse_checklist(raw)


def test_pointwise_parser_strict() -> None:
    ok = T.parse_pointwise(json.dumps({"specific_issues": ["a"], "total_issues": 1, "score": 90, "justification": "j"}))
    assert ok.value() == 90.0
    for data in (
        {"specific_issues": [], "total_issues": 0, "score": 5, "justification": "j"},
        {"specific_issues": [], "total_issues": "0", "score": 100, "justification": "j"},
        {"specific_issues": [], "total_issues": 0, "score": 100.0, "justification": "j"},
        {"specific_issues": [], "total_issues": 0, "score": 100},
    ):
        with pytest.raises(ParseError):
            T.parse_pointwise(json.dumps(data))


def _depth(winner: str, a: list[int], b: list[int], ta: int | None = None) -> str:
    def side(v: list[int], t: int | None) -> dict:
        return {**dict(zip(R.DEPTH_DIMENSIONS, v, strict=True)), "total": sum(v) if t is None else t}

    return json.dumps(
        {
            "winner": winner,
            "scores": {"A": side(a, ta), "B": side(b, None)},
            "justification": "j",
            "major_flaws": {"A": [], "B": ["f"]},
        }
    )


def test_depth_parser_validates_totals_and_keeps_the_winner_for_checking() -> None:
    out = T.parse_depth(_depth("B", [3, 3, 3, 3, 3], [1, 1, 1, 1, 1]))
    assert out.winner == "B" and out.winner_from_totals() == "A"  # kept, flagged later as a mismatch
    with pytest.raises(ParseError, match="not the sum"):
        T.parse_depth(_depth("A", [3, 3, 3, 3, 3], [1, 1, 1, 1, 1], ta=14))
    with pytest.raises(ParseError):
        T.parse_depth(_depth("Report A", [3, 3, 3, 3, 3], [1, 1, 1, 1, 1]))
    with pytest.raises(ParseError):
        T.parse_depth(_depth("A", [6, 3, 3, 3, 3], [1, 1, 1, 1, 1]))


def test_depth_row_maps_the_swapped_call_back() -> None:
    raw = _depth("A", [4, 4, 4, 4, 4], [1, 1, 1, 1, 1])  # ref_first: A is the reference
    j = Judgment(task="lrb_depth", item_id="x", judge_id="t", parsed=json.dumps(json.loads(raw)), value=15.0)
    row = B.depth_row(j, "ref_first")
    assert row["judge_winner"] == "ref" and row["totals_winner"] == "ref" and not row["winner_mismatch"]
    assert (row["eval_total"], row["ref_total"]) == (5, 20)
    failed = Judgment(task="lrb_depth", item_id="x", judge_id="t", status="failed", error="boom")
    assert B.depth_row(failed, "eval_first") == {"status": "failed", "error": "boom"}


def _depth_frame(rows: list[dict]) -> pl.DataFrame:
    full = []
    for r in rows:
        d = {k: None for k in B.DEPTH_SCHEMA}
        d.update({"system": "s", "task_id": "t1", "degenerate_reference": False, "status": "ok"})
        d.update(r)
        for side in ("eval", "ref"):
            tot = d.pop(f"{side}_sum", None)
            if tot is not None:
                for dim in R.DEPTH_DIMENSIONS:
                    d[f"{side}_{dim}"] = 0
                d[f"{side}_granularity"] = tot
        full.append(d)
    return pl.DataFrame(full, schema=B.DEPTH_SCHEMA, orient="row")


def test_depth_outcomes_need_both_orders_of_every_member() -> None:
    rows = [
        {"member": "g", "order": "eval_first", "eval_sum": 5, "ref_sum": 3, "judge_winner": "eval"},
        {"member": "g", "order": "ref_first", "eval_sum": 5, "ref_sum": 3, "judge_winner": "eval"},
        {"member": "o", "order": "eval_first", "eval_sum": 4, "ref_sum": 3, "judge_winner": "tie"},
        {"member": "o", "order": "ref_first", "eval_sum": 4, "ref_sum": 3, "judge_winner": "tie"},
    ]
    out = B.depth_outcomes(_depth_frame(rows), "s", ["g", "o"])
    assert out["t1"][:3] == ("eval", 4.5, 3.0)
    rows[3] = {"member": "o", "order": "ref_first", "status": "failed"}
    assert B.depth_outcomes(_depth_frame(rows), "s", ["g", "o"])["t1"][0] == "failed"


def test_offline_members_can_differ_through_rule_params() -> None:
    inp = T.ChecklistInput(
        query="q",
        report="The lumen teapot market size.",
        eval_date="November 12, 2025",
        criteria=[T.ChecklistLine(id="q1", text="Does it give the Lumen teapot market size, growth rate and share?")],
    )
    strict = T.TASKS[1].offline(inp, {}).output.scores()
    lenient = T.TASKS[1].offline(inp.model_copy(update={"rule_params": '{"coverage_recall": 0.5}'}), {}).output.scores()
    assert strict == {"q1": 0} and lenient == {"q1": 1}
    assert "rule_params" not in inp.prompt_values()
    with pytest.raises(ValueError, match="unknown"):
        T.rules('{"coverage_recal": 1}')
