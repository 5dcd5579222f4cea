"""NaN-aware statistics for per-task metric values.

Conventions (why): an undefined per-task value is NaN, never 0, so every mean here is over the *defined*
values and says how many were left out. The authors' DeepScholar aggregate (NaN -> 0, then round to 2
decimals) is available separately as `authors_aggregate`, only for comparing with published numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


def _floats(values: Iterable[float | int | None]) -> np.ndarray:
    """None -> NaN; everything else as float."""
    return np.array([math.nan if v is None else float(v) for v in values], dtype=float)


@dataclass(frozen=True)
class MeanResult:
    """Mean over defined values, with how many values were defined and undefined."""

    mean: float
    n_defined: int
    n_undefined: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def nan_mean(values: Iterable[float | int | None]) -> MeanResult:
    """Mean of the non-NaN values; NaN when there are none (an empty mean is undefined, not 0)."""
    arr = _floats(values)
    ok = ~np.isnan(arr)
    n_ok = int(ok.sum())
    mean = float(arr[ok].mean()) if n_ok else math.nan
    return MeanResult(mean=mean, n_defined=n_ok, n_undefined=int(arr.size - n_ok))


def authors_aggregate(values: Iterable[float | int | None], decimals: int = 2) -> float:
    """DeepScholar `Evaluator.aggregate`: NaN -> 0, mean, rounded. NaN only for an empty input."""
    arr = np.nan_to_num(_floats(values), nan=0.0)
    if arr.size == 0:
        return math.nan
    return round(float(arr.mean()), decimals)


def geometric_mean(values: Iterable[float | int | None]) -> float:
    """Geometric mean of a system's per-metric means (the leaderboard's overall score).

    - NaN if any component is NaN (or the input is empty): an undefined metric makes the overall
      score undefined rather than silently dropping a dimension.
    - 0 if any component is 0 (the limit of the product); no epsilon smoothing.
    - Negative components are an error: every metric that enters it is non-negative.
    """
    arr = _floats(values)
    if arr.size == 0 or np.isnan(arr).any():
        return math.nan
    if (arr < 0).any():
        raise ValueError(f"geometric mean of negative values: {arr.tolist()}")
    if (arr == 0).any():
        return 0.0
    return float(np.exp(np.log(arr).mean()))


@dataclass(frozen=True)
class PairedTest:
    """Paired t-test of system A minus system B over the tasks both have defined scores for.

    `mean_diff` = mean(A - B) over those tasks. `t`/`p` are NaN when n < 2 or the differences have zero
    variance (a t statistic is undefined then); `note` says which.
    """

    t: float
    p: float
    n: int
    mean_diff: float
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def paired_ttest(a: Mapping[str, float], b: Mapping[str, float]) -> PairedTest:
    """Two-sided `scipy.stats.ttest_rel` over task ids present and non-NaN in both mappings."""
    keys = sorted(k for k in a.keys() & b.keys() if _defined(a[k]) and _defined(b[k]))
    n = len(keys)
    if n == 0:
        return PairedTest(math.nan, math.nan, 0, math.nan, "no task with both scores defined")
    xa = np.array([float(a[k]) for k in keys])
    xb = np.array([float(b[k]) for k in keys])
    diff = xa - xb
    mean_diff = float(diff.mean())
    if n < 2:
        return PairedTest(math.nan, math.nan, n, mean_diff, "n < 2")
    if float(np.ptp(diff)) == 0.0:
        return PairedTest(math.nan, math.nan, n, mean_diff, "zero variance of the differences")
    t, p = _ttest_rel(xa, xb)
    return PairedTest(t, p, n, mean_diff)


def _ttest_rel(xa: np.ndarray, xb: np.ndarray) -> tuple[float, float]:
    """Two-sided paired t-test: `scipy.stats.ttest_rel(xa, xb)`'s statistic and p-value, bit for bit.

    Why not call it: importing `scipy.stats` costs every score stage 0.5 s (and DVC runs one per benchmark);
    its t-test is this arithmetic plus Student's t survival function from `scipy.special` (0.2 s to import).
    The operations and their order are scipy's (`ttest_1samp(a - b, 0.0)`: `_var` via `_moment`, then
    `2 * stdtr(df, -|t|)`); tests/test_stats.py checks equality with `scipy.stats.ttest_rel` on random and
    tied inputs, so a scipy release that changed its arithmetic would fail there, not drift silently."""
    from scipy.special import stdtr  # lazy: +200 ms to import (python -X importtime)

    d = xa - xb
    n = d.shape[0]
    mean = np.mean(d, axis=0)
    centred = d - np.mean(d, axis=0, keepdims=True)
    var = np.mean(centred**2, axis=0)
    var *= np.float64(n) / (np.float64(n) - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.divide(mean - 0.0, np.sqrt(var / n))
    p = 2 * stdtr(np.float64(n - 1), -np.abs(t))
    return float(t), float(p)


def bootstrap_ci(
    values: Iterable[float | int | None],
    *,
    n_boot: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean over defined values (NaN, NaN if fewer than 2 defined).

    Seeded so DVC metrics files are byte-stable across reruns. With few tasks the interval is narrow
    and optimistic (it cannot be wider than the spread of the values); the site says how many tasks it rests on.
    """
    arr = _floats(values)
    arr = arr[~np.isnan(arr)]
    if arr.size < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, arr.size, size=(n_boot, arr.size))
    means = arr[idx].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return (float(lo), float(hi))


