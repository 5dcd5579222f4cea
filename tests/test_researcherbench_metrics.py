"""ResearcherBench arithmetic, hand-computed: coverage Σwc/Σw, faithfulness/groundedness under every mode."""

from __future__ import annotations

import math

import pytest

from reportbench.protocols.researcherbench.metrics import FactualModes, coverage, factual, macro_mean

pytestmark = pytest.mark.core

NAN = math.nan


def test_coverage_weighted_sum_over_total_weight() -> None:
    # weights 3,2,2,1 with the 3 and one 2 covered: (3+2)/8
    assert coverage([(3, 1.0), (2, 1.0), (2, 0.0), (1, 0.0)]).value == pytest.approx(5 / 8)
    assert coverage([(1, 0.0), (2, 0.0)]).value == 0.0
    assert coverage([(1, 1.0), (3, 1.0)]).value == 1.0


def test_coverage_failure_modes() -> None:
    items = [(3, 1.0), (2, NAN), (1, 0.0)]
    failed = coverage(items)  # default nan: the question is failed, never 0
    assert failed.status == "failed" and math.isnan(failed.value)
    assert coverage(items, on_failure="exclude").value == pytest.approx(3 / 4)  # the failed item leaves Σw
    assert coverage(items, on_failure="miss").value == pytest.approx(3 / 6)  # authors: failed = not covered
    assert coverage([]).status == "undefined"
    with pytest.raises(ValueError):
        coverage(items, on_failure="zero")


def test_macro_mean_excludes_nan() -> None:
    assert macro_mean([0.5, NAN, 1.0]) == 0.75
    assert math.isnan(macro_mean([NAN]))


RESULTS = ["yes"] * 3 + ["no"] + ["unknown"] * 2 + ["no_url"] * 3 + ["fetch_error"]  # 10 claims


def test_factual_paper_defaults() -> None:
    # paper: unknown excluded everywhere, a fetch error is an unknown
    faith, ground, counts = factual(RESULTS)
    assert faith.value == pytest.approx(3 / 4)
    # cited = yes+no = 4; all claims minus unknowns (2 unknown + 1 fetch_error) = 7
    assert ground.value == pytest.approx(4 / 7)
    assert counts == {"yes": 3, "no": 1, "unknown": 2, "no_url": 3, "fetch_error": 1, "judge_error": 0}


def test_factual_code_preset() -> None:
    # HEAD code: unknown counts as cited, fetch error ("URL Error") only in N
    faith, ground, _ = factual(RESULTS, FactualModes.from_params({"mode": "code"}))
    assert faith.value == pytest.approx(3 / 4)
    assert ground.value == pytest.approx((3 + 1 + 2) / 10)


def test_factual_each_mode_alone() -> None:
    cited = FactualModes(unknown="cited")  # fetch error still an unknown -> cited
    assert factual(RESULTS, cited)[1].value == pytest.approx(7 / 10)
    not_cited = FactualModes(fetch_error="not_cited")  # unknown excluded; fetch error stays in N, not cited
    assert factual(RESULTS, not_cited)[1].value == pytest.approx(4 / 8)


def test_factual_empty_nan_or_zero() -> None:
    faith, ground, _ = factual(["no_url", "no_url"])  # no cited claim: faithfulness 0/0
    assert faith.status == "undefined" and math.isnan(faith.value)
    assert ground.value == 0.0  # 0 of 2 claims cited: defined
    faith0, _, _ = factual(["no_url"], FactualModes(empty="zero"))
    assert faith0.value == 0.0 and faith0.status == "ok"  # the authors' 0.0, averaged in
    f_none, g_none, _ = factual([])
    assert f_none.status == g_none.status == "undefined"
    assert factual([], FactualModes(empty="zero"))[1].value == 0.0
    # only unknowns: paper excludes them all -> groundedness 0/0
    assert factual(["unknown"])[1].status == "undefined"
    assert factual(["unknown"], FactualModes(unknown="cited"))[1].value == 1.0


def test_factual_judge_error_is_failed_or_excluded() -> None:
    res = ["yes", "no", "judge_error"]
    faith, ground, counts = factual(res)
    assert faith.status == ground.status == "failed" and counts["judge_error"] == 1
    faith_x, ground_x, _ = factual(res, FactualModes(on_failure="exclude"))
    assert faith_x.value == 0.5 and ground_x.value == 1.0


def test_factual_rejects_unknown_results_and_modes() -> None:
    with pytest.raises(ValueError):
        factual(["partially"])
    with pytest.raises(ValueError):
        FactualModes(unknown="maybe")
    with pytest.raises(ValueError):
        FactualModes.from_params({"mode": "neither"})
    with pytest.raises(ValueError):
        FactualModes.from_params({"typo": 1})
    assert FactualModes.from_params({"mode": "code", "empty": "nan"}).empty == "nan"  # explicit key wins
