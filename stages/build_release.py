"""Stage `release`: build the configured release (demo or DeepScholar-bench import) in the release format."""

import argparse
from pathlib import Path

from reportbench.config import load_params
from reportbench.pipeline import build_release, setup_logging

if __name__ == "__main__":
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True, help="release directory to write")
    args = ap.parse_args()
    build_release(load_params(), args.out)
