"""RACE arithmetic (pure functions, no judge): weighted per-dimension scores and the relative score.

Paper (Du et al. 2025, §3.1): for a report R, S_d(R) = sum_c w_{d,c} s_{d,c}(R) over the task's criteria of
dimension d (criterion weights of a dimension sum to 1), S_int(R) = sum_d W_d S_d(R) with the task's dimension
weights W_d, and the final score S_final = S_int(target) / (S_int(target) + S_int(reference)).

`mode="paper"`: every criterion of the task must be scored exactly once (matched by its exact text); anything
else is a `RaceError` (the judgment fails, it is never patched). A zero denominator is undefined (None).
`mode="code"`: the authors' `utils/score_calculator.py` + `deepresearch_bench_race.py`: criteria matched exactly,
then case-insensitively, then by substring; an unmatched criterion gets the dimension's mean weight; a
dimension is averaged over the weights of the criteria actually scored; a dimension missing from the answer
adds 0; the reference average is 0 when the LAST scored item lacks `article_2_score`; zero denominators give 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

DIMENSIONS = ("comprehensiveness", "insight", "instruction_following", "readability")
RaceMode = Literal["paper", "code"]


class RaceError(ValueError):
    """The judge's scores do not fit the task's criteria (paper mode): the judgment fails, with this reason."""


@dataclass(frozen=True)
class Criterion:
    dimension: str
    criterion: str
    explanation: str
    weight: float


@dataclass(frozen=True)
class ScoreItem:
    """One scored criterion as the judge answered it (article_1 = target, article_2 = reference)."""

    dimension: str
    criterion: str
    target: float | None
    reference: float | None


@dataclass(frozen=True)
class RaceScores:
    target_dims: dict[str, float]
    reference_dims: dict[str, float]
    target_total: float
    reference_total: float
    unmatched: tuple[str, ...] = ()


def relative(target: float, reference: float, mode: RaceMode = "paper") -> float | None:
    """target / (target + reference); with a zero denominator: None (paper: undefined) or 0 (code)."""
    denom = target + reference
    if denom > 0:
        return target / denom
    return None if mode == "paper" else 0.0


def weighted_scores(
    items: Sequence[ScoreItem],
    criteria: Sequence[Criterion],
    dimension_weights: Mapping[str, float],
    mode: RaceMode = "paper",
) -> RaceScores:
    """Per-dimension weighted averages and the weighted totals of target and reference."""
    if mode == "paper":
        return _paper(items, criteria, dimension_weights)
    if mode == "code":
        return _code(items, criteria, dimension_weights)
    raise ValueError(f"RACE mode must be paper|code, got {mode!r}")


def _paper(
    items: Sequence[ScoreItem], criteria: Sequence[Criterion], dimension_weights: Mapping[str, float]
) -> RaceScores:
    by_key = {(c.dimension, c.criterion.strip()): c for c in criteria}
    seen: dict[tuple[str, str], ScoreItem] = {}
    for it in items:
        key = (it.dimension, it.criterion.strip())
        if key not in by_key:
            raise RaceError(f"{it.dimension}: scored criterion {it.criterion[:60]!r} is not one of the task's")
        if key in seen:
            raise RaceError(f"{it.dimension}: criterion {it.criterion[:60]!r} scored twice")
        if it.target is None or it.reference is None:
            raise RaceError(f"{it.dimension}: criterion {it.criterion[:60]!r} lacks a score for both articles")
        seen[key] = it
    missing = [k for k in by_key if k not in seen]
    if missing:
        raise RaceError(f"{len(missing)} criteria not scored, e.g. {missing[0][0]}: {missing[0][1][:60]!r}")
    t_dims: dict[str, float] = {}
    r_dims: dict[str, float] = {}
    for dim in sorted({c.dimension for c in criteria}):
        crits = [c for c in criteria if c.dimension == dim]
        wsum = sum(c.weight for c in crits)
        if wsum <= 0:
            raise RaceError(f"{dim}: criterion weights sum to {wsum}")
        t_dims[dim] = sum(c.weight * float(seen[(dim, c.criterion.strip())].target or 0) for c in crits) / wsum
        r_dims[dim] = sum(c.weight * float(seen[(dim, c.criterion.strip())].reference or 0) for c in crits) / wsum
    t_total = sum(float(dimension_weights.get(d, 0.0)) * v for d, v in t_dims.items())
    r_total = sum(float(dimension_weights.get(d, 0.0)) * v for d, v in r_dims.items())
    return RaceScores(t_dims, r_dims, t_total, r_total)


def _code(
    items: Sequence[ScoreItem], criteria: Sequence[Criterion], dimension_weights: Mapping[str, float]
) -> RaceScores:
    weights: dict[str, dict[str, float]] = {}
    for c in criteria:
        weights.setdefault(c.dimension, {})[c.criterion] = c.weight
    t_dims: dict[str, float] = {}
    r_dims: dict[str, float] = {}
    t_total = r_total = 0.0
    unmatched: list[str] = []
    dims_in_answer: dict[str, list[ScoreItem]] = {}
    for it in items:
        dims_in_answer.setdefault(it.dimension, []).append(it)
    for dim, its in dims_in_answer.items():
        if dim not in dimension_weights or not weights.get(dim):
            continue
        cmap = weights[dim]
        t_sum = r_sum = w_sum = 0.0
        last_ref: float | None = None
        for it in its:
            text = it.criterion.strip()
            if not text or it.target is None:
                continue
            w = _code_weight(text, cmap)
            if w is None:
                unmatched.append(f"{dim}:{text}")
                w = sum(cmap.values()) / len(cmap)
            t_sum += it.target * w
            w_sum += w
            if it.reference is not None:
                r_sum += it.reference * w
            last_ref = it.reference
        if w_sum > 0:
            t_avg = t_sum / w_sum
            r_avg = r_sum / w_sum if last_ref is not None else 0.0
        else:
            t_avg = r_avg = 0.0
        t_dims[dim], r_dims[dim] = t_avg, r_avg
        t_total += t_avg * float(dimension_weights.get(dim, 0.0))
        r_total += r_avg * float(dimension_weights.get(dim, 0.0))
    return RaceScores(t_dims, r_dims, t_total, r_total, tuple(unmatched))


def _code_weight(text: str, cmap: Mapping[str, float]) -> float | None:
    """The authors' lookup: exact, then case-insensitive, then substring either way (first hit wins)."""
    if text in cmap:
        return cmap[text]
    low = text.lower()
    for key, val in cmap.items():
        if key.lower() == low:
            return val
    for key, val in cmap.items():
        if low in key.lower() or key.lower() in low:
            return val
    return None


