"""`organization`: which of two related-work sections is better organized? (DeepScholar Box 1, pairwise).

The metric calls it twice with positions swapped (generated as A, then exemplar as A) and scores
[call1 == A] + [call2 == B] over 2. The offline rule is antisymmetric, so swapping always flips it.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from reportbench.bounds import InputTooLargeError
from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, OfflineVerdict
from reportbench.judges.lexical import (
    LexicalSpace,
    content_tokens,
    cosine,
    count_citations,
    is_heading_line,
    normalize_text,
    round_score,
    split_paragraphs,
    split_sentences,
)
from reportbench.judges.offline import section_params
from reportbench.judges.tasks._parsing import EXPLAINED_OUTPUT_CONFIG, parse_json_output

DISCOURSE_MARKERS_RE = re.compile(
    r"^(?:however|in contrast|by contrast|similarly|likewise|moreover|furthermore|in addition|additionally|"
    r"finally|first(?:ly)?|second(?:ly)?|third(?:ly)?|next|then|more recently|recently|building on|"
    r"beyond|besides|specifically|in particular|for example|for instance|overall|in summary|to summarize|"
    r"unlike|while|whereas|although|despite|consequently|as a result|therefore|thus|meanwhile|"
    r"complementary|orthogonal|our work|in this work|in this paper|compared (?:to|with))\b",
    re.IGNORECASE,
)


DEFAULT_MAX_SENTENCES = 1_000  # per section; judge.offline.organization.max_sentences
MAX_CHARS_PER_SENTENCE = 400  # the character bound checked before splitting is max_sentences x this


class OrganizationInput(JudgeInput):
    paper_title: str
    paper_abstract: str
    section_a: str
    section_b: str


class OrganizationOutput(JudgeOutput):
    model_config = EXPLAINED_OUTPUT_CONFIG

    explanation_text: str = Field(alias="explanation")
    decision: Literal["A", "B"]

    def value(self) -> float:
        return 1.0 if self.decision == "A" else 0.0

    def label(self) -> str:
        return self.decision

    def explanation(self) -> str:
        return self.explanation_text


def parse(raw: str, inputs: OrganizationInput | None = None) -> OrganizationOutput:
    return parse_json_output(raw, OrganizationOutput)


@dataclass(frozen=True)
class OrganizationFeatures:
    """Proxies for Box 1's criteria, each in [0, 1]: structure, cohesion, redundancy, signposting."""

    headings: int
    paragraphs: int
    signposting: float
    paragraphing: float
    coherence: float
    citation_spread: float
    redundancy: float

    @property
    def score(self) -> float:
        positive = (self.signposting + self.paragraphing + self.coherence + self.citation_spread) / 4
        return round_score(positive - self.redundancy)

    def describe(self) -> str:
        return (
            f"org={self.score:.4f} (headings={self.headings}, paragraphs={self.paragraphs}, "
            f"signposting={self.signposting:.4f}, paragraphing={self.paragraphing:.4f}, "
            f"coherence={self.coherence:.4f}, citation_spread={self.citation_spread:.4f}, "
            f"redundancy={self.redundancy:.4f})"
        )


def _body_paragraphs(text: str) -> tuple[int, list[str]]:
    headings, bodies = 0, []
    for block in split_paragraphs(normalize_text(text)):
        if len(block) == 1 and is_heading_line(block[0]):
            headings += 1
        else:
            bodies.append(" ".join(block))
    return headings, bodies


def organization_features(text: str, space: LexicalSpace, params: dict[str, Any]) -> OrganizationFeatures:
    """Features of one section; `space` is fitted on both sections so neither position is favoured."""
    headings, paragraphs = _body_paragraphs(text)
    paragraph_sentences = [[s for s in split_sentences(p) if not is_heading_line(s)] for p in paragraphs]
    sentences = [s for group in paragraph_sentences for s in group]
    if not sentences:
        return OrganizationFeatures(headings, len(paragraphs), 0.0, 0.0, 0.0, 0.0, 0.0)

    max_headings = max(1, int(params["max_headings"]))
    discourse_rate = sum(1 for s in sentences if DISCOURSE_MARKERS_RE.match(s.strip("*_ "))) / len(sentences)
    signposting = 0.5 * min(headings, max_headings) / max_headings + 0.5 * min(1.0, 2.0 * discourse_rate)

    vectors = [[space.vector(content_tokens(s)) for s in group] for group in paragraph_sentences]
    flat = [(k, v) for k, group in enumerate(vectors) for v in group]
    pairs = _pair_stats(flat, float(params["redundancy_cosine"]))

    # Paragraphs: one topic each (sentences closer within than across paragraphs), comparable lengths.
    lengths = [len(p.split()) for p in paragraphs]
    mean_len = sum(lengths) / len(lengths)
    cv = math.sqrt(sum((n - mean_len) ** 2 for n in lengths) / len(lengths)) / mean_len if mean_len else 1.0
    separation = (pairs.within_mean - pairs.across_mean) if pairs.within_n and pairs.across_n else 0.0
    multi_paragraph = min(1.0, (len(paragraphs) - 1) / 2)
    paragraphing = multi_paragraph * (0.5 * max(0.0, 1.0 - cv) + 0.5 * min(1.0, max(0.0, 4.0 * separation)))

    adjacent = [cosine(g[i], g[i + 1]) for g in vectors for i in range(len(g) - 1)]
    coherence = min(1.0, 2.0 * _mean(adjacent)) if adjacent else 0.0

    # Redundancy: share of sentences that have a near-duplicate elsewhere in the section.
    redundancy = len(pairs.duplicated) / len(flat)

    citation_spread = sum(1 for p in paragraphs if count_citations(p) > 0) / len(paragraphs)
    return OrganizationFeatures(
        headings=headings,
        paragraphs=len(paragraphs),
        signposting=round_score(signposting),
        paragraphing=round_score(paragraphing),
        coherence=round_score(coherence),
        citation_spread=round_score(citation_spread),
        redundancy=round_score(redundancy),
    )


