"""DEER scoring: the authors' regression fixture (csai/1, gpt5.2_fast) reproduced exactly from its raw judge
scores and raw fact-check counts, plus hand-computed unit cases (spec §2.1-2.5, §7)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from reportbench.protocols.deer.rubric import CALLS, FACTORS, call_factors, rubric_items, skeleton
from reportbench.protocols.deer.scoring import (
    Claim,
    FactModes,
    Verification,
    amount_to_score,
    claim_label,
    cv_score,
    element_scores,
    fact_subdimensions,
    hhi_score,
    integrate,
    judge_dimensions,
    macro_over_domains,
    raw_metrics,
    sub_scores,
)

pytestmark = pytest.mark.core


@pytest.fixture(scope="module")
def fixture_dir(shared_dir: Path) -> Path:
    d = shared_dir / "data" / "deer" / "csai" / "gpt5.2_fast"
    if not (d / "others" / "0001.json").is_file():
        pytest.skip("../shared/data/deer regression fixture is not present")
    return d


def _factor_scores(others: dict) -> dict[str, float | None]:
    out = {}
    for g, subs in others["scores"].items():
        for s, els in subs.items():
            for e, fs in els.items():
                for fid, v in fs.items():
                    sc = v["score"]
                    out[f"{g}.{s}.{e}.{fid}"] = None if sc == "N/A" else sc
    return out


def _na(v: object) -> object:
    return None if v == "N/A" else v


# ------------------------------------------------------------------------------ the authors' fixture
def test_rubric_keys_are_exactly_the_authors_101(fixture_dir: Path) -> None:
    others = json.loads((fixture_dir / "others" / "0001.json").read_text())
    theirs = list(_factor_scores(others))
    assert theirs == [f.key for f in FACTORS]  # same keys, same order
    assert len(FACTORS) == 101 and sum(len(call_factors(c)) for c in CALLS) == 101
    assert [len(call_factors(c)) for c in CALLS] == [22, 24, 24, 17, 14]
    assert skeleton("format_style")["format_style"]["report_format"]["3"] == ["C3-2"]
    items = rubric_items()
    assert len(items) == 101 and {i.kind for i in items} == {"C", "Q"} and items[0].task_id == "*"


def test_element_and_subdimension_scores_match_the_authors(fixture_dir: Path) -> None:
    others = json.loads((fixture_dir / "others" / "0001.json").read_text())
    fs = _factor_scores(others)
    els = element_scores(fs)
    for g, subs in others["element_avgs"].items():
        for s, es in subs.items():
            for e, v in es.items():
                ours = els[(g, s, e)]
                for theirs, mine in (
                    (v["c_avg"], ours.c_avg),
                    (v["q_avg"], ours.q_avg),
                    (v["element_avg"], ours.value),
                ):
                    if _na(theirs) is None:
                        assert mine is None
                    else:
                        assert round(mine, 2) == pytest.approx(theirs, abs=1e-9)
    subs = judge_dimensions(fs)
    for g, s_map in others["criteria_avgs"].items():
        for s, v in s_map.items():
            assert subs[g][s] == _na(v), (g, s)


def test_fact_normalisation_reproduces_their_0_10_values(fixture_dir: Path) -> None:
    fact = json.loads((fixture_dir / "fact" / "0001.json").read_text())
    r = fact["raw"]
    raw = {
        "external_claim_accuracy": r["integrity"]["claim_factuality"]["external_claim_accuracy"],
        "citation_accuracy": r["integrity"]["citation_validity"]["citation_accuracy"],
        "supported_per_shown": r["integrity"]["reference_accuracy"]["supported_per_shown"],
        "reproducibility": r["integrity"]["reference_quality"]["reproducibility"],
        "reliability": r["integrity"]["reference_quality"]["reliability"],
        "diversity": r["integrity"]["reference_diversity"]["diversity_hhi"],
        "source_support": r["sufficiency"]["source_support"]["externally_verifiable_claims_ratio"],
        "information": r["sufficiency"]["information"],
        "citations": r["sufficiency"]["citations"],
        "references": r["sufficiency"]["references"],
    }
    ours = fact_subdimensions(raw)
    assert ours["information_integrity"] == fact["criteria_avgs"]["integrity"]
    assert ours["information_sufficiency"] == fact["criteria_avgs"]["sufficiency"]
    # and the HHI itself from their supported counts per URL
    sup = r["raw"]["reference_metrics"]["supported_cited_counts"]
    assert hhi_score(list(sup.values())) == pytest.approx(r["integrity"]["reference_diversity"]["diversity_hhi"])
    cited = r["raw"]["reference_metrics"]["cited_counts"]
    cv = r["integrity"]["reference_diversity"]["citations_CV"]
    assert cv_score(list(cited.values())) == pytest.approx(10 / (1 + cv))


def test_integration_reproduces_their_final_scores(fixture_dir: Path) -> None:
    others = json.loads((fixture_dir / "others" / "0001.json").read_text())
    fact = json.loads((fixture_dir / "fact" / "0001.json").read_text())
    final = json.loads((fixture_dir / "final" / "0001.json").read_text())
    fact_subs = {
        "information_integrity": fact["criteria_avgs"]["integrity"],
        "information_sufficiency": fact["criteria_avgs"]["sufficiency"],
    }
    out = integrate(judge_dimensions(_factor_scores(others)), fact_subs, recency="fold")
    theirs_criteria = {d: {s: _na(v) for s, v in subs.items()} for d, subs in final["criteria_avgs"].items()}
    assert out["criteria"] == theirs_criteria
    assert out["dimensions"] == final["score_avgs"]
    assert out["mean"] == round(sum(final["score_avgs"].values()) / 7, 2) == 6.16
    # the domain summary (pooled over the domain's tasks; one task here) is the same numbers
    pooled = json.loads((fixture_dir / "final.json").read_text())
    assert pooled["score_avgs"] == out["dimensions"]
    over = macro_over_domains({"ai-1": out["mean"]}, {"ai-1": "ai"})
    assert over == {"macro_over_domains": 6.16, "task_weighted": 6.16}


def test_raw_metrics_reproduce_the_fixture_counts_in_code_mode(fixture_dir: Path) -> None:
    """A synthetic claim set with the fixture's published counts gives their raw metrics (spec §4 example)."""
    fact = json.loads((fixture_dir / "fact" / "0001.json").read_text())
    rm = fact["raw"]["raw"]["reference_metrics"]
    urls = rm["used_references"]
    claims, verifs = [], []
    # 23 A/B/C claims (9 A, 11 B, 3 C): 13 supported; 24 A/B/C verifications, 13 supported
    sup_plan = {urls[2]: 9, urls[0]: 3, urls[1]: 1}  # 13 supported external verifications
    k = 0
    for t, n in (("A", 9), ("B", 11), ("C", 3)):
        for _ in range(n):
            claims.append(Claim(f"c{k}", t))
            k += 1
    ext_ids = [c.claim_id for c in claims]
    i = 0
    for url, cnt in sup_plan.items():
        for _ in range(cnt):
            verifs.append(Verification(ext_ids[i], url, "supported"))
            i += 1
    for j in range(11):  # 11 not supported external verifications on the 10 remaining claims + 1 repeat
        verifs.append(Verification(ext_ids[13 + (j % 10)], urls[3] if j < 3 else urls[2], "not_supported"))
    for t, n in (("D", 10), ("E", 46), ("F", 4)):
        for _ in range(n):
            claims.append(Claim(f"c{k}", t))
            k += 1
    # D/E/F that inherited citations: 4 supported on urls[0] (7 total supported there), 2 not supported
    for j in range(4):
        verifs.append(Verification(f"c{23 + j}", urls[0], "supported"))
    for j in range(2):
        verifs.append(Verification(f"c{27 + j}", urls[1], "not_supported"))
    raw = raw_metrics(claims, verifs, reliable_urls=urls[:3], shown_urls=urls, modes=FactModes.code())
    ivm = fact["raw"]
    assert raw["external_claim_accuracy"] == pytest.approx(
        ivm["integrity"]["claim_factuality"]["external_claim_accuracy"]
    )
    assert raw["claim_accuracy"] == pytest.approx(ivm["integrity"]["claim_factuality"]["claim_accuracy"])
    assert raw["citation_accuracy"] == pytest.approx(ivm["integrity"]["citation_validity"]["citation_accuracy"])
    assert raw["supported_per_shown"] == 0.75 and raw["reproducibility"] == 1.0 and raw["reliability"] == 0.75
    assert raw["source_support"] == pytest.approx(20 / 23)
    assert (raw["information"], raw["citations"], raw["references"]) == (69, 13, 3)
    assert raw["diversity"] == pytest.approx(ivm["integrity"]["reference_diversity"]["diversity_hhi"])
    assert raw["num_verifications"] == 30


