"""Stage `leaderboard`: all systems' metrics, geometric mean and paired t-tests (JSON, markdown, HTML, CSV)."""

import argparse
from pathlib import Path

from reportbench.config import load_params
from reportbench.pipeline import leaderboard_stage, setup_logging

if __name__ == "__main__":
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--release", type=Path, required=True)
    ap.add_argument("--scores", type=Path, required=True, help="data/scores/<release>")
    ap.add_argument("--metrics-dir", type=Path, required=True, help="folder of <system>.json")
    ap.add_argument("--out-dir", type=Path, required=True)
    args = ap.parse_args()
    leaderboard_stage(load_params(), args.release, args.scores, args.metrics_dir, args.out_dir)
