"""Nuggetizer scoring: castorini nuggetizer 0.0.6 `calculate_nugget_scores`, as vendored by DeepScholar-bench.

Kept separate from any judge so the same arithmetic scores both the stored exemplar self-assignments (which
lets us check it against the authors' `nuggets_metrics`, 63/63) and a system report's LLM-assigned nuggets.
"""

from __future__ import annotations

from collections.abc import Sequence

SUPPORT = "support"
PARTIAL = "partial_support"
VITAL = "vital"

SCORE_KEYS = ("strict_vital_score", "strict_all_score", "vital_score", "all_score")


def nugget_scores(assignments: Sequence[str | None], importances: Sequence[str]) -> dict[str, float]:
    """Score one report's nugget assignments.

    - strict_all = #support / #nuggets; strict_vital = #support among vital / #vital;
    - all / vital = the same with partial_support counted as 0.5;
    - an empty denominator gives 0.0 (the authors' convention: a paper without vital nuggets scores 0 there).

    Any other assignment ("not_support", "failed", None) counts as 0.
    `assignments[i]` belongs to `importances[i]`.
    """
    if len(assignments) != len(importances):
        raise ValueError(
            f"nugget_scores: {len(assignments)} assignments but {len(importances)} importances "
            "(must be equal)"
        )
    bad = sorted({imp for imp in importances if imp not in ("vital", "okay")})
    if bad:
        raise ValueError(f"nugget_scores: unknown importance value(s) {bad}; expected 'vital' or 'okay'")

    def credit(a: str | None, strict: bool) -> float:
        if a == SUPPORT:
            return 1.0
        if a == PARTIAL and not strict:
            return 0.5
        return 0.0

    n_all = len(assignments)
    vital_idx = [i for i, imp in enumerate(importances) if imp == VITAL]
    n_vital = len(vital_idx)

    def ratio(num: float, den: int) -> float:
        return num / den if den else 0.0

    return {
        "strict_vital_score": ratio(sum(credit(assignments[i], True) for i in vital_idx), n_vital),
        "strict_all_score": ratio(sum(credit(a, True) for a in assignments), n_all),
        "vital_score": ratio(sum(credit(assignments[i], False) for i in vital_idx), n_vital),
        "all_score": ratio(sum(credit(a, False) for a in assignments), n_all),
    }
