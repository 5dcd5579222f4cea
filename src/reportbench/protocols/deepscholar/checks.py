"""Protocol checks that are not metrics: did a report use sources it was not allowed to see?

The task prompt allows only references published before the task paper. A report that cites the task paper
itself, or a paper the release knows was published after the cut-off, has leaked the answer. These counts are
reported next to the metrics (they never change a score silently); a source whose date the release does not
know is counted as `undated`, not as clean.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reportbench.types import Report, Task, strip_arxiv_version


def report_leakage(task: Task, report: Report, published: Mapping[str, str | None]) -> dict[str, list[str]]:
    """arXiv ids of the report's sources by leak kind. `published`: version-stripped id -> ISO date."""
    own_id = strip_arxiv_version(task.task_id)
    cutoff = task.published_date[:10]
    out: dict[str, list[str]] = {"cites_task_paper": [], "after_cutoff": [], "undated": []}
    for aid in report.retrieved_arxiv_ids:
        if aid == own_id:
            out["cites_task_paper"].append(aid)
            continue
        date = published.get(aid)
        if not date:
            out["undated"].append(aid)
        elif date[:10] > cutoff:
            out["after_cutoff"].append(aid)
    return out


def leakage_summary(
    tasks: Mapping[str, Task], reports: Iterable[Report], published: Mapping[str, str | None]
) -> dict[str, Any]:
    """System-level counts plus the offending (task, arXiv id) pairs, for the system's metrics JSON."""
    summary: dict[str, Any] = {"reports_with_leak": 0, "cites_task_paper": 0, "after_cutoff": 0, "undated": 0}
    examples: list[str] = []
    for report in reports:
        found = report_leakage(tasks[report.task_id], report, published)
        for kind, ids in found.items():
            summary[kind] += len(ids)
        leaked = found["cites_task_paper"] + found["after_cutoff"]
        if leaked:
            summary["reports_with_leak"] += 1
            examples.extend(f"{report.task_id}:{aid}" for aid in leaked)
    summary["leaked_sources"] = sorted(examples)
    return summary
