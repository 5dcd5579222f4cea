"""Stage `cross@<benchmark>`: reads every system's outputs (battles, comparisons against a reference system)."""

import argparse
from pathlib import Path

from reportbench.config import load_params
from reportbench.pipeline import cross_stage, setup_logging
from reportbench.stage_errors import exit_on_error

if __name__ == "__main__":
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--release", type=Path, required=True)
    ap.add_argument("--runs", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    with exit_on_error():
        cross_stage(load_params(), args.benchmark, args.release, args.runs, args.out)
