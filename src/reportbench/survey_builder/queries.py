"""Stage `queries`: question tree -> query + reference answer -> the paper's filters, in the paper's order.

Per kept section (spec §1.4; prompts P4-P10, our reconstruction):

1. `question_tree`: a hierarchical question-under-discussion summary over the numbered sentences;
2. `query_answer`: one query and a reference answer that summarises the sentences supporting it; the answer
   must cite >= `min_support_sentences` distinct sentence ids (checked here, not trusted);
3. filters, each run only on the survivors of the previous one, each leaving a `Verdict` row (judge verdict or
   rule measurement) for every query it saw:

   | order | filter | kind | drop when |
   |---|---|---|---|
   | 1 | self_containment | judge (1-10) | score < `min_self_containment` |
   | 2 | answer_variability | judge (1-10) | score > `max_answer_variability` |
   | 3 | rephrase | judge | never (the rewrite replaces the pair); a failed call drops |
   | 4 | citation_in_query | judge (yes/no) | yes |
   | 5 | answer_length | rule | reference answer < `min_answer_chars` characters |
   | 6 | keywords | rule | a past-tense auxiliary or a referring word/phrase in the query |
   | 7 | field_alignment | judge (yes/no) | no |
   | 8 | field_size | rule | the field keeps < `min_queries_per_field` queries |

A judge call that fails after its retries drops the query with reason `<filter>_failed` and the error: it is
never read as a pass or a fail.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from reportbench.judges.base import Judgment
from reportbench.survey_builder.config import QueryParams
from reportbench.survey_builder.records import Drop, JudgeLog, Verdict, parsed
from reportbench.survey_builder.sections import SectionRecord
from reportbench.survey_builder.tasks import (
    ANSWER_VARIABILITY,
    CITATION_CHECK,
    FIELD_ALIGNMENT,
    QUERY_ANSWER,
    QUESTION_TREE,
    REPHRASE,
    SELF_CONTAINMENT,
    FieldInput,
    QAInput,
    QueryInput,
    QueryOnlyInput,
    TreeInput,
)
from reportbench.survey_builder.text import matched_keywords

STAGE = "queries"
FILTERS = (
    "self_containment",
    "answer_variability",
    "rephrase",
    "citation_in_query",
    "answer_length",
    "keywords",
    "field_alignment",
    "field_size",
)
DROP_REASONS = (
    "tree_failed", "generation_failed", "too_few_supporting_sentences", "self_containment_failed",
    "not_self_contained", "answer_variability_failed", "too_variable", "rephrase_failed", "citation_in_query_failed",
    "citation_in_query", "answer_too_short", "keyword_past_tense", "keyword_referring", "field_alignment_failed",
    "field_misaligned", "field_too_small",
)  # fmt: skip


class QueryRecord(BaseModel):
    """A query that passed every filter, with its reference answer and provenance."""

    model_config = ConfigDict(extra="forbid")

    query_id: str
    section_id: str
    survey_id: str
    survey_title: str
    section_title: str
    date: str
    general_domain: str
    subdomain: str
    field: str
    query: str
    answer: str
    initial_query: str
    initial_answer: str
    support: list[int]
    references: list[str]
    tree: list[dict[str, Any]]


@dataclass
class QueryResult:
    kept: list[QueryRecord] = field(default_factory=list)
    drops: list[Drop] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)


def render_tree(nodes: Sequence[dict[str, Any]]) -> str:
    """`Q2.1 question (sent 5, 6)`, indented by depth: how the tree is shown to the query writer."""
    lines = []
    for n in nodes:
        depth = str(n["id"]).count(".")
        sents = ", ".join(str(i) for i in n.get("sentences") or [])
        lines.append(f"{'  ' * depth}{n['id']} {n['question']}" + (f" (sentences {sents})" if sents else ""))
    return "\n".join(lines)


def keyword_verdict(query: str, params: QueryParams) -> tuple[str, str] | None:
    """(reason_code, reason) when the keyword filter drops the query, else None."""
    past = matched_keywords(query, params.keyword_filter.past_tense)
    if past:
        return "keyword_past_tense", f"past-tense auxiliary {past} (not a standalone present-tense question)"
    refer = matched_keywords(query, params.keyword_filter.referring)
    if refer:
        return "keyword_referring", f"refers to its source: {refer}"
    return None


def field_size_drops(records: Sequence[QueryRecord], minimum: int) -> tuple[set[str], dict[str, int]]:
    counts = Counter(r.field for r in records)
    return {f for f, n in counts.items() if n < minimum}, dict(sorted(counts.items()))


class _Filtering:
    """The running state: survivors, their current (query, answer), drops and verdicts."""

    def __init__(self, result: QueryResult) -> None:
        self.result = result
        self.alive: dict[str, dict[str, Any]] = {}

    def drop(self, qid: str, code: str, reason: str) -> None:
        self.alive.pop(qid, None)
        self.result.drops.append(Drop(item_id=qid, kind="query", stage=STAGE, reason_code=code, reason=reason))

    def verdict(self, qid: str, name: str, kind: str, passed: bool, detail: str, **kw: Any) -> None:
        self.result.verdicts.append(
            Verdict(query_id=qid, order=FILTERS.index(name) + 1, filter=name, kind=kind, passed=passed,  # type: ignore[arg-type]
                    detail=detail[:1000], **kw)  # fmt: skip
        )

    def judged(self, name: str, js: dict[str, Judgment], passes: Any) -> None:
        """Apply one judge filter: `passes(parsed) -> (bool, reason)`; failures drop as `<name>_failed`."""
        for qid in list(self.alive):
            j = js[f"{qid}:{name}"]
            if not j.ok:
                self.verdict(qid, name, "judge", False, f"failed: {j.error}", judgment_item=j.item_id)
                self.drop(qid, f"{name}_failed", f"{name} judgment failed: {j.error}")
                continue
            ok, why = passes(parsed(j))
            self.verdict(qid, name, "judge", ok, why, judgment_item=j.item_id, value=j.value)
            if not ok:
                code = {
                    "self_containment": "not_self_contained",
                    "answer_variability": "too_variable",
                    "citation_in_query": "citation_in_query",
                    "field_alignment": "field_misaligned",
                }[name]
                self.drop(qid, code, why)


def generate_queries(sections: Sequence[SectionRecord], params: QueryParams, log_: JudgeLog) -> QueryResult:
    result = QueryResult()
    st = _Filtering(result)
    by_id = {s.section_id: s for s in sections}

    # 1. question tree
    trees = log_.run(
        QUESTION_TREE,
        [
            (s.section_id, TreeInput(survey_title=s.survey_title, section_title=s.title, sentences=s.sentences),
             {"section": s.section_id})
            for s in sections
        ],
    )  # fmt: skip
    tree_nodes: dict[str, list[dict[str, Any]]] = {}
    for s in sections:
        j = trees[s.section_id]
        if not j.ok:
            st.result.drops.append(
                Drop(item_id=s.section_id, kind="query", stage=STAGE, reason_code="tree_failed",
                     reason=f"question_tree failed: {j.error}")
            )  # fmt: skip
        else:
            tree_nodes[s.section_id] = parsed(j)["nodes"]

    # 2. query + reference answer
    gen = log_.run(
        QUERY_ANSWER,
        [
            (
                sid,
                QueryInput(
                    survey_title=by_id[sid].survey_title,
                    section_title=by_id[sid].title,
                    field=by_id[sid].field,
                    sentences=by_id[sid].sentences,
                    tree=render_tree(nodes),
                    min_support=params.min_support_sentences,
                ),
                {"section": sid},
            )
            for sid, nodes in tree_nodes.items()
        ],
    )
    for sid in tree_nodes:
        j = gen[sid]
        if not j.ok:
            st.drop(sid, "generation_failed", f"query_answer failed: {j.error}")
            continue
        p = parsed(j)
        support = sorted(set(p["sentences"]))
        if len(support) < params.min_support_sentences:
            st.drop(sid, "too_few_supporting_sentences",
                    f"answer supported by {len(support)} sentence(s) < {params.min_support_sentences}")  # fmt: skip
            continue
        st.alive[sid] = {"query": p["query"], "answer": p["answer"], "initial": (p["query"], p["answer"]),
                         "support": support}  # fmt: skip

    def qa_items(name: str) -> list[tuple[str, Any, dict[str, str]]]:
        return [
            (f"{qid}:{name}", QAInput(query=v["query"], answer=v["answer"]), {"query": qid, "filter": name})
            for qid, v in st.alive.items()
        ]

    # filter 1: self-containment (>= threshold passes)
    lo = params.min_self_containment
    st.judged(
        "self_containment",
        log_.run(SELF_CONTAINMENT, qa_items("self_containment")),
        lambda p: (p["score"] >= lo, f"self-containment {p['score']} (needs >= {lo}): {p['reason']}"),
    )
    # filter 2: answer variability (<= threshold passes)
    hi = params.max_answer_variability
    st.judged(
        "answer_variability",
        log_.run(ANSWER_VARIABILITY, qa_items("answer_variability")),
        lambda p: (p["score"] <= hi, f"answer variability {p['score']} (needs <= {hi}): {p['reason']}"),
    )
    # filter 3: rephrase (replaces the pair; nothing is dropped unless the call failed)
    reph = log_.run(REPHRASE, qa_items("rephrase"))
    for qid in list(st.alive):
        j = reph[f"{qid}:rephrase"]
        if not j.ok:
            st.verdict(qid, "rephrase", "judge", False, f"failed: {j.error}", judgment_item=j.item_id)
            st.drop(qid, "rephrase_failed", f"rephrase judgment failed: {j.error}")
            continue
        p = parsed(j)
        st.alive[qid].update(query=p["query"], answer=p["answer"])
        st.verdict(qid, "rephrase", "judge", True, "rewritten for cohesion", judgment_item=j.item_id, value=j.value)
    # filter 4: no citation in the query
    st.judged(
        "citation_in_query",
        log_.run(CITATION_CHECK, [(f"{q}:citation_in_query", QueryOnlyInput(query=v["query"]),
                                   {"query": q, "filter": "citation_in_query"}) for q, v in st.alive.items()]),
        lambda p: (not p["has_citation"], f"citation in query: {p['has_citation']} ({p['reason']})"),
    )  # fmt: skip
    # filter 5: reference answer length (rule)
    for qid in list(st.alive):
        n = len(st.alive[qid]["answer"])
        ok = n >= params.min_answer_chars
        st.verdict(qid, "answer_length", "rule", ok, f"{n} characters (needs >= {params.min_answer_chars})", value=n)
        if not ok:
            st.drop(qid, "answer_too_short", f"reference answer has {n} characters < {params.min_answer_chars}")
    # filter 6: keyword filter for standalone queries (rule)
    for qid in list(st.alive):
        bad = keyword_verdict(st.alive[qid]["query"], params)
        st.verdict(qid, "keywords", "rule", bad is None, bad[1] if bad else "no filtered keyword")
        if bad:
            st.drop(qid, *bad)
    # filter 7: field alignment
    st.judged(
        "field_alignment",
        log_.run(
            FIELD_ALIGNMENT,
            [
                (f"{q}:field_alignment",
                 FieldInput(query=v["query"], general_domain=by_id[q].general_domain, subdomain=by_id[q].subdomain,
                            field=by_id[q].field),
                 {"query": q, "filter": "field_alignment"})
                for q, v in st.alive.items()
            ],
        ),
        lambda p: (p["aligned"], f"aligned with the field: {p['aligned']} ({p['reason']})"),
    )  # fmt: skip
    records = []
    for qid, v in st.alive.items():
        s = by_id[qid]
        records.append(
            QueryRecord(
                query_id=qid,
                section_id=qid,
                survey_id=s.survey_id,
                survey_title=s.survey_title,
                section_title=s.title,
                date=s.date,
                general_domain=s.general_domain,
                subdomain=s.subdomain,
                field=s.field,
                query=v["query"],
                answer=v["answer"],
                initial_query=v["initial"][0],
                initial_answer=v["initial"][1],
                support=v["support"],
                references=s.references,
                tree=tree_nodes[qid],
            )
        )
    # filter 8: fields with too few queries (rule)
    small, counts = field_size_drops(records, params.min_queries_per_field)
    for r in records:
        ok = r.field not in small
        detail = f"field {r.field!r} keeps {counts[r.field]} queries (needs >= {params.min_queries_per_field})"
        st.verdict(r.query_id, "field_size", "rule", ok, detail, value=counts[r.field])
        if not ok:
            st.drop(r.query_id, "field_too_small", detail)
    result.kept = sorted((r for r in records if r.field not in small), key=lambda r: r.query_id)
    return result


def query_rows(records: Iterable[QueryRecord]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in sorted(records, key=lambda r: r.query_id)]
