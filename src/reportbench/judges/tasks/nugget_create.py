"""`nugget_create`: extract the nuggets (key facts) a good answer to the query must contain.

Nuggetizer protocol, creator step: in DeepScholar the passage is the human exemplar related-work section
and the query asks for a related-work section given the paper's abstract. Importance comes next
(`nugget_score`), then `nugget_assign` checks reports against the nuggets.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field
from rapidfuzz import fuzz

from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, OfflineVerdict, ParseError
from reportbench.judges.lexical import has_citation, is_heading_line, split_sentences, strip_citations
from reportbench.judges.offline import section_params
from reportbench.judges.tasks._parsing import parse_json_output

CLAUSE_SPLIT_RE = re.compile(r";\s+|,\s+(?:and|while|whereas)\s+")
LEFTOVER_LATEX_RE = re.compile(r"\\[a-zA-Z]+\*?(?:\{([^{}]*)\})?")


class NuggetCreateInput(JudgeInput):
    query: str
    passage: str
    max_nuggets: int = Field(default=30, ge=1)


class NuggetCreateOutput(JudgeOutput):
    nuggets: list[str]

    def value(self) -> float:
        """The number of nuggets: there is no score to aggregate at this step, only a count to audit."""
        return float(len(self.nuggets))


def parse(raw: str, inputs: NuggetCreateInput) -> NuggetCreateOutput:
    output = parse_json_output(raw, NuggetCreateOutput)
    if len(output.nuggets) > inputs.max_nuggets:
        raise ParseError(f"{len(output.nuggets)} nuggets exceed max_nuggets={inputs.max_nuggets}")
    empty = [i for i, n in enumerate(output.nuggets, start=1) if not n.strip()]
    if empty:
        raise ParseError(f"nugget(s) {empty} are empty strings")
    return output


def sentence_nuggets(passage: str, params: dict[str, Any]) -> list[tuple[str, bool]]:
    """(nugget text, carried a citation) in document order, before de-duplication and truncation.

    Sentence-level, not atomic: sentences split on ';' and ', and/while/whereas' when both halves have
    >= split_min_words words, citations stripped, pieces shorter than min_words dropped.
    """
    min_words, split_min = int(params["min_words"]), int(params["split_min_words"])
    pieces: list[tuple[str, bool]] = []
    for sentence in split_sentences(passage):
        if is_heading_line(sentence):
            continue
        cited = has_citation(sentence)
        clean = LEFTOVER_LATEX_RE.sub(lambda m: m.group(1) or "", strip_citations(sentence))
        clean = re.sub(r"\s+", " ", clean).strip()
        for piece in _split_clauses(clean, split_min):
            piece = piece.strip(" ,;")
            if len(piece.split()) >= min_words:
                pieces.append((piece, cited))
    return pieces


def _split_clauses(sentence: str, min_words: int) -> list[str]:
    parts = [sentence]
    for match in CLAUSE_SPLIT_RE.finditer(sentence):
        head, tail = sentence[: match.start()], sentence[match.end() :]
        if len(head.split()) >= min_words and len(tail.split()) >= min_words:
            return [head, *_split_clauses(tail, min_words)]
    return parts


def dedupe(texts: list[str], ratio: float) -> list[int]:
    """Indices of texts to keep; a text with token_set_ratio >= ratio to an earlier kept one is dropped."""
    kept: list[int] = []
    lowered = [t.lower() for t in texts]
    for i, text in enumerate(lowered):
        if all(fuzz.token_set_ratio(text, lowered[j]) < ratio for j in kept):
            kept.append(i)
    return kept


def offline(inputs: NuggetCreateInput, params: dict[str, Any]) -> OfflineVerdict:
    """Sentence-level nuggets from the passage, deduplicated (rapidfuzz), first max_nuggets kept."""
    p = section_params(params, "nugget_create")
    pieces = sentence_nuggets(inputs.passage, p)
    kept = dedupe([text for text, _ in pieces], float(p["dedupe_ratio"]))
    nuggets = [pieces[i][0] for i in kept][: inputs.max_nuggets]
    cited = sum(1 for i in kept[: inputs.max_nuggets] if pieces[i][1])
    explanation = (
        f"{len(pieces)} sentence pieces with >= {p['min_words']} words, "
        f"{len(pieces) - len(kept)} near-duplicates dropped "
        f"(token_set_ratio >= {float(p['dedupe_ratio']):.1f}), {len(nuggets)} kept "
        f"(max {inputs.max_nuggets}), {cited} of them carried a citation"
    )
    return OfflineVerdict(
        output=NuggetCreateOutput(nuggets=nuggets),
        explanation=explanation,
        signals={"pieces": float(len(pieces)), "kept": float(len(nuggets)), "cited": float(cited)},
    )


TASK = JudgeTask(
    name="nugget_create",
    prompt_id="deepscholar/nugget_create.yaml",
    input_model=NuggetCreateInput,
    output_model=NuggetCreateOutput,
    parse=parse,
    offline=offline,
    description="Extract up to max_nuggets short information nuggets a good answer to the query needs.",
)