def _defined(v: float | int | None) -> bool:
    return v is not None and not math.isnan(float(v))


def stratified_bootstrap_ci(
    groups: Mapping[str, Iterable[float | int | None]],
    *,
    n_boot: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile CI of a macro mean over groups (DEER's mean of domain means): tasks are resampled within
    each group, so every replicate keeps the group structure the point estimate has.

    NaN, NaN when fewer than 2 defined values in total; a group with one defined value contributes it
    unchanged (it cannot vary), a group with none is left out as in the point estimate.
    """
    arrays = []
    for vals in groups.values():
        arr = _floats(vals)
        arr = arr[~np.isnan(arr)]
        if arr.size:
            arrays.append(arr)
    if sum(a.size for a in arrays) < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    group_means = np.empty((n_boot, len(arrays)))
    for j, arr in enumerate(arrays):
        idx = rng.integers(0, arr.size, size=(n_boot, arr.size))
        group_means[:, j] = arr[idx].mean(axis=1)
    lo, hi = np.quantile(group_means.mean(axis=1), [alpha / 2, 1 - alpha / 2])
    return (float(lo), float(hi))


def paired_bootstrap_diff_ci(
    a: Mapping[str, float],
    b: Mapping[str, float],
    *,
    n_boot: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile CI of mean(A - B) over tasks both define, resampling tasks (pairs stay together)."""
    keys = sorted(k for k in a.keys() & b.keys() if _defined(a[k]) and _defined(b[k]))
    return bootstrap_ci([float(a[k]) - float(b[k]) for k in keys], n_boot=n_boot, alpha=alpha, seed=seed)


def fdr_adjust(p_values: Iterable[float | None]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (`scipy.stats.false_discovery_control`, method "bh").

    The family is every finite p-value given; NaN/None stay NaN and do not count towards the family size
    (a test that could not be run is not a comparison)."""
    ps = _floats(p_values)
    out = np.full(ps.size, math.nan)
    ok = ~np.isnan(ps)
    if ok.any():
        out[ok] = _bh_adjust(ps[ok])
    return [float(v) for v in out]


def _bh_adjust(ps: np.ndarray) -> np.ndarray:
    """`scipy.stats.false_discovery_control(ps, method="bh")` for a 1-D array, bit for bit (its steps, in its
    order; tests/test_stats.py checks equality). Not called for the same reason as `_ttest_rel`: the import."""
    if ((ps < 0) | (ps > 1)).any():
        raise ValueError("p-values must lie between 0 and 1")
    if ps.size <= 1:
        return ps
    m = ps.size
    order = np.argsort(ps)
    ranked = ps[order] * (m / np.arange(1, m + 1, dtype=ps.dtype))
    np.minimum.accumulate(ranked[::-1], out=ranked[::-1])  # step-up: each at most the next larger one's value
    adjusted = np.empty_like(ranked)
    adjusted[order] = ranked
    return np.clip(adjusted, 0.0, 1.0)
