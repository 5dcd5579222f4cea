"""Seeded sampling stratified by the judge's verdict (annotation samples, capped second-judge runs).

Why stratified: a random sample of support links is mostly 'supported', so a judge that always says
'supported' would look perfect on it. Strata are filled round-robin, so rare verdicts get a fair share.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import TypeVar

T = TypeVar("T")


def stratified_sample(items: Sequence[T], strata: Sequence[Hashable], n: int, seed: int = 0) -> list[T]:
    """Up to `n` items, drawn round-robin over the strata (each shuffled with `seed`), in input order.

    Deterministic for the same inputs and seed; all items when `n` >= len(items).
    """
    if len(items) != len(strata):
        raise ValueError("one stratum per item")
    if n >= len(items):
        return list(items)
    rng = random.Random(seed)
    by_stratum: dict[str, list[int]] = {}
    for i, s in enumerate(strata):
        by_stratum.setdefault(str(s), []).append(i)
    queues = []
    for key in sorted(by_stratum):
        idx = list(by_stratum[key])
        rng.shuffle(idx)
        queues.append(idx)
    picked: list[int] = []
    while len(picked) < n:
        for q in queues:
            if q and len(picked) < n:
                picked.append(q.pop())
    return [items[i] for i in sorted(picked)]
