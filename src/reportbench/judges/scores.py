"""S(h, source), the offline judges' support score: the lexical one (judges/lexical.py), or the semantic one
(judges/semantic.py: MiniLM cosine + the lexical guards) when `params.semantic` is set (judge=offline_semantic).

Here, above both: the semantic score is built from the lexical features, so lexical.py cannot dispatch to it.
"""

from __future__ import annotations

from collections.abc import Sequence

from reportbench.judges.lexical import SupportParams, SupportScore, lexical_support_score


def support_score(hypothesis: str, source: str, params: SupportParams | None = None) -> SupportScore:
    """S(h, source) for one hypothesis (lexical.lexical_support_score documents the formula)."""
    p = params or SupportParams()
    if p.semantic is not None:  # judge=offline_semantic: MiniLM + these signals (judges/semantic.py)
        return support_scores([hypothesis], source, p)[0]
    return lexical_support_score(hypothesis, source, p)


def support_scores(hypotheses: Sequence[str], source: str, params: SupportParams | None = None) -> list[SupportScore]:
    """S(h, source) for many hypotheses against one source: the semantic judge indexes the source once and
    embeds in batches; the lexical judge loops (its source preparation is cached)."""
    p = params or SupportParams()
    if p.semantic is None:
        return [lexical_support_score(h, source, p) for h in hypotheses]
    # lazy: +146 ms to import (python -X importtime): numpy and the embedder
    from reportbench.judges.semantic import semantic_params_from, semantic_support_scores

    return list(semantic_support_scores(hypotheses, source or "", p, semantic_params_from(p.semantic)))
