"""`reportbench live init [live|researchqa|label]`: create an opt-in DVC pipeline (`<dir>/dvc.yaml`) from its template.

Opt-in pipelines: `live` (DeepScholar live release builder), `researchqa` (survey-mined ResearchQA builder,
`live_researchqa/`), `label` (importance labels for an imported DeepScholar release, `label/`).

Why a template: DVC collects every `dvc.yaml` in a repository for `dvc status`, `dvc checkout`,
`dvc metrics show` and `dvc exp`. A committed live pipeline whose outputs (and lock) exist in nobody's cache made
all of them report six changed stages, exit 255 or warn "failed to load some metrics" on a fresh clone. So the
repository ships `live/dvc.template.yaml`, and the live pipeline, its lock, outputs and metrics exist only once a
user builds a live release.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

TEMPLATE = Path("live/dvc.template.yaml")
PIPELINE = Path("live/dvc.yaml")
# pipeline name -> its folder (each holds a committed dvc.template.yaml and, once initialised, an uncommitted dvc.yaml)
PIPELINE_DIRS = {"live": Path("live"), "researchqa": Path("live_researchqa"), "label": Path("label")}


class LiveInitError(ValueError):
    """The live pipeline cannot be created here; the message says why and what to do."""


def init_live_pipeline(root: Path = Path("."), force: bool = False, pipeline: str = "live") -> Path:
    """Write `<dir>/dvc.yaml` from the template under `root`; refuse to overwrite a different file unless forced."""
    if pipeline not in PIPELINE_DIRS:
        raise LiveInitError(f"unknown pipeline {pipeline!r}; choose one of {', '.join(PIPELINE_DIRS)}")
    folder = PIPELINE_DIRS[pipeline]
    template, target = root / folder / TEMPLATE.name, root / folder / PIPELINE.name
    if not template.is_file():
        raise LiveInitError(f"{template}: not found; run `reportbench live init` from the repository root")
    text = template.read_text()
    if target.is_file() and target.read_text() != text and not force:
        raise LiveInitError(f"{target} exists and differs from {template}; pass --force to overwrite it")
    target.write_text(text)
    return target


def _cmd_init(args: argparse.Namespace) -> int:
    try:
        path = init_live_pipeline(Path(args.root), force=args.force, pipeline=args.pipeline)
    except LiveInitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"wrote {path}; run it with `dvc exp run {path} -S ...` (the header of {path} gives the overrides; "
        "docs/live-release.md, docs/researchqa-builder.md, docs/deepscholar.md)"
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("live", help="the live DeepScholar release builder's DVC pipeline")
    live_sub = p.add_subparsers(dest="live_command", required=True)
    init = live_sub.add_parser("init", help="write <dir>/dvc.yaml from <dir>/dvc.template.yaml (not committed)")
    init.add_argument(
        "pipeline", nargs="?", default="live", choices=sorted(PIPELINE_DIRS),
        help="live (DeepScholar live release), researchqa (survey-mined ResearchQA), label (importance labels)",
    )
    init.add_argument("--root", default=".", help="repository root (default: the current directory)")
    init.add_argument("--force", action="store_true", help="overwrite a live/dvc.yaml that differs")
    init.set_defaults(func=_cmd_init)
