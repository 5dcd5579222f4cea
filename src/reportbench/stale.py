"""Remove outputs of systems (and judge members) that are no longer configured before a stage reads a folder.

Why: the fetch, cross and score stages declare whole folders as DVC dependencies (`data/runs/<b>/<R>`,
`data/judgments/<b>/<R>`): DVC cannot interpolate a list of per-system paths into `deps`. A folder left by a
system that was switched off (`-S deepscholar/systems=...`), or by a system stage that failed, is an output of no
stage; inside those folders it changed their hashes, so `dvc repro -f` rewrote the committed `dvc.lock` and
`dvc status` reported changes. The stages read systems from the plan (never by globbing), so such folders never
reached a leaderboard, but they did reach the lock. Pruning them before the stage runs (DVC hashes the
dependencies again after the command, when it writes the lock) keeps both clean. Only direct children whose
names are not in the plan are removed, each with a log line; symlinks are unlinked, never followed.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger("reportbench")


def planned(params: Mapping[str, Any], benchmark: str) -> tuple[list[str], list[str]]:
    """(systems, judge members) of the benchmark in `plan.benchmarks.<b>`; empty when the plan lacks it."""
    entry = ((params.get("plan") or {}).get("benchmarks") or {}).get(benchmark) or {}
    return list(entry.get("systems") or []), list(entry.get("members") or [])


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


def prune_children(folder: Path | None, keep: Collection[str], what: str) -> list[Path]:
    """Remove the entries of `folder` whose names are not in `keep`; returns what was removed."""
    if folder is None or not Path(folder).is_dir() or not keep:
        return []  # an empty plan never wipes a folder
    removed = []
    for child in sorted(Path(folder).iterdir()):
        if child.name not in keep and not child.name.startswith("."):
            _remove(child)
            removed.append(child)
            log.warning("removed %s: output of %s %r, which is no longer configured", child, what, child.name)
    return removed


def prune_stale_outputs(
    params: Mapping[str, Any],
    benchmark: str,
    runs_dir: Path | None = None,
    judgments_dir: Path | None = None,
    usage_dir: Path | None = None,
) -> list[Path]:
    """Prune unconfigured systems from `runs_dir` and `judgments_dir` (and unconfigured members inside each
    system's judgments), and their judge-usage files `<system>.<member>.json` from `usage_dir`."""
    systems, members = planned(params, benchmark)
    if not systems:
        return []
    removed = prune_children(runs_dir, systems, "system")
    removed += prune_children(judgments_dir, systems, "system")
    if judgments_dir is not None and members:
        for s in systems:
            removed += prune_children(Path(judgments_dir) / s, members, "judge member")
    if usage_dir is not None and members and Path(usage_dir).is_dir():
        for f in sorted(Path(usage_dir).glob("*.*.json")):  # judge stages write <system>.<member>.json
            system, _, member = f.name[: -len(".json")].partition(".")
            if system not in systems or member not in members:
                f.unlink()
                removed.append(f)
                log.warning("removed %s: judge usage of %s/%s, which is no longer configured", f, system, member)
    return removed
