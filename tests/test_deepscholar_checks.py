"""Leakage checks: a report must not cite the task paper or anything published after the cut-off."""

from __future__ import annotations

import pytest

from reportbench.protocols.deepscholar.checks import leakage_summary, report_leakage
from reportbench.types import Report, Source, Task

pytestmark = pytest.mark.core

TASK = Task(
    task_id="2506.02838v1",
    title="t",
    abstract="a",
    published_date="2025-06-03T13:06:19+00:00",
    task_prompt="p",
    exemplar="e",
)


def _report(*ids: str) -> Report:
    sources = {str(i): Source(key=str(i), arxiv_id=aid) for i, aid in enumerate(ids, 1)}
    return Report(report_id="r", task_id=TASK.task_id, system="s", format="markdown", body="b", sources=sources)


def test_each_leak_kind_is_named() -> None:
    dates = {"2507.00001": "2025-07-01", "2401.00001": "2024-01-02", "2506.00009": "2025-06-03"}
    found = report_leakage(TASK, _report("2506.02838v2", "2507.00001", "2401.00001", "2402.00001", "2506.00009"), dates)
    assert found == {
        "cites_task_paper": ["2506.02838"],  # version-stripped on both sides
        "after_cutoff": ["2507.00001"],
        "undated": ["2402.00001"],  # unknown date: counted, never assumed clean
    }


def test_summary_counts_reports_and_lists_offenders() -> None:
    tasks = {TASK.task_id: TASK}
    summary = leakage_summary(
        tasks, [_report("2401.00001"), _report("2507.00001")], {"2401.00001": "2024-01-01", "2507.00001": "2025-07-01"}
    )
    assert summary["reports_with_leak"] == 1 and summary["after_cutoff"] == 1
    assert summary["leaked_sources"] == ["2506.02838v1:2507.00001"]
