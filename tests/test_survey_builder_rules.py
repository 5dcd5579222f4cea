"""Unit cases for every survey-builder rule and filter: listing checks and the topic hierarchy, section
selection, the query filter chain (thresholds at their boundaries, failed judgments, the keyword filter, field
size), rubric rules (duplicates, vacuous items, citation matching, ranking, top-k), splits, and the strict parsers.
A scripted in-process judge stands in for the generator, so each case states exactly what the judge said."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from reportbench.judges.base import JudgeTask, Judgment, ParseError, dump_parsed
from reportbench.live_builder.latex import PaperSection
from reportbench.survey_builder import tasks as T
from reportbench.survey_builder.config import QueryParams, RubricParams, SectionParams, SurveyConfig
from reportbench.survey_builder.queries import FILTERS, QueryRecord, generate_queries, keyword_verdict
from reportbench.survey_builder.records import JudgeLog
from reportbench.survey_builder.rubrics import Candidate, RubricResult, apply_rules, check_citations, rank_and_cut
from reportbench.survey_builder.sections import SectionRecord, select_section
from reportbench.survey_builder.surveys import build_query, hierarchy, listing_checks
from reportbench.survey_builder.text import latex_to_text, matched_keywords, substantive_new_words

pytestmark = pytest.mark.core


# ---------------------------------------------------------------------------------------- a scripted judge
class ScriptedJudge:
    """Answers with `answer(task_name, inputs)` -> a dict for the task's output model, or an Exception (failed)."""

    def __init__(self, task: JudgeTask, answer: Callable[[str, Any], Any]) -> None:
        self.task, self.answer, self.judge_id = task, answer, "scripted"

    async def __call__(self, item_id: str, inputs: Any, input_ids: dict[str, str]) -> Judgment:
        got = self.answer(self.task.name.removeprefix("survey_builder_"), inputs)
        base = {"task": self.task.name, "item_id": item_id, "input_ids": input_ids, "judge_id": "scripted"}
        if isinstance(got, Exception):
            return Judgment(**base, status="failed", error=f"parse: {got}")
        out = self.task.parse(json.dumps(got), inputs)
        return Judgment(**base, status="ok", value=out.value(), parsed=dump_parsed(out), explanation=out.explanation())


def log_with(answer: Callable[[str, Any], Any]) -> JudgeLog:
    return JudgeLog(lambda task: ScriptedJudge(task, answer))


def cfg(**kw: Any) -> SurveyConfig:
    base = {
        "name": "t",
        "window": {"start": "2026-05-01", "end": "2026-05-31"},
        "title_keywords": ["survey", "a review"],
        "domain_map": {"Computer Science": "Engineering & Computer Science"},
    }
    return SurveyConfig.model_validate(base | kw)


# --------------------------------------------------------------------------------------------- surveys
TOPIC = {
    "display_name": "NLP",
    "subfield": {"display_name": "Artificial Intelligence"},
    "field": {"display_name": "Computer Science"},
    "domain": {"display_name": "Physical Sciences"},
}


def work(**kw: Any) -> dict[str, Any]:
    w = {
        "id": "https://openalex.org/W1",
        "display_name": "Retrieval Models: A Survey",
        "publication_date": "2026-05-10",
        "type": "preprint",
        "primary_topic": TOPIC,
        "locations": [{"landing_page_url": "https://arxiv.org/abs/2605.00001v2"}],
        "abstract_inverted_index": {"We": [0], "review": [1]},
        "language": "en",
    }
    return w | kw


def test_listing_checks_keep_and_map_the_hierarchy() -> None:
    s = listing_checks(work(), cfg(), "fields/17")
    assert not isinstance(s, tuple)
    assert (s.general_domain, s.subdomain, s.field, s.arxiv_id) == (
        "Engineering & Computer Science", "Computer Science", "Artificial Intelligence", "2605.00001",
    )  # fmt: skip
    assert s.abstract == "We review" and s.survey_id == "W1"


