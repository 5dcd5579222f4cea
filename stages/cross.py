"""Stage `cross@<benchmark>`: reads every system's outputs (battles, comparisons against a reference system).
Exits 3 (tables kept, DVC records nothing) while judge calls are unanswered (docs/reliability.md)."""

import argparse
from pathlib import Path

from reportbench.pipeline import cross_stage, setup_logging
from reportbench.preflight import stage_params
from reportbench.stage_errors import exit_on_error
from reportbench.stage_guard import exit_ok, guard_stage

if __name__ == "__main__":
    guard_stage()
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--release", type=Path, required=True)
    ap.add_argument("--runs", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    with exit_on_error():
        cross_stage(
            stage_params(), args.benchmark, args.release, args.runs, args.out, enforce_bounds=True, reuse=True
        )
    exit_ok()  # done: exit 0 without the interpreter's teardown (reportbench.stage_guard)
