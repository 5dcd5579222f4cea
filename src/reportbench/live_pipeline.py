"""`reportbench live init` / `reportbench label init`: create an opt-in DVC pipeline from its template.

Why templates: DVC collects every `dvc.yaml` in a repository for `dvc status`, `dvc checkout`,
`dvc metrics show` and `dvc exp`. A committed opt-in pipeline whose outputs (and lock) exist in nobody's cache
made all of them report changed stages, exit 255 or warn "failed to load some metrics" on a fresh clone. So the
repository ships one folder per opt-in pipeline under `pipelines/` — `pipelines/live/` (the live DeepScholar
release builder), `pipelines/researchqa_survey/` (the survey-mined ResearchQA builder) and `pipelines/label/`
(importance labels for an imported release, needs an LLM judge) — each with its `dvc.template.yaml`; each
pipeline, its lock, outputs and metrics exist only once a user runs it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PIPELINES = Path("pipelines")
# opt-in pipeline name -> its folder under pipelines/ (the survey builder keeps its params group's name)
FOLDERS = {"live": "live", "label": "label", "live_researchqa": "researchqa_survey"}
# opt-in pipelines with a `reportbench <name> init` command
OPT_IN = {"live": "the live DeepScholar release builder", "label": "importance labels for an imported release"}
# opt-in pipeline -> the config group it reads from params.yaml. The default composition leaves these groups out
# (`live: null` in conf/config.yaml): DVC parses params.yaml once per stage of every `dvc repro`, and they were a
# fifth of it. `init` selects the group's `default` option (remembered, so `dvc exp run` composes it too).
CONFIG_GROUP = {"live": "live", "live_researchqa": "live_researchqa"}


class LiveInitError(ValueError):
    """The live pipeline cannot be created here; the message says why and what to do."""


def pipeline_dir(name: str, root: Path = Path(".")) -> Path:
    """The folder of opt-in pipeline `name` under `root` (`pipelines/<folder>`)."""
    if name not in FOLDERS:
        raise LiveInitError(f"unknown opt-in pipeline {name!r}; known: {', '.join(sorted(FOLDERS))}")
    return root / PIPELINES / FOLDERS[name]


def legacy_pipeline(name: str, root: Path = Path(".")) -> Path | None:
    """A `<name>/dvc.yaml` written before the templates moved under pipelines/ (its stages call scripts that are
    gone), or None."""
    old = root / name / "dvc.yaml"
    return old if old.is_file() else None


def legacy_message(name: str, old: Path, new: Path) -> str:
    """What to do with a pre-move pipeline: its outputs stay valid where they are, only the dvc.yaml moved."""
    return (
        f"{old} predates the move of opt-in pipelines to {new.parent}/: its stages call scripts that no longer "
        f"exist there. Its outputs ({name}/work, {name}/releases, metrics/{name}) stay where they are and the new "
        f"pipeline writes the same paths; delete {old} (and its dvc.lock) and use {new}"
    )


def init_live_pipeline(root: Path = Path("."), force: bool = False, name: str = "live") -> Path:
    """Write `pipelines/<folder>/dvc.yaml` from its template under `root`; refuse to overwrite a different file
    unless forced. A pre-move `<name>/dvc.yaml` is reported on stderr (it no longer runs)."""
    folder = pipeline_dir(name, root)
    template, target = folder / "dvc.template.yaml", folder / "dvc.yaml"
    if not template.is_file():
        raise LiveInitError(f"{template}: not found; run `reportbench {name} init` from the repository root")
    text = template.read_text()
    if target.is_file() and target.read_text() != text and not force:
        raise LiveInitError(f"{target} exists and differs from {template}; pass --force to overwrite it")
    if name == "label":
        freeze_label_release(root, folder)
    target.write_text(text)
    old = legacy_pipeline(name, root)
    if old is not None:
        print(f"note: {legacy_message(name, old, target)}", file=sys.stderr)
    selected = select_config_group(name, root)
    if selected:
        print(
            f"note: selected {selected} for this pipeline and recomposed params.yaml (remembered; "
            "`reportbench compose --reset` forgets it)",
            file=sys.stderr,
        )
    return target


LABEL_RELEASE_FILE = "release.yaml"


def freeze_label_release(root: Path, folder: Path) -> Path:
    """Write `<folder>/release.yaml`: the DeepScholar release composed in `root/params.yaml` now, as the label
    stage's own input (`label_release`). Frozen, not read from params.yaml when the stage runs: the documented next
    step scores the labelled copy under the same release name, and a label stage that read the root pipeline's
    release of that name made a dependency cycle DVC refuses (release@deepscholar would read this stage's output)."""
    import yaml  # lazy: only `label init` writes YAML

    params_file = root / "params.yaml"
    params = yaml.safe_load(params_file.read_text(encoding="utf-8")) if params_file.is_file() else None
    release = (((params or {}).get("benchmarks") or {}).get("deepscholar") or {}).get("release")
    if not isinstance(release, dict) or not release.get("name") or not release.get("source"):
        raise LiveInitError(
            f"{params_file}: no benchmarks.deepscholar.release (name and source) to label; compose the release "
            "first, e.g. `reportbench compose deepscholar/release=deepscholar`, then `reportbench label init`"
        )
    out = folder / LABEL_RELEASE_FILE
    head = ("# Written by `reportbench label init` (do not edit; run it again to label another release):\n"
            "# the DeepScholar release composed then; pipelines/label/dvc.yaml builds it from its source, labels it.\n")
    out.write_text(head + yaml.safe_dump({"label_release": release}, sort_keys=False), encoding="utf-8")
    return out


def select_config_group(name: str, root: Path = Path(".")) -> str | None:
    """Remember `<group>=default` for opt-in pipeline `name` and recompose `root/params.yaml`, unless an option of
    its group is already remembered (a user's `live=monthly` stays). Returns the override added, or None (no
    group, already selected, or no conf/ under `root` to compose)."""
    group = CONFIG_GROUP.get(name)
    conf_dir = root / "conf"
    if group is None or not (conf_dir / "config.yaml").is_file():
        return None
    from reportbench import config  # lazy: +30 ms to import (python -X importtime); only `init` composes

    remembered = config.remembered_overrides(conf_dir)
    if config.remembers_key(remembered, group):
        return None
    overrides = config.merge_overrides(remembered, [f"{group}=default"])
    applied = config.split_applicable(overrides, [f"{group}=default"], conf_dir)[0]  # as `compose` applies them
    config.compose_params(applied, root / config.PARAMS_FILE, conf_dir)
    config.save_overrides(overrides, conf_dir)
    return f"{group}=default"


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
        folder = PIPELINES / FOLDERS[name]
        p = sub.add_parser(name, help=f"{what}: its opt-in DVC pipeline")
        p_sub = p.add_subparsers(dest=f"{name}_command", required=True)
        init = p_sub.add_parser("init", help=f"write {folder}/dvc.yaml from {folder}/dvc.template.yaml (not committed)")
        init.add_argument("--root", default=".", help="repository root (default: the current directory)")
        init.add_argument("--force", action="store_true", help=f"overwrite a {folder}/dvc.yaml that differs")
        init.set_defaults(func=_cmd_init, pipeline=name)
