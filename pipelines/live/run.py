"""Run one stage of the live release builder (pipelines/live/dvc.yaml calls this with the repo root as cwd)."""

import argparse
from pathlib import Path

from reportbench.config import load_params
from reportbench.live_builder.live import STAGES, run_stage
from reportbench.pipeline import setup_logging
from reportbench.stage_guard import guard_stage

if __name__ == "__main__":
    guard_stage()  # dies with dvc; SIGTERM/SIGHUP stop its children too (docs/reliability.md)
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("stage", choices=STAGES)
    ap.add_argument("--params", type=Path, default=Path("params.yaml"), help="composed params (root params.yaml)")
    args = ap.parse_args()
    run_stage(args.stage, load_params(args.params), Path("."))
