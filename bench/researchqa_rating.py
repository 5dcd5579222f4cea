"""Time ResearchQA's rank step: Bradley–Terry + bootstrap for 18 systems over 10,000 battles, 1,000 rounds.

    python bench/researchqa_rating.py                   # both solvers, both tie modes
    python bench/researchqa_rating.py --battles 7650 --rounds 1000 --solver joint

Target: seconds, not minutes (battles are grouped into unique matchup rows; `joint` fits all bootstrap rounds
in one vectorised L-BFGS-B problem per chunk; `per_round` is the authors' loop of one fit per round).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from reportbench.protocols.researchqa.rating import bootstrap_bt, win_probability


def synthetic(n_systems: int, n_battles: int, seed: int = 0) -> tuple[list[str], list[str], list[float]]:
    rng = np.random.default_rng(seed)
    true = rng.normal(1000, 200, n_systems)
    names = [f"system_{i:02d}" for i in range(n_systems)]
    a = rng.integers(0, n_systems, n_battles)
    b = (a + rng.integers(1, n_systems, n_battles)) % n_systems
    p = np.array([win_probability(true[i], true[j]) for i, j in zip(a, b, strict=True)])
    u = rng.random(n_battles)
    y = np.where(u < 0.03, 0.5, np.where(u < 0.03 + 0.97 * p, 1.0, 0.0))
    return [names[i] for i in a], [names[j] for j in b], y.tolist()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", type=int, default=18)
    ap.add_argument("--battles", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--solver", choices=["joint", "per_round", "both"], default="both")
    args = ap.parse_args()
    a, b, y = synthetic(args.systems, args.battles)
    solvers = ["joint", "per_round"] if args.solver == "both" else [args.solver]
    print(f"{args.systems} systems x {args.battles} battles x {args.rounds} bootstrap rounds")
    for solver in solvers:
        for ties in ("half", "duplicate"):
            t0 = time.perf_counter()
            r = bootstrap_bt(a, b, y, ties=ties, rounds=args.rounds, solver=solver)
            dt = time.perf_counter() - t0
            std = float(np.mean(np.std(r.boot, axis=0)))
            print(f"  solver={solver:9s} ties={ties:9s} {dt:6.2f} s   mean bootstrap std {std:5.1f} Elo")


if __name__ == "__main__":
    main()
