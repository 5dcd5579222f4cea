"""Stage `agreement@<benchmark>`: judge agreement, self-consistency and human labels -> the judge card."""

import argparse
from pathlib import Path

from reportbench.pipeline import setup_logging
from reportbench.preflight import stage_params
from reportbench.stage_errors import exit_on_error
from reportbench.stage_guard import exit_ok, guard_stage

if __name__ == "__main__":
    guard_stage()  # dies with dvc; SIGTERM/SIGHUP stop its children too (docs/reliability.md)
    setup_logging()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--release", type=Path, required=True)
    ap.add_argument("--runs", type=Path, required=True)
    ap.add_argument("--judgments", type=Path, required=True)
    ap.add_argument("--pages", type=Path, default=None, help="data/pages/<b>/<R> when the benchmark fetches pages")
    ap.add_argument("--cross", type=Path, default=None, help="data/cross/<b>/<R> when the benchmark has a cross stage")
    ap.add_argument("--out", type=Path, required=True, help="data/agreement/<b>/<R> (every record judged here)")
    ap.add_argument("--metrics", type=Path, required=True, help="metrics/<b>/<R> (judge_card.json/.md)")
    args = ap.parse_args()
    from reportbench.agreement.stage import run_agreement_stage

    with exit_on_error():
        from reportbench.stale import prune_stale_outputs  # folders of systems no longer configured (docs/dvc.md)

        prune_stale_outputs(stage_params(), args.benchmark, runs_dir=args.runs, judgments_dir=args.judgments)
        run_agreement_stage(
            stage_params(),
            args.benchmark,
            args.release,
            args.runs,
            args.judgments,
            args.out,
            args.metrics,
            pages_dir=args.pages,
            cross_dir=args.cross,
        )
    exit_ok()  # done: exit 0 without the interpreter's teardown (reportbench.stage_guard)
