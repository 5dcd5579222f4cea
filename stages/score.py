"""Stage `score@<benchmark>`: judgments -> every system's metrics (per task, summary) and the leaderboard."""

import argparse
from pathlib import Path

from reportbench.pipeline import score_stage, setup_logging
from reportbench.preflight import stage_params
from reportbench.stage_errors import exit_on_error
from reportbench.stage_guard import exit_ok, guard_stage

if __name__ == "__main__":
    guard_stage()  # dies with dvc; SIGTERM/SIGHUP stop its children too (docs/reliability.md)
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--release", type=Path, required=True)
    ap.add_argument("--runs", type=Path, required=True)
    ap.add_argument("--judgments", type=Path, required=True)
    ap.add_argument("--cross", type=Path, default=None)
    ap.add_argument("--scores", type=Path, required=True, help="data/scores/<b>/<R> (per-task parquet per system)")
    ap.add_argument("--metrics", type=Path, required=True, help="metrics/<b>/<R> (summaries, leaderboard)")
    args = ap.parse_args()
    with exit_on_error():
        score_stage(
            stage_params(),
            args.benchmark,
            args.release,
            args.runs,
            args.judgments,
            args.scores,
            args.metrics,
            cross_dir=args.cross,
            reuse=True,  # per-system partials reused by key (partial_reuse; REPORTBENCH_UNIT_REUSE=0: off)
        )
    exit_ok()  # done: exit 0 without the interpreter's teardown (reportbench.stage_guard)
