"""DeepResearch Bench arithmetic, hand-computed: RACE weights and relative scores (paper and the authors' code),
FACT citation accuracy and effective citations, and the authors' JSON extractor as a parser mode."""

from __future__ import annotations

import json

import pytest
from reportbench_deepresearch_bench import fact, race
from reportbench_deepresearch_bench.authors_json import extract_json
from reportbench_deepresearch_bench.tasks import parse_race, parse_race_authors

from reportbench.judges.base import ParseError

pytestmark = pytest.mark.core

CRITERIA = [
    race.Criterion("comprehensiveness", "c1", "e", 0.6),
    race.Criterion("comprehensiveness", "c2", "e", 0.4),
    race.Criterion("insight", "i1", "e", 1.0),
    race.Criterion("instruction_following", "f1", "e", 1.0),
    race.Criterion("readability", "r1", "e", 1.0),
]
W = {"comprehensiveness": 0.3, "insight": 0.3, "instruction_following": 0.25, "readability": 0.15}
SCORES = {
    ("comprehensiveness", "c1"): (8, 6),
    ("comprehensiveness", "c2"): (5, 5),
    ("insight", "i1"): (7, 7),
    ("instruction_following", "f1"): (9, 3),
    ("readability", "r1"): (6, 8),
}


def items(skip: tuple[str, ...] = (), **over: tuple[float | None, float | None]) -> list[race.ScoreItem]:
    out = []
    for (d, c), (t, r) in SCORES.items():
        if c in skip:
            continue
        t, r = over.get(c, (t, r))
        out.append(race.ScoreItem(d, c, t, r))
    return out


def test_race_paper_weights_and_relative_score() -> None:
    s = race.weighted_scores(items(), CRITERIA, W, "paper")
    # comprehensiveness: 0.6*8 + 0.4*5 = 6.8 (target), 0.6*6 + 0.4*5 = 5.6 (reference)
    assert s.target_dims["comprehensiveness"] == pytest.approx(6.8)
    assert s.reference_dims["comprehensiveness"] == pytest.approx(5.6)
    # S_int: 0.3*6.8 + 0.3*7 + 0.25*9 + 0.15*6 = 7.29 ; 0.3*5.6 + 0.3*7 + 0.25*3 + 0.15*8 = 5.73
    assert s.target_total == pytest.approx(7.29)
    assert s.reference_total == pytest.approx(5.73)
    res = race.task_result(s, "paper")
    assert res["overall_score"] == pytest.approx(7.29 / 13.02)
    assert res["comprehensiveness"] == pytest.approx(6.8 / 12.4)
    assert res["instruction_following"] == pytest.approx(0.75)
    assert res["insight"] == pytest.approx(0.5)


def test_race_code_equals_paper_on_a_complete_answer() -> None:
    paper = race.task_result(race.weighted_scores(items(), CRITERIA, W, "paper"), "paper")
    code = race.task_result(race.weighted_scores(items(), CRITERIA, W, "code"), "code")
    assert code == pytest.approx(paper)


def test_race_missing_criterion_fails_in_paper_and_renormalises_in_code() -> None:
    with pytest.raises(race.RaceError, match="not scored"):
        race.weighted_scores(items(skip=("c2",)), CRITERIA, W, "paper")
    s = race.weighted_scores(items(skip=("c2",)), CRITERIA, W, "code")
    assert s.target_dims["comprehensiveness"] == pytest.approx(8.0)  # 0.6*8 / 0.6
    assert s.reference_dims["comprehensiveness"] == pytest.approx(6.0)


def test_race_code_quirks_fuzzy_match_and_last_item_reference() -> None:
    its = [race.ScoreItem("comprehensiveness", "C1", 8, 6), race.ScoreItem("comprehensiveness", "c2 extra", 5, None)]
    s = race.weighted_scores(its, CRITERIA, W, "code")
    assert s.target_dims["comprehensiveness"] == pytest.approx(6.8)  # C1 case-insensitive, 'c2' substring
    assert s.reference_dims["comprehensiveness"] == 0.0  # the last item has no article_2_score: the whole dim is 0
    assert s.unmatched == ()
    unknown = race.weighted_scores([race.ScoreItem("insight", "zzz", 4, 2)], CRITERIA, W, "code")
    assert unknown.unmatched == ("insight:zzz",) and unknown.target_dims["insight"] == 4.0  # mean weight
    # dimensions absent from the answer add 0 to the total in code mode
    assert unknown.target_total == pytest.approx(0.3 * 4)


def test_relative_zero_denominator_is_undefined_in_paper_zero_in_code() -> None:
    assert race.relative(0.0, 0.0, "paper") is None
    assert race.relative(0.0, 0.0, "code") == 0.0
    assert race.relative(3.0, 1.0) == 0.75


def test_paper_rejects_duplicates_and_foreign_criteria() -> None:
    with pytest.raises(race.RaceError, match="twice"):
        race.weighted_scores([*items(), race.ScoreItem("insight", "i1", 1, 1)], CRITERIA, W, "paper")
    with pytest.raises(race.RaceError, match="not one of"):
        race.weighted_scores([*items(), race.ScoreItem("insight", "other", 1, 1)], CRITERIA, W, "paper")


def test_fact_accuracy_and_effective_citations() -> None:
    a = fact.TaskFact("a", supported=3, unsupported=1, n_citations=5)  # one pair judged unknown
    b = fact.TaskFact("b", supported=0, unsupported=0, n_citations=0)
    c = fact.TaskFact("c", 0, 0, 2, failed=True)
    assert fact.citation_accuracy(3, 1) == 0.75
    assert fact.citation_accuracy(0, 0) is None  # undefined, not 0
    assert fact.effective_citations(a) == 3.0
    assert fact.effective_citations(b, "paper") == 0.0
    assert fact.effective_citations(b, "code") is None
    assert fact.effective_citations(c) is None
    assert fact.summary([a, b, c], "paper") == {
        "total_citations": 2.0,
        "total_valid_citations": 1.5,
        "valid_rate": 0.75,
        "n_tasks": 2,
    }
    assert fact.summary([a, b, c], "code") == {
        "total_citations": 4.0,
        "total_valid_citations": 3.0,
        "valid_rate": 0.75,
        "n_tasks": 1,
    }
    assert fact.count_results([{"result": "supported"}, {"result": "unknown"}, {"result": "unsupported"}]) == (1, 1)


ANSWER = {d: [{"criterion": "x", "article_1_score": 7, "article_2_score": 5}] for d in race.DIMENSIONS}


def test_race_parsers_strict_vs_authors() -> None:
    text = "Here are my scores:\n```json\n" + json.dumps(ANSWER) + "\n```\nThanks."
    with pytest.raises(ParseError):
        parse_race(text)
    assert parse_race_authors(text).insight[0].article_1_score == 7.0
    assert extract_json(text) == json.dumps(ANSWER)
    # the keyword scrape (their method 6) rebuilds the object from a broken answer
    broken = '"comprehensiveness": [{"criterion": "a", "article_1_score": 6, "article_2_score": 4,}] "insight"'
    assert json.loads(extract_json(broken) or "{}")["comprehensiveness"][0]["article_2_score"] == 4.0
    with pytest.raises(ParseError, match="missing expected dimensions"):
        parse_race_authors(json.dumps({"insight": []}))
