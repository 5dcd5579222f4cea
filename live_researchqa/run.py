"""One stage of the live ResearchQA survey builder (live_researchqa/dvc.yaml runs it with the repo root as cwd)."""

import argparse
import sys
from pathlib import Path

from reportbench.config import load_params
from reportbench.pipeline import setup_logging
from reportbench.stage_errors import exit_on_error
from reportbench.survey_builder.records import BuildError
from reportbench.survey_builder.stages import STAGES, run_stage

if __name__ == "__main__":
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("stage", choices=STAGES)
    ap.add_argument("--params", type=Path, default=Path("params.yaml"), help="composed params (root params.yaml)")
    args = ap.parse_args()
    with exit_on_error():
        try:
            run_stage(args.stage, load_params(args.params), Path("."))
        except BuildError as exc:
            print(f"error: live_researchqa {args.stage}: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
