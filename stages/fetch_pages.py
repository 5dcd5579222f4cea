"""Stage `fetch@<benchmark>`: the pages every system of the benchmark cites, fetched once (offline: snapshots)."""

import argparse
from pathlib import Path

from reportbench.pipeline import fetch_stage, setup_logging
from reportbench.preflight import stage_params
from reportbench.stage_errors import exit_on_error
from reportbench.stage_guard import guard_stage

if __name__ == "__main__":
    guard_stage()  # dies with dvc; SIGTERM/SIGHUP stop its children too (docs/reliability.md)
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--release", type=Path, required=True)
    ap.add_argument("--runs", type=Path, required=True, help="data/runs/<b>/<R>")
    ap.add_argument("--out", type=Path, required=True, help="page snapshot table (parquet)")
    args = ap.parse_args()
    with exit_on_error():
        fetch_stage(stage_params(credentials=True), args.benchmark, args.runs, args.release, args.out)
