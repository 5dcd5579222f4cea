"""The survey builder's generator and filter steps as judge tasks (typed in, typed out, strict parser, offline rule).

Every LLM step of the construction (spec researchqa.md §1.2-1.5, prompts P3-P12) is one `JudgeTask`, so it runs
through the judge layer: the root `judge` group's backend, the response cache (a rerun is free), retries,
fail-fast, and one `Judgment` record per call with its verdict. The prompts (`prompts/survey_builder/*.yaml`)
are OUR reconstruction from the paper's descriptions; the authors' construction prompts are not public.

The tasks are deliberately NOT added to the global task registry: they are construction steps, not benchmark
judges, and stages pass the `JudgeTask` objects to `make_judge` directly.

The offline rules are deterministic stand-ins (extractive queries, keyword checks) that let the whole build
run with no model and no network — for plumbing and tests, never for a published release.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from rapidfuzz import fuzz

from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, OfflineVerdict, ParseError
from reportbench.judges.tasks._parsing import parse_json_output
from reportbench.survey_builder.text import content_words, split_plain_sentences, strip_markers

PREFIX = "survey_builder"


def numbered_sentences(sentences: list[str]) -> str:
    return "\n".join(f"[{i}] {s}" for i, s in enumerate(sentences, start=1))


# ------------------------------------------------------------------------------------------- P3 survey check
class SurveyCheckInput(JudgeInput):
    title: str
    abstract: str


class SurveyCheckOutput(JudgeOutput):
    is_literature_review: bool
    reason: str

    def value(self) -> float:
        return 1.0 if self.is_literature_review else 0.0

    def label(self) -> str:
        return "review" if self.is_literature_review else "not_review"

    def explanation(self) -> str:
        return self.reason


_REVIEW_CUES = re.compile(
    r"\b(we|this (paper|article|work)) (review|survey|summari[sz]e|synthesi[sz]e|overview)|\b(this|our) "
    r"(survey|review|overview)\b|\b(systematic|literature|narrative|scoping) review\b|\bmeta-analys[ie]s\b|"
    r"\bcomprehensive (survey|review|overview)\b",
    re.IGNORECASE,
)
_PRIMARY_CUES = re.compile(
    r"\b(respondents|questionnaire|we surveyed|participants were|household survey|cross-sectional survey)\b",
    re.IGNORECASE,
)


def offline_survey_check(inputs: SurveyCheckInput, params: dict[str, Any]) -> OfflineVerdict:
    text = f"{inputs.title}. {inputs.abstract}"
    review = bool(_REVIEW_CUES.search(text)) and not _PRIMARY_CUES.search(text)
    why = "review cue in title/abstract" if review else "no review cue, or a primary-data (questionnaire) cue"
    return OfflineVerdict(SurveyCheckOutput(is_literature_review=review, reason=why), why)


# ---------------------------------------------------------------------------------------- P4 question tree
class TreeInput(JudgeInput):
    survey_title: str
    section_title: str
    sentences: list[str]

    def prompt_values(self) -> dict[str, Any]:
        return {
            "survey_title": self.survey_title,
            "section_title": self.section_title,
            "sentences": numbered_sentences(self.sentences),
            "num_sentences": len(self.sentences),
        }


class TreeNode(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^Q\d+(\.\d+)*$")
    question: str = Field(min_length=3)
    sentences: list[int]


class TreeOutput(JudgeOutput):
    nodes: list[TreeNode] = Field(min_length=1)

    def value(self) -> float:
        return float(len(self.nodes))

    def label(self) -> str:
        return f"{len(self.nodes)} nodes"


def _check_ids(ids: list[int], n: int, what: str) -> None:
    bad = [i for i in ids if not 1 <= i <= n]
    if bad:
        raise ParseError(f"{what} cites sentence ids {bad} outside 1..{n}")


def parse_tree(raw: str, inputs: TreeInput | None = None) -> TreeOutput:
    out = parse_json_output(raw, TreeOutput)
    if inputs is not None:
        for node in out.nodes:
            _check_ids(node.sentences, len(inputs.sentences), f"node {node.id}")
    return out


def offline_tree(inputs: TreeInput, params: dict[str, Any]) -> OfflineVerdict:
    n = len(inputs.sentences)
    nodes = [TreeNode(id="Q1", question=f"What does the section on {inputs.section_title} establish?", sentences=[])]
    for k, start in enumerate(range(0, n, 3), start=1):
        ids = list(range(start + 1, min(n, start + 3) + 1))
        nodes.append(TreeNode(id=f"Q1.{k}", question=f"What do sentences {ids[0]}-{ids[-1]} state?", sentences=ids))
    nodes[0].sentences = list(range(1, n + 1))
    return OfflineVerdict(TreeOutput(nodes=nodes), "offline: one root question, one child per three sentences")


# ------------------------------------------------------------------------------------ P5 query + answer
class QueryInput(JudgeInput):
    survey_title: str
    section_title: str
    field: str
    sentences: list[str]
    tree: str
    min_support: int

    def prompt_values(self) -> dict[str, Any]:
        return {**self.model_dump(exclude={"sentences"}), "sentences": numbered_sentences(self.sentences)}


class QueryOutput(JudgeOutput):
    query: str = Field(min_length=10)
    answer: str = Field(min_length=10)
    sentences: list[int]

    def value(self) -> float:
        return float(len(set(self.sentences)))

    def label(self) -> str:
        return self.query


def parse_query(raw: str, inputs: QueryInput | None = None) -> QueryOutput:
    out = parse_json_output(raw, QueryOutput)
    if inputs is not None:
        _check_ids(out.sentences, len(inputs.sentences), "the answer")
    return out


def offline_query(inputs: QueryInput, params: dict[str, Any]) -> OfflineVerdict:
    ids = list(range(1, len(inputs.sentences) + 1))
    topic = inputs.section_title.strip().rstrip(".").lower()
    query = f"What are the main approaches, findings and open problems concerning {topic} in {inputs.field.lower()}?"
    answer = " ".join(strip_markers(s) for s in inputs.sentences)
    return OfflineVerdict(
        QueryOutput(query=query, answer=answer, sentences=ids), "offline: templated query, extractive answer"
    )


# ----------------------------------------------------------------------------- P6/P7 scored filters
class QAInput(JudgeInput):
    query: str
    answer: str


class ScoreOutput(JudgeOutput):
    score: int = Field(ge=1, le=10)
    reason: str

    def value(self) -> float:
        return float(self.score)

    def explanation(self) -> str:
        return self.reason


def parse_score(raw: str, inputs: Any = None) -> ScoreOutput:
    return parse_json_output(raw, ScoreOutput)


_DANGLING = re.compile(
    r"\b(this|these|those|the above|aforementioned|mentioned|the (survey|review|section|authors|paper|study))\b",
    re.IGNORECASE,
)
_OPEN = re.compile(r"\b(opinion|think|best|should|would you|your view|favourite|favorite)\b", re.IGNORECASE)


def offline_self_containment(inputs: QAInput, params: dict[str, Any]) -> OfflineVerdict:
    hits = _DANGLING.findall(inputs.query)
    score = max(1, 9 - 3 * len(hits))
    why = f"{len(hits)} context-dependent reference(s) in the query"
    return OfflineVerdict(ScoreOutput(score=score, reason=why), why)


def offline_variability(inputs: QAInput, params: dict[str, Any]) -> OfflineVerdict:
    hits = _OPEN.findall(inputs.query)
    score = min(10, 3 + 3 * len(hits))
    why = f"{len(hits)} opinion/open-ended cue(s) in the query"
    return OfflineVerdict(ScoreOutput(score=score, reason=why), why)


# ---------------------------------------------------------------------------------------- P8 rephrase
class RephraseOutput(JudgeOutput):
    query: str = Field(min_length=10)
    answer: str = Field(min_length=10)

    def value(self) -> float:
        return 1.0

    def label(self) -> str:
        return self.query


def parse_rephrase(raw: str, inputs: Any = None) -> RephraseOutput:
    return parse_json_output(raw, RephraseOutput)


def offline_rephrase(inputs: QAInput, params: dict[str, Any]) -> OfflineVerdict:
    out = RephraseOutput(query=" ".join(inputs.query.split()), answer=" ".join(inputs.answer.split()))
    return OfflineVerdict(out, "offline: whitespace normalised, wording unchanged")


# ---------------------------------------------------------------------------------- P9 citation in query
class QueryOnlyInput(JudgeInput):
    query: str


class CitationOutput(JudgeOutput):
    has_citation: bool
    reason: str

    def value(self) -> float:
        return 1.0 if self.has_citation else 0.0

    def label(self) -> str:
        return "citation" if self.has_citation else "no_citation"

    def explanation(self) -> str:
        return self.reason


_CITATION = re.compile(r"\[\d+(?:[,\-–]\s*\d+)*\]|\bet al\b|\(\s*[A-Z][A-Za-z\-]+,? (?:19|20)\d{2}[a-z]?\s*\)")


def parse_citation(raw: str, inputs: Any = None) -> CitationOutput:
    return parse_json_output(raw, CitationOutput)


def offline_citation(inputs: QueryOnlyInput, params: dict[str, Any]) -> OfflineVerdict:
    m = _CITATION.search(inputs.query)
    why = f"citation pattern {m.group(0)!r}" if m else "no citation pattern"
    return OfflineVerdict(CitationOutput(has_citation=m is not None, reason=why), why)


# ------------------------------------------------------------------------------------ P10 field alignment
class FieldInput(JudgeInput):
    query: str
    general_domain: str
    subdomain: str
    field: str


class AlignOutput(JudgeOutput):
    aligned: bool
    reason: str

    def value(self) -> float:
        return 1.0 if self.aligned else 0.0

    def label(self) -> str:
        return "aligned" if self.aligned else "unrelated"

    def explanation(self) -> str:
        return self.reason


def parse_align(raw: str, inputs: Any = None) -> AlignOutput:
    return parse_json_output(raw, AlignOutput)


def offline_align(inputs: FieldInput, params: dict[str, Any]) -> OfflineVerdict:
    why = "offline: cannot judge topical alignment; passes every query"
    return OfflineVerdict(AlignOutput(aligned=True, reason=why), why)


# ---------------------------------------------------------------------------------------- P11 rubrics
RubricKind = Literal["information", "depth", "citation"]
RUBRIC_KINDS: tuple[RubricKind, ...] = ("information", "depth", "citation")


class RubricInput(JudgeInput):
    """Survey-conditioned sets see the reference answer and the section's references; parametric sets see
    only the query (their prompts simply have no placeholder for the rest)."""

    query: str
    answer: str = ""
    references: str = ""
    n: int = Field(ge=1)


class RubricItemsOutput(JudgeOutput):
    items: list[str]

    @field_validator("items")
    @classmethod
    def _questions(cls, v: list[str]) -> list[str]:
        for s in v:
            if not s.strip().lower().startswith("does the response"):
                raise ValueError(f"item {s[:60]!r} does not start with 'Does the response'")
        return [" ".join(s.split()) for s in v]

    def value(self) -> float:
        return float(len(self.items))


class CitedItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    first_author: str
    year: int | None
    title: str = Field(min_length=3)


class CitationItemsOutput(JudgeOutput):
    items: list[CitedItem]

    @field_validator("items")
    @classmethod
    def _questions(cls, v: list[CitedItem]) -> list[CitedItem]:
        for it in v:
            if not it.text.strip().lower().startswith("does the response"):
                raise ValueError(f"item {it.text[:60]!r} does not start with 'Does the response'")
        return v

    def value(self) -> float:
        return float(len(self.items))


def _rubric_parser(model: type[JudgeOutput]) -> Any:
    def parse(raw: str, inputs: RubricInput | None = None) -> JudgeOutput:
        out = parse_json_output(raw, model)
        if inputs is not None and len(out.items) != inputs.n:  # type: ignore[attr-defined]
            raise ParseError(f"expected exactly {inputs.n} items, got {len(out.items)}")  # type: ignore[attr-defined]
        return out

    return parse


_REF_LINE = re.compile(r"^\[(?P<key>[^\]]+)\]\s*(?P<author>[^(]*?)\s*\((?P<year>\d{4}|n\.d\.)\)\.\s*(?P<title>.+)$")


def _offline_rubric(kind: RubricKind, survey: bool) -> Any:
    def rule(inputs: RubricInput, params: dict[str, Any]) -> OfflineVerdict:
        q = content_words(inputs.query)
        if kind == "citation":
            refs = [m for line in inputs.references.splitlines() if (m := _REF_LINE.match(line.strip()))]
            items = []
            for m in (refs if survey else [])[: inputs.n]:
                year = int(m["year"]) if m["year"].isdigit() else None
                author = (m["author"] or "Unknown").split(",")[0].split(" and ")[0].strip() or "Unknown"
                text = f"Does the response cite {author} et al. ({m['year']}) (title: {m['title']})?"
                items.append(CitedItem(text=text, first_author=author, year=year, title=m["title"]))
            while len(items) < inputs.n:  # parametric: the offline rule has no memory of papers; a made-up title
                t = f"A survey of {' '.join(sorted(q)[:3]) or 'the topic'}"
                items.append(CitedItem(text=f"Does the response cite Doe et al. (2020) (title: {t})?",
                                       first_author="Doe", year=2020, title=t))  # fmt: skip
            why = "offline: items from the reference list"
            return OfflineVerdict(CitationItemsOutput(items=items[: inputs.n]), why)
        if survey:
            sents = [strip_markers(s) for s in split_plain_sentences(inputs.answer)] or [inputs.answer]
            if kind == "information":
                items = [f"Does the response state that {s[0].lower() + s[1:].rstrip('.')}?" for s in sents]
            else:
                items = [f"Does the response explain in detail why {s[0].lower() + s[1:].rstrip('.')}?" for s in sents]
        else:  # parametric: only the query's own words -> vacuous items that the vacuous rule must remove
            topic = " ".join(w for w in inputs.query.rstrip("?").split() if w.lower().strip(",.") in q)
            verb = "mention" if kind == "information" else "discuss"
            items = [f"Does the response {verb} {topic}?" for _ in range(inputs.n)]
        items = (items * inputs.n)[: inputs.n]
        return OfflineVerdict(RubricItemsOutput(items=items), f"offline {kind} items")

    return rule


# ------------------------------------------------------------------------------------- P12 rank + dedupe
class RankInput(JudgeInput):
    query: str
    items: list[str]

    def prompt_values(self) -> dict[str, Any]:
        return {"query": self.query, "items": numbered_sentences(self.items), "num_items": len(self.items)}


class RankOutput(JudgeOutput):
    ranking: list[int]
    duplicates: list[int]

    def value(self) -> float:
        return float(len(self.ranking))


def parse_rank(raw: str, inputs: RankInput | None = None) -> RankOutput:
    out = parse_json_output(raw, RankOutput)
    if inputs is not None:
        n = len(inputs.items)
        _check_ids(out.ranking + out.duplicates, n, "the ranking")
        every = sorted(out.ranking + out.duplicates)
        if every != list(range(1, n + 1)):
            raise ParseError(f"ranking + duplicates must list every item id 1..{n} exactly once, got {every}")
    return out


def offline_rank(inputs: RankInput, params: dict[str, Any]) -> OfflineVerdict:
    """Input order (survey items first), minus near-duplicates (rapidfuzz token_set_ratio >= 90)."""
    ranking: list[int] = []
    dups: list[int] = []
    for i, text in enumerate(inputs.items, start=1):
        if any(fuzz.token_set_ratio(text, inputs.items[j - 1]) >= 90 for j in ranking):
            dups.append(i)
        else:
            ranking.append(i)
    return OfflineVerdict(RankOutput(ranking=ranking, duplicates=dups), "offline: input order, fuzzy duplicates")


# ------------------------------------------------------------------------------------------------ registry
def _task(name: str, inp: type[JudgeInput], out: type[JudgeOutput], parse: Any, offline: Any, desc: str) -> JudgeTask:
    return JudgeTask(
        name=f"{PREFIX}_{name}",
        prompt_id=f"{PREFIX}/{name}.yaml",
        input_model=inp,
        output_model=out,
        parse=parse,
        offline=offline,
        structured=True,
        description=desc,
    )


SURVEY_CHECK = _task("survey_check", SurveyCheckInput, SurveyCheckOutput,
                     lambda raw, i=None: parse_json_output(raw, SurveyCheckOutput), offline_survey_check,
                     "Is this work a literature review (P3)?")  # fmt: skip
QUESTION_TREE = _task("question_tree", TreeInput, TreeOutput, parse_tree, offline_tree,
                      "Hierarchical question-tree summary of a section (P4)")  # fmt: skip
QUERY_ANSWER = _task("query_answer", QueryInput, QueryOutput, parse_query, offline_query,
                     "Query + reference answer supported by >= N sentences (P5)")  # fmt: skip
SELF_CONTAINMENT = _task("self_containment", QAInput, ScoreOutput, parse_score, offline_self_containment,
                         "Self-containment score 1-10 (P6)")  # fmt: skip
ANSWER_VARIABILITY = _task("answer_variability", QAInput, ScoreOutput, parse_score, offline_variability,
                           "Answer-variability score 1-10 (P7)")  # fmt: skip
REPHRASE = _task("rephrase", QAInput, RephraseOutput, parse_rephrase, offline_rephrase,
                 "Rephrase (query, answer) for cohesion (P8)")  # fmt: skip
CITATION_CHECK = _task("citation_in_query", QueryOnlyInput, CitationOutput, parse_citation, offline_citation,
                       "Does the query contain a citation (P9)?")  # fmt: skip
FIELD_ALIGNMENT = _task("field_alignment", FieldInput, AlignOutput, parse_align, offline_align,
                        "Is the query about the mapped field (P10)?")  # fmt: skip
RUBRIC_TASKS: dict[tuple[str, RubricKind], JudgeTask] = {
    (origin, kind): _task(
        f"rubric_{origin}_{kind}",
        RubricInput,
        CitationItemsOutput if kind == "citation" else RubricItemsOutput,
        _rubric_parser(CitationItemsOutput if kind == "citation" else RubricItemsOutput),
        _offline_rubric(kind, origin == "survey"),
        f"{origin} rubric items of type {kind} (P11)",
    )
    for origin in ("survey", "parametric")
    for kind in RUBRIC_KINDS
}
RUBRIC_RANK = _task("rubric_rank", RankInput, RankOutput, parse_rank, offline_rank,
                    "Deduplicate and rank rubric items by importance (P12)")  # fmt: skip

TASKS: tuple[JudgeTask, ...] = (
    SURVEY_CHECK,
    QUESTION_TREE,
    QUERY_ANSWER,
    SELF_CONTAINMENT,
    ANSWER_VARIABILITY,
    REPHRASE,
    CITATION_CHECK,
    FIELD_ALIGNMENT,
    *RUBRIC_TASKS.values(),
    RUBRIC_RANK,
)
BY_NAME: dict[str, JudgeTask] = {t.name: t for t in TASKS}

_REFS = "[smith2021] Smith, J. and Lee, K. (2021). Dense retrieval {x} at scale"
SAMPLE_INPUTS: dict[str, JudgeInput] = {
    SURVEY_CHECK.name: SurveyCheckInput(title="A survey of {x}", abstract="We review [1] work."),
    QUESTION_TREE.name: TreeInput(survey_title="S {x}", section_title="T", sentences=["One {a}.", "Two [1]."]),
    QUERY_ANSWER.name: QueryInput(
        survey_title="S", section_title="T {x}", field="AI", sentences=["a {b}"], tree="Q1 {x}", min_support=3
    ),
    SELF_CONTAINMENT.name: QAInput(query="Q {x}?", answer="A [1]"),
    ANSWER_VARIABILITY.name: QAInput(query="Q?", answer="A {y}"),
    REPHRASE.name: QAInput(query="Q {x}?", answer="A"),
    CITATION_CHECK.name: QueryOnlyInput(query="Q {x} [1]?"),
    FIELD_ALIGNMENT.name: FieldInput(query="Q {x}?", general_domain="D", subdomain="S", field="F"),
    **{
        t.name: RubricInput(query="Q {x}?", answer="A {y}.", references=_REFS, n=2)
        for t in RUBRIC_TASKS.values()
    },
    RUBRIC_RANK.name: RankInput(query="Q {x}?", items=["Does the response a {y}?", "Does the response b?"]),
}
_RUBRIC_KEYS = ['"items"', "Does the response"]
ANSWER_KEYS: dict[str, list[str]] = {
    SURVEY_CHECK.name: ['"is_literature_review"', '"reason"'],
    QUESTION_TREE.name: ['"nodes"', '"id"', '"question"', '"sentences"'],
    QUERY_ANSWER.name: ['"query"', '"answer"', '"sentences"'],
    SELF_CONTAINMENT.name: ['"score"', '"reason"'],
    ANSWER_VARIABILITY.name: ['"score"', '"reason"'],
    REPHRASE.name: ['"query"', '"answer"'],
    CITATION_CHECK.name: ['"has_citation"', '"reason"'],
    FIELD_ALIGNMENT.name: ['"aligned"', '"reason"'],
    **{
        t.name: _RUBRIC_KEYS + (['"first_author"', '"year"', '"title"'] if k == "citation" else [])
        for (_, k), t in RUBRIC_TASKS.items()
    },
    RUBRIC_RANK.name: ['"ranking"', '"duplicates"'],
}
