"""Stage `system@<name>`: produce or read one system's reports; one recorded outcome per task."""

import argparse
from pathlib import Path

from reportbench.config import load_params
from reportbench.pipeline import run_system, setup_logging

if __name__ == "__main__":
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--system", required=True)
    ap.add_argument("--release", type=Path, required=True, help="release directory")
    ap.add_argument("--out", type=Path, required=True, help="run directory (reports.jsonl, outcomes.jsonl)")
    args = ap.parse_args()
    run_system(load_params(), args.system, args.release, args.out)
