"""Agreement statistics between two judges' labels on the same items (pure numpy/scipy, no sklearn).

Why hand-written kappa: scikit-learn is not a dependency, and the formulas are short; the tests check them
against worked examples. Every function returns NaN (never 0) when the statistic is undefined (too few items,
one judge constant, ...), so "undefined" can never pass for "no agreement".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Literal

import numpy as np

Weights = Literal["none", "linear", "quadratic"]


def confusion(a: Sequence[Hashable], b: Sequence[Hashable], labels: Sequence[Hashable]) -> np.ndarray:
    """Counts: rows = judge A's label, columns = judge B's label, in `labels` order."""
    index = {lab: i for i, lab in enumerate(labels)}
    m = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for x, y in zip(a, b, strict=True):
        m[index[x], index[y]] += 1
    return m


def cohen_kappa(
    a: Sequence[Hashable], b: Sequence[Hashable], labels: Sequence[Hashable] | None = None, weights: Weights = "none"
) -> float:
    """Cohen's kappa; `linear`/`quadratic` weights treat `labels` as ordered (ordinal scales).

    kappa = 1 - sum(w * O) / sum(w * E) with O the observed and E the chance-expected confusion matrix
    (marginal products), w the disagreement weights (0 on the diagonal). NaN when chance disagreement is 0
    (both judges used one and the same label throughout) or when there are no items.
    """
    if len(a) != len(b):
        raise ValueError(f"kappa needs paired labels, got {len(a)} and {len(b)}")
    if not a:
        return math.nan
    labels = list(labels) if labels is not None else sorted(set(a) | set(b), key=str)
    k = len(labels)
    observed = confusion(a, b, labels).astype(float)
    n = observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / n
    i, j = np.indices((k, k))
    if weights == "none":
        w = (i != j).astype(float)
    elif weights == "linear":
        w = np.abs(i - j) / max(k - 1, 1)
    elif weights == "quadratic":
        w = ((i - j) / max(k - 1, 1)) ** 2
    else:
        raise ValueError(f"unknown kappa weights {weights!r}")
    denominator = float((w * expected).sum())
    if denominator <= 0:
        return math.nan
    return 1.0 - float((w * observed).sum()) / denominator


def accuracy(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Share of items with the same label (raw agreement)."""
    if not a:
        return math.nan
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def macro_f1(reference: Sequence[Hashable], predicted: Sequence[Hashable]) -> float:
    """Unweighted mean over the reference's labels of F1(label); `reference` plays the gold role.

    Labels that occur in neither sequence do not exist here; a label only the prediction uses scores F1 = 0
    (it counts as a false positive of a class with no support, as scikit-learn does with labels=union).
    """
    if not reference:
        return math.nan
    labels = sorted(set(reference) | set(predicted), key=str)
    scores = []
    for lab in labels:
        tp = sum(r == lab and p == lab for r, p in zip(reference, predicted, strict=True))
        fp = sum(r != lab and p == lab for r, p in zip(reference, predicted, strict=True))
        fn = sum(r == lab and p != lab for r, p in zip(reference, predicted, strict=True))
        scores.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return float(np.mean(scores))


def majority_floor(reference: Sequence[Hashable]) -> float:
    """Accuracy of always answering the reference's most frequent label: what 'agreement' must beat."""
    if not reference:
        return math.nan
    counts: dict[Hashable, int] = {}
    for x in reference:
        counts[x] = counts.get(x, 0) + 1
    return max(counts.values()) / len(reference)


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho (ties averaged); NaN with < 3 pairs or a constant side."""
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return math.nan
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b between two score lists over the same systems; NaN with < 2 systems or a constant side."""
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return math.nan
    # tau-b written out: O(n^2) over a handful of systems is far cheaper than scipy's wrapper inside a bootstrap
    concordant = discordant = ties_x = ties_y = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return (concordant - discordant) / denominator if denominator else math.nan


def bootstrap_ci(
    groups: Mapping[Hashable, Sequence[int]],
    statistic: Callable[[list[int]], float],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of `statistic(indices)` when whole groups (benchmark tasks) are resampled.

    Resampling tasks, not items, because items of one task are not independent (one report, one page).
    Resamples where the statistic is undefined are dropped; NaN bounds when fewer than half are defined
    or there is only one group (no spread to estimate).
    """
    keys = sorted(groups, key=str)
    if len(keys) < 2 or n_boot <= 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_boot):
        picked = rng.integers(0, len(keys), size=len(keys))
        indices = [i for g in picked for i in groups[keys[g]]]
        v = statistic(indices)
        if not math.isnan(v):
            values.append(v)
    if len(values) < n_boot / 2:
        return math.nan, math.nan
    alpha = (1 - level) / 2
    lo, hi = np.quantile(values, [alpha, 1 - alpha])
    return float(lo), float(hi)


def flip_rate(samples: Sequence[Sequence[Hashable]]) -> tuple[float, float]:
    """Self-consistency of k re-samples of one judge: (share of items whose label changed in any sample,
    mean share of samples that disagree with the item's modal label).

    `samples[s][i]` is sample s's label of item i. NaN with fewer than 2 samples or no items.
    """
    if len(samples) < 2 or not samples[0]:
        return math.nan, math.nan
    n_items = len(samples[0])
    any_flip = 0
    disagreement = 0.0
    for i in range(n_items):
        labels = [s[i] for s in samples]
        counts: dict[Hashable, int] = {}
        for lab in labels:
            counts[lab] = counts.get(lab, 0) + 1
        mode = max(counts.values())
        any_flip += len(counts) > 1
        disagreement += 1 - mode / len(labels)
    return any_flip / n_items, disagreement / n_items
