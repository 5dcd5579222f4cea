"""Write DVC's offline `plots.html_template` (.dvc/config): vega, vega-lite and vega-embed inlined, no CDN."""

import argparse
from pathlib import Path

from reportbench.dvc_metrics import write_plots_template
from reportbench.stage_errors import exit_on_error

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    with exit_on_error():
        print(f"wrote {write_plots_template(args.out)}")
