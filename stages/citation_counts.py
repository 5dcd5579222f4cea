"""Stage `citation_counts@<system>`: OpenAlex citation counts for Document Importance (offline: cache only)."""

import argparse
from pathlib import Path

from reportbench.config import load_params
from reportbench.pipeline import citation_counts, setup_logging

if __name__ == "__main__":
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--release", type=Path, required=True)
    ap.add_argument("--reports", type=Path, required=True, help="run directory of the system")
    ap.add_argument("--out", type=Path, required=True, help="counts parquet")
    args = ap.parse_args()
    citation_counts(load_params(), args.release, args.reports, args.out)