@pytest.mark.parametrize(
    ("override", "code"),
    [
        ({"display_name": "Surveying reefs with drones"}, "no_title_keyword"),  # OpenAlex stemming match
        ({"display_name": "Reviewing old ideas"}, "no_title_keyword"),
        ({"publication_date": "2026-06-01"}, "outside_window"),
        ({"type": "dataset"}, "wrong_type"),
        ({"language": "de"}, "language"),
        ({"primary_topic": None}, "no_topic"),
        ({"primary_topic": {**TOPIC, "field": {"display_name": "Basket Weaving"}, "domain": {"display_name": "X"}}},
         "unmapped_field"),
        ({"locations": [{"landing_page_url": "https://doi.org/10.1/x"}]}, "no_open_fulltext"),
    ],
)  # fmt: skip
def test_listing_checks_drop_with_a_reason(override: dict[str, Any], code: str) -> None:
    got = listing_checks(work(**override), cfg(), None)
    assert isinstance(got, tuple) and got[0] == code and got[1]


def test_one_unreadable_openalex_record_is_a_drop_not_a_lost_field() -> None:
    import requests

    from reportbench.survey_builder.surveys import list_surveys

    good = work(id="https://openalex.org/W2")
    bad = {"display_name": "Broken: A Survey", "publication_date": "2026-05-10", "type": "preprint",
           "primary_topic": TOPIC, "locations": [{"landing_page_url": "https://arxiv.org/abs/2605.00003"}],
           "language": "en", "abstract_inverted_index": {"x": "not a list"}}  # no id, a malformed abstract

    class Page(list):
        pass

    class Query:
        def paginate(self, **kw: Any) -> list[Page]:
            return [Page([bad, good])]

    import reportbench.survey_builder.surveys as sv

    orig = sv.build_query
    sv.build_query = lambda c, f: Query()  # type: ignore[assignment]
    try:
        with requests.Session() as session:
            listed, out = list_surveys(cfg(), session, api_key=None, mailto=None)
    finally:
        sv.build_query = orig  # type: ignore[assignment]
    assert [s.survey_id for s in listed] == ["W2"]
    assert [(d.item_id, d.reason_code) for d in out.drops] == [("?", "bad_entry")] and not out.errors


def test_unmapped_field_falls_back_to_the_openalex_domain() -> None:
    topic = {**TOPIC, "field": {"display_name": "Nursing"}, "domain": {"display_name": "Health Sciences"}}
    assert hierarchy(topic, {})[0] == "Health Sciences & Medicine"


def test_listing_query_sends_type_window_field_keywords_and_arxiv_filters() -> None:
    url = build_query(cfg(fields=["fields/17"]), "fields/17").url
    for part in ("type:review|article|preprint", "from_publication_date:2026-05-01", "to_publication_date:2026-05-31",
                 "primary_topic.field.id:17,", "locations.source.id:S4306400194", "title.search:%22survey%22",
                 "sort=publication_date:desc"):  # fmt: skip
        assert part in url, part


def test_offline_survey_check_reads_review_cues() -> None:
    yes = T.offline_survey_check(T.SurveyCheckInput(title="X: A Survey", abstract="This survey reviews Y."), {})
    voters = T.SurveyCheckInput(title="A Survey of Voters", abstract="We surveyed 300 respondents.")
    no = T.offline_survey_check(voters, {})
    assert yes.output.is_literature_review and not no.output.is_literature_review  # type: ignore[attr-defined]


# -------------------------------------------------------------------------------------------- sections
PROSE = " ".join(f"Sentence number {i} explains one aspect of retrieval for science~\\cite{{k{i}}}." for i in range(14))


def sec(raw: str = PROSE, title: str = "Dense Retrieval", **kw: Any) -> PaperSection:
    from reportbench.live_builder.latex import count_citations

    return PaperSection(index=1, title=title, level="section", raw=raw, n_citations=count_citations(raw), **kw)


@pytest.mark.parametrize(
    ("section", "code"),
    [
        (sec(in_appendix=True), "appendix"),
        (sec(title="Future Directions"), "title_blacklist"),
        (sec(title="Experimental Results"), "title_blacklist"),  # substring: "result"
        (sec(title="Figures of Merit"), "title_blacklist"),
        (sec(raw=PROSE * 60), "too_long"),
        (sec(raw=PROSE[:700]), "too_short"),
        (sec(raw="A" * 500 + " \\cite{a} " + "b" * 400 + ". Two \\cite{b}. \\cite{c}"), "too_few_sentences"),
        (sec(raw=PROSE.replace("~\\cite{k", " ref{k").replace("}.", ".")), "too_few_citations"),
    ],
)  # fmt: skip
def test_section_rules(section: PaperSection, code: str) -> None:
    params = SectionParams(max_chars=20_000)
    got = select_section(section, params)
    assert got[0] == code, got


