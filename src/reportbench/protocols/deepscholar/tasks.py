"""DeepScholar's own judge task: `citation_support`, Citation Precision's at-least-one-claim question.

The paper (§8.3.3) calls a citation precise "if the referenced source supports at least one claim made in the
accompanying sentence"; the shared `support` task asks whether the reference supports the whole sentence
(Box 3's "all aspects", which is Claim Coverage's question). Same typed input and answer as `support`;
its own prompt file. With `judge.prompts=authors` it sends the authors' single support prompt (their code used
one prompt for both metrics).
"""

from __future__ import annotations

import re
from typing import Any

from reportbench.judges.base import JudgeTask, OfflineVerdict
from reportbench.judges.offline import section_params, support_params
from reportbench.judges.scores import support_score
from reportbench.judges.tasks import register_task
from reportbench.judges.tasks.support import SupportInput, SupportOutput, parse

# Clause boundaries used by the offline rule: a sentence's claims are (roughly) its clauses.
_CLAUSE_RE = re.compile(r";|,\s+(?:and|but|while|whereas|which)\s+|\s+whereas\s+|\s+while\s+")


def clauses(claim: str, min_chars: int = 20) -> list[str]:
    """The sentence, then its clauses long enough to be a claim on their own (deterministic, lexical)."""
    parts = [p.strip(" ,.;") for p in _CLAUSE_RE.split(claim)]
    return [claim, *[p for p in parts if len(p) >= min_chars and p != claim]]


def offline(inputs: SupportInput, params: dict[str, Any]) -> OfflineVerdict:
    """Precise iff some clause of the sentence reaches the support threshold (max over clauses)."""
    threshold = float(section_params(params, "support")["threshold"])
    sp = support_params(params)
    scored = [(support_score(c, inputs.reference, sp), c) for c in clauses(inputs.claim)]
    best, clause = max(scored, key=lambda sc: sc[0].score)
    supported = 1 if best.score >= threshold else 0
    verdict = "supports a claim" if supported else "supports no claim"
    return OfflineVerdict(
        output=SupportOutput(supported=supported),
        explanation=f"{verdict}: best clause {clause[:60]!r}: {best.describe()} vs threshold {threshold:.4f}",
        signals=best.signals(),
    )


TASK = JudgeTask(
    name="citation_support",
    prompt_id="deepscholar/citation_support.yaml",
    input_model=SupportInput,
    output_model=SupportOutput,
    parse=parse,
    offline=offline,
    description="Citation Precision: does the cited reference support at least one claim of the sentence? 1/0.",
    authors_step="deepscholar/support",
)

register_task(TASK)