# ----------------------------------------------------------------------------------- hand-computed
def test_element_mean_weighs_c_and_q_equally() -> None:
    fs = {
        "request_fulfillment.scope.1.C1-1": 2,
        "request_fulfillment.scope.1.C1-2": 4,
        "request_fulfillment.scope.1.C1-3": 6,
        "request_fulfillment.scope.1.C1-4": None,
        "request_fulfillment.scope.1.Q1-1": 10,
        "request_fulfillment.scope.1.Q1-2": None,
    }
    el = element_scores(fs)[("request_fulfillment", "scope", "1")]
    assert (el.c_avg, el.q_avg, el.value) == (4.0, 10.0, 7.0)  # not (2+4+6+10)/4 = 5.5


def test_na_propagates_to_element_sub_and_dimension() -> None:
    fs = {f.key: 5 for f in FACTORS}
    for f in FACTORS:
        if f.group == "ethics_compliance":
            fs[f.key] = None
        if f.key.startswith("analytical_soundness.quantification.1"):
            fs[f.key] = None
    subs = sub_scores(fs)
    assert subs[("ethics_compliance", "sensitive_handling")] is None
    assert subs[("analytical_soundness", "quantification")] == 5.0  # element 1 is N/A and skipped
    fact = {"information_integrity": {"claim_factuality": 1.0}, "information_sufficiency": {"information": 2.0}}
    out = integrate(judge_dimensions(fs), fact)
    assert out["dimensions"]["ethics_compliance"] is None  # all N/A: N/A, not 0
    assert out["mean"] is None
    assert element_scores({})[("format_style", "readability", "1")].value is None


