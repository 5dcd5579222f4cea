"""Map a system's output folder to (task_id, path) pairs.

Two layouts are recognised for each child of the folder:
- an integer name (`0/`, `1.md`) is an index into `task_ids` — the DeepScholar-bench baseline layout
  `<system>/<file_id>/...`, where file_id is the row of the task list;
- a task-id name (`2506.02838v1/`, `2506.02838.md`), with or without the arXiv version suffix; old-style ids
  may spell '/' as '_' (`math_0511322`); LiveResearchBench names files `qid_<qid>_report.md`.
Anything else is reported in `warnings` and `unmapped` (path, reason), never silently dropped; the folder
system writes each unmapped file into outcomes.jsonl. A child that is a symlink resolving outside the folder,
or a device/FIFO/socket, is refused (never read). A name-mapped child is mapped even when no adapter
recognises it, so that loading it gives the precise reason (binary, HTML, empty, ...) as that task's outcome.
"""

from __future__ import annotations

import re
from pathlib import Path

from reportbench.reports.base import get_adapter, outside_root
from reportbench.types import strip_arxiv_version

_SIDE_SUFFIXES = (".json", ".csv", ".jsonl", ".txt")  # twins of a `<id>.md` report, not reports themselves


class DiscoveredReports(list[tuple[str, Path]]):
    """(task_id, path) pairs in task order; `warnings` names every child that was not mapped, and why."""

    def __init__(self) -> None:
        super().__init__()
        self.warnings: list[str] = []
        self.unmapped: list[tuple[str, str]] = []  # (path, why it maps to no task)

    def skip(self, child: Path, reason: str) -> None:
        """Record a child that maps to no task (in `warnings` as '<path>: <reason>' too)."""
        self.warnings.append(f"{child}: {reason}")
        self.unmapped.append((str(child), reason))


def _task_lookup(task_ids: list[str]) -> dict[str, str]:
    lookup: dict[str, str] = {}
    for tid in task_ids:
        for alias in {
            tid,
            strip_arxiv_version(tid),
            tid.replace("/", "_"),
            strip_arxiv_version(tid).replace("/", "_"),
            f"qid_{tid}_report",  # LiveResearchBench: qid_<qid>_report.md
            f"qid_{tid}",
        }:
            lookup.setdefault(alias, tid)
    return lookup


def _child_stem(child: Path) -> str:
    if child.is_dir():
        return child.name
    name = child.name
    for suffix in (".md", ".markdown", *_SIDE_SUFFIXES):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return child.stem


def discover_reports(folder: Path | str, task_ids: list[str], fmt: str = "auto") -> DiscoveredReports:
    """(task_id, path) for each report in a system folder; unmapped children go to `.warnings`.

    Recognising the format is left to loading (load_report), which says precisely what is wrong.
    """
    folder = Path(folder)
    found = DiscoveredReports()
    if not folder.is_dir():
        found.warnings.append(f"{folder}: not a folder")
        return found
    lookup = _task_lookup(task_ids)
    if fmt != "auto":
        get_adapter(fmt)  # an unknown format name is a config error, raised before anything is read
    root = folder.resolve()
    try:
        children = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    except OSError as exc:
        found.warnings.append(f"{folder}: cannot list: {exc.strerror or exc}")
        return found
    stems_with_report = {
        _child_stem(p) for p in children if _safe_is_dir(p) or p.suffix.lower() in (".md", ".markdown")
    }
    chosen: dict[str, Path] = {}
    for child in children:
        refused = outside_root(child, root)
        if refused:
            found.skip(child, refused)
            continue
        stem = _child_stem(child)
        if child.is_file() and child.suffix.lower() in _SIDE_SUFFIXES and stem in stems_with_report:
            continue  # `<id>.json` next to `<id>.md`: the adapter reads it as the report's twin
        if re.fullmatch(r"\d+", stem):
            index = int(stem)
            if index >= len(task_ids):
                found.skip(child, f"index {index} is outside the task list ({len(task_ids)} tasks)")
                continue
            task_id = task_ids[index]
        elif stem in lookup or strip_arxiv_version(stem) in lookup:
            task_id = lookup.get(stem) or lookup[strip_arxiv_version(stem)]
            if stem != task_id and strip_arxiv_version(stem) != stem and stem not in lookup:
                found.warnings.append(f"{child}: version differs from task id {task_id}; mapped anyway")
        else:
            found.skip(child, "name is neither a task index nor a task id; not read")
            continue
        if task_id in chosen:
            found.skip(child, f"task {task_id} already mapped to {chosen[task_id].name}; not read")
            continue
        chosen[task_id] = child
    order = {tid: i for i, tid in enumerate(task_ids)}
    found.extend(sorted(chosen.items(), key=lambda item: order.get(item[0], len(order))))
    return found


def _safe_is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False
