"""Map a system's output folder to (task_id, path) pairs, by the benchmark's declared naming rules.

Every child lands on a task only through a rule of the benchmark's `TaskNaming` (reports.task_names;
docs/mapping.md): its task id (with the declared decorations, e.g. LRB's `qid_<qid>_report.md`), or a bare
ASCII number read with the benchmark's own numeric convention (DeepScholar: 0-based row; ResearcherBench:
`n` -> `q<n>`; others: not read). Nothing is guessed.

Layouts (`layout`, auto-detected where unambiguous):
- `flat`: one child per task (`<id>.md`, `<id>/`, `<n>.md`, `<n>/`);
- `task_folders`: the DEER authors' `<domain folder>/<n>/<prefix>_<n>.md` (the task folders may also hold
  `query.md` and `core_criteria.md`, which are never read); `prefix` picks one system when several wrote there.

Anything else is reported in `warnings` and `unmapped` (path, reason), never silently dropped; `rows` is the
mapping table (file -> task, the rule that matched) the system stage writes next to outcomes.jsonl. A child
that is a symlink resolving outside the folder, or a device/FIFO/socket, is refused (never read). A name-mapped
child is mapped even when no adapter recognises it, so loading it gives the precise reason as that task's
outcome.
"""

from __future__ import annotations

import fnmatch
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from reportbench.reports.base import get_adapter, outside_root
from reportbench.reports.task_names import ASCII_NUMBER, DEFAULT_NAMING, NameIndex, TaskNaming

_SIDE_SUFFIXES = (".json", ".csv", ".jsonl", ".txt")  # twins of a `<id>.md` report, not reports themselves
# children that are clearly not a report (logs, tables, configs, images, code): listed when unmapped, but an
# unmapped child of any other kind next to a missing task means the names do not map (the stage stops)
NOT_REPORTS = (".csv", ".tsv", ".log", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".lock", ".py", ".sh", ".png",
               ".jpg", ".jpeg", ".gif", ".svg", ".parquet", ".pkl")
TASK_FOLDER_NON_REPORTS = ("query.md", "core_criteria.md")  # DEER's task inputs inside a task folder
LAYOUTS = ("auto", "flat", "task_folders")
RowStatus = Literal["mapped", "unmapped", "refused", "duplicate", "other_system", "ignored", "outside_release"]


@dataclass(frozen=True)
class MappingRow:
    """One line of the mapping table: a file, the task it landed on (or none) and the rule or the reason."""

    file: str
    status: RowStatus
    task_id: str | None = None
    rule: str = ""
    reason: str = ""
    report_like: bool = True  # could this child be a report (a folder, .md/.txt/.json)?

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class DiscoveredReports(list[tuple[str, Path]]):
    """(task_id, path) pairs in task order; `warnings` names every child that was not mapped, and why."""

    def __init__(self) -> None:
        super().__init__()
        self.warnings: list[str] = []
        self.unmapped: list[tuple[str, str]] = []  # (path, why it maps to no task)
        self.rows: list[MappingRow] = []
        self.layout: str = "flat"

    def skip(self, child: Path, reason: str, status: RowStatus = "unmapped") -> None:
        """Record a child that maps to no task (in `warnings` as '<path>: <reason>' too). A report of a task the
        full release has but this (subset) release does not is only a row of the mapping table: ignored, never
        an unmapped outcome or a warning (docs/scale.md, "A quick subset")."""
        if status == "outside_release":
            self.rows.append(MappingRow(str(child), status, reason=reason, report_like=_report_like(child)))
            return
        self.warnings.append(f"{child}: {reason}")
        self.unmapped.append((str(child), reason))
        self.rows.append(MappingRow(str(child), status, reason=reason, report_like=_report_like(child)))

    def name_unmapped(self) -> list[MappingRow]:
        """Report-like children whose *name* maps to no task (not refused files, not duplicates)."""
        return [r for r in self.rows if r.status == "unmapped" and r.report_like]


def _report_like(child: Path) -> bool:
    return _safe_is_dir(child) or child.suffix.lower() not in NOT_REPORTS


def _child_stem(child: Path) -> str:
    if _safe_is_dir(child):
        return child.name
    name = child.name
    for suffix in (".md", ".markdown", *_SIDE_SUFFIXES):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return child.stem


def discover_reports(
    folder: Path | str,
    task_ids: list[str],
    fmt: str = "auto",
    *,
    naming: TaskNaming = DEFAULT_NAMING,
    layout: str = "auto",
    prefix: str | None = None,
    ignore: tuple[str, ...] = (),
    full_task_ids: list[str] | None = None,
) -> DiscoveredReports:
    """(task_id, path) for each report in a system folder; unmapped children go to `.warnings`.
    `full_task_ids`: the full release's ids when the release is a subset of it (NameIndex).

    Recognising the format is left to loading (load_report), which says precisely what is wrong.
    """
    folder = Path(folder)
    found = DiscoveredReports()
    if not folder.is_dir():
        found.warnings.append(f"{folder}: not a folder")
        return found
    if fmt != "auto":
        get_adapter(fmt)  # an unknown format name is a config error, raised before anything is read
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; known: {', '.join(LAYOUTS)}")
    index = NameIndex(task_ids, naming, full_task_ids)
    children = _children(folder, found, ignore)
    if children is None:
        return found
    chosen_layout = layout if layout != "auto" else _detect_layout(children, index)
    found.layout = chosen_layout
    chosen: dict[str, Path] = {}
    root = folder.resolve()
    if chosen_layout == "task_folders":
        _task_folders(children, index, root, found, chosen, prefix, ignore)
    else:
        _flat(children, index, root, found, chosen)
    order = {tid: i for i, tid in enumerate(task_ids)}
    found.extend(sorted(chosen.items(), key=lambda item: order.get(item[0], len(order))))
    return found


