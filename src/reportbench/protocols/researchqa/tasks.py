"""ResearchQA's two judge tasks: rubric coverage (labels per item) and the pairwise direct judge.

- `researchqa_coverage`: the answer plus up to 8 unnumbered rubric questions (never the query); one of five
  labels per line. Strict parser in `labels.parse_labels`; value = mean (x-1)/4 over the batch.
- `researchqa_pairwise`: query + two answers; which one addresses the query better ("Response 1"/"2",
  no tie). Our prompt asks for a small JSON object; value = 1.0 when Response 1 wins.

Offline rules (deterministic, no model): coverage grades each question by the share of its content words
the answer contains (thresholds `COVERAGE_BINS`); pairwise prefers the answer with the larger coverage of the
query's content words, then the longer reference list, then a content hash — an antisymmetric preference, so
both orders agree (the organization-style rule of the other benchmarks' offline judges).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, OfflineVerdict, ParseError
from reportbench.judges.tasks._parsing import parse_json_output
from reportbench.protocols import content_hash
from reportbench.protocols.researchqa.labels import LABELS, check_count, label_score, parse_labels

COVERAGE_TASK = "researchqa_coverage"
PAIRWISE_TASK = "researchqa_pairwise"

# Offline coverage: share of a question's content words found in the answer -> label (first bin it reaches).
COVERAGE_BINS: tuple[tuple[float, str], ...] = (
    (0.8, "Completely"),
    (0.6, "Mostly"),
    (0.4, "Moderately"),
    (0.2, "Barely"),
    (0.0, "Not at all"),
)
_STOP = frozenset(
    """a an the and or of in on for to with by from as at is are be been being does do did response answer
    mention mentions mentioned discuss discusses describe describes explain explains provide provides cite
    cites paper study studies that this these those which what how why when where whether its their it
    about such other than more most into also can may use used using between based""".split()
)
_WORD = re.compile(r"[a-z][a-z0-9\-]+")

LabelName = Literal["Not at all", "Barely", "Moderately", "Mostly", "Completely"]


def content_words(text: str) -> set[str]:
    """Lower-cased words of 3+ characters that are not boilerplate ("Does the response mention ...")."""
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _STOP}


# ------------------------------------------------------------------------------------------- coverage
class CoverageInput(JudgeInput):
    response: str
    questions: list[str]

    def prompt_values(self) -> dict[str, Any]:
        # Joined raw, unnumbered (the authors' layout); the count is stated so the judge knows how many lines.
        return {"response": self.response, "questions": "\n".join(self.questions), "num_questions": len(self.questions)}


class CoverageOutput(JudgeOutput):
    labels: list[LabelName]

    def value(self) -> float | None:
        """Mean (x-1)/4 over the batch; None (NaN) for an empty batch."""
        if not self.labels:
            return None
        return sum(label_score(x) for x in self.labels) / len(self.labels)

    def label(self) -> str | None:
        return "|".join(self.labels)


def parse_coverage(raw: str, inputs: CoverageInput | None = None) -> CoverageOutput:
    """One label per line (what the prompt asks for). The record's own canonical form, a JSON object
    `{"labels": [...]}`, is accepted too (strictly), so a stored judgment re-parses like any answer."""
    if inputs is None:
        raise ParseError("the coverage parser needs the inputs (the number of rubric items)")
    if raw is not None and raw.strip().startswith("{"):
        out = parse_json_output(raw, CoverageOutput)
        check_count(list(out.labels), len(inputs.questions))
        return out
    return CoverageOutput(labels=parse_labels(raw, len(inputs.questions)))  # type: ignore[arg-type]


def offline_label(question: str, response: str) -> tuple[str, float]:
    """The offline rule for one rubric question: (label, share of its content words in the answer)."""
    q = content_words(question)
    if not q:
        return "Not at all", 0.0
    share = len(q & content_words(response)) / len(q)
    for threshold, label in COVERAGE_BINS:
        if share >= threshold:
            return label, share
    return "Not at all", share  # pragma: no cover - the last bin is 0.0


def offline_coverage(inputs: CoverageInput, params: dict[str, Any]) -> OfflineVerdict:
    graded = [offline_label(q, inputs.response) for q in inputs.questions]
    out = CoverageOutput(labels=[g[0] for g in graded])  # type: ignore[misc]
    parts = [f"{i}. {label} (share={share:.2f})" for i, (label, share) in enumerate(graded, 1)]
    return OfflineVerdict(out, "content-word share per rubric question: " + "; ".join(parts))


# ------------------------------------------------------------------------------------------- pairwise
class PairwiseInput(JudgeInput):
    query: str
    response_1: str
    response_2: str


class PairwiseOutput(JudgeOutput):
    better: Literal["Response 1", "Response 2"]
    justification: str

    def value(self) -> float:
        return 1.0 if self.better == "Response 1" else 0.0

    def label(self) -> str:
        return self.better

    def explanation(self) -> str:
        return self.justification


def parse_pairwise(raw: str, inputs: PairwiseInput | None = None) -> PairwiseOutput:
    return parse_json_output(raw, PairwiseOutput)


_REF_LINE = re.compile(r"^\s*\[\d+\]", re.MULTILINE)


def preference_key(query: str, response: str) -> tuple[float, int, str]:
    """What the offline pairwise rule compares: query-word coverage, reference count, then a hash."""
    q = content_words(query)
    share = len(q & content_words(response)) / len(q) if q else 0.0
    return (round(share, 6), len(_REF_LINE.findall(response)), content_hash(response))


def offline_pairwise(inputs: PairwiseInput, params: dict[str, Any]) -> OfflineVerdict:
    k1, k2 = preference_key(inputs.query, inputs.response_1), preference_key(inputs.query, inputs.response_2)
    better = "Response 1" if k1 >= k2 else "Response 2"
    why = f"query-word share {k1[0]:.2f} vs {k2[0]:.2f}, references {k1[1]} vs {k2[1]} (hash breaks ties)"
    return OfflineVerdict(PairwiseOutput(better=better, justification=why), why)  # type: ignore[arg-type]


COVERAGE = JudgeTask(
    name=COVERAGE_TASK,
    prompt_id="researchqa/coverage.yaml",
    input_model=CoverageInput,
    output_model=CoverageOutput,
    parse=parse_coverage,
    offline=offline_coverage,
    structured=False,
    description="Rate how far an answer addresses each rubric question (five labels, one per line).",
    authors_step="researchqa/coverage",
)
PAIRWISE = JudgeTask(
    name=PAIRWISE_TASK,
    prompt_id="researchqa/pairwise.yaml",
    input_model=PairwiseInput,
    output_model=PairwiseOutput,
    parse=parse_pairwise,
    offline=offline_pairwise,
    structured=False,
    description="Which of two answers addresses the query more accurately and thoroughly (no tie).",
    authors_step="researchqa/pairwise",
)
TASKS = (COVERAGE, PAIRWISE)
__all__ = ["COVERAGE", "LABELS", "PAIRWISE", "TASKS", "CoverageInput", "PairwiseInput"]
