"""Battle sampling (the tournament the authors never released) and the ensemble rule that decides each battle.

Sampling, per general_domain (sorted), seeded: n = max(min_per_domain, #test queries in the domain)
battles; the C(S,2) unordered system pairs are shuffled once and dealt round-robin (every pair appears
floor(n/P) or ceil(n/P) times); the domain's queries are shuffled and cycled; A/B is a coin flip. A battle
whose query one side has no answer for is re-queued onto the next query of the cycle (`requeued` counts the
skips); a battle no query can host is kept with status `unplayable`, never silently dropped.

Reserve battles: `reserve_share` x n more battles per domain continue the same round-robin (flagged `reserve`).
They are judged like the others and used only to re-queue a battle whose coverage judgment turns out missing
or failed at scoring time (same domain, same pair): the cross stage runs before coverage exists.

Ensemble (paper eq. 1 / notebook cell 12): score(side) = sum of its coverage labels + vote_weight x votes.
- mode `code`: labels on 1..5, vote weight 5 (what produced the published Elo);
- mode `paper`: labels on 0..4, vote weight 4.
Higher score wins, equal scores tie.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import polars as pl

BATTLE_SCHEMA: dict[str, Any] = {
    "battle_id": pl.String,
    "domain": pl.String,
    "task_id": pl.String,
    "system_a": pl.String,
    "system_b": pl.String,
    "requeued": pl.Int64,
    "status": pl.String,  # ok | unplayable
    "reserve": pl.Boolean,  # a spare battle for re-queueing when a coverage judgment is missing
}

ENSEMBLE_MODES: dict[str, tuple[int, float]] = {"code": (1, 5.0), "paper": (0, 4.0)}  # label offset, vote weight


def battles_per_domain(n_queries: int, min_per_domain: int) -> int:
    """The paper's rule: at least `min_per_domain` (1000), up to as many as the domain has test queries."""
    return max(int(min_per_domain), int(n_queries))


def _domain_rng(seed: int, domain: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(domain.encode("utf-8"))])


def sample_battles(
    queries_by_domain: Mapping[str, Sequence[str]],
    systems: Sequence[str],
    answered: Mapping[str, set[str]],
    *,
    min_per_domain: int = 1000,
    seed: int = 0,
    reserve_share: float = 0.0,
) -> pl.DataFrame:
    """The battle table. `answered[system]` = task ids the system has an answer for."""
    systems = sorted(systems)
    pairs = list(combinations(systems, 2))
    rows: list[dict[str, Any]] = []
    if not pairs:
        return pl.DataFrame(rows, schema=BATTLE_SCHEMA, orient="row")
    for domain in sorted(queries_by_domain):
        queries = sorted(queries_by_domain[domain])
        if not queries:
            continue
        rng = _domain_rng(seed, domain)
        order = [queries[i] for i in rng.permutation(len(queries))]
        pair_order = [pairs[i] for i in rng.permutation(len(pairs))]
        n = battles_per_domain(len(queries), min_per_domain)
        n_reserve = math.ceil(max(0.0, float(reserve_share)) * n)
        flips = rng.random(n + n_reserve) < 0.5
        for k in range(n + n_reserve):
            a, b = pair_order[k % len(pair_order)]
            if flips[k]:
                a, b = b, a
            chosen, skipped = None, 0
            for j in range(len(order)):
                q = order[(k + j) % len(order)]
                if q in answered.get(a, set()) and q in answered.get(b, set()):
                    chosen = q
                    break
                skipped += 1
            rows.append(
                {
                    "battle_id": f"{domain}#{k:05d}" + ("r" if k >= n else ""),
                    "domain": domain,
                    "task_id": chosen if chosen is not None else order[k % len(order)],
                    "system_a": a,
                    "system_b": b,
                    "requeued": skipped if chosen is not None else len(order),
                    "status": "ok" if chosen is not None else "unplayable",
                    "reserve": k >= n,
                }
            )
    return pl.DataFrame(rows, schema=BATTLE_SCHEMA, orient="row")


def ensemble_score(
    labels_1to5: Iterable[int], votes: int, mode: str = "paper", vote_weight: float | None = None
) -> float:
    """One side's ensemble score: sum of its labels on the mode's scale + vote weight x its direct votes."""
    if mode not in ENSEMBLE_MODES:
        raise ValueError(f"scoring.ensemble.mode must be one of {sorted(ENSEMBLE_MODES)}, got {mode!r}")
    offset, weight = ENSEMBLE_MODES[mode]
    w = weight if vote_weight is None else float(vote_weight)
    return float(sum(int(x) - 1 + offset for x in labels_1to5)) + w * int(votes)


def ensemble_outcome(
    labels_a: Sequence[int],
    labels_b: Sequence[int],
    votes_a: int,
    votes_b: int,
    mode: str = "paper",
    vote_weight: float | None = None,
) -> tuple[float, float, float]:
    """(score_A, score_B, outcome for A): 1 win, 0.5 tie, 0 loss."""
    sa = ensemble_score(labels_a, votes_a, mode, vote_weight)
    sb = ensemble_score(labels_b, votes_b, mode, vote_weight)
    return sa, sb, 1.0 if sa > sb else 0.5 if sa == sb else 0.0


# ----------------------------------------------------------------------- meta-evaluation partial credit
def direct_credit(vote_ab: str | None, vote_ba: str | None, human: str) -> float:
    """Agreement credit of the two-order direct judge with a human preference (paper footnote 6).

    Each order's verdict is "A", "B" or None (tie / no verdict). Both match -> 1; the two orders disagree
    (A vs B) -> 0.5; one matches and the other is a tie -> 0.75; otherwise 0.
    """
    votes = [v for v in (vote_ab, vote_ba)]
    hits = sum(1 for v in votes if v == human)
    ties = sum(1 for v in votes if v is None)
    if hits == 2:
        return 1.0
    if hits == 1 and ties == 1:
        return 0.75
    if hits == 1:
        return 0.5  # the orders disagree
    return 0.0


def ensemble_credit(outcome_a: float, human: str) -> float:
    """Ensemble agreement credit: matching winner 1, ensemble tie 0.5, wrong 0."""
    if outcome_a == 0.5:
        return 0.5
    winner = "A" if outcome_a == 1.0 else "B"
    return 1.0 if winner == human else 0.0
