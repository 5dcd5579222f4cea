"""Stage `system@<benchmark>.<system>`: one system's reports for every task, and one outcome per task."""

import argparse
from pathlib import Path

from reportbench.pipeline import run_system, setup_logging
from reportbench.preflight import stage_params
from reportbench.stage_errors import exit_on_error
from reportbench.stage_guard import guard_stage

if __name__ == "__main__":
    guard_stage()  # dies with dvc; SIGTERM/SIGHUP stop its children too (docs/reliability.md)
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--system", required=True)
    ap.add_argument("--release", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    with exit_on_error():
        run_system(stage_params(credentials=True), args.benchmark, args.system, args.release, args.out)
