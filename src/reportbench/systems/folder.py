"""`kind: folder` — a folder of existing reports in any supported adapter format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reportbench.systems import SystemError_, TaskOutcome, register_kind
from reportbench.types import Report, Task


@register_kind("folder")
def run_folder_system(
    name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path
) -> tuple[list[Report], list[TaskOutcome]]:
    from reportbench.reports.base import ReportParseError, load_report
    from reportbench.reports.discover import discover_reports

    folder = spec.get("path")
    if not folder or not Path(folder).is_dir():
        raise SystemError_(f"systems.{name}.path: {folder!r} is not a folder")
    fmt = spec.get("format") or "auto"
    task_ids = [t.task_id for t in tasks]
    found = dict(discover_reports(Path(folder), task_ids, fmt=fmt))
    reports: list[Report] = []
    outcomes: list[TaskOutcome] = []
    for task_id in task_ids:
        path = found.get(task_id)
        if path is None:
            outcomes.append(TaskOutcome(task_id=task_id, status="missing", reason=f"no report in {folder}"))
            continue
        try:
            report = load_report(path, fmt=fmt, task_id=task_id, system=name)
        except ReportParseError as exc:
            outcomes.append(TaskOutcome(task_id=task_id, status="parse_error", reason=str(exc), path=str(path)))
            continue
        reports.append(report)
        outcomes.append(TaskOutcome(task_id=task_id, status="ok", path=str(path), report_id=report.report_id))
    return reports, outcomes
