"""DeepScholar scoring conventions that decide whether our numbers mean what the paper's mean (issue 12).

Every expected value is computed by hand in the comment next to it. Judgments are built by rules (no judge),
except the link-only test, which resolves the cited id through the real `arxiv` client on a recorded answer.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import polars as pl
import pytest
import responses

from reportbench.judges.base import Judgment
from reportbench.metrics.leaderboard import build_leaderboard, overall_label, to_markdown
from reportbench.protocols import JudgeItem
from reportbench.protocols.deepscholar.benchmark import coverage
from reportbench.protocols.deepscholar.items import (
    DeepScholarParams,
    ReleaseContext,
    build_items,
    cite_p_plan,
    claim_plan,
)
from reportbench.protocols.deepscholar.metrics import (
    citation_precision,
    claim_coverage,
    document_importance,
    relevance_rate,
    score_system,
)
from reportbench.protocols.deepscholar.sources import resolve_source_texts, texts_from_frame
from reportbench.reports.base import build_report
from reportbench.types import Report, Sentence, Source, Task

pytestmark = pytest.mark.core

TASK = Task(
    task_id="2506.00009v1",
    title="Learning Tax Policy with Agents",
    abstract="We learn progressive tax schedules with reinforcement-learning agents.",
    published_date="2025-06-01T00:00:00+00:00",
    task_prompt="Write a related works section.",
    exemplar="Prior work \\cite{a}.",
)
CLAIM = "Agent simulators recover optimal taxes and run on commodity hardware"  # >= 50 chars, two claims


def P(**kw: object) -> DeepScholarParams:
    return DeepScholarParams.model_validate(kw)


def report(sentences: list[tuple[str, list[str]]], sources: dict[str, Source], rid: str = "s:1") -> Report:
    sents = [Sentence(index=i, text=f"{c} [{', '.join(k)}].", claim=c + ".", citation_keys=k) for i, (c, k) in
             enumerate(sentences)]  # fmt: skip
    body = " ".join(s.text for s in sents)
    return Report(report_id=rid, task_id=TASK.task_id, system="s", format="t", body=body, sentences=sents,
                  sources=sources)  # fmt: skip


def judged(items: list[JudgeItem], rule) -> dict[str, dict[str, Judgment]]:  # type: ignore[no-untyped-def]
    out: dict[str, dict[str, Judgment]] = {}
    for it in items:
        v = rule(it)
        kw = {"task": it.task, "item_id": it.item_id, "judge_id": "rule"}
        j = Judgment(**kw, status="failed", error="call: boom") if v is None else Judgment(**kw, value=float(v))
        out.setdefault(it.task, {})[it.item_id] = j
    return out


def all_items(rep: Report, ctx: ReleaseContext, p: DeepScholarParams) -> list[JudgeItem]:
    """Every item of the support-style and relevance judge tasks (what these tests' rules can answer)."""
    wanted = ("support", "citation_support", "relevance")
    return [it for task, items in build_items(TASK, rep, ctx, p).items() if task in wanted for it in items]


CTX = ReleaseContext()
HARDWARE = Source(key="1", title="Fast Simulators", abstract="Our simulator runs on commodity hardware.")
TAXES = Source(key="2", title="Optimal Taxes", abstract="Agent simulators recover optimal taxes.")


# ------------------------------------------------------------------------- Document Importance: global divisor
def _di_report(rid: str, count_ids: list[str]) -> Report:
    return report([(CLAIM, ["1"])], {str(i): Source(key=str(i), arxiv_id=a) for i, a in enumerate(count_ids, 1)},
                  rid)  # fmt: skip


def test_document_importance_global_divisor_and_aggregate_clip() -> None:
    # two tasks: medians 1000 and 100 citations
    t2 = TASK.model_copy(update={"task_id": "2506.00010v1"})
    r1 = _di_report("s:1", ["2401.00001"])
    r2 = _di_report("s:2", ["2401.00002"]).model_copy(update={"task_id": t2.task_id})
    counts = {"2401.00001": 1000, "2401.00002": 100}
    per_report = document_importance(TASK, r1, CTX, counts, P())
    assert per_report.value == pytest.approx(1000 / 647.5)  # 1.5444: left unclipped per report
    tasks = {TASK.task_id: TASK, t2.task_id: t2}
    agg = score_system("s", tasks, [r1, r2], {}, CTX, counts, P()).summary["metrics"]["document_importance"]
    # aggregate: mean(1000, 100) / 647.5 = 550 / 647.5 = 0.8494 (< 1, so the clip does not bite)
    assert agg["mean"] == pytest.approx(550 / 647.5) and round(agg["mean"], 3) == 0.849
    clip = P(document_importance={"clip": "report"})
    per = score_system("s", tasks, [r1, r2], {}, CTX, counts, clip).summary["metrics"]["document_importance"]
    # per report: (min(1.544, 1) + 100/647.5) / 2 = (1 + 0.1544) / 2 = 0.5772
    assert per["mean"] == pytest.approx((1 + 100 / 647.5) / 2) and round(per["mean"], 3) == 0.577
    # both above the divisor: the system mean is clipped at 1, the unclipped mean is kept
    big = {"2401.00001": 1295, "2401.00002": 1295}
    top = score_system("s", tasks, [r1, r2], {}, CTX, big, P()).summary["metrics"]["document_importance"]
    assert top["mean"] == 1.0 and top["mean_unclipped"] == pytest.approx(2.0)
    # Table 2's .008 is about 5 citations: 5 / 647.5 = 0.0077
    five = document_importance(TASK, r1, CTX, {"2401.00001": 5}, P())
    assert round(five.value, 3) == 0.008


# ------------------------------------------------------------------- nothing to score = 0, judge failure = NaN
def test_no_arxiv_links_scores_zero_and_judge_failure_stays_nan() -> None:
    no_links = report([(CLAIM, ["1"])], {"1": HARDWARE})
    rr = relevance_rate(TASK, no_links, {}, CTX, P())
    di = document_importance(TASK, no_links, CTX, {}, P())
    assert (rr.value, rr.details["reason"]) == (0.0, "zero:no_arxiv_links")  # the paper and the authors: 0
    assert (di.value, di.details["reason"]) == (0.0, "zero:no_arxiv_links")
    linked = report([(CLAIM, ["1"])], {"1": HARDWARE.model_copy(update={"arxiv_id": "2401.00003"})})
    items = all_items(linked, CTX, P())
    failed = relevance_rate(TASK, linked, judged(items, lambda it: None), CTX, P())
    assert math.isnan(failed.value) and failed.n_failed == 1 and failed.details["reason"] == "judgment_failed"
    # system level: the zero is a defined value (counted apart), the failure is excluded and counted
    t2 = TASK.model_copy(update={"task_id": "2506.00010v1"})
    linked2 = linked.model_copy(update={"task_id": t2.task_id, "report_id": "s:2"})
    js = judged(all_items(linked2, CTX, P()), lambda it: None)
    m = score_system("s", [TASK, t2], [no_links, linked2], js, CTX, {}, P()).summary["metrics"]["relevance_rate"]
    assert (m["mean"], m["n_defined"], m["n_failed"], m["n_zero_nothing_to_score"]) == (0.0, 1, 1, 1)


# ------------------------------------------------------------------ Claim Coverage over the set of sources
def test_claim_supported_only_by_two_sources_together() -> None:
    rep = report([(CLAIM, ["1", "2"])], {"1": HARDWARE, "2": TAXES})

    def jointly(it: JudgeItem) -> float:
        # each source supports one half of the claim: only a premise holding both supports it all
        ref = it.inputs["reference"]
        return float("commodity hardware" in ref and "optimal taxes" in ref)

    p_set = P(claim_coverage={"query_context": False})
    (unit,) = claim_plan(TASK, rep, CTX, p_set.claim_coverage)
    assert len(unit.items) == 1 and unit.items[0].input_ids["source_key"] == "1,2"
    assert claim_coverage(TASK, rep, judged(all_items(rep, CTX, p_set), jointly), CTX, p_set).value == 1.0
    p_each = P(claim_coverage={"query_context": False, "sources": "each"})
    (unit,) = claim_plan(TASK, rep, CTX, p_each.claim_coverage)
    assert len(unit.items) == 2  # one call per source: neither alone supports the claim -> 0
    assert claim_coverage(TASK, rep, judged(all_items(rep, CTX, p_each), jointly), CTX, p_each).value == 0.0


# ----------------------------------------------------------------- Citation Precision: the two readings
def test_one_supporting_and_one_non_supporting_source_under_each_reading() -> None:
    unrelated = Source(key="2", title="Protein Folding", abstract="We fold proteins.")
    rep = report([(CLAIM, ["1", "2"])], {"1": HARDWARE, "2": unrelated})

    def rule(it: JudgeItem) -> float:
        ref = it.inputs["reference"]
        if it.task == "citation_support":  # "supports at least one claim of the sentence?"
            return float("commodity hardware" in ref)  # [1] supports the hardware claim, [2] nothing
        return float("commodity hardware" in ref and "optimal taxes" in ref)  # "all aspects": neither

    at_least_one = P(claim_coverage={"min_chars": 10_000})
    (unit,) = cite_p_plan(TASK, rep, CTX, at_least_one.citation_precision)
    assert {it.task for _, it in unit.items} == {"citation_support"}
    r = citation_precision(TASK, rep, judged(all_items(rep, CTX, at_least_one), rule), CTX, at_least_one)
    assert r.value == 0.5  # (1 + 0) / 2 pairs
    all_aspects = P(citation_precision={"reading": "all_aspects"}, claim_coverage={"min_chars": 10_000})
    (unit,) = cite_p_plan(TASK, rep, CTX, all_aspects.citation_precision)
    assert {it.task for _, it in unit.items} == {"support"}
    r = citation_precision(TASK, rep, judged(all_items(rep, CTX, all_aspects), rule), CTX, all_aspects)
    assert r.value == 0.0  # (0 + 0) / 2 pairs


# ---------------------------------------------------- link-only citation resolved from a recorded arXiv answer
def test_link_only_citation_resolved_from_recorded_arxiv_answer(fixtures_dir: Path, tmp_path: Path) -> None:
    body = (
        "Agent-based fiscal simulators recover the equity-efficiency trade-off "
        "([arxiv.org](https://arxiv.org/abs/2313.07001v1)). A second paper is cited only by its link "
        "([arxiv.org](https://arxiv.org/abs/2313.07002))."
    )
    rep = build_report(body=body, sources={}, fmt="markdown", task_id=TASK.task_id, system="s", path=None)
    src = rep.sources["https://arxiv.org/abs/2313.07001v1"]
    assert src.title is None and src.arxiv_id == "2313.07001"
    before = {it.input_ids["evidence"] for it in build_items(TASK, rep, CTX, P())["relevance"]}
    assert before == {"id_only"}  # without resolution the judge would see only "arXiv:2313.07001"

    feed = (fixtures_dir / "arxiv_texts" / "id_list_batch.atom.xml").read_text()
    cache = tmp_path / "arxiv_texts"
    with responses.RequestsMock() as mock:
        mock.get(re.compile(r"https://export\.arxiv\.org/api/query.*"), body=feed, status=200,
                 content_type="application/atom+xml")  # fmt: skip
        got = resolve_source_texts(rep.retrieved_arxiv_ids, {}, cache_dir=cache, offline=False, batch_size=50,
                                   min_interval=0.0)  # fmt: skip
        assert len(mock.calls) == 1  # both ids in ONE batched id_list request
        assert "id_list=2313.07001%2C2313.07002" in mock.calls[0].request.url
    rows = {r["arxiv_id"]: r for r in got.frame().iter_rows(named=True)}
    assert rows["2313.07001"]["status"] == "api" and rows["2313.07001"]["fetched_at"]
    assert rows["2313.07001"]["title"] == "Progressive Income Taxes in Agent-Based Fiscal Simulators"
    assert rows["2313.07002"]["status"] == "not_found"

    ctx = CTX.with_resolved(texts_from_frame(got.frame()))
    rel = {it.input_ids["candidate"]: it for it in build_items(TASK, rep, ctx, P())["relevance"]}
    assert rel["2313.07001"].inputs["ref_title"] == "Progressive Income Taxes in Agent-Based Fiscal Simulators"
    assert rel["2313.07001"].inputs["ref_abstract"].startswith("We simulate progressive income taxation")
    assert rel["2313.07001"].input_ids["evidence"] == "arxiv"
    assert rel["2313.07002"].input_ids["evidence"] == "id_only"  # recorded per item: judged on what the report gave

    # offline afterwards: answered from the cache with its fetch date, no network (responses would refuse)
    with responses.RequestsMock():
        again = resolve_source_texts(rep.retrieved_arxiv_ids, {}, cache_dir=cache, offline=True)
    rows2 = {r["arxiv_id"]: r for r in again.frame().iter_rows(named=True)}
    assert rows2["2313.07001"]["status"] == "cache"
    assert rows2["2313.07001"]["fetched_at"] == rows["2313.07001"]["fetched_at"]
    assert rows2["2313.07002"]["status"] == "not_found"
    # offline with an empty cache: missing, never fetched
    with responses.RequestsMock():
        none = resolve_source_texts(["2313.07001"], {}, cache_dir=tmp_path / "empty", offline=True)
    assert none.frame()["status"].to_list() == ["missing"] and none.n_requests == 0


def test_release_corpus_wins_over_arxiv_and_failed_batch_is_recorded(tmp_path: Path) -> None:
    corpus = {"2313.07001v1": ("Corpus Title", "Corpus abstract.")}
    with responses.RequestsMock() as mock:
        mock.get(re.compile(r"https://export\.arxiv\.org/api/query.*"), status=500)
        got = resolve_source_texts(["2313.07001", "2313.07003"], corpus, cache_dir=tmp_path, offline=False,
                                   min_interval=0.0, timeout=1.0)  # fmt: skip
    rows = {r["arxiv_id"]: r for r in got.frame().iter_rows(named=True)}
    assert rows["2313.07001"]["status"] == "release"  # never asked for
    assert rows["2313.07003"]["status"] == "error" and got.errors  # not cached: asked again next run


# ------------------------------------------------------------------- the overall score: covered metrics, labelled
def test_overall_covers_what_the_run_defines_and_is_labelled() -> None:
    covered, missing = coverage(release_has_labels=False, any_count_known=False)
    assert covered == ("organization", "nugget_coverage", "relevance_rate", "citation_precision", "claim_coverage")
    assert set(missing) == {"reference_coverage", "document_importance"}
    assert coverage(True, True) == (
        ("organization", "nugget_coverage", "relevance_rate", "reference_coverage", "document_importance",
         "citation_precision", "claim_coverage"), {})  # fmt: skip
    names = ["organization", "nugget_coverage", "relevance_rate", "reference_coverage", "document_importance",
             "citation_precision", "claim_coverage"]  # fmt: skip
    means = dict(zip(names, [0.5, 0.4, 0.5, math.nan, math.nan, 0.8, 0.25], strict=True))
    summary = {"system": "x", "protocol": "deepscholar", "n_tasks": 63, "n_missing_reports": 61,
               "metrics": {m: {"mean": v, "n_defined": 2} for m, v in means.items()}}  # fmt: skip
    lb = build_leaderboard([summary], metrics=names, protocol="deepscholar", overall_metrics=covered)
    row = lb.rows[0]
    # (0.5 * 0.4 * 0.5 * 0.8 * 0.25) ** (1/5) = 0.02 ** 0.2 = 0.4573
    assert row["geomean"] == pytest.approx(0.02**0.2) and math.isnan(row["geomean_all"])
    assert overall_label(lb) == "GeoMean (5 of 7: Org, NuggetCov, RelRate, CiteP, ClaimCov)"
    md = to_markdown(lb)
    assert "GeoMean (all 7)" in md and "63 (61 no_report)" in md
    full = build_leaderboard([summary], metrics=names, protocol="deepscholar")
    assert overall_label(full) == "GeoMean" and "geomean_all" not in full.rows[0]
    # the scorecard site labels its overall column the same way
    from reportbench.site.leaderboard_page import BenchmarkData, leaderboard_table

    page = leaderboard_table(BenchmarkData("deepscholar", "r", "metrics/deepscholar/r", lb.as_dict()))
    assert "GeoMean (5 of 7: " in page and "GeoMean (5 of 7" not in leaderboard_table(
        BenchmarkData("deepscholar", "r", "metrics/deepscholar/r", full.as_dict())
    )


def test_table6_statistics_definitions() -> None:
    from reportbench.protocols.deepscholar.report_stats import report_stats, system_report_stats

    rep = report([(CLAIM, ["1", "2"]), ("A short one", ["2"])], {"1": HARDWARE, "2": TAXES})
    s = report_stats(rep)
    assert s == {"chars": len(rep.body), "words": len(rep.body.split()), "sentences": 2, "unique_refs": 2,
                 "inline_citations": 3}  # fmt: skip
    agg = system_report_stats([rep, rep])
    assert agg["n_reports"] == 2 and agg["words"]["mean"] == float(len(rep.body.split()))
    assert pl.DataFrame([s]).height == 1


def test_only_sources_without_their_own_text_are_resolved() -> None:
    from reportbench.protocols.deepscholar.sources import ids_to_resolve

    rep = report(
        [(CLAIM, ["1", "2", "3"])],
        {
            "1": Source(key="1", title="A Real Title", arxiv_id="2313.00001", abstract="Given by the system."),
            "2": Source(key="2", title="arxiv.org", arxiv_id="2313.00002v3", abstract="snippet"),  # weak title
            "3": Source(key="3", title="Title Only", arxiv_id="2313.00003"),  # no abstract
        },
    )
    assert ids_to_resolve([rep]) == ["2313.00002", "2313.00003"]


def test_a_title_that_names_no_paper_gives_way_to_the_resolved_one() -> None:
    from reportbench.protocols.deepscholar.items import source_text, weak_title

    assert all(weak_title(t) for t in (None, "", "arxiv.org", "https://arxiv.org/abs/2313.1", "2313.00002v3", "[4]"))
    assert not any(weak_title(t) for t in ("BERT", "Attention Is All You Need", "A Survey of arXiv Usage"))
    ctx = CTX.with_resolved({"2313.00002": ("Resolved Title", "Resolved abstract.")})
    st = source_text(Source(key="2", title="arxiv.org", arxiv_id="2313.00002v3"), ctx)
    assert (st.title, st.abstract, st.evidence) == ("Resolved Title", "Resolved abstract.", "arxiv")
    own = source_text(Source(key="1", title="Own Title", arxiv_id="2313.00002"), ctx)
    assert (own.title, own.evidence) == ("Own Title", "arxiv")  # the report's real title is kept


def test_release_divisor_is_the_mean_of_the_exemplars_medians() -> None:
    from reportbench.types import ExemplarRef

    t2 = TASK.model_copy(update={"task_id": "2506.00010v1"})
    refs = [ExemplarRef(task_id=TASK.task_id, ref_key=k, position=i, arxiv_id=a)
            for i, (k, a) in enumerate([("a", "2301.1"), ("b", "2301.2"), ("c", "2301.3")])]  # fmt: skip
    refs += [ExemplarRef(task_id=t2.task_id, ref_key=k, position=i, arxiv_id=a)
             for i, (k, a) in enumerate([("d", "2301.4"), ("e", "2301.5")])]  # fmt: skip
    ctx = ReleaseContext.from_records(refs)
    # exemplar medians: median(10, 50, 90) = 50 and median(100, 300) = 200 -> divisor (50 + 200) / 2 = 125
    counts = {"2301.1": 10, "2301.2": 50, "2301.3": 90, "2301.4": 100, "2301.5": 300, "2401.00001": 25}
    rep = _di_report("s:1", ["2401.00001"])
    s = score_system("s", [TASK, t2], [rep], {}, ctx, counts, P(document_importance={"divisor": "release"}))
    di = s.summary["metrics"]["document_importance"]
    assert di["release_divisor"] == 125.0 and di["release_divisor_tasks"] == 2
    assert di["mean"] == pytest.approx(25 / 125)  # 0.2
    with pytest.raises(ValueError, match="divisor"):
        P(document_importance={"divisor": 0})