def test_a_good_section_is_kept_with_its_sentences() -> None:
    got = select_section(sec(), SectionParams())
    assert got[0] == "ok" and len(got[1]) == 14 and "[k0]" in got[1][0]


def test_latex_to_text_keeps_prose_and_citation_markers() -> None:
    raw = "Dense retrievers~\\citep{a,b} work. % note \\cite{x}\n\\begin{table}T\\end{table}$$x=1$$ See \\ref{t}."
    assert latex_to_text(raw) == "Dense retrievers [a; b] work. See."


# --------------------------------------------------------------------------------------------- queries
def section_record(sid: str = "W1-s1", field: str = "AI", n: int = 6) -> SectionRecord:
    sents = [f"Sentence {i} states a distinct finding about dense retrieval [k{i}]." for i in range(1, n + 1)]
    return SectionRecord(
        section_id=sid, survey_id=sid.split("-")[0], survey_title="S", date="2026-05-01", general_domain="D",
        subdomain="CS", field=field, title="Dense Retrieval", text=" ".join(sents), sentences=sents, n_citations=6,
        cite_keys=[], references=[],
    )  # fmt: skip


def script(**over: Any) -> Callable[[str, Any], Any]:
    long_answer = "Dense retrievers encode passages. " * 30
    answers: dict[str, Any] = {
        "question_tree": {"nodes": [{"id": "Q1", "question": "What?", "sentences": [1, 2, 3]}]},
        "query_answer": {"query": "How do dense retrievers compare with sparse ones?", "answer": long_answer,
                         "sentences": [1, 2, 3]},
        "self_containment": {"score": 7, "reason": "clear"},
        "answer_variability": {"score": 4, "reason": "narrow"},
        "rephrase": {"query": "How do dense retrievers compare with sparse retrievers?", "answer": long_answer},
        "citation_in_query": {"has_citation": False, "reason": "none"},
        "field_alignment": {"aligned": True, "reason": "yes"},
    } | over  # fmt: skip
    return lambda task, inputs: answers[task](inputs) if callable(answers[task]) else answers[task]


def run_queries(answer: Callable[[str, Any], Any], n_sections: int = 1, **params: Any) -> Any:
    qp = QueryParams(**({"min_queries_per_field": 1} | params))
    sections = [section_record(f"W{i}-s1") for i in range(n_sections)]
    return generate_queries(sections, qp, log_with(answer))


def test_a_query_that_passes_every_filter_at_its_boundary() -> None:
    res = run_queries(script())
    assert [q.query_id for q in res.kept] == ["W0-s1"] and not res.drops
    assert res.kept[0].query.endswith("sparse retrievers?")  # the rephrased pair replaces the original
    assert res.kept[0].initial_query.endswith("sparse ones?")
    assert [v.filter for v in res.verdicts] == list(FILTERS)


@pytest.mark.parametrize(
    ("over", "code"),
    [
        ({"self_containment": {"score": 6, "reason": "needs context"}}, "not_self_contained"),
        ({"answer_variability": {"score": 5, "reason": "open"}}, "too_variable"),
        ({"citation_in_query": {"has_citation": True, "reason": "[3]"}}, "citation_in_query"),
        ({"field_alignment": {"aligned": False, "reason": "another field"}}, "field_misaligned"),
        ({"query_answer": {"query": "How do dense retrievers work?", "answer": "x" * 900, "sentences": [1, 2, 2]}},
         "too_few_supporting_sentences"),
        ({"rephrase": {"query": "How do dense retrievers compare with sparse retrievers?", "answer": "y" * 799}},
         "answer_too_short"),
        ({"rephrase": {"query": "Which retriever was best on these benchmarks?", "answer": "y" * 900}},
         "keyword_past_tense"),
        ({"rephrase": {"query": "What does the paper conclude about dense retrieval?", "answer": "y" * 900}},
         "keyword_referring"),
    ],
)  # fmt: skip
def test_each_filter_drops_with_its_reason(over: dict[str, Any], code: str) -> None:
    res = run_queries(script(**over))
    assert not res.kept and [d.reason_code for d in res.drops] == [code] and res.drops[0].reason


