"""`relevance`: graded 0/1/2 relevance of one reference to the paper's related-work section.

Relevance Rate = Σ score / (2·|S|). The 0–2 scale follows the paper's text and the authors' code; the
paper's Box 2 shows a binary variant (see the prompt file's comment).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, OfflineVerdict
from reportbench.judges.lexical import (
    LexicalSpace,
    content_tokens,
    round_score,
    sentence_windows,
    split_sentences,
    token_recall,
)
from reportbench.judges.offline import section_params
from reportbench.judges.tasks._parsing import EXPLAINED_OUTPUT_CONFIG, ExactInt, parse_json_output


class RelevanceInput(JudgeInput):
    paper_title: str
    paper_abstract: str
    exemplar: str  # the human-written related-work section ("ground-truth related work")
    ref_title: str
    ref_abstract: str = ""


class RelevanceOutput(JudgeOutput):
    model_config = EXPLAINED_OUTPUT_CONFIG

    score: Annotated[Literal[0, 1, 2], ExactInt]
    explanation_text: str = Field(alias="explanation")

    def value(self) -> float:
        return float(self.score)

    def label(self) -> str:
        return str(self.score)

    def explanation(self) -> str:
        return self.explanation_text


def parse(raw: str, inputs: RelevanceInput | None = None) -> RelevanceOutput:
    return parse_json_output(raw, RelevanceOutput)


def offline(inputs: RelevanceInput, params: dict[str, Any]) -> OfflineVerdict:
    """r = mean(title recall in paper+exemplar, best title recall in one exemplar window,
    min(1, 2·max(TF-IDF cos(ref, paper), cos(ref, exemplar)))); 2 if r >= score2, 1 if r >= score1.

    Title recall carries most of the signal (references are named by topic words); the doubled cosine
    brings in the abstract. Title-only references are flagged: they are weak evidence either way.
    """
    thresholds = section_params(params, "relevance")
    paper_sentences = split_sentences(f"{inputs.paper_title}.\n{inputs.paper_abstract}")
    exemplar_sentences = split_sentences(inputs.exemplar)
    paper_tokens_by_sentence = [content_tokens(s) for s in paper_sentences]
    exemplar_tokens_by_sentence = [content_tokens(s) for s in exemplar_sentences]
    title_tokens = content_tokens(inputs.ref_title)
    ref_tokens = content_tokens(f"{inputs.ref_title}.\n{inputs.ref_abstract}")

    space = LexicalSpace.fit([*paper_tokens_by_sentence, *exemplar_tokens_by_sentence, ref_tokens])
    paper_tokens = [t for s in paper_tokens_by_sentence for t in s]
    exemplar_tokens = [t for s in exemplar_tokens_by_sentence for t in s]
    cos_paper = round_score(space.cosine(ref_tokens, paper_tokens))
    cos_exemplar = round_score(space.cosine(ref_tokens, exemplar_tokens))
    title_recall = round_score(token_recall(title_tokens, paper_tokens + exemplar_tokens))
    title_window = round_score(
        max(
            (token_recall(title_tokens, content_tokens(w)) for w in sentence_windows(exemplar_sentences, 2)),
            default=0.0,
        )
    )
    relevance = round_score((title_recall + title_window + min(1.0, 2.0 * max(cos_paper, cos_exemplar))) / 3)
    score: Literal[0, 1, 2] = (
        2
        if relevance >= float(thresholds["score2"])
        else 1
        if relevance >= float(thresholds["score1"])
        else 0
    )
    title_only = not inputs.ref_abstract.strip()
    explanation = (
        f"lexical relevance r={relevance:.4f} -> {score} (2 if r>={float(thresholds['score2']):.4f}, "
        f"1 if r>={float(thresholds['score1']):.4f}); title recall {title_recall:.4f}, best exemplar window "
        f"{title_window:.4f}, cos paper {cos_paper:.4f}, cos exemplar {cos_exemplar:.4f}"
        + ("; TITLE-ONLY reference: low-confidence judgment" if title_only else "")
    )
    return OfflineVerdict(
        output=RelevanceOutput(score=score, explanation=explanation),
        explanation=explanation,
        signals={
            "r": relevance,
            "title_recall": title_recall,
            "title_window": title_window,
            "cos_paper": cos_paper,
            "cos_exemplar": cos_exemplar,
            "title_only": 1.0 if title_only else 0.0,
        },
    )


TASK = JudgeTask(
    name="relevance",
    prompt_id="deepscholar/relevance.yaml",
    input_model=RelevanceInput,
    output_model=RelevanceOutput,
    parse=parse,
    offline=offline,
    description="Graded relevance 0/1/2 of a reference (title + abstract) to the paper's related work.",
)
