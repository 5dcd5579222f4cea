"""Stage `release@<benchmark>`: import or build the benchmark's configured release (data/releases/<b>/<R>/)."""

import argparse
from pathlib import Path

from reportbench.pipeline import build_release, setup_logging
from reportbench.preflight import stage_params
from reportbench.stage_errors import exit_on_error
from reportbench.stage_guard import guard_stage

if __name__ == "__main__":
    guard_stage()  # dies with dvc; SIGTERM/SIGHUP stop its children too (docs/reliability.md)
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    with exit_on_error():
        build_release(stage_params(credentials=True), args.benchmark, args.out)
