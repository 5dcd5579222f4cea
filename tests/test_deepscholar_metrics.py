"""DeepScholar metrics on hand-built reports, hand-computed values (judgments are built, no judge runs)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable

import pytest

from reportbench.judges.base import Judgment
from reportbench.protocols import JudgeItem
from reportbench.protocols.deepscholar.items import (
    NUGGET_QUERY_TEMPLATE,
    DeepScholarParams,
    ReleaseContext,
    build_items,
    citation_support_items,
    claim_plan,
    organization_items,
    query_context_text,
    relevance_items,
    support_items,
)
from reportbench.protocols.deepscholar.metrics import (
    METRIC_NAMES,
    citation_precision,
    claim_coverage,
    document_importance,
    nugget_coverage,
    organization,
    reference_coverage,
    relevance_rate,
    score_report,
    score_system,
)
from reportbench.types import ExemplarRef, Nugget, Report, Sentence, Source, Task

pytestmark = pytest.mark.core

TASK = Task(
    task_id="2506.00001v1",
    title="Retrieval for Tax Policy",
    abstract="We study retrieval-augmented models for fiscal policy design.",
    published_date="2025-06-01T00:00:00+00:00",
    task_prompt="Write a related works section.",
    exemplar="\\section{Related Work} Prior work on tax policy \\cite{a}.",
)

# Sentences: claims are >= 50 characters unless the test says otherwise.
S_CITED = "Optimal income taxation was formalised by early work on incentives"  # 66 chars
S_PLAIN = "Later studies extended this framework to dynamic economies with agents"  # 70 chars
S_OTHER = "Agent-based simulations have become a common tool in fiscal research"  # 68 chars


def mk_report(
    sentences: Iterable[tuple[str, list[str]]],
    sources: dict[str, Source] | None = None,
    body: str | None = None,
    report_id: str = "sysA:2506.00001v1",
) -> Report:
    sents = []
    for i, (claim, keys) in enumerate(sentences):
        marker = ("[" + ", ".join(keys) + "]") if keys else ""
        text = f"{claim} {marker}.".replace(" .", ".") if marker else claim + "."
        sents.append(Sentence(index=i, text=text, claim=claim + ".", citation_keys=keys))
    text = body if body is not None else " ".join(s.text for s in sents)
    return Report(
        report_id=report_id,
        task_id=TASK.task_id,
        system="sysA",
        format="test",
        body=text,
        sentences=sents,
        sources=sources or {},
    )


def src(
    key: str, title: str | None = None, arxiv_id: str | None = None, abstract: str | None = None
) -> Source:
    return Source(key=key, title=title, arxiv_id=arxiv_id, abstract=abstract)


def judge(items: Iterable[JudgeItem], rule: Callable[[JudgeItem], object]) -> dict[str, dict[str, Judgment]]:
    """Judgments from `rule`: a value, a label ("A"/"B"), nugget labels (list), or None (failed)."""
    out: dict[str, dict[str, Judgment]] = {}
    for it in items:
        v = rule(it)
        kw: dict = {"task": it.task, "item_id": it.item_id, "judge_id": "test"}
        if v is None:
            j = Judgment(**kw, status="failed", error="boom")
        elif isinstance(v, str):
            j = Judgment(**kw, value=1.0 if v == "A" else 0.0, label=v)
        elif isinstance(v, list):
            j = Judgment(**kw, value=None, parsed=json.dumps({"labels": v}))
        else:
            j = Judgment(**kw, value=float(v))
        out.setdefault(it.task, {})[it.item_id] = j
    return out


def P(**kw: object) -> DeepScholarParams:
    return DeepScholarParams.model_validate(kw)


def sup_items(task: Task, rep: Report, ctx: ReleaseContext, p: DeepScholarParams) -> list[JudgeItem]:
    """Every support-style item: Claim Coverage's `support` and Cite-P's `citation_support` ones."""
    return support_items(task, rep, ctx, p) + citation_support_items(task, rep, ctx, p)


CTX = ReleaseContext()


# ------------------------------------------------------------------------------------------ organization
@pytest.mark.parametrize(
    ("c1", "c2", "expected"),
    [("A", "B", 1.0), ("A", "A", 0.5), ("B", "B", 0.5), ("B", "A", 0.0)],
)
def test_organization_label_swap(c1: str, c2: str, expected: float) -> None:
    rep = mk_report([(S_CITED, [])])
    items = organization_items(TASK, rep)
    # call 1: A = report; call 2: A = exemplar (position AND label swapped)
    assert items[0].inputs["section_a"] == rep.body and items[0].inputs["section_b"] == TASK.exemplar
    assert items[1].inputs["section_a"] == TASK.exemplar and items[1].inputs["section_b"] == rep.body
    assert [i.item_id for i in items] == [f"{rep.report_id}:org:1", f"{rep.report_id}:org:2"]
    verdicts = {items[0].item_id: c1, items[1].item_id: c2}
    r = organization(TASK, rep, judge(items, lambda it: verdicts[it.item_id]))
    assert r.value == expected and r.n_items == 2 and r.n_failed == 0


def test_organization_failure_is_nan_not_guess() -> None:
    rep = mk_report([(S_CITED, [])])
    items = organization_items(TASK, rep)
    r = organization(TASK, rep, judge(items, lambda it: "A" if it.item_id.endswith("1") else None))
    assert math.isnan(r.value) and r.n_failed == 1 and r.details["reason"] == "judgment_failed"
    r = organization(TASK, rep, judge(items[:1], lambda it: "A"))  # call 2 never judged
    assert math.isnan(r.value) and r.details["missing"] == 1


def test_organization_empty_report_is_zero_flagged() -> None:
    rep = mk_report([], body="   ")
    assert organization_items(TASK, rep) == []
    r = organization(TASK, rep, {})
    assert r.value == 0.0 and r.details["empty_report"] is True


# ----------------------------------------------------------------------------------------- claim coverage
def _claim_report() -> Report:
    # s0 cites [1]; s1 cites nothing; source 1 supports only s1 (the neighbour of its citing sentence)
    return mk_report(
        [(S_CITED, ["1"]), (S_PLAIN, [])],
        {"1": src("1", "Dynamic Taxation", "2401.00001", "Dynamic economies and taxes.")},
    )


def _support_rule(supported: set[tuple[str, str]]) -> Callable[[JudgeItem], float]:
    """1 iff (claim prefix, reference prefix) is listed."""

    def rule(it: JudgeItem) -> float:
        c, r = it.inputs["claim"], it.inputs["reference"]
        return float(any(c.startswith(a) and b in r for a, b in supported))

    return rule


def test_claim_coverage_window_neighbour_citation() -> None:
    rep = _claim_report()
    rule = _support_rule({(S_PLAIN, "Title: Dynamic Taxation")})
    for w, expected in [(1, 0.5), (0, 0.0)]:
        p = P(claim_coverage={"window": w})
        items = support_items(TASK, rep, CTX, p)
        r = claim_coverage(TASK, rep, judge(items, rule), CTX, p)
        assert r.value == expected, (w, r)
        assert r.details["n_sentences"] == 2


def test_claim_coverage_query_context_is_implicit_reference() -> None:
    rep = _claim_report()
    ctx_ref = query_context_text(TASK)
    assert ctx_ref == f"Title: {TASK.title}\n{TASK.abstract}"
    rule = _support_rule({(S_PLAIN, ctx_ref)})  # s1 has no citation anywhere near with w=0
    p = P(claim_coverage={"window": 0})
    r = claim_coverage(TASK, rep, judge(support_items(TASK, rep, CTX, p), rule), CTX, p)
    assert r.value == 0.5
    p_off = P(claim_coverage={"window": 0, "query_context": False})
    r = claim_coverage(TASK, rep, judge(support_items(TASK, rep, CTX, p_off), rule), CTX, p_off)
    assert r.value == 0.0


def test_claim_coverage_code_mode_window_is_noop_and_premise_concatenated() -> None:
    rep = _claim_report()
    rule = _support_rule({(S_PLAIN, "Title: Dynamic Taxation"), (S_PLAIN, query_context_text(TASK))})
    p = P(claim_coverage={"mode": "code", "window": 1})
    items = support_items(TASK, rep, CTX, p)
    claim_items = [it for it in items if it.input_ids["evidence"] == "code_premise"]
    assert len(claim_items) == 1  # one call for s0 only; s1 has no refs -> 0 without a call
    assert claim_items[0].inputs["reference"] == "Title: Dynamic Taxation\nDynamic economies and taxes." + (
        TASK.title + TASK.abstract
    )
    r = claim_coverage(TASK, rep, judge(items, rule), CTX, p)
    assert r.value == 0.0 and r.details["window"] == 0


def test_claim_coverage_min_chars_and_failures() -> None:
    rep = mk_report([("Too short", ["1"]), (S_CITED, ["1"])], {"1": src("1", "T", abstract="x")})
    p = P(claim_coverage={"sources": "each"})  # one judgment per source: a failure of one is visible
    items = sup_items(TASK, rep, CTX, p)
    assert [u.sentence for u in claim_plan(TASK, rep, CTX, p.claim_coverage)] == [1]  # short one skipped
    assert {it.input_ids["sentence"] for it in items} == {"0", "1"}  # but Cite-P (paper) still judges it
    # the source supports s1 although the query-context call failed -> determined, covered
    r = claim_coverage(
        TASK,
        rep,
        judge(items, lambda it: None if it.input_ids["evidence"] == "query_context" else 1.0),
        CTX,
        p,
    )
    assert r.value == 1.0 and r.n_failed == 1
    # no support and a failure -> undetermined -> NaN (never 0); exclude -> no determined sentence -> NaN
    fail = judge(items, lambda it: None if it.input_ids["evidence"] == "query_context" else 0.0)
    r = claim_coverage(TASK, rep, fail, CTX, p)
    assert math.isnan(r.value) and r.details["n_undetermined"] == 1
    excl = P(on_failure="exclude", claim_coverage={"sources": "each"})
    assert math.isnan(claim_coverage(TASK, rep, fail, CTX, excl).value)


# -------------------------------------------------------------------------------------------- Cite-P
def _citep_report() -> Report:
    return mk_report(
        [
            ("Retrieval-augmented agents improve fiscal simulations markedly", ["1", "2"]),
            ("This sentence cites nothing although it is clearly long enough", []),
            ("Short one", ["2"]),
        ],
        {"1": src("1", "One", abstract="a1"), "2": src("2", "Two", abstract="a2")},
    )


def _citep_rule(it: JudgeItem) -> float:
    # (s0, 1) supported, (s0, 2) not, (s2, 2) supported
    return {("0", "1"): 1.0, ("0", "2"): 0.0, ("2", "2"): 1.0}[
        (it.input_ids["sentence"], it.input_ids["source_key"])
    ]


def test_cite_p_paper_counts_every_key_and_ignores_uncited() -> None:
    rep = _citep_report()
    assert rep.sentences[0].text.endswith("[1, 2].")
    p = P(claim_coverage={"min_chars": 10_000})  # only Cite-P items here
    items = sup_items(TASK, rep, CTX, p)
    assert {it.task for it in items} == {"citation_support"}  # at-least-one-claim reading (default)
    r = citation_precision(TASK, rep, judge(items, _citep_rule), CTX, p)
    assert r.value == pytest.approx(2 / 3) and r.n_items == 3 and r.details["n_pairs"] == 3


def test_cite_p_code_mode_first_number_only_and_zero_for_uncited() -> None:
    rep = _citep_report()
    p = P(citation_precision={"mode": "code"}, claim_coverage={"min_chars": 10_000})
    items = sup_items(TASK, rep, CTX, p)
    assert [(it.input_ids["sentence"], it.input_ids["source_key"]) for it in items] == [("0", "1")]
    r = citation_precision(TASK, rep, judge(items, _citep_rule), CTX, p)
    # s0 -> [1] only -> 1.0; s1 uncited -> 0; s2 < 50 chars skipped -> mean(1, 0)
    assert r.value == 0.5 and r.details["n_sentences"] == 2


def test_cite_p_no_citations_zero_and_failure_not_zero() -> None:
    rep = mk_report([(S_PLAIN, [])])
    r = citation_precision(TASK, rep, {}, CTX, P())  # the system cited nothing: its omission scores 0
    assert r.value == 0.0 and r.details["reason"] == "zero:no_citations"
    r = citation_precision(TASK, rep, {}, CTX, P(nothing_to_score="undefined"))
    assert math.isnan(r.value) and r.details["reason"] == "no_citations"
    rep = _citep_report()
    p = P(claim_coverage={"min_chars": 10_000})
    items = sup_items(TASK, rep, CTX, p)
    js = judge(items, lambda it: None if it.input_ids["source_key"] == "2" else 1.0)
    r = citation_precision(TASK, rep, js, CTX, p)
    assert math.isnan(r.value) and r.n_failed == 2
    r = citation_precision(TASK, rep, js, CTX, P(on_failure="exclude", claim_coverage={"min_chars": 10_000}))
    assert r.value == 1.0 and r.n_failed == 2  # only the one ok pair counts; failures counted, not zeros


def test_support_items_shared_across_reruns_and_cite_p_all_aspects() -> None:
    rep = _claim_report()
    p = P(claim_coverage={"window": 0, "query_context": False, "sources": "each"},
          citation_precision={"reading": "all_aspects"})  # fmt: skip
    items = support_items(TASK, rep, CTX, p)
    # Cite-P (all-aspects reading) needs (s0, src1); Claim Coverage per source with w=0 needs the same pair
    assert len(items) == 1 and items[0].item_id.startswith("sup:")
    assert support_items(TASK, rep, CTX, p)[0].item_id == items[0].item_id  # content-derived, stable
    # default: Cite-P asks citation_support, Claim Coverage asks support about the window's set -> 2 tasks
    default = sup_items(TASK, rep, CTX, P(claim_coverage={"window": 0, "query_context": False}))
    assert sorted(it.task for it in default) == ["citation_support", "support"]
    assert sorted(it.item_id.split(":")[0] for it in default) == ["csup", "sup"]


def test_source_text_precedence_and_evidence_flag() -> None:
    ctx = ReleaseContext(corpus={"2401.00002": ("Corpus Title", "Corpus abstract.")})
    rep = mk_report(
        [(S_CITED, ["1", "2", "3", "4"])],
        {
            "1": src("1", "Own", "2401.00002", abstract="Own abstract."),
            "2": src("2", None, "2401.00002v3"),
            "3": src("3", "Only A Title"),
            "4": Source(key="4", url="https://example.org/x"),
        },
    )
    items = sup_items(TASK, rep, ctx, P(claim_coverage={"min_chars": 10_000}))
    got = {it.input_ids["source_key"]: (it.inputs["reference"], it.input_ids["evidence"]) for it in items}
    assert got["1"] == ("Title: Own\nOwn abstract.", "report")
    assert got["2"] == ("Title: Corpus Title\nCorpus abstract.", "corpus")
    assert got["3"] == ("Title: Only A Title\n", "title_only")
    assert got["4"][1] == "id_only"


# ----------------------------------------------------------------------------------------------- relevance
def _rel_report() -> Report:
    return mk_report(
        [(S_CITED, ["1", "3"])],
        {
            "1": src("1", "Paper A", "2401.00001v1", "abs A"),
            "2": src("2", "Paper A", "2401.00001v2"),  # same id, other version -> one element of S
            "3": src("3", "A Web Page"),  # no arXiv id
            "4": Source(key="4", url="https://example.org/bare"),  # nothing to judge under all_sources
        },
    )


def _grade(it: JudgeItem) -> float:
    return 2.0 if it.inputs["ref_title"] == "Paper A" else 0.0


def test_relevance_scope_paper_vs_all_sources_and_code_mode() -> None:
    rep = _rel_report()
    paper = P()
    items = relevance_items(TASK, rep, CTX, paper)
    assert len(items) == 1 and items[0].inputs["ref_abstract"] == "abs A"
    r = relevance_rate(TASK, rep, judge(items, _grade), CTX, paper)
    assert r.value == 1.0  # 2 / (2 * 1)
    allsrc = P(relevance_rate={"scope": "all_sources"})
    items = relevance_items(TASK, rep, CTX, allsrc)
    assert len(items) == 2
    r = relevance_rate(TASK, rep, judge(items, _grade), CTX, allsrc)
    assert r.value == 0.5 and r.details["n_skipped_no_title"] == 1  # (2 + 0) / (2 * 2)
    code = P(relevance_rate={"scope": "all_sources", "mode": "code"})
    assert relevance_rate(TASK, rep, judge(items, _grade), CTX, code).value == 1.0  # mean grade, not /2


def test_relevance_ids_shared_across_systems_and_undefined() -> None:
    a = _rel_report()
    b = _rel_report().model_copy(update={"report_id": "sysB:x", "system": "sysB"})
    assert [i.item_id for i in relevance_items(TASK, a, CTX)] == [
        i.item_id for i in relevance_items(TASK, b, CTX)
    ]
    empty = mk_report([(S_PLAIN, [])])
    r = relevance_rate(TASK, empty, {}, CTX, P())  # no arXiv link at all: 0 (paper, authors), not NaN
    assert r.value == 0.0 and r.details["reason"] == "zero:no_arxiv_links"
    r = relevance_rate(TASK, empty, {}, CTX, P(nothing_to_score="undefined"))
    assert math.isnan(r.value) and r.details["reason"] == "no_arxiv_links"
    items = relevance_items(TASK, a, CTX)
    r = relevance_rate(TASK, a, judge(items, lambda it: None), CTX, P())
    assert math.isnan(r.value) and r.n_failed == 1


# ------------------------------------------------------------------------------------ reference coverage
def _rc_ctx(labels: bool = True) -> ReleaseContext:
    def ref(i: int, title: str, aid: str | None, imp: bool | None) -> ExemplarRef:
        return ExemplarRef(
            task_id=TASK.task_id, ref_key=f"k{i}", position=i, title=title, arxiv_id=aid, is_important=imp
        )

    refs = [
        ref(0, "Some Title Nobody Cites", "2401.00001v3", True),  # matched by version-stripped id
        ref(1, "Attention Is All You Need", "1706.03762", True),  # matched by title only
        ref(2, "Deep Residual Learning for Image Recognition", "1512.03385", True),  # no match
        ref(3, "Unimportant Paper", "2402.00001", False),
        ref(4, "Important But Not On arXiv", None, True),
    ]
    if not labels:
        refs = [r.model_copy(update={"is_important": None}) for r in refs]
    return ReleaseContext.from_records(refs)


def _rc_report() -> Report:
    return mk_report(
        [(S_CITED, ["1"])],
        {
            "1": src("1", "Totally different words", "2401.00001v1"),
            "2": src("2", "Attention is all you need."),
            "3": src("3", "Residual networks for speech"),
        },
    )


def test_reference_coverage_id_then_title() -> None:
    r = reference_coverage(TASK, _rc_report(), _rc_ctx(), P())
    assert r.value == pytest.approx(2 / 3)
    assert (r.details["by_id"], r.details["by_title"], r.details["n_important"]) == (1, 1, 3)


def test_reference_coverage_threshold_and_code_mode() -> None:
    # "residual networks speech" vs "deep residual learning image recognition" is far below 80
    strict = reference_coverage(TASK, _rc_report(), _rc_ctx(), P(reference_coverage={"title_threshold": 101}))
    assert strict.value == pytest.approx(1 / 3)  # only the id match survives an impossible threshold
    loose = reference_coverage(TASK, _rc_report(), _rc_ctx(), P(reference_coverage={"title_threshold": 0}))
    assert loose.value == 1.0
    # code mode: no id matching by S (the id is not in any source title/abstract); titles by SequenceMatcher
    code = reference_coverage(TASK, _rc_report(), _rc_ctx(), P(reference_coverage={"mode": "code"}))
    assert code.value == pytest.approx(1 / 3) and code.details["by_id"] == 0


def test_reference_coverage_undefined_cases() -> None:
    r = reference_coverage(TASK, _rc_report(), _rc_ctx(labels=False), P())
    assert math.isnan(r.value) and r.details["reason"] == "no_important_labels"
    ctx = ReleaseContext.from_records(
        [ExemplarRef(task_id=TASK.task_id, ref_key="k", position=0, title="X", is_important=True)]
    )
    r = reference_coverage(TASK, _rc_report(), ctx, P())
    assert math.isnan(r.value) and r.details["reason"] == "no_important_arxiv_refs"


# ----------------------------------------------------------------------------------- document importance
def _di_ctx() -> ReleaseContext:
    refs = [
        ExemplarRef(task_id=TASK.task_id, ref_key=k, position=i, arxiv_id=a)
        for i, (k, a) in enumerate(
            [("x", "2301.00001"), ("y", "2301.00002"), ("z", "2301.00003"), ("w", None)]
        )
    ]
    return ReleaseContext.from_records(refs)


STAR_COUNTS = {"2301.00001": 10, "2301.00002": 50, "2301.00003": 90}  # median 50


def _di_report(ids: list[str]) -> Report:
    return mk_report([(S_CITED, [])], {str(i): src(str(i), f"T{i}", a) for i, a in enumerate(ids)})


PER_EXEMPLAR = {"document_importance": {"mode": "per_exemplar"}}


def test_document_importance_per_exemplar_ratio_cap_and_missing() -> None:
    rep = _di_report(["2401.0000av1", "2401.0000b", "2401.0000c"])
    counts = {**STAR_COUNTS, "2401.0000a": 100, "2401.0000b": 300, "2401.0000c": None}
    r = document_importance(TASK, rep, _di_ctx(), counts, P(**PER_EXEMPLAR))
    # median(100, 300) = 200; 200 / 50 = 4 -> capped at 1; the None count is excluded and counted
    assert r.value == 1.0 and r.details["ratio_unclipped"] == 4.0 and r.details["n_s_missing"] == 1
    counts_low = {**STAR_COUNTS, "2401.0000a": 10, "2401.0000b": 30}
    r = document_importance(TASK, rep, _di_ctx(), counts_low, P(**PER_EXEMPLAR))
    assert r.value == pytest.approx(20 / 50) and r.details["n_s_missing"] == 1


def test_document_importance_nan_and_zero_cases() -> None:
    rep = _di_report(["2401.0000a"])
    for p in (P(), P(**PER_EXEMPLAR)):  # the run has no count for the report's only id: undefined
        assert document_importance(TASK, rep, _di_ctx(), STAR_COUNTS, p).details["reason"] == (
            "no_counts_for_report_sources"
        )
    r = document_importance(TASK, rep, _di_ctx(), {"2401.0000a": 5}, P(**PER_EXEMPLAR))
    assert math.isnan(r.value) and r.details["reason"] == "no_counts_for_exemplar_refs"
    zero = {"2401.0000a": 5, "2301.00001": 0, "2301.00002": 0, "2301.00003": 7}
    r = document_importance(TASK, rep, _di_ctx(), zero, P(**PER_EXEMPLAR))
    assert math.isnan(r.value) and r.details["reason"] == "exemplar_median_zero"
    # no arXiv link at all: the system's omission -> 0 in every mode (NaN only with nothing_to_score=undefined)
    no_links = mk_report([(S_CITED, [])])
    for p in (P(), P(**PER_EXEMPLAR), P(document_importance={"mode": "code"})):
        r = document_importance(TASK, no_links, _di_ctx(), STAR_COUNTS, p)
        assert r.value == 0.0 and r.details["reason"] == "zero:no_arxiv_links"
    assert math.isnan(document_importance(TASK, no_links, _di_ctx(), {}, P(nothing_to_score="undefined")).value)


def test_document_importance_global_divisor_and_code_mode() -> None:
    rep = _di_report(["2401.0000a", "2401.0000b"])
    counts = {"2401.0000a": 100, "2401.0000b": 300}
    code = document_importance(TASK, rep, _di_ctx(), counts, P(document_importance={"mode": "code"}))
    assert code.value == 200.0  # raw median, no ratio, no cap, no exemplar counts needed
    glob = document_importance(TASK, rep, _di_ctx(), counts, P())  # default: global divisor 647.5
    assert glob.value == pytest.approx(200 / 647.5) and glob.details["divisor"] == 647.5
    many = {"2401.0000a": 5000, "2401.0000b": 5000}
    big = document_importance(TASK, rep, _di_ctx(), many, P())  # aggregate clip: the report is NOT clipped
    assert big.value == pytest.approx(5000 / 647.5)
    clip_report = P(document_importance={"clip": "report"})
    assert document_importance(TASK, rep, _di_ctx(), many, clip_report).value == 1.0


# ------------------------------------------------------------------------------------------ nugget coverage
def _nug_ctx() -> ReleaseContext:
    spec = [
        ("n0 vital", "vital", "support"),
        ("n1 vital", "vital", "support"),
        ("n2 vital not self-supported", "vital", "not_support"),
        ("n3 okay", "okay", "support"),
    ]
    nuggets = [
        Nugget(task_id=TASK.task_id, index=i, text=t, importance=imp, self_assignment=sa)  # type: ignore[arg-type]
        for i, (t, imp, sa) in enumerate(spec)
    ]
    return ReleaseContext.from_records(nuggets=nuggets)


def _nug_labels(it: JudgeItem) -> list[str]:
    return {"0": ["support", "partial_support"], "1": ["not_support"]}[it.input_ids["window"]]


def test_nugget_coverage_windows_and_variants() -> None:
    rep = mk_report([(S_CITED, [])])
    p = P(nugget_coverage={"window": 2})
    items = build_items(TASK, rep, _nug_ctx(), p)["nugget_assign"]
    assert [it.inputs["nuggets"] for it in items] == [["n0 vital", "n1 vital"], ["n3 okay"]]
    assert items[0].inputs["query"] == NUGGET_QUERY_TEMPLATE.format(abstract=TASK.abstract)
    assert items[0].inputs["passage"] == rep.body
    r = nugget_coverage(TASK, rep, judge(items, _nug_labels), _nug_ctx(), p)
    assert r.value == pytest.approx(1 / 3)  # strict_all over the 3 self-supported nuggets
    v = r.details["variants"]
    assert v["strict_vital"] == 0.5 and v["all"] == pytest.approx(0.5) and v["vital"] == 0.75


def test_nugget_coverage_failed_window_nan_paper_not_support_code() -> None:
    rep = mk_report([(S_CITED, [])])
    p = P(nugget_coverage={"window": 2})
    items = build_items(TASK, rep, _nug_ctx(), p)["nugget_assign"]
    js = judge(items, lambda it: None if it.input_ids["window"] == "0" else ["support"])
    r = nugget_coverage(TASK, rep, js, _nug_ctx(), p)
    assert math.isnan(r.value) and r.n_failed == 1 and r.details["n_failed_nuggets"] == 2
    code = P(nugget_coverage={"window": 2, "mode": "code"})
    r = nugget_coverage(TASK, rep, js, _nug_ctx(), code)
    assert r.value == pytest.approx(1 / 3) and r.n_failed == 1


def test_nugget_coverage_empty_report_and_no_nuggets() -> None:
    empty = mk_report([], body="")
    assert build_items(TASK, empty, _nug_ctx())["nugget_assign"] == []
    r = nugget_coverage(TASK, empty, {}, _nug_ctx(), P())
    assert r.value == 0.0 and r.details["empty_report"] is True
    r = nugget_coverage(TASK, mk_report([(S_CITED, [])]), {}, CTX, P())
    assert math.isnan(r.value) and r.details["reason"] == "no_supported_nuggets"


# -------------------------------------------------------------------------------------------- drivers
def test_score_system_tables_and_aggregates() -> None:
    task2 = TASK.model_copy(update={"task_id": "2506.00002v1"})
    task3 = TASK.model_copy(update={"task_id": "2506.00003v1"})
    rep1 = _claim_report()
    rep2 = _claim_report().model_copy(update={"report_id": "sysA:2", "task_id": task2.task_id})
    items = [
        it for r, t in [(rep1, TASK), (rep2, task2)] for its in build_items(t, r, CTX).values() for it in its
    ]

    def rule(it: JudgeItem) -> object:
        if it.task == "organization":
            return "A" if it.input_ids["report_id"] == rep1.report_id else None  # rep2 fails org
        if it.task == "relevance":
            return 2.0
        return 1.0

    js = judge(items, rule)
    scores = score_system("sysA", [TASK, task2, task3], [rep1, rep2], js, CTX, {}, None)
    pt = scores.per_task
    assert set(pt.columns) >= {"task_id", "report_id", "metric", "value", "n_items", "n_failed"}
    assert pt.height == 3 * len(METRIC_NAMES)
    org = scores.summary["metrics"]["organization"]
    # task1: call1 A, call2 A -> 0.5; task2 failed -> NaN; task3 has no report -> NaN
    assert (
        org["mean"] == 0.5
        and org["n_defined"] == 1
        and org["n_undefined"] == 2
        and org["n_failed_items"] == 2
    )
    assert org["authors_aggregate"] == round(0.5 / 3, 2)
    assert scores.summary["n_missing_reports"] == 1
    assert scores.summary["metrics"]["relevance_rate"]["mean"] == 1.0


def test_score_report_returns_all_metrics_and_params_are_strict() -> None:
    res = score_report(TASK, _claim_report(), {}, CTX, {}, {})
    assert list(res) == list(METRIC_NAMES)
    # no judgments at all: every judged metric is NaN (missing), never 0
    for m in ("organization", "relevance_rate", "citation_precision", "claim_coverage"):
        assert math.isnan(res[m].value), m
    with pytest.raises(ValueError):
        DeepScholarParams.model_validate({"claim_coverage": {"windw": 2}})


def test_items_validate_against_judge_task_inputs() -> None:
    tasks = pytest.importorskip("reportbench.judges.tasks")
    rep = _rel_report()
    for name, items in build_items(TASK, rep, _nug_ctx()).items():
        assert items, name
        for it in items:
            typed = it.typed()
            assert type(typed) is tasks.get_task(name).input_model


def test_release_context_from_release_object() -> None:
    fmt = pytest.importorskip("reportbench.release.format")
    from reportbench.citations import seed_from_release

    refs = [
        ExemplarRef(
            task_id=TASK.task_id, ref_key="a", position=0, title="A", arxiv_id="2401.00001", is_important=True
        )
    ]
    rel = fmt.Release(
        meta=fmt.ReleaseMeta(name="t", created_at="2025-01-01", source="test", licence="x", synthetic=True),
        tasks=[TASK],
        exemplar_ref_rows=refs,
        corpus=[fmt.CorpusDoc(doc_id="arxiv:2401.00002", arxiv_id="2401.00002", title="C", abstract="c abs")],
        citation_counts=[
            fmt.CitationCount(
                arxiv_id="2401.00001", cited_by_count=5, fetched_at="2025-01-01", source="synthetic"
            )
        ],
    )
    ctx = ReleaseContext.from_release(rel)
    assert ctx.corpus_entry("2401.00002v2") == ("C", "c abs")
    assert ctx.has_important_labels(TASK.task_id) and ctx.refs_for(TASK.task_id) == refs
    assert seed_from_release(rel) == {"2401.00001": 5}


def test_count_lookup_ids_covers_s_and_s_star() -> None:
    from reportbench.protocols.deepscholar import count_lookup_ids

    rep = _di_report(["2401.0000av1", "2301.00001"])
    got = count_lookup_ids([TASK], [rep], _di_ctx())
    assert set(got) == {"2301.00001", "2301.00002", "2301.00003", "2401.0000a"}
    assert got["2401.0000a"] == "T0" and got["2301.00001"] == "T1"  # exemplar refs have no title here
