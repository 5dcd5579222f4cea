"""Bradley–Terry ratings with Elo scaling and a multinomial bootstrap: a port of the authors' notebook
(itself Chatbot Arena's `compute_bootstrap_bt`).

- Battles are grouped into unique (model_a, model_b, outcome) rows with counts as weights, so a fit costs
  O(unique rows), not O(battles): 18 systems give at most 153 x 3 x 2 rows whatever the battle count.
- Loss: weighted logistic NLL with logits alpha * (r_a - r_b), alpha = ln 10, analytic gradient; L-BFGS-B
  from zeros, maxiter 100, gtol 1e-6; no anchor (gradients sum to zero, so ratings stay centred).
- Rating = r * 400 + 1000, so the ratings average 1000.
- Bootstrap: `default_rng(seed)`, `multinomial(n=len(rows), pvals=w/sum(w), size=rounds) / len(rows)`.
- Ties: `duplicate` = the authors' code (every battle twice; a tie is one win each way) or `half` = outcome
  0.5 (same point estimate; the bootstrap resamples real battles, so the spread is not ~sqrt(2) too small).
- Identifiability (our addition; the notebook has none): the unregularised BT maximum-likelihood estimate
  exists only when the "beat or tied" graph of the battles is strongly connected; on separable battles (one
  system never loses to another group) L-BFGS-B just stops somewhere on a ray to infinity and prints a
  number that means nothing (the demo's intervals of [-4741, 976]). We keep the authors' unregularised fit
  for parity and report such ratings, and any interval whose resamples include a separable one, as
  `not_identifiable` instead of a number (docs/researchqa.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

ALPHA = math.log(10.0)
SCALE = 400.0
INIT_RATING = 1000.0
MAXITER = 100
GTOL = 1e-6
TIE_MODES = ("duplicate", "half")
ORDERS = ("sorted", "factorize")
"""Model index order: `sorted` names, or `factorize` = first appearance in concat(model_a, model_b), the
notebook's `pd.factorize`. The order fixes the row order of `np.unique`, so the bootstrap's multinomial draws
(and the bootstrap mean, by up to ~1.5 Elo) are the notebook's only in its order; the point fit is the same."""
# Reported ratings are rounded to 0.001 Elo: L-BFGS-B stops at gtol 1e-6 (about 4e-4 Elo), so further digits
# are solver noise and would differ between machines (docs/dvc.md, "Byte-identical outputs").
ELO_DECIMALS = 3


@dataclass(frozen=True)
class Grouped:
    """Unique matchup rows: model indices (n, 2), outcome for model_a (n,), weights (n,)."""

    models: list[str]
    matchups: np.ndarray
    outcomes: np.ndarray
    weights: np.ndarray
    n_rows: int  # rows the bootstrap resamples (battles, or 2x battles with `duplicate`)