@pytest.mark.parametrize(
    "task", ["question_tree", "query_answer", "self_containment", "answer_variability", "rephrase",
             "citation_in_query", "field_alignment"],
)  # fmt: skip
def test_a_failed_judgment_drops_the_query_never_passes_it(task: str) -> None:
    res = run_queries(script(**{task: lambda inputs: ValueError("unparseable")}))
    code = {"question_tree": "tree_failed", "query_answer": "generation_failed"}.get(task, f"{task}_failed")
    assert not res.kept and [d.reason_code for d in res.drops] == [code]
    assert "unparseable" in res.drops[0].reason


def test_fields_with_too_few_queries_are_dropped() -> None:
    res = run_queries(script(), n_sections=2, min_queries_per_field=3)
    assert not res.kept and {d.reason_code for d in res.drops} == {"field_too_small"}
    assert run_queries(script(), n_sections=3, min_queries_per_field=3).kept


def test_keyword_filter_matches_whole_words_only() -> None:
    qp = QueryParams()
    assert keyword_verdict("How do wasp colonies divide labour?", qp) is None  # "was" inside "wasp"
    assert keyword_verdict("Which drug WAS approved first?", qp)[0] == "keyword_past_tense"  # type: ignore[index]
    assert keyword_verdict("What does the literature say on X?", qp)[0] == "keyword_referring"  # type: ignore[index]
    assert matched_keywords("what did  the   paper show", ["the paper"]) == ["the paper"]


# --------------------------------------------------------------------------------------------- rubrics
def query(qid: str = "Q1", text: str = "How do dense retrievers compare with sparse retrievers?") -> QueryRecord:
    return QueryRecord(
        query_id=qid, section_id=qid, survey_id="W1", survey_title="S", section_title="T", date="2026-05-01",
        general_domain="D", subdomain="S", field="F", query=text, answer="A", initial_query=text, initial_answer="A",
        support=[1, 2, 3], references=[], tree=[],
    )  # fmt: skip


def cand(i: int, text: str, kind: str = "information", **kw: Any) -> Candidate:
    return Candidate(item_id=f"Q1:s{kind[0]}{i}", query_id="Q1", origin="survey", kind=kind, text=text, **kw)


def test_vacuous_items_and_duplicates_are_removed() -> None:
    out = RubricResult(
        candidates=[
            cand(0, "Does the response mention how dense retrievers compare with sparse retrievers?"),
            cand(1, "Does the response discuss the dense retriever versus the sparse retriever?"),  # -s folded
            cand(2, "Does the response mention hard-negative mining?"),
            cand(3, "Does the response mention  hard-negative mining ?"),  # same criterion after normalisation
        ]
    )
    apply_rules([query()], out)
    assert [c.status for c in out.candidates] == ["vacuous", "vacuous", "kept", "duplicate"]
    assert {d.reason_code for d in out.drops} == {"vacuous", "duplicate"}
    assert substantive_new_words("Does the response explain the role of BM25?", "What is dense retrieval?") == ["bm25"]


class _Lookup:
    """Stands in for OpenAlexLookup.by_titles: normalised title -> candidates (with rapidfuzz scores)."""

    def __init__(self, found: dict[str, list[dict[str, Any]]], errors: dict[str, str] | None = None) -> None:
        self.found, self.errors, self.n_calls = found, errors or {}, 1


