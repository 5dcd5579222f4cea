"""Stage `site`: the static scorecard site (every benchmark's leaderboard + the per-sample viewer) -> site/."""

import argparse
from pathlib import Path

from reportbench.config import load_params
from reportbench.pipeline import setup_logging
from reportbench.site.build import DEFAULT_MAX_SAMPLES, build_site
from reportbench.stage_errors import exit_on_error

if __name__ == "__main__":
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=Path("site"))
    ap.add_argument("--max-samples", type=int, default=DEFAULT_MAX_SAMPLES,
                    help="sample pages per (benchmark, system); the rest: `reportbench view`")
    args = ap.parse_args()
    with exit_on_error():
        counts = build_site(load_params(), Path("."), args.out, max_samples=args.max_samples)
        print(f"site: {counts['benchmark_pages']} benchmark pages, {counts['system_pages']} system pages, "
              f"{counts['sample_pages']} sample pages -> {args.out}/index.html")
