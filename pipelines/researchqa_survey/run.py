"""One stage of the live ResearchQA survey builder (its dvc.yaml runs it with the repo root as the cwd).

`python pipelines/researchqa_survey/run.py init [--force]` writes pipelines/researchqa_survey/dvc.yaml from
dvc.template.yaml (the pipeline is not committed, so a fresh clone has no stages whose outputs exist nowhere;
docs/researchqa-builder.md).
"""

import argparse
import sys
from pathlib import Path


def init(force: bool) -> int:
    """The same template mechanism as `reportbench live init` / `label init` (reportbench.live_pipeline)."""
    from reportbench.live_pipeline import LiveInitError, init_live_pipeline

    try:
        path = init_live_pipeline(Path("."), force=force, name="live_researchqa")
    except LiveInitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path}; build with `dvc exp run {path} -S live_researchqa.name=<name> ...`")
    return 0


if __name__ == "__main__":
    from reportbench.survey_builder.stages import STAGES

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("stage", choices=(*STAGES, "init"))
    ap.add_argument("--params", type=Path, default=Path("params.yaml"), help="composed params (root params.yaml)")
    ap.add_argument("--force", action="store_true", help="init: overwrite a differing dvc.yaml of this pipeline")
    args = ap.parse_args()
    if args.stage == "init":
        raise SystemExit(init(args.force))

    from reportbench.config import load_params
    from reportbench.pipeline import setup_logging
    from reportbench.stage_errors import exit_on_error
    from reportbench.survey_builder.records import BuildError
    from reportbench.survey_builder.stages import run_stage

    setup_logging()
    with exit_on_error():
        try:
            run_stage(args.stage, load_params(args.params), Path("."))
        except BuildError as exc:
            print(f"error: live_researchqa {args.stage}: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