def test_citation_items_need_a_real_work_above_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    import reportbench.live_builder.recover as recover

    found = {
        "dense passage retrieval for open domain question answering": [
            {"title": "Dense Passage Retrieval for Open-Domain Question Answering", "score": 100.0,
             "id": "https://openalex.org/W3", "doi": "10.18653/v1/2020.emnlp-main.550",
             "publication_date": "2020-04-10"}],
        "a universal benchmark": [{"title": "A Universal Translator", "score": 71.0, "id": "W9", "doi": None}],
        "no hits at all here": [],
    }  # fmt: skip
    monkeypatch.setattr(recover.OpenAlexLookup, "by_titles", lambda self, titles: _Lookup(found, {"broken one": "503"}))
    out = RubricResult(
        candidates=[
            cand(0, "Does the response cite Karpukhin et al. (2020)?", "citation",
                 cited_title="Dense Passage Retrieval for Open-Domain Question Answering"),
            cand(1, "Does the response cite Nguyen et al. (2019)?", "citation", cited_title="A Universal Benchmark"),
            cand(2, "Does the response cite Doe et al. (2021)?", "citation", cited_title="No hits at all here"),
            cand(3, "Does the response cite Roe et al. (2022)?", "citation", cited_title="Broken one"),
        ]
    )  # fmt: skip
    import requests

    with requests.Session() as session:  # never used: the lookup is replaced
        check_citations(out, RubricParams(title_threshold=90), session, object(), api_key=None, mailto=None)  # type: ignore[arg-type]
    statuses = [c.status for c in out.candidates]
    assert statuses == ["kept", "unmatched_citation", "unmatched_citation", "citation_unverified"]
    kept = out.candidates[0]
    assert kept.match_year == 2020 and kept.match_doi and kept.match_score == 100.0
    assert "71.0" in out.candidates[1].reason


def _rank_log(ranking: list[int], duplicates: list[int]) -> JudgeLog:
    return log_with(lambda task, inputs: {"ranking": ranking, "duplicates": duplicates})


def test_ranking_keeps_the_top_k_and_drops_llm_duplicates() -> None:
    out = RubricResult(candidates=[cand(i, f"Does the response mention concept{i}?") for i in range(10)])
    rank_and_cut([query()], RubricParams(top_k=8), _rank_log([10, 9, 8, 7, 6, 5, 4, 3, 2], [1]), out)
    kept = out.rubrics["Q1"]
    assert [c.item_id for c in kept] == [f"Q1:si{i}" for i in (9, 8, 7, 6, 5, 4, 3, 2)]
    assert {c.status for c in out.candidates if c.item_id in ("Q1:si1",)} == {"below_top_k"}
    assert out.candidates[0].status == "duplicate_llm"


def test_rank_parser_requires_every_id_once() -> None:
    inputs = T.RankInput(query="Q?", items=["Does the response a?", "Does the response b?", "Does the response c?"])
    with pytest.raises(ParseError, match="exactly once"):
        T.parse_rank('{"ranking": [1, 2], "duplicates": []}', inputs)
    with pytest.raises(ParseError, match="outside"):
        T.parse_rank('{"ranking": [1, 2, 4], "duplicates": []}', inputs)


def test_a_failed_ranking_or_an_empty_rubric_drops_the_query() -> None:
    out = RubricResult(candidates=[cand(0, "Does the response mention concept0?")])
    rank_and_cut([query()], RubricParams(), log_with(lambda t, i: ValueError("garbled")), out)
    assert out.candidates[0].status == "rank_failed" and "Q1" not in out.rubrics
    assert [d.reason_code for d in out.drops if d.kind == "query"] == ["no_rubric"]


# ------------------------------------------------------------------------------------------ the parsers
def test_generator_parsers_are_strict() -> None:
    tree_in = T.TreeInput(survey_title="S", section_title="T", sentences=["a.", "b."])
    with pytest.raises(ParseError, match="outside"):
        T.parse_tree('{"nodes": [{"id": "Q1", "question": "What?", "sentences": [3]}]}', tree_in)
    with pytest.raises(ParseError):
        T.parse_tree('{"nodes": [{"id": "1", "question": "What?", "sentences": [1]}]}', tree_in)
    rub = T.RubricInput(query="Q?", n=2)
    parse = T.RUBRIC_TASKS[("survey", "information")].parse
    with pytest.raises(ParseError, match="exactly 2"):
        parse('{"items": ["Does the response a?"]}', rub)
    with pytest.raises(ParseError, match="Does the response"):
        parse('{"items": ["Mentions a?", "Does the response b?"]}', rub)
    with pytest.raises(ParseError):
        T.parse_score('{"score": 11, "reason": "x"}')
    with pytest.raises(ParseError):
        T.parse_score('{"score": "7", "reason": "x"}')


