"""ResearchQA ratings and battles: Bradley–Terry with Elo scaling, bootstrap, tie modes, the battle sampler
and the ensemble rule (both modes) with the meta-evaluation partial-credit rules."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from reportbench.protocols.researchqa.battles import (
    battles_per_domain,
    direct_credit,
    ensemble_credit,
    ensemble_outcome,
    ensemble_score,
    sample_battles,
)
from reportbench.protocols.researchqa.rating import bootstrap_bt, group_battles, win_probability

pytestmark = pytest.mark.core


def synthetic_battles(strengths: dict[str, float], n: int, seed: int = 1, tie_rate: float = 0.03):
    rng = np.random.default_rng(seed)
    names = sorted(strengths)
    a, b, y = [], [], []
    for _ in range(n):
        i, j = rng.choice(len(names), size=2, replace=False)
        p = win_probability(strengths[names[i]], strengths[names[j]])
        u = rng.random()
        a.append(names[i])
        b.append(names[j])
        y.append(0.5 if u < tie_rate else 1.0 if u < tie_rate + (1 - tie_rate) * p else 0.0)
    return a, b, y


TRUE = {"s1": 1300.0, "s2": 1150.0, "s3": 1000.0, "s4": 900.0, "s5": 650.0}


def test_win_probability_anchor() -> None:
    assert win_probability(1505, 1244) == pytest.approx(0.818, abs=5e-4)
    assert win_probability(1099, 1244) == pytest.approx(0.303, abs=5e-4)
    assert win_probability(1149, 960) == pytest.approx(0.748, abs=5e-4)


def test_bt_recovers_known_strengths_and_averages_1000() -> None:
    a, b, y = synthetic_battles(TRUE, 20000, tie_rate=0.0)
    r = bootstrap_bt(a, b, y, rounds=0)
    got = dict(zip(r.models, r.point, strict=True))
    assert np.mean(r.point) == pytest.approx(1000.0, abs=1e-6)
    for m, v in TRUE.items():
        assert got[m] == pytest.approx(v, abs=25), m
    assert sorted(got, key=got.get) == sorted(TRUE, key=TRUE.get)


def test_tie_modes_share_the_point_estimate_but_not_the_spread() -> None:
    a, b, y = synthetic_battles(TRUE, 3000, tie_rate=0.3)
    dup = bootstrap_bt(a, b, y, ties="duplicate", rounds=0)
    half = bootstrap_bt(a, b, y, ties="half", rounds=0)
    assert np.allclose(dup.point, half.point, atol=0.05)
    a, b, y = synthetic_battles(TRUE, 3000, tie_rate=0.03)  # the authors' ~3% ties
    dup = bootstrap_bt(a, b, y, ties="duplicate", rounds=200)
    half = bootstrap_bt(a, b, y, ties="half", rounds=200)
    ratio = np.mean(np.std(half.boot, axis=0)) / np.mean(np.std(dup.boot, axis=0))
    assert 1.2 < ratio < 1.7  # ~sqrt(2): duplicated rows treat every battle as two independent ones


def test_duplicate_rows_are_the_authors_trick() -> None:
    g = group_battles(["x", "x"], ["y", "y"], [0.5, 1.0], ties="duplicate")
    assert g.n_rows == 4
    rows = {
        (int(m[0]), int(m[1]), float(o)): float(w) for m, o, w in zip(g.matchups, g.outcomes, g.weights, strict=True)
    }
    assert rows == {(0, 1, 0.0): 1.0, (0, 1, 1.0): 3.0}  # tie -> one win each way, the win twice
    h = group_battles(["x", "x"], ["y", "y"], [0.5, 1.0], ties="half")
    assert h.n_rows == 2 and sorted(h.outcomes.tolist()) == [0.5, 1.0]


def test_bootstrap_intervals_shrink_with_more_battles() -> None:
    widths = []
    for n in (500, 5000):
        a, b, y = synthetic_battles(TRUE, n, seed=3)
        t = bootstrap_bt(a, b, y, rounds=200).table()
        widths.append(np.mean([row["ci_high"] - row["ci_low"] for row in t]))
    assert widths[1] < widths[0] / 2


def test_bootstrap_is_seeded_and_solvers_agree() -> None:
    a, b, y = synthetic_battles(TRUE, 2000, seed=5)
    r1 = bootstrap_bt(a, b, y, rounds=50, seed=0)
    r2 = bootstrap_bt(a, b, y, rounds=50, seed=0)
    r3 = bootstrap_bt(a, b, y, rounds=50, seed=0, solver="per_round")
    assert np.array_equal(r1.boot, r2.boot)
    assert np.abs(r1.boot - r3.boot).max() < 0.1
    assert np.allclose(r1.boot.mean(axis=1), 1000.0)
    table = r1.table()
    assert [row["system"] for row in table] == ["s1", "s2", "s3", "s4", "s5"]
    assert all(row["ci_low"] <= row["boot_median"] <= row["ci_high"] for row in table)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError):
        group_battles(["a"], ["b"], [0.7])
    with pytest.raises(ValueError):
        group_battles(["a"], ["b"], [1.0], ties="third")
    assert bootstrap_bt([], [], [], rounds=10).models == []


# ------------------------------------------------------------------------------------------ battles
def test_battle_count_rule_matches_the_paper_total() -> None:
    per_domain_test = {"Health": 1650, "LifeEarth": 750, "EngCS": 650, "Phys": 350, "Soc": 150, "Hum": 150, "Econ": 50}
    assert sum(battles_per_domain(n, 1000) for n in per_domain_test.values()) == 7650


def test_sampler_balances_pairs_cycles_queries_randomises_sides() -> None:
    systems = ["a", "b", "c", "d"]
    queries = {"D1": [f"q{i}" for i in range(5)], "D2": [f"r{i}" for i in range(3)]}
    answered = {s: set(queries["D1"]) | set(queries["D2"]) for s in systems}
    t = sample_battles(queries, systems, answered, min_per_domain=30, seed=7)
    assert t.height == 60 and set(t["status"]) == {"ok"}
    d1 = t.filter(t["domain"] == "D1")
    pairs = Counter(tuple(sorted(p)) for p in zip(d1["system_a"], d1["system_b"], strict=True))
    assert len(pairs) == 6 and set(pairs.values()) == {5}  # 30 battles over C(4,2) = 6 pairs
    qs = Counter(d1["task_id"])
    assert set(qs) == set(queries["D1"]) and set(qs.values()) == {6}  # cycled evenly
    firsts = Counter(d1["system_a"])
    assert len(firsts) == 4  # A/B randomised: every system appears on the A side
    again = sample_battles(queries, systems, answered, min_per_domain=30, seed=7)
    assert again.equals(t)
    assert not sample_battles(queries, systems, answered, min_per_domain=30, seed=8).equals(t)


def test_a_missing_answer_requeues_the_battle() -> None:
    queries = {"D": ["q0", "q1", "q2"]}
    answered = {"a": {"q0", "q1", "q2"}, "b": {"q0", "q2"}, "c": set()}
    t = sample_battles(queries, ["a", "b", "c"], answered, min_per_domain=6, seed=0)
    ok = t.filter(t["status"] == "ok")
    assert all(q != "q1" for q in ok["task_id"])  # b never answered q1: its battles moved on
    assert int(t["requeued"].sum()) > 0
    assert (t.filter(t["status"] == "unplayable").height) == 4  # c answered nothing: kept, marked, not dropped
    assert t.height == 6


# ----------------------------------------------------------------------------------------- ensemble
def test_ensemble_code_mode_five_per_vote_on_1_to_5() -> None:
    # A: labels 5,5,4 (sum 14) and 0 votes; B: 3,3,3 (sum 9) and 2 votes -> 14 vs 9 + 10 = 19: B wins.
    assert ensemble_outcome([5, 5, 4], [3, 3, 3], 0, 2, "code") == (14.0, 19.0, 0.0)
    # code: two votes overturn a gap of up to 9; a gap of exactly 10 ties
    assert ensemble_outcome([5, 5, 5], [3, 1, 1], 0, 2, "code")[2] == 0.5
    assert ensemble_outcome([5, 5, 5], [3, 2, 1], 0, 2, "code")[2] == 0.0


def test_ensemble_paper_mode_four_per_vote_on_0_to_4() -> None:
    assert ensemble_score([5, 5, 4], 0, "paper") == 11.0  # 4 + 4 + 3
    assert ensemble_outcome([5, 5, 4], [3, 3, 3], 0, 2, "paper") == (11.0, 14.0, 0.0)
    # paper: a gap of 8 is a tie against two votes, one of 9 is not overturned
    assert ensemble_outcome([5, 5, 5], [3, 2, 2], 0, 2, "paper")[2] == 0.5
    assert ensemble_outcome([5, 5, 5], [2, 2, 2], 0, 2, "paper")[2] == 1.0
    # the +K offset cancels: equal coverage, split votes -> tie in both modes
    for mode in ("paper", "code"):
        assert ensemble_outcome([3, 4], [4, 3], 1, 1, mode)[2] == 0.5
    assert ensemble_score([1, 1], 1, "code", vote_weight=2) == 4.0
    with pytest.raises(ValueError):
        ensemble_score([1], 0, "other")


def test_partial_credit_rules() -> None:
    assert direct_credit("A", "A", "A") == 1.0
    assert direct_credit("A", "B", "A") == 0.5  # the two orders disagree
    assert direct_credit("A", None, "A") == 0.75  # one order right, the other a tie
    assert direct_credit("B", "B", "A") == 0.0
    assert direct_credit(None, None, "A") == 0.0
    assert ensemble_credit(0.5, "A") == 0.5  # ensemble tie
    assert ensemble_credit(1.0, "A") == 1.0 and ensemble_credit(0.0, "A") == 0.0


def test_ratings_from_toy_ensemble_battles() -> None:
    # strong always wins by coverage; weak always loses; the BT ratings order them and average 1000
    outcomes = []
    for _ in range(20):
        outcomes.append(("strong", "mid", ensemble_outcome([5, 5], [3, 3], 1, 1, "paper")[2]))
        outcomes.append(("mid", "weak", ensemble_outcome([3, 4], [2, 2], 1, 1, "paper")[2]))
        outcomes.append(("weak", "strong", ensemble_outcome([1, 1], [5, 4], 0, 2, "paper")[2]))
        outcomes.append(("mid", "strong", ensemble_outcome([4, 4], [4, 4], 1, 1, "paper")[2]))
        outcomes.append(("weak", "mid", ensemble_outcome([4, 4], [2, 3], 2, 0, "paper")[2]))
    a, b, y = zip(*outcomes, strict=True)
    r = bootstrap_bt(a, b, y, rounds=0)
    got = dict(zip(r.models, r.point, strict=True))
    assert got["strong"] > got["mid"] > got["weak"]
    assert math.isclose(np.mean(r.point), 1000.0, abs_tol=1e-6)


def test_missing_coverage_requeues_onto_a_reserve_battle() -> None:
    import polars as pl

    from reportbench.protocols.researchqa.battles import BATTLE_SCHEMA
    from reportbench.protocols.researchqa.benchmark import PAIRWISE_SCHEMA, ensemble_battles

    def battle(bid: str, task: str, a: str, b: str, reserve: bool = False) -> dict:
        return {
            "battle_id": bid,
            "domain": "D",
            "task_id": task,
            "system_a": a,
            "system_b": b,
            "requeued": 0,
            "status": "ok",
            "reserve": reserve,
        }

    battles = pl.DataFrame(
        [
            battle("D#0", "q1", "x", "y"),  # y's coverage on q1 failed -> re-queued onto D#2r
            battle("D#1", "q2", "x", "z"),  # z's coverage on q2 failed, no reserve for (x, z) -> counted
            battle("D#2r", "q2", "y", "x", reserve=True),
        ],
        schema=BATTLE_SCHEMA,
        orient="row",
    )
    votes = [("D#0", "ab", "A"), ("D#0", "ba", "A"), ("D#2r", "ab", "A"), ("D#2r", "ba", "B")]
    pairwise = pl.DataFrame(
        [
            {
                "battle_id": b,
                "order": o,
                "status": "ok",
                "verdict": None,
                "vote": v,
                "flagged": False,
                "error": None,
                "raw_output": None,
                "explanation": None,
                "judge_id": "t",
                "prompt_id": None,
            }
            for b, o, v in votes
        ],
        schema=PAIRWISE_SCHEMA,
        orient="row",
    )
    labels = {
        "x": {"q1": (["Mostly"], ["r0"]), "q2": (["Completely"], ["r0"])},
        "y": {"q1": (None, ["r0"]), "q2": (["Barely"], ["r0"])},
        "z": {"q2": (None, ["r0"])},
    }
    counts: dict[str, int] = {
        "battles": 0,
        "reserve": 0,
        "unplayable": 0,
        "requeued_coverage": 0,
        "missing_coverage": 0,
        "flagged_orders": 0,
        "rated": 0,
    }
    out = ensemble_battles(battles, pairwise, labels, "paper", None, counts)
    assert [o["battle_id"] for o in out] == ["D#2r"] and out[0]["requeued_from"] == "D#0"
    # y (A side of the reserve): Barely = 1 + one vote (4) = 5; x: Completely = 4 + one vote = 8 -> x wins
    assert (out[0]["score_a"], out[0]["score_b"], out[0]["outcome"]) == (5.0, 8.0, 0.0)
    assert counts["requeued_coverage"] == 1 and counts["missing_coverage"] == 1 and counts["reserve"] == 1
    assert counts["battles"] == 2 and counts["rated"] == 1


def test_reserve_battles_continue_the_round_robin() -> None:
    queries = {"D": [f"q{i}" for i in range(10)]}
    systems = ["a", "b", "c"]
    answered = {s: set(queries["D"]) for s in systems}
    plain = sample_battles(queries, systems, answered, min_per_domain=20, seed=1)
    with_reserve = sample_battles(queries, systems, answered, min_per_domain=20, seed=1, reserve_share=0.1)
    assert with_reserve.height == 22 and int(with_reserve["reserve"].sum()) == 2
    assert with_reserve.filter(~with_reserve["reserve"]).equals(plain)  # the main tournament is unchanged
