"""system@'s log of the tasks a system has no report for: one line per reason, not one per task (a real release
misses hundreds: 305 warning lines for DeepScholar's public release, 53 for LiveResearchBench's public80)."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from reportbench import pipeline
from reportbench.systems.base import TaskOutcome

pytestmark = pytest.mark.core


def test_missing_tasks_are_logged_once_per_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import reportbench.systems as systems

    outcomes = [TaskOutcome(task_id="t-ok", status="ok")]
    outcomes += [TaskOutcome(task_id=f"t-{i:02d}", status="missing", reason="no_report") for i in range(12)]
    outcomes += [TaskOutcome(task_id="t-x", status="missing", reason="excluded")]
    outcomes += [TaskOutcome(task_id="t-f", status="failed", reason="exit 1")]

    def fake_run(*args: Any, **kwargs: Any) -> list[TaskOutcome]:
        return outcomes

    monkeypatch.setattr(systems, "run_system", fake_run)
    monkeypatch.setattr(pipeline, "read_release", lambda *a: SimpleNamespace(tasks=[]))
    monkeypatch.setattr(pipeline, "system_spec", lambda *a: {"kind": "folder"})
    with caplog.at_level(logging.WARNING, logger="reportbench"):
        counts = pipeline.run_system({}, "deepscholar", "s", tmp_path / "release", tmp_path / "run")
    assert counts == {"ok": 1, "missing": 13, "failed": 1}
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(lines) == 3, lines  # no_report, excluded, and the failed task on its own line
    assert lines[0] == "s / t-f: failed (exit 1)"
    assert lines[1] == (
        "s: 12 task(s) missing (no_report): t-00, t-01, t-02, t-03, t-04, … (12 in all; outcomes.jsonl lists each)"
    )
    assert lines[2] == "s: 1 task(s) missing (excluded): t-x"
