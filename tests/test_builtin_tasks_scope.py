"""Tests that pair every judge task with a sample input cover reportbench's own tasks: a task an installed
benchmark plug-in registers in the same process does not enter them (tests/builtin_tasks.py)."""

from __future__ import annotations

import pytest

from builtin_tasks import builtin_tasks
from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, OfflineVerdict
from reportbench.judges.tasks import TASKS, register_task

pytestmark = pytest.mark.core


class PluginInput(JudgeInput):
    text: str


PluginInput.__module__ = "some_plugin.tasks"  # as if defined by a separately installed distribution


class PluginOutput(JudgeOutput):
    ok: int

    def value(self) -> float:
        return float(self.ok)


def test_a_plugin_task_is_registered_but_not_builtin() -> None:
    task = JudgeTask(
        "plugin_probe", "some_plugin/probe.yaml", PluginInput, PluginOutput,
        lambda raw, i=None: PluginOutput(ok=1), lambda i, p: OfflineVerdict(PluginOutput(ok=1), "x"),
    )  # fmt: skip
    register_task(task, replace=True)
    try:
        assert "plugin_probe" in TASKS and "plugin_probe" not in builtin_tasks()
        assert {"support", "relevance", "organization"} <= set(builtin_tasks())
    finally:
        TASKS.pop("plugin_probe", None)
