"""`reportbench live init` / `reportbench label init`: create an opt-in DVC pipeline from its template.

Why templates: DVC collects every `dvc.yaml` in a repository for `dvc status`, `dvc checkout`,
`dvc metrics show` and `dvc exp`. A committed opt-in pipeline whose outputs (and lock) exist in nobody's cache
made all of them report changed stages, exit 255 or warn "failed to load some metrics" on a fresh clone. So the
repository ships `live/dvc.template.yaml` (the live DeepScholar release builder) and `label/dvc.template.yaml`
(importance labels for an imported release, needs an LLM judge); each pipeline, its lock, outputs and metrics
exist only once a user runs it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

TEMPLATE = Path("live/dvc.template.yaml")
PIPELINE = Path("live/dvc.yaml")
# opt-in pipelines: command name -> folder holding dvc.template.yaml
OPT_IN = {"live": "the live DeepScholar release builder", "label": "importance labels for an imported release"}


class LiveInitError(ValueError):
    """The live pipeline cannot be created here; the message says why and what to do."""


def init_live_pipeline(root: Path = Path("."), force: bool = False, name: str = "live") -> Path:
    """Write `<name>/dvc.yaml` from its template under `root`; refuse to overwrite a different file unless forced."""
    template, target = root / name / "dvc.template.yaml", root / name / "dvc.yaml"
    if not template.is_file():
        raise LiveInitError(f"{template}: not found; run `reportbench {name} init` from the repository root")
    text = template.read_text()
    if target.is_file() and target.read_text() != text and not force:
        raise LiveInitError(f"{target} exists and differs from {template}; pass --force to overwrite it")
    target.write_text(text)
    return target


NEXT_STEP = {
    "live": "build a release with `dvc exp run {path} -S live.name=<name> -S live.window.start=... "
    "-S live.window.end=...` (docs/live-release.md)",
    "label": "label a release with `dvc exp run {path} -S judge=llm -S judge.model=...` (docs/deepscholar.md)",
}


def _cmd_init(args: argparse.Namespace) -> int:
    try:
        path = init_live_pipeline(Path(args.root), force=args.force, name=args.pipeline)
    except LiveInitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path}; " + NEXT_STEP[args.pipeline].format(path=path))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    for name, what in OPT_IN.items():
        p = sub.add_parser(name, help=f"{what}: its opt-in DVC pipeline")
        p_sub = p.add_subparsers(dest=f"{name}_command", required=True)
        init = p_sub.add_parser("init", help=f"write {name}/dvc.yaml from {name}/dvc.template.yaml (not committed)")
        init.add_argument("--root", default=".", help="repository root (default: the current directory)")
        init.add_argument("--force", action="store_true", help=f"overwrite a {name}/dvc.yaml that differs")
        init.set_defaults(func=_cmd_init, pipeline=name)