def task_result(scores: RaceScores, mode: RaceMode = "paper") -> dict[str, Any]:
    """overall_score and the four normalised dimension scores of one task (the authors' raw_results row)."""
    out: dict[str, Any] = {"overall_score": relative(scores.target_total, scores.reference_total, mode)}
    for dim in DIMENSIONS:
        if dim in scores.target_dims:
            out[dim] = relative(scores.target_dims[dim], scores.reference_dims[dim], mode)
        else:
            out[dim] = None if mode == "paper" else 0.0
    return out


def items_from_answer(answer: Mapping[str, Any]) -> list[ScoreItem]:
    """The judge's JSON ({dimension: [{criterion, article_1_score, article_2_score}]}) as ScoreItems.

    The authors' single-article key `target_score` stands in for `article_1_score` as in their calculator;
    a non-numeric score makes the item unscored (None), which paper mode then rejects."""
    out = []
    for dim, lst in answer.items():
        if not isinstance(lst, list):
            continue
        for it in lst:
            if not isinstance(it, Mapping):
                continue
            crit = it.get("criterion")
            a1 = it.get("article_1_score")
            if a1 is None:
                a1 = it.get("target_score")
            out.append(
                ScoreItem(str(dim), crit if isinstance(crit, str) else "", _num(a1), _num(it.get("article_2_score")))
            )
    return out


def _num(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None
