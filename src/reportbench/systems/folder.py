"""`kind: folder` — a folder of existing reports in any supported adapter format.

The folder is untrusted input, so:
- every file read is confined to the folder (`reports.base.confined_to`): a symlink to `/etc/passwd` or to
  another user's run is refused, as are devices, FIFOs and sockets;
- each task's report is loaded in isolation: whatever goes wrong (an adapter bug, a malformed JSON, binary
  bytes) becomes that task's `parse_error` with the file and the reason, and the next task is read;
- an empty report (empty file, whitespace, an empty folder, no body text) is `missing`, scored as the
  benchmark scores a missing report, never as an ok report;
- every child that maps to no task is written to outcomes.jsonl as an `unmapped` row naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reportbench.bounds import ReportLimits, report_limits
from reportbench.systems import SystemError_, TaskOutcome, register_kind
from reportbench.systems.common import isolated_load
from reportbench.types import Report, Task


@register_kind("folder")
def run_folder_system(
    name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path
) -> tuple[list[Report], list[TaskOutcome]]:
    from reportbench.reports.base import confined_to
    from reportbench.reports.discover import discover_reports

    folder = spec.get("path")
    if not folder or not Path(folder).is_dir():
        raise SystemError_(f"systems.{name}.path: {folder!r} is not a folder")
    fmt = spec.get("format") or "auto"
    task_ids = [t.task_id for t in tasks]
    try:
        discovered = discover_reports(Path(folder), task_ids, fmt=fmt)
    except ValueError as exc:  # an unknown format name
        raise SystemError_(f"systems.{name}.format: {exc}") from exc
    found = dict(discovered)
    reports: list[Report] = []
    outcomes: list[TaskOutcome] = []
    attributed: set[str] = set()  # refused children reported as their task's outcome (not again as unmapped)
    try:
        limits = ReportLimits.from_spec(spec, name)
    except ValueError as exc:
        raise SystemError_(str(exc)) from exc
    with confined_to(Path(folder)), report_limits(limits, name):
        for task_id in task_ids:
            path = found.get(task_id)
            if path is None:
                refused = _refused_for(task_id, discovered.unmapped)
                if refused is not None:  # e.g. a FIFO or a hard link named after the task: say what it is
                    attributed.add(refused[0])
                    outcomes.append(
                        TaskOutcome(task_id=task_id, status="parse_error", reason=refused[1], path=refused[0])
                    )
                    continue
                outcomes.append(TaskOutcome(task_id=task_id, status="missing", reason=f"no report in {folder}"))
                continue
            report, outcome = isolated_load(path, fmt=fmt, task_id=task_id, system=name)
            if report is not None:
                reports.append(report)
            outcomes.append(outcome)
    outcomes.extend(
        TaskOutcome(task_id="", status="unmapped", path=path, reason=reason)
        for path, reason in discovered.unmapped
        if path not in attributed
    )
    return reports, outcomes


def _refused_for(task_id: str, unmapped: list[tuple[str, str]]) -> tuple[str, str] | None:
    """(path, reason) of a special file or hard link named after `task_id` (`<task_id>.md`), if any; a symlink
    out of the folder stays an unmapped row (the task is missing: nothing of it is in the folder)."""
    for path, reason in unmapped:
        name = Path(path).name
        if "not a regular file or folder" in reason or reason.startswith("hard link"):
            if name == task_id or Path(name).stem == task_id:
                return str(path), f"{path}: {reason}"
    return None
