"""Stage `score@<system>`: judgments -> the seven DeepScholar-bench metrics (per task and per system)."""

import argparse
from pathlib import Path

from reportbench.config import load_params
from reportbench.pipeline import score_stage, setup_logging

if __name__ == "__main__":
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--system", required=True)
    ap.add_argument("--release", type=Path, required=True)
    ap.add_argument("--reports", type=Path, required=True)
    ap.add_argument("--judgments", type=Path, required=True, help="data/judgments/<release>")
    ap.add_argument("--citation-counts", type=Path, required=True)
    ap.add_argument("--per-task", type=Path, required=True, help="per-task scores (parquet)")
    ap.add_argument("--out", type=Path, required=True, help="system metrics JSON")
    args = ap.parse_args()
    score_stage(
        load_params(),
        args.system,
        args.release,
        args.reports,
        args.judgments,
        args.citation_counts,
        args.per_task,
        args.out,
    )
