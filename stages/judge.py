"""Stage `judge@<benchmark>.<system>[.<member>]`: every judge step of the benchmark for one system and one
judge (ensemble member), async inside; records, derived tables and a usage summary.

Exits 3 (records kept, DVC records nothing) while unanswered calls remain or failures exceed
`judge.runtime.max_failure_rate`; dies with `dvc` (stage_guard). See docs/reliability.md."""

import argparse
from pathlib import Path

from reportbench.config import load_params
from reportbench.pipeline import run_judge_stage, setup_logging
from reportbench.stage_errors import exit_on_error
from reportbench.stage_guard import guard_stage

if __name__ == "__main__":
    guard_stage()
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--system", required=True)
    ap.add_argument("--member", default="main")
    ap.add_argument("--release", type=Path, required=True)
    ap.add_argument("--run", type=Path, required=True, help="run directory of the system")
    ap.add_argument("--pages", type=Path, default=None, help="data/pages/<b>/<R> (benchmarks that fetch pages)")
    ap.add_argument("--out", type=Path, required=True, help="judgment records + derived tables (directory)")
    ap.add_argument("--usage", type=Path, required=True, help="usage summary (JSON metric)")
    args = ap.parse_args()
    with exit_on_error():
        run_judge_stage(
            load_params(),
            args.benchmark,
            args.system,
            args.member,
            args.release,
            args.run,
            args.out,
            args.usage,
            pages_dir=args.pages,
            enforce_bounds=True,
        )