def _children(folder: Path, found: DiscoveredReports, ignore: tuple[str, ...]) -> list[Path] | None:
    try:
        return sorted(
            p
            for p in folder.iterdir()
            if not p.name.startswith(".") and not any(fnmatch.fnmatch(p.name, g) for g in ignore)
        )
    except OSError as exc:
        found.warnings.append(f"{folder}: cannot list: {exc.strerror or exc}")
        return None


def _detect_layout(children: list[Path], index: NameIndex) -> str:
    """`task_folders` only when unambiguous: the benchmark has group folders, no child maps by name, and
    some child folder holds numbered task folders or files."""
    if index.naming.group_number is None:
        return "flat"
    if any(index.match(_child_stem(c)).task_id for c in children):
        return "flat"
    for c in children:
        if _safe_is_dir(c) and not c.is_symlink():
            try:
                if any(ASCII_NUMBER.fullmatch(_child_stem(g)) for g in c.iterdir()):
                    return "task_folders"
            except OSError:
                continue
    return "flat"


def _claim(found: DiscoveredReports, chosen: dict[str, Path], child: Path, task_id: str, rule: str) -> None:
    if task_id in chosen:
        found.skip(child, f"task {task_id} already mapped to {chosen[task_id].name}; not read", "duplicate")
        return
    chosen[task_id] = child
    found.rows.append(MappingRow(str(child), "mapped", task_id, rule, report_like=_report_like(child)))


def _flat(
    children: list[Path], index: NameIndex, root: Path, found: DiscoveredReports, chosen: dict[str, Path]
) -> None:
    stems_with_report = {
        _child_stem(p) for p in children if _safe_is_dir(p) or p.suffix.lower() in (".md", ".markdown")
    }
    for child in children:
        refused = outside_root(child, root)
        if refused:
            found.skip(child, refused, "refused")
            continue
        stem = _child_stem(child)
        if child.is_file() and child.suffix.lower() in _SIDE_SUFFIXES and stem in stems_with_report:
            continue  # `<id>.json` next to `<id>.md`: the adapter reads it as the report's twin
        m = index.match(stem)
        if m.task_id is None:
            found.skip(child, m.note, "outside_release" if m.outside_release else "unmapped")
            continue
        if m.note:
            found.warnings.append(f"{child}: {m.note} {m.task_id}; mapped anyway")
        _claim(found, chosen, child, m.task_id, m.rule)


def _task_folders(
    children: list[Path],
    index: NameIndex,
    root: Path,
    found: DiscoveredReports,
    chosen: dict[str, Path],
    prefix: str | None,
    ignore: tuple[str, ...],
) -> None:
    """DEER's `<domain folder>/<n>/<prefix>_<n>.md` (also `<domain folder>/<n>.md`)."""
    for group in children:
        refused = outside_root(group, root)
        if refused:
            found.skip(group, refused, "refused")
            continue
        if not _safe_is_dir(group):
            found.skip(group, "not a domain folder of the task-folder layout; not read")
            continue
        for child in _children(group, found, ignore) or []:
            refused = outside_root(child, root)
            if refused:
                found.skip(child, refused, "refused")
                continue
            stem = _child_stem(child)
            if stem == "temp":
                found.skip(child, "the authors' scratch folder; not read", "ignored")
                continue
            if not ASCII_NUMBER.fullmatch(stem):
                found.skip(child, "not a numbered task folder; not read")
                continue
            m = index.match_group(group.name, int(stem))
            if m.task_id is None:
                found.skip(child, m.note, "outside_release" if m.outside_release else "unmapped")
                continue
            report = _report_in_task_folder(child, int(stem), prefix, found) if _safe_is_dir(child) else child
            if report is not None:
                _claim(found, chosen, report, m.task_id, f"{m.rule} ({group.name}/{stem})")


def _report_in_task_folder(tdir: Path, n: int, prefix: str | None, found: DiscoveredReports) -> Path | None:
    """The one system report of a DEER task folder: `<prefix>_<n>.md`, or the only `*_<n>.md` there."""
    try:
        files = sorted(p for p in tdir.iterdir() if p.is_file() and p.suffix.lower() in (".md", ".markdown"))
    except OSError as exc:
        found.skip(tdir, f"cannot list: {exc.strerror or exc}")
        return None
    candidates = [p for p in files if p.name not in TASK_FOLDER_NON_REPORTS and p.stem.endswith(f"_{n}")]
    if prefix is not None:
        candidates = [p for p in candidates if p.stem == f"{prefix}_{n}"]
    for p in files:
        if p.name not in TASK_FOLDER_NON_REPORTS and p not in candidates:
            found.skip(p, f"not this system's report (<prefix>_{n}.md, prefix {prefix!r}); not read", "other_system")
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        found.warnings.append(f"{tdir}: no <prefix>_{n}.md report in the task folder")
        return None
    names = ", ".join(p.name for p in candidates)
    for p in candidates:
        found.skip(p, f"several systems' reports in one task folder ({names}); set the folder system's prefix")
    return None


def _safe_is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False