def test_recency_fold_and_drop() -> None:
    judge = {"information_integrity": {"recency": 4.0}}
    fact = {"information_integrity": {"reference_quality": 7.0}, "information_sufficiency": {}}
    assert integrate(judge, fact, "fold")["criteria"]["information_integrity"]["reference_quality"] == 6.0
    assert integrate(judge, fact, "drop")["criteria"]["information_integrity"]["reference_quality"] == 7.0
    na = {"information_integrity": {"recency": None}}
    assert integrate(na, fact, "fold")["criteria"]["information_integrity"]["reference_quality"] == 7.0


def test_hhi_with_one_or_no_source_is_zero() -> None:
    assert hhi_score([]) == 0.0 and hhi_score([5]) == 0.0 and hhi_score([5, 0]) == 0.0
    assert hhi_score([3, 3]) == 10.0
    assert hhi_score([9, 7, 1]) == pytest.approx(10 * (1 - (131 / 289 - 1 / 3) / (2 / 3)))
    assert cv_score([]) == 0.0 and cv_score([4, 4]) == 10.0


@pytest.mark.parametrize(
    ("n", "d", "want"),
    [
        (0, 15, 0),
        (1, 15, 1),
        (15, 15, 1),
        (16, 15, 2),
        (135, 15, 9),
        (136, 15, 10),
        (999, 15, 10),
        (10, 10, 1),
        (11, 10, 2),
        (91, 10, 10),
        (90, 10, 9),
        (4, 4, 1),
        (5, 4, 2),
        (37, 4, 10),
        (36, 4, 9),
    ],
)
def test_count_buckets(n: int, d: int, want: int) -> None:
    assert amount_to_score(n, d) == want


def test_best_label_over_urls() -> None:
    c = Claim("x", "A", urls=["u1", "u2"])
    assert claim_label(c, [Verification("x", "u1", "error"), Verification("x", "u2", "supported")]) == "supported"
    assert (
        claim_label(c, [Verification("x", "u1", "error"), Verification("x", "u2", "not_supported")]) == "not_supported"
    )
    assert claim_label(c, []) == "unverified"


def test_zero_denominators_zero_or_nan_and_paper_formulas() -> None:
    raw = raw_metrics([], [], [], [], FactModes.code())
    assert raw["external_claim_accuracy"] == 0.0 and raw["reproducibility"] == 0.0 and raw["diversity"] == 0.0
    subs = fact_subdimensions(raw)
    assert subs["information_integrity"] == {k: 0.0 for k in subs["information_integrity"]}
    nan = raw_metrics([], [], [], [], FactModes(zero_denominator="nan"))
    assert math.isnan(nan["external_claim_accuracy"])
    assert fact_subdimensions(nan)["information_integrity"]["claim_factuality"] is None
    claims = [Claim("a", "A"), Claim("b", "B"), Claim("c", "C"), Claim("d", "D"), Claim("e", "E")]
    verifs = [Verification("a", "u", "supported"), Verification("d", "u", "supported")]
    paper = raw_metrics(claims, verifs, [], ["u"], FactModes())
    code = raw_metrics(claims, verifs, [], ["u"], FactModes.code())
    assert paper["source_support"] == 3 / 5 and code["source_support"] == 2 / 3
    assert paper["information"] == 1 and code["information"] == 3  # code: +all D and E


def test_macro_over_domains_vs_task_weighted() -> None:
    out = macro_over_domains(
        {"p1": 2.0, "p2": 2.0, "p3": 2.0, "h1": 8.0},
        {"p1": "physics", "p2": "physics", "p3": "physics", "h1": "history"},
    )
    assert out["macro_over_domains"] == 5.0 and out["task_weighted"] == 3.5
