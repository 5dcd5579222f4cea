"""Stage `label_importance` (opt-in, pipelines/label/dvc.yaml): importance labels for an imported DeepScholar release.

Judges every exemplar reference of the release at --release with the root `judge` group (paper Fig. 4) and
writes a labelled copy at --out whose card names the judge. Needs an LLM judge and its key, e.g.
    reportbench label init && dvc exp run pipelines/label/dvc.yaml -S judge=llm -S judge.model=openai/gpt-4o
then score with it: -S deepscholar/release=path -S benchmarks.deepscholar.release.source=<out dir>.
Library code: reportbench.protocols.deepscholar.labelling (docs/deepscholar.md, "Importance labels").
"""

import argparse
import json
from pathlib import Path

from reportbench.config import load_params
from reportbench.pipeline import setup_logging
from reportbench.stage_errors import exit_on_error
from reportbench.stage_guard import guard_stage

if __name__ == "__main__":
    guard_stage()  # dies with dvc; SIGTERM/SIGHUP stop its children too (docs/reliability.md)
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    given = ap.add_mutually_exclusive_group(required=True)
    given.add_argument("--release", type=Path, help="data/releases/deepscholar/<R> (a built release)")
    given.add_argument(
        "--release-config", type=Path,
        help="pipelines/label/release.yaml (`label init`): the release's config, built here from its source",
    )
    ap.add_argument("--out", type=Path, required=True, help="where the labelled release is written")
    ap.add_argument(
        "--allow-offline-judge", action="store_true", help="accept the offline lexical stand-in (tests only)"
    )
    args = ap.parse_args()
    with exit_on_error():
        from reportbench.protocols.deepscholar.labelling import run_label_importance

        release = None
        if args.release_config is not None:
            from reportbench.pipeline import configured_release
            from reportbench.yamlio import safe_load

            frozen = safe_load(args.release_config.read_text(encoding="utf-8"))["label_release"]
            release = configured_release("deepscholar", frozen)
        summary = run_label_importance(
            load_params(), args.release, args.out, allow_offline=args.allow_offline_judge, release=release
        )
        print(json.dumps({k: v for k, v in summary.items() if k != "dropped"}, sort_keys=True))