def group_battles(
    model_a: Sequence[str],
    model_b: Sequence[str],
    outcome: Sequence[float],
    ties: str = "half",
    order: str = "sorted",
) -> Grouped:
    """Battles -> grouped rows. `outcome` is 1 (A wins), 0.5 (tie) or 0 (B wins), from A's side."""
    if ties not in TIE_MODES:
        raise ValueError(f"ties must be one of {TIE_MODES}, got {ties!r}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    a, b = np.asarray(model_a, dtype=object), np.asarray(model_b, dtype=object)
    y = np.asarray(outcome, dtype=np.float64)
    if not (len(a) == len(b) == len(y)):
        raise ValueError("model_a, model_b and outcome must have the same length")
    if np.any((y != 0.0) & (y != 0.5) & (y != 1.0)):
        raise ValueError("outcomes must be 0, 0.5 or 1")
    if order == "factorize":
        models = list(dict.fromkeys([*a.tolist(), *b.tolist()]))
    else:
        models = sorted(set(a.tolist()) | set(b.tolist()))
    index = {m: i for i, m in enumerate(models)}
    ia = np.fromiter((index[m] for m in a), dtype=np.int64, count=len(a))
    ib = np.fromiter((index[m] for m in b), dtype=np.int64, count=len(b))
    if ties == "duplicate":
        # The authors' trick: every battle twice; a tie's first copy goes to A, its second to B.
        y1 = np.where(y == 0.5, 1.0, y)
        y2 = np.where(y == 0.5, 0.0, y)
        ia, ib, y = np.concatenate([ia, ia]), np.concatenate([ib, ib]), np.concatenate([y1, y2])
    rows = np.column_stack([ia, ib, np.round(y * 2).astype(np.int64)])
    uniq, counts = np.unique(rows, axis=0, return_counts=True) if len(rows) else (np.zeros((0, 3), np.int64), [])
    return Grouped(
        models=models,
        matchups=uniq[:, :2].astype(np.int64),
        outcomes=uniq[:, 2].astype(np.float64) / 2.0,
        weights=np.asarray(counts, dtype=np.float64),
        n_rows=len(rows),
    )


def _loss_and_grad(
    r: np.ndarray, matchups: np.ndarray, outcomes: np.ndarray, weights: np.ndarray, alpha: float
) -> tuple[float, np.ndarray]:
    # lazy: +350 ms to import scipy (python -X importtime); each score stage imports every benchmark
    from scipy.special import expit

    diff = r[matchups[:, 0]] - r[matchups[:, 1]]
    p = expit(alpha * diff)
    eps = 1e-300
    loss = -float(np.sum((np.log(p + eps) * outcomes + np.log(1.0 - p + eps) * (1.0 - outcomes)) * weights))
    g = -alpha * (outcomes - p) * weights
    n = len(r)
    grad = np.bincount(matchups[:, 0], weights=g, minlength=n) - np.bincount(matchups[:, 1], weights=g, minlength=n)
    return loss, grad


def fit_bt(grouped: Grouped, weights: np.ndarray | None = None, alpha: float = ALPHA) -> np.ndarray:
    """Raw BT strengths (log10 units) by L-BFGS-B from zeros, the authors' settings."""
    # lazy: +350 ms to import scipy (python -X importtime); each score stage imports every benchmark
    from scipy.optimize import minimize

    w = grouped.weights if weights is None else weights
    result = minimize(
        _loss_and_grad,
        x0=np.zeros(len(grouped.models)),
        args=(grouped.matchups, grouped.outcomes, w, alpha),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": MAXITER, "gtol": GTOL},
    )
    return np.asarray(result.x)


def _joint_loss_and_grad(
    flat: np.ndarray, matchups: np.ndarray, outcomes: np.ndarray, weights: np.ndarray, alpha: float
) -> tuple[float, np.ndarray]:
    """Sum over rounds of the per-round loss: separable, so its optimum is every round's own optimum."""
    # lazy: +350 ms to import scipy (python -X importtime); each score stage imports every benchmark
    from scipy.special import expit

    rounds = weights.shape[0]
    r = flat.reshape(rounds, -1)
    n = r.shape[1]
    diff = r[:, matchups[:, 0]] - r[:, matchups[:, 1]]
    p = expit(alpha * diff)
    eps = 1e-300
    loss = -float(np.sum((np.log(p + eps) * outcomes + np.log(1.0 - p + eps) * (1.0 - outcomes)) * weights))
    g = (-alpha * (outcomes - p) * weights).ravel()  # (rounds, rows), row-major
    # Scatter-add with bincount, not a matmul: a BLAS product sums in an order that depends on the thread
    # count and CPU kernel, and L-BFGS-B amplifies last-bit differences into the 10th digit of the ratings.
    base = (np.arange(rounds) * n)[:, None]
    size = rounds * n
    grad = np.bincount((base + matchups[:, 0]).ravel(), weights=g, minlength=size) - np.bincount(
        (base + matchups[:, 1]).ravel(), weights=g, minlength=size
    )
    return loss, grad


def fit_bt_joint(grouped: Grouped, weights: np.ndarray, alpha: float = ALPHA, chunk: int = 250) -> np.ndarray:
    """Many bootstrap rounds in one L-BFGS-B call per chunk of rounds (vectorised; same optima as
    `fit_bt` round by round, within the optimiser's tolerance)."""
    # lazy: +350 ms to import scipy (python -X importtime); each score stage imports every benchmark
    from scipy.optimize import minimize

    out = []
    n = len(grouped.models)
    for start in range(0, len(weights), chunk):
        w = weights[start : start + chunk]
        result = minimize(
            _joint_loss_and_grad,
            x0=np.zeros(len(w) * n),
            args=(grouped.matchups, grouped.outcomes, w, alpha),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": 20 * MAXITER, "gtol": GTOL, "ftol": 1e-15},
        )
        out.append(np.asarray(result.x).reshape(len(w), n))
    return np.concatenate(out) if out else np.zeros((0, n))


def identifiable(grouped: Grouped, weights: np.ndarray | None = None) -> bool:
    """True when the BT MLE exists: the graph with an edge winner -> loser (both ways for a tie) over the rows
    with positive weight is strongly connected (Zermelo 1929; Ford 1957)."""
    # lazy: +350 ms to import scipy (python -X importtime); each score stage imports every benchmark
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(grouped.models)
    if n < 2:
        return False
    w = grouped.weights if weights is None else weights
    keep = w > 0
    a, b, y = grouped.matchups[keep, 0], grouped.matchups[keep, 1], grouped.outcomes[keep]
    src = np.concatenate([a[y > 0], b[y < 1]])  # A beat (or tied) B: A -> B; B beat (or tied) A: B -> A
    dst = np.concatenate([b[y > 0], a[y < 1]])
    graph = csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    n_comp, _ = connected_components(graph, directed=True, connection="strong")
    return bool(n_comp == 1)


def to_elo(raw: np.ndarray, scale: float = SCALE, init: float = INIT_RATING) -> np.ndarray:
    return raw * scale + init


def win_probability(r_a: float, r_b: float, scale: float = SCALE) -> float:
    """P(A beats B) from Elo-scaled ratings: 1 / (1 + 10^((R_B - R_A)/400))."""
    return 1.0 / (1.0 + 10.0 ** ((r_b - r_a) / scale))


def _stable(x: float, decimals: int | None = ELO_DECIMALS) -> float:
    """A reported Elo statistic, rounded to the digits the solver determines (`ELO_DECIMALS`), or kept whole."""
    return float(x) if decimals is None else round(float(x), decimals)


@dataclass(frozen=True)
class Ratings:
    """Point fit plus bootstrap distribution (rounds x models), Elo-scaled."""

    models: list[str]
    point: np.ndarray
    boot: np.ndarray
    ties: str
    n_battles: int
    point_identifiable: bool = True
    n_rounds_separable: int = 0

    def table(self, ddof: int = 0, decimals: int | None = None) -> list[dict[str, float | str | int | bool | None]]:
        """One row per model, sorted by bootstrap median (the authors' column order), with 95% intervals.
        `ddof` of the bootstrap std: 0 (numpy) or 1 (the notebook's pandas `.std()`); `decimals`: round (the
        score stage writes `ELO_DECIMALS`, so outputs are byte-stable across machines; None keeps every digit).

        Not identifiable (separable battles): rating and bootstrap values are None with `reason`
        `not_identifiable`; an identifiable point whose resamples are separable keeps its rating and
        loses its interval (`ci_reason`)."""
        rows: list[dict[str, float | str | int | bool | None]] = []
        n_rounds = int(self.boot.shape[0])
        for i, m in enumerate(self.models):
            col = self.boot[:, i] if self.boot.size else np.array([self.point[i]])
            row: dict[str, float | str | int | bool | None] = {
                "system": m,
                "rating": _stable(self.point[i], decimals),
                "boot_mean": _stable(np.mean(col), decimals),
                "boot_median": _stable(np.median(col), decimals),
                "boot_std": _stable(np.std(col, ddof=ddof), decimals) if len(col) > ddof else float("nan"),
                "ci_low": _stable(np.quantile(col, 0.025), decimals),
                "ci_high": _stable(np.quantile(col, 0.975), decimals),
                "n_rounds": n_rounds,
                "n_rounds_separable": self.n_rounds_separable,
                "identifiable": self.point_identifiable,
                "ties": self.ties,
            }
            if not self.point_identifiable:
                for k in ("rating", "boot_mean", "boot_median", "boot_std", "ci_low", "ci_high"):
                    row[k] = None
                row["reason"] = "not_identifiable: the battles are separable (no maximum-likelihood rating)"
            elif self.n_rounds_separable:
                for k in ("boot_mean", "boot_median", "boot_std", "ci_low", "ci_high"):
                    row[k] = None
                row["ci_reason"] = (
                    f"not_identifiable: {self.n_rounds_separable} of {n_rounds} bootstrap resamples are separable"
                )
            rows.append(row)

        def order(r: Mapping[str, Any]) -> tuple[bool, float]:
            v = r["boot_median"] if r["boot_median"] is not None else r["rating"]
            return (v is None, -float(v) if v is not None else 0.0)

        return sorted(rows, key=order)


def bootstrap_bt(
    model_a: Sequence[str],
    model_b: Sequence[str],
    outcome: Sequence[float],
    *,
    ties: str = "half",
    rounds: int = 1000,
    seed: int = 0,
    solver: str = "joint",
    order: str = "sorted",
) -> Ratings:
    """Point BT fit and `rounds` multinomial-bootstrap fits (seeded) of the grouped battles."""
    grouped = group_battles(model_a, model_b, outcome, ties, order)
    if not grouped.models:
        return Ratings([], np.zeros(0), np.zeros((0, 0)), ties, 0)
    point = to_elo(fit_bt(grouped))
    boot = np.zeros((0, len(grouped.models)))
    if rounds > 0 and grouped.n_rows:
        rng = np.random.default_rng(seed=seed)
        counts = rng.multinomial(n=grouped.n_rows, pvals=grouped.weights / grouped.weights.sum(), size=rounds)
        boot_w = counts.astype(np.float64) / grouped.n_rows
        if solver == "per_round":  # the authors' loop: one fit per round
            boot = np.stack([to_elo(fit_bt(grouped, w)) for w in boot_w])
        elif solver == "joint":
            boot = to_elo(fit_bt_joint(grouped, boot_w))
        else:
            raise ValueError(f"solver must be joint|per_round, got {solver!r}")
        separable = sum(1 for w in counts if not identifiable(grouped, w.astype(np.float64)))
    else:
        separable = 0
    return Ratings(grouped.models, point, boot, ties, len(outcome), identifiable(grouped), separable)
