"""Stage `judge@<benchmark>`: every judge step of the benchmark for every (system, judge member) of the plan,
async inside each step; records, derived tables and a usage summary per (system, member).

Exits 3 (records kept, DVC records nothing) while unanswered calls remain or failures exceed
`judge.runtime.max_failure_rate` in any unit; dies with `dvc` (stage_guard). See docs/reliability.md."""

import argparse
from pathlib import Path

from reportbench.pipeline import run_benchmark_judge_stage, setup_logging
from reportbench.preflight import stage_params
from reportbench.stage_errors import exit_on_error
from reportbench.stage_guard import exit_ok, guard_stage

if __name__ == "__main__":
    guard_stage()
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--release", type=Path, required=True)
    ap.add_argument("--runs", type=Path, required=True, help="data/runs/<b>/<R>: one folder per system")
    ap.add_argument("--pages", type=Path, default=None, help="data/pages/<b>/<R> (benchmarks that fetch pages)")
    ap.add_argument("--out", type=Path, required=True, help="judgment records: <out>/<system>/<member>/")
    ap.add_argument("--usage", type=Path, required=True, help="usage summaries: <usage>/<system>.<member>.json")
    args = ap.parse_args()
    with exit_on_error():
        run_benchmark_judge_stage(
            stage_params(), args.benchmark, args.release, args.runs, args.out, args.usage, pages_dir=args.pages
        )
    exit_ok()  # done: exit 0 without the interpreter's teardown (reportbench.stage_guard)
