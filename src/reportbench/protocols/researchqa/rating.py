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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

ALPHA = math.log(10.0)
SCALE = 400.0
INIT_RATING = 1000.0
MAXITER = 100
GTOL = 1e-6
TIE_MODES = ("duplicate", "half")
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
    model_a: Sequence[str], model_b: Sequence[str], outcome: Sequence[float], ties: str = "half"
) -> Grouped:
    """Battles -> grouped rows. `outcome` is 1 (A wins), 0.5 (tie) or 0 (B wins), from A's side."""
    if ties not in TIE_MODES:
        raise ValueError(f"ties must be one of {TIE_MODES}, got {ties!r}")
    a, b = np.asarray(model_a, dtype=object), np.asarray(model_b, dtype=object)
    y = np.asarray(outcome, dtype=np.float64)
    if not (len(a) == len(b) == len(y)):
        raise ValueError("model_a, model_b and outcome must have the same length")
    if np.any((y != 0.0) & (y != 0.5) & (y != 1.0)):
        raise ValueError("outcomes must be 0, 0.5 or 1")
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


def to_elo(raw: np.ndarray, scale: float = SCALE, init: float = INIT_RATING) -> np.ndarray:
    return raw * scale + init


def win_probability(r_a: float, r_b: float, scale: float = SCALE) -> float:
    """P(A beats B) from Elo-scaled ratings: 1 / (1 + 10^((R_B - R_A)/400))."""
    return 1.0 / (1.0 + 10.0 ** ((r_b - r_a) / scale))


def _stable(x: float) -> float:
    """A reported Elo statistic, rounded to the digits the solver determines (`ELO_DECIMALS`)."""
    return round(float(x), ELO_DECIMALS)


@dataclass(frozen=True)
class Ratings:
    """Point fit plus bootstrap distribution (rounds x models), Elo-scaled."""

    models: list[str]
    point: np.ndarray
    boot: np.ndarray
    ties: str
    n_battles: int

    def table(self) -> list[dict[str, float | str | int]]:
        """One row per model, sorted by bootstrap median (the authors' column order), with 95% intervals."""
        rows = []
        for i, m in enumerate(self.models):
            col = self.boot[:, i] if self.boot.size else np.array([self.point[i]])
            rows.append(
                {
                    "system": m,
                    "rating": _stable(self.point[i]),
                    "boot_mean": _stable(np.mean(col)),
                    "boot_median": _stable(np.median(col)),
                    "boot_std": _stable(np.std(col)),
                    "ci_low": _stable(np.quantile(col, 0.025)),
                    "ci_high": _stable(np.quantile(col, 0.975)),
                    "n_rounds": int(self.boot.shape[0]),
                    "ties": self.ties,
                }
            )
        return sorted(rows, key=lambda r: -float(r["boot_median"]))


def bootstrap_bt(
    model_a: Sequence[str],
    model_b: Sequence[str],
    outcome: Sequence[float],
    *,
    ties: str = "half",
    rounds: int = 1000,
    seed: int = 0,
    solver: str = "joint",
) -> Ratings:
    """Point BT fit and `rounds` multinomial-bootstrap fits (seeded) of the grouped battles."""
    grouped = group_battles(model_a, model_b, outcome, ties)
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
    return Ratings(grouped.models, point, boot, ties, len(outcome))