@dataclass
class _PairStats:
    within_sum: float = 0.0
    within_n: int = 0
    across_sum: float = 0.0
    across_n: int = 0
    duplicated: set[int] = field(default_factory=set)

    @property
    def within_mean(self) -> float:
        return self.within_sum / self.within_n if self.within_n else 0.0

    @property
    def across_mean(self) -> float:
        return self.across_sum / self.across_n if self.across_n else 0.0


def _pair_stats(flat: list[tuple[int, Any]], threshold: float) -> _PairStats:
    """Sums over all sentence pairs, streamed: memory O(sentences), not O(sentences²) (a 10k-sentence
    section once held 50M pairs, ~10 GB). Same pair order as before, so the same floating-point sums."""
    stats = _PairStats()
    for i in range(len(flat)):
        ki, vi = flat[i]
        for j in range(i + 1, len(flat)):
            kj, vj = flat[j]
            c = cosine(vi, vj)
            if ki == kj:
                stats.within_sum += c
                stats.within_n += 1
            else:
                stats.across_sum += c
                stats.across_n += 1
            if c >= threshold:
                stats.duplicated.update((i, j))
    return stats


def check_size(inputs: OrganizationInput, params: dict[str, Any]) -> None:
    """Refuse sections whose pairwise comparison would be too costly (time grows with sentences²)."""
    limit = int(params.get("max_sentences", DEFAULT_MAX_SENTENCES))
    for name, text in (("section_a", inputs.section_a), ("section_b", inputs.section_b)):
        if len(text) > limit * MAX_CHARS_PER_SENTENCE:  # a cheap size bound before splitting at all
            raise InputTooLargeError(
                f"organization {name} characters", len(text), "max_sentences", limit * MAX_CHARS_PER_SENTENCE,
                "judge.offline.organization.max_sentences",
            )
        count = len(split_sentences(text))
        if count > limit:
            raise InputTooLargeError(
                f"organization {name} sentences", count, "max_sentences", limit,
                "judge.offline.organization.max_sentences",
            )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _tie_prefers_first(first: str, second: str) -> bool:
    """Position-free tie-break: a hash of the unordered pair decides whether the lexicographically
    smaller text wins, so the same pair gets the same winner in either order."""
    low, high = sorted((first, second))
    digest = hashlib.sha256((low + "\x00" + high).encode("utf-8")).digest()
    winner = low if digest[0] % 2 == 0 else high
    return winner == first


def offline(inputs: OrganizationInput, params: dict[str, Any]) -> OfflineVerdict:
    """A if org(A) > org(B); B if lower; exact ties by the unordered-pair hash (identical texts -> A)."""
    p = section_params(params, "organization")
    check_size(inputs, p)
    all_sentences = split_sentences(inputs.section_a) + split_sentences(inputs.section_b)
    space = LexicalSpace.fit(sorted(tuple(content_tokens(s)) for s in all_sentences))
    feats_a = organization_features(inputs.section_a, space, p)
    feats_b = organization_features(inputs.section_b, space, p)
    if feats_a.score != feats_b.score:
        decision: Literal["A", "B"] = "A" if feats_a.score > feats_b.score else "B"
        reason = "higher feature score"
    else:
        decision = "A" if _tie_prefers_first(inputs.section_a, inputs.section_b) else "B"
        reason = "tie on features, position-free hash tie-break"
    explanation = f"{decision} preferred ({reason}): A {feats_a.describe()}; B {feats_b.describe()}"
    return OfflineVerdict(
        output=OrganizationOutput(explanation=explanation, decision=decision),
        explanation=explanation,
        signals={
            "org_a": feats_a.score,
            "org_b": feats_b.score,
            "margin": round_score(feats_a.score - feats_b.score),
        },
    )


TASK = JudgeTask(
    name="organization",
    prompt_id="deepscholar/organization.yaml",
    input_model=OrganizationInput,
    output_model=OrganizationOutput,
    parse=parse,
    offline=offline,
    description="Pairwise preference: which related-work section (A or B) is better organized?",
)