def test_prompts_render_from_the_typed_inputs(repo_root: Any) -> None:
    from reportbench.prompts import load_prompt

    for task in T.TASKS:
        tpl = load_prompt(task.prompt_id, repo_root / "prompts")
        assert tpl.prompt_id == task.prompt_id.removesuffix(".yaml")
        values = T.SAMPLE_INPUTS[task.name].prompt_values()
        assert not tpl.placeholders - values.keys()
        user = tpl.render(**values)[-1]["content"]
        assert "JSON" in user and "{{" not in user and all(k in user for k in T.ANSWER_KEYS[task.name])
        assert "reconstruction" in (repo_root / "prompts" / task.prompt_id).read_text()


def test_survey_builder_tasks_stay_out_of_the_benchmark_judge_registry() -> None:
    from reportbench.judges.tasks import TASKS

    assert not any(name.startswith("survey_builder_") for name in TASKS)


# ---------------------------------------------------------------------------------------------- splits
def test_splits_follow_the_paper_rule_and_record_fields_too_small_for_a_test_set() -> None:
    from reportbench.survey_builder.publish import split_rows

    qs = [query(f"A{i}") for i in range(5)] + [query(f"B{i}") for i in range(2)]
    for q in qs:
        q.field = q.query_id[0]
    items = {q.query_id: [cand(0, "Does the response mention concept0?")] for q in qs}
    c = cfg(splits={"test_per_field": 3, "valid_per_field": 1, "seed": 0})
    rows, published, drops = split_rows(qs, items, c)
    assert [len(rows[s]) for s in ("test", "valid", "train", "full")] == [3, 1, 1, 5]
    assert {d.item_id for d in drops} == {"B0", "B1"} and {d.reason_code for d in drops} == {"field_below_test_size"}
    assert rows["full"][0]["rubric"][0] == {
        "rubric_item": "Does the response mention concept0?", "type": ["information"], "citation_metadata": None,
        "origin": "survey",
    }  # fmt: skip
    again, _, _ = split_rows(qs, items, c)
    assert again == rows  # seeded: the same split every build


# --------------------------------------------------------------------------------- full-text extraction
def test_extract_sections_splits_a_survey_into_its_sections(tmp_path: Any) -> None:
    from reportbench.live_builder.latex import extract_sections

    (tmp_path / "main.tex").write_text(
        "\\documentclass{article}\n\\begin{document}\n\\section{Intro} I \\cite{a}.\n"
        "\\section{Methods} M \\citep{a,b} and \\citet[p.~2]{c}. % \\cite{hidden}\n\\subsection{Sub} S \\cite{d}.\n"
        "\\bibliography{refs}\n\\appendix\n\\section{Proofs} P \\cite{a}.\n\\end{document}\n"
    )
    (tmp_path / "refs.bib").write_text("@article{a, title={Alpha}, year={2020}}\n@article{b, title={Beta}}\n")
    p = extract_sections(tmp_path)
    assert p.ok and [s.title for s in p.sections] == ["Intro", "Methods", "Proofs"]
    methods = p.sections[1]
    assert methods.cite_keys == ["a", "b", "c", "d"] and methods.n_citations == 4  # comment ignored, sub inside
    assert [s.in_appendix for s in p.sections] == [False, False, True]
    assert [e.key for e in p.bib_entries] == ["a", "b"] and p.unresolved_keys == ["c", "d"]
    fine = extract_sections(tmp_path, split_level="subsection")
    assert [s.title for s in fine.sections] == ["Intro", "Methods", "Sub", "Proofs"]


def test_cost_model_renders_every_prompt_and_scales_with_the_yield(repo_root: Any) -> None:
    from reportbench.survey_builder.cost import Assumptions, estimate

    few = estimate(Assumptions(sections_per_query=5), repo_root / "prompts")
    many = estimate(Assumptions(sections_per_query=15), repo_root / "prompts")
    assert 0 < few["usd_per_1000_queries"] < many["usd_per_1000_queries"]
    assert many["usd_per_1000_queries_batch"] == pytest.approx(many["usd_per_1000_queries"] / 2, abs=0.01)
