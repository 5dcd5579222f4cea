"""Agreement statistics, records, sampling, the judge-card schema and the annotation page (pure, fast)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from reportbench.agreement import metrics as M
from reportbench.agreement.annotate import label_choices, render_page, sample
from reportbench.agreement.card import build_card, card_markdown, validate_card, write_card
from reportbench.agreement.compare import compare_task, position_consistency, self_consistency
from reportbench.agreement.records import (
    HumanLabelError,
    Rating,
    ratings_from_judgments,
    read_human_labels,
    write_human_labels,
)
from reportbench.agreement.sampling import stratified_sample
from reportbench.judges.base import Judgment

pytestmark = pytest.mark.core


def test_kappa_worked_examples() -> None:
    # po = 0.75, pe = 0.5*0.25 + 0.5*0.75 = 0.5 -> kappa 0.5
    assert M.cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.5)
    assert M.cohen_kappa(list("abab"), list("abab")) == pytest.approx(1.0)
    assert math.isnan(M.cohen_kappa([1, 1], [1, 1]))  # no chance disagreement: undefined, not 1 or 0
    assert math.isnan(M.cohen_kappa([], []))


def test_quadratic_kappa_matches_the_pairwise_definition() -> None:
    a = [0, 1, 2, 2, 1, 0, 2, 1]
    b = [0, 2, 2, 1, 1, 0, 0, 1]
    n, k = len(a), 3
    # 1 - sum_ij w_ij O_ij / sum_ij w_ij E_ij with w = ((i-j)/(k-1))^2, written out independently
    obs = sum(((x - y) / (k - 1)) ** 2 for x, y in zip(a, b, strict=True)) / n
    exp = sum(((x - y) / (k - 1)) ** 2 for x in a for y in b) / (n * n)
    assert M.cohen_kappa(a, b, [0, 1, 2], "quadratic") == pytest.approx(1 - obs / exp)
    # an off-by-one disagreement costs less than an off-by-two one
    near = M.cohen_kappa([0, 1, 2, 2], [1, 1, 2, 2], [0, 1, 2], "quadratic")
    far = M.cohen_kappa([0, 1, 2, 2], [2, 1, 2, 2], [0, 1, 2], "quadratic")
    assert near > far


def test_accuracy_macro_f1_and_majority_floor() -> None:
    ref = ["s", "s", "s", "n"]
    pred = ["s", "s", "n", "n"]
    assert M.accuracy(pred, ref) == 0.75
    # F1(s) = 2*2/(2*2+0+1) = 0.8, F1(n) = 2*1/(2*1+1+0) = 2/3
    assert M.macro_f1(ref, pred) == pytest.approx((0.8 + 2 / 3) / 2)
    assert M.majority_floor(ref) == 0.75
    assert math.isnan(M.majority_floor([]))


def test_rank_correlations_are_nan_when_undefined() -> None:
    assert M.kendall_tau([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert M.kendall_tau([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(M.kendall_tau([1, 1, 1], [1, 2, 3]))
    assert math.isnan(M.spearman([1, 2], [1, 2]))


def test_bootstrap_resamples_groups_and_is_seeded() -> None:
    groups = {"t1": [0, 1], "t2": [2, 3], "t3": [4, 5]}
    values = [1, 1, 0, 0, 1, 0]

    def stat(idx: list[int]) -> float:
        return sum(values[i] for i in idx) / len(idx)

    lo, hi = M.bootstrap_ci(groups, stat, n_boot=200, seed=3)
    assert 0.0 <= lo <= 0.5 <= hi <= 1.0
    assert (lo, hi) == M.bootstrap_ci(groups, stat, n_boot=200, seed=3)
    assert all(math.isnan(x) for x in M.bootstrap_ci({"only": [0, 1]}, stat))


def test_flip_rate() -> None:
    assert M.flip_rate([["a", "b", "c"], ["a", "b", "c"]]) == (0.0, 0.0)
    any_flip, disagreement = M.flip_rate([["a", "b"], ["a", "c"], ["a", "b"]])
    assert any_flip == 0.5
    assert disagreement == pytest.approx((0 + 1 / 3) / 2)
    assert all(math.isnan(x) for x in M.flip_rate([["a"]]))


def _r(judge: str, system: str, item: str, label: str | None, value: float | None = None, task_id: str = "t1",
       ok: bool = True, **ids: str) -> Rating:  # fmt: skip
    return Rating(judge, system, "support", item, task_id, label, value, ok, ids)


def test_compare_task_counts_failures_and_maps_human_labels_to_values() -> None:
    offline = [
        _r("off", "A", "i1", "supported", 1.0, "t1"),
        _r("off", "A", "i2", "not_supported", 0.0, "t1"),
        _r("off", "B", "i3", "supported", 1.0, "t2"),
        _r("off", "B", "i4", "supported", 1.0, "t2"),
        _r("off", "B", "i5", None, None, "t2", ok=False),
    ]
    human = [
        Rating("human:x", "A", "support", "i1", "", "supported", None),
        Rating("human:x", "A", "support", "i2", "", "supported", None),
        Rating("human:x", "B", "support", "i3", "", "not_supported", None),
        Rating("human:x", "B", "support", "i4", "", "supported", None),
        Rating("human:x", "B", "support", "i5", "", "supported", None),
    ]
    res = compare_task("support", offline, human, n_boot=50)
    assert (res.n_items, res.n_failed) == (4, 1)
    assert res.accuracy == 0.5
    assert res.scale == "nominal"
    # human labels become values through the judge's label->value map, so systems can be ranked
    assert res.system_means == {"A": (0.5, 1.0), "B": (1.0, 0.5)}
    assert res.kendall_tau == pytest.approx(-1.0)
    assert res.confusion == [[0, 1], [1, 2]]  # labels sorted: not_supported, supported


def test_ordinal_labels_get_quadratic_weights() -> None:
    a = [Rating("a", "S", "relevance", f"i{i}", "t", str(v), float(v)) for i, v in enumerate([0, 1, 2, 2])]
    b = [Rating("b", "S", "relevance", f"i{i}", "t", str(v), float(v)) for i, v in enumerate([0, 2, 2, 1])]
    res = compare_task("relevance", a, b, n_boot=10)
    assert res.scale == "ordinal" and res.kappa_weights == "quadratic" and res.labels == ["0", "1", "2"]


def test_position_consistency_maps_a_b_to_the_preferred_side() -> None:
    ids1 = {"section_a": "report", "section_b": "exemplar", "report_id": "S/t1"}
    ids2 = {"section_a": "exemplar", "section_b": "report", "report_id": "S/t1"}
    consistent = [Rating("j", "S", "organization", "o1", "t1", "A", 1.0, True, ids1),
                  Rating("j", "S", "organization", "o2", "t1", "B", 0.0, True, ids2)]  # fmt: skip
    flipped = [Rating("j", "S", "organization", "o1", "t1", "A", 1.0, True, ids1),
               Rating("j", "S", "organization", "o2", "t1", "A", 1.0, True, ids2)]  # fmt: skip
    assert position_consistency(consistent) == {"organization": (1, 1)}
    assert position_consistency(flipped) == {"organization": (1, 0)}


def test_self_consistency_reports_flips() -> None:
    s0 = [_r("j", "S", "i1", "supported"), _r("j", "S", "i2", "supported")]
    s1 = [_r("j", "S", "i1", "supported"), _r("j", "S", "i2", "not_supported")]
    assert self_consistency({0: s0, 1: s0}) == {"support": (2, 2, 0.0, 0.0)}
    assert self_consistency({0: s0, 1: s1})["support"][2] == 0.5


def test_batch_labels_become_one_rating_per_rubric_item() -> None:
    j = Judgment(task="cov", item_id="b1", input_ids={"items": "r0,r1", "task_id": "t9"}, judge_id="x",
                 value=0.5, label="Barely|Mostly")  # fmt: skip
    out = ratings_from_judgments("off", "S", [j])
    assert [(r.item_id, r.label, r.task_id) for r in out] == [("b1", None, "t9"), ("b1#r0", "Barely", "t9"),
                                                               ("b1#r1", "Mostly", "t9")]  # fmt: skip


def test_human_label_csv_round_trip_and_errors(tmp_path: Path) -> None:
    rows = [{"benchmark": "b", "system": "S", "task": "support", "item_id": "i1", "label": "supported",
             "annotator": "ann", "note": 'has "quotes", commas'}]  # fmt: skip
    path = write_human_labels(tmp_path / "h.csv", rows)
    got = read_human_labels(path, "b")
    assert list(got) == ["human:ann"] and got["human:ann"][0].label == "supported"
    assert read_human_labels(path, "other") == {}
    (tmp_path / "bad.csv").write_text("benchmark,system,task,item_id,label\nb,S,support,i1,x\n")
    with pytest.raises(HumanLabelError, match="annotator"):
        read_human_labels(tmp_path / "bad.csv", "b")
    (tmp_path / "dup.csv").write_text(
        "benchmark,system,task,item_id,label,annotator\nb,S,support,i1,x,a\nb,S,support,i1,y,a\n"
    )
    with pytest.raises(HumanLabelError, match=r"dup.csv:3: .*twice"):
        read_human_labels(tmp_path / "dup.csv", "b")


def test_stratified_sample_is_seeded_and_covers_rare_strata() -> None:
    items = list(range(100))
    strata = ["rare" if i < 5 else "common" for i in items]
    a = stratified_sample(items, strata, 10, seed=1)
    assert a == stratified_sample(items, strata, 10, seed=1)
    assert a != stratified_sample(items, strata, 10, seed=2)
    assert sum(i < 5 for i in a) == 5  # round-robin: the rare stratum gets its full share
    assert stratified_sample(items, strata, 1000) == items


def test_card_schema_validation_and_markdown(tmp_path: Path) -> None:
    from reportbench.agreement.card import Section

    card = build_card("b", "R", "summary", [Section("t", "n", ["a", "b"], [["x", 1.5], ["y", None]])])
    js, md = write_card(card, tmp_path)
    assert json.loads(js.read_text()) == card
    assert "| x | 1.5 |" in md.read_text() and "| y | – |" in card_markdown(card)
    with pytest.raises(ValueError, match="cells"):
        validate_card(build_card("b", "R", "s", [Section("t", "n", ["a"], [["x", 1]])]))
    with pytest.raises(ValueError, match="dict"):
        validate_card(build_card("b", "R", "s", [Section("t", "n", ["a"], [[{"x": 1}]])]))


def test_annotation_page_embeds_items_safely() -> None:
    items = [
        {"benchmark": "b", "system": "S", "task": "support", "item_id": f"i{i}", "judge": lab,
         "explanation": "", "fields": {"claim": "x </script><script>alert(1)</script>", "reference": "y"}}
        for i, lab in enumerate(["supported", "not_supported", "supported"])
    ]  # fmt: skip
    page = render_page("b", sample(items, 2), label_choices(items))
    assert "</script><script>alert(1)" not in page  # untrusted text cannot close the script element
    payload = json.loads(re.search(r"const DATA = (.*?);\nconst KEY", page, re.S).group(1))
    assert payload["choices"] == {"support": ["not_supported", "supported"]}
    assert payload["columns"][:6] == ["benchmark", "system", "task", "item_id", "label", "annotator"]
    assert {it["judge"] for it in payload["items"]} == {"supported", "not_supported"}  # stratified


def test_sample_index_is_part_of_the_llm_cache_key(repo_root: Path) -> None:
    from reportbench.judges.llm import LLMJudge
    from reportbench.judges.tasks import get_task

    cfg = {"name": "stub", "backend": "litellm", "model": "openai/stub-judge", "api_base": "http://127.0.0.1:9/v1",
           "prompts_dir": str(repo_root / "prompts"), "runtime": {"cache_path": None}}  # fmt: skip
    messages = [{"role": "user", "content": "x"}]
    keys = [LLMJudge(get_task("support"), cfg, cache=False, sample=k).key_for(messages) for k in (0, 1, 2)]
    assert len(set(keys)) == 3  # each re-sample is a real call, and is cached under its own key
    assert keys[0] == LLMJudge(get_task("support"), cfg, cache=False).key_for(messages)  # sample 0: the old key


def test_kendall_tau_b_matches_scipy_with_ties() -> None:
    from scipy.stats import kendalltau

    for x, y in [([1, 2, 3, 4], [1, 3, 2, 4]), ([1, 1, 2, 3], [2, 1, 2, 3]), ([0.5, 0.2, 0.9], [3, 1, 1])]:
        assert M.kendall_tau(x, y) == pytest.approx(kendalltau(x, y).statistic)


def test_cross_stage_position_consistency() -> None:
    import polars as pl

    from reportbench.agreement.compare import cross_position_consistency

    battles = pl.DataFrame(
        {"battle_id": ["b1", "b1", "b2", "b2", "b3"], "order": ["ab", "ba", "ab", "ba", "ab"],
         "status": ["ok"] * 5, "vote": ["A", "A", "A", "B", "A"]}
    )  # fmt: skip
    assert cross_position_consistency(battles) == (2, 1)  # b3 was asked in one order only
    depth = pl.DataFrame(
        {"system": ["s", "s"], "task_id": ["t", "t"], "member": ["m", "m"], "order": ["eval_first", "ref_first"],
         "status": ["ok", "failed"], "judge_winner": ["eval", None]}
    )  # fmt: skip
    assert cross_position_consistency(depth) == (0, 0)
    assert cross_position_consistency(pl.DataFrame({"x": [1]})) is None
