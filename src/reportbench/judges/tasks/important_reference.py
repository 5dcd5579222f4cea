"""`important_reference`: is a reference of the human exemplar an important (must-cite) one? (paper Fig. 4)

Builds the target set of Reference Coverage. The benchmark labelled exemplar references with an LLM
filter; the offline rule is a crude stand-in based on how the exemplar cites the reference.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field
from rapidfuzz import fuzz

from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, Judgment, OfflineVerdict
from reportbench.judges.lexical import (
    LexicalSpace,
    content_tokens,
    has_citation,
    round_score,
    split_sentences,
    token_recall,
)
from reportbench.judges.offline import section_params
from reportbench.judges.runner import run_judgments_sync
from reportbench.judges.tasks._parsing import EXPLAINED_OUTPUT_CONFIG, parse_json_output

CITE_KEYS_RE = re.compile(r"\\(?:no)?cite[a-zA-Z]*\*?(?:\[[^\]]*\]){0,2}\{([^}]*)\}")
MIN_TITLE_CHARS_FOR_TEXT_MATCH = 15


class ImportantReferenceInput(JudgeInput):
    paper_title: str
    paper_abstract: str
    related_work: str  # the exemplar related-work section (LaTeX with \cite{...} is fine)
    cited_title: str
    cited_authors: str = ""
    cited_content: str = ""  # abstract, or a search snippet for non-arXiv references
    citation_key: str = (
        ""  # optional bib key (e.g. 'vaswani2017attention'): lets the offline rule count cites
    )


class ImportantReferenceOutput(JudgeOutput):
    model_config = EXPLAINED_OUTPUT_CONFIG

    important: bool
    explanation_text: str = Field(alias="explanation")

    def value(self) -> float:
        return 1.0 if self.important else 0.0

    def label(self) -> str:
        return "important" if self.important else "not_important"

    def explanation(self) -> str:
        return self.explanation_text


def parse(raw: str, inputs: ImportantReferenceInput | None = None) -> ImportantReferenceOutput:
    return parse_json_output(raw, ImportantReferenceOutput)


def first_author_surname(authors: str) -> str:
    """'Hoynes, Hilary W and Patel, Ankur J' -> 'Hoynes'; 'Ashish Vaswani, Noam Shazeer' -> 'Vaswani'."""
    text = authors.strip()
    if not text:
        return ""
    first = re.split(r"\s+and\s+|;", text, maxsplit=1)[0].strip()
    if " and " in text or ";" in text:
        name = first.split(",")[0] if "," in first else first.split()[-1]
    else:
        pieces = [x.strip() for x in first.split(",") if x.strip()]
        name = pieces[0].split()[-1] if pieces and " " in pieces[0] else (pieces[0] if pieces else "")
    name = re.sub(r"[{}\\'\"]", "", name).strip()
    return name if len(name) >= 2 else ""


def mentions(inputs: ImportantReferenceInput) -> tuple[int, str]:
    """How many related-work sentences cite this reference, and how it was located (key/author/title)."""
    key = inputs.citation_key.strip()
    surname = first_author_surname(inputs.cited_authors)
    title = inputs.cited_title.strip().lower()
    count, how = 0, set[str]()
    for sentence in split_sentences(inputs.related_work):
        located = _locate(sentence, key, surname, title)
        if located:
            count += 1
            how.add(located)
    return count, "+".join(sorted(how)) or "not located"


def _locate(sentence: str, key: str, surname: str, title: str) -> str | None:
    """'key' when the bib key is cited (authoritative when given), else 'author' when a cited sentence names
    the first author or cites a key starting with the surname, else 'title' when the title is quoted."""
    keys = [k.strip() for group in CITE_KEYS_RE.findall(sentence) for k in group.split(",")]
    if key:
        return "key" if key in keys or f"[{key}]" in sentence else None
    if surname and has_citation(sentence):
        by_key = any(k.lower().startswith(surname.lower()) for k in keys)
        if by_key or re.search(rf"\b{re.escape(surname)}\b", sentence):
            return "author"
    if len(title) >= MIN_TITLE_CHARS_FOR_TEXT_MATCH and fuzz.partial_ratio(title, sentence.lower()) >= 90:
        return "title"
    return None


def paper_overlap(inputs: ImportantReferenceInput) -> float:
    """mean(title recall in the paper's title+abstract, min(1, 2·TF-IDF cos(cited, paper)))."""
    paper_sentences = [
        content_tokens(s) for s in split_sentences(f"{inputs.paper_title}.\n{inputs.paper_abstract}")
    ]
    cited_tokens = content_tokens(f"{inputs.cited_title}.\n{inputs.cited_content}")
    space = LexicalSpace.fit([*paper_sentences, cited_tokens])
    paper_tokens = [t for s in paper_sentences for t in s]
    title_recall = token_recall(content_tokens(inputs.cited_title), paper_tokens)
    return round_score((title_recall + min(1.0, 2.0 * space.cosine(cited_tokens, paper_tokens))) / 2)


def offline(inputs: ImportantReferenceInput, params: dict[str, Any]) -> OfflineVerdict:
    """important if cited in >= min_mentions sentences, or cited once with overlap >= overlap,
    or never located (no key, author or title match) but overlap >= overlap_unlocated."""
    p = section_params(params, "important_reference")
    count, how = mentions(inputs)
    overlap = paper_overlap(inputs)
    if count >= int(p["min_mentions"]):
        important, why = True, f"cited in {count} sentences (>= {p['min_mentions']})"
    elif count >= 1:
        important = overlap >= float(p["overlap"])
        why = (
            f"cited in {count} sentence(s); overlap with the paper {overlap:.4f} vs {float(p['overlap']):.4f}"
        )
    else:
        important = overlap >= float(p["overlap_unlocated"])
        why = (
            f"not located in the related work; overlap with the paper {overlap:.4f} "
            f"vs {float(p['overlap_unlocated']):.4f}"
        )
    explanation = f"{'important' if important else 'not important'}: {why} (located by: {how})"
    return OfflineVerdict(
        output=ImportantReferenceOutput(important=important, explanation=explanation),
        explanation=explanation,
        signals={"mentions": float(count), "overlap": overlap},
    )


TASK = JudgeTask(
    name="important_reference",
    prompt_id="deepscholar/important_reference.yaml",
    input_model=ImportantReferenceInput,
    output_model=ImportantReferenceOutput,
    parse=parse,
    offline=offline,
    description="Is this exemplar reference an important (must-include, not substitutable) prior work?",
)


@dataclass(frozen=True)
class ImportanceQuestion:
    """One exemplar reference to label, with what the Fig. 4 prompt shows about it (any release kind)."""

    task_id: str
    ref_key: str
    paper_title: str
    paper_abstract: str
    related_work: str
    cited_title: str
    cited_authors: str
    cited_content: str


def judge_importance(questions: Sequence[ImportanceQuestion], judge: Any, *, progress: bool = False) -> list[Judgment]:
    """One `important_reference` judgment per question (item id `<task_id>::<ref_key>`), in input order.

    Shared by the live builder (live_builder/label.py) and `protocols.deepscholar.labelling` (imported
    releases), so it lives with the task, below both."""
    items = [
        (
            f"{q.task_id}::{q.ref_key}",
            ImportantReferenceInput(
                paper_title=q.paper_title,
                paper_abstract=q.paper_abstract,
                related_work=q.related_work,
                cited_title=q.cited_title,
                cited_authors=q.cited_authors,
                cited_content=q.cited_content,
                citation_key=q.ref_key,
            ),
            {"task_id": q.task_id, "ref_key": q.ref_key},
        )
        for q in questions
    ]
    return list(run_judgments_sync(judge, items, desc="important_reference", progress=progress))


def is_important(j: Judgment) -> bool:
    """The parsed boolean of an ok `important_reference` judgment."""
    return bool(json.loads(j.parsed).get("important")) if j.ok and j.parsed else False
