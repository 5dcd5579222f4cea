"""Stage `judge_<task>@<system>`: judge every item of one judge task for one system (async inside)."""

import argparse
from pathlib import Path

from reportbench.config import load_params
from reportbench.pipeline import JUDGE_TASKS, run_judge_stage, setup_logging

if __name__ == "__main__":
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--task", required=True, choices=JUDGE_TASKS)
    ap.add_argument("--system", required=True)
    ap.add_argument("--release", type=Path, required=True)
    ap.add_argument("--reports", type=Path, required=True, help="run directory of the system")
    ap.add_argument("--out", type=Path, required=True, help="judgment records (parquet)")
    ap.add_argument("--usage", type=Path, required=True, help="usage summary (JSON metric)")
    args = ap.parse_args()
    run_judge_stage(load_params(), args.task, args.system, args.release, args.reports, args.out, args.usage)
