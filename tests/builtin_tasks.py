"""The judge tasks reportbench itself ships, for tests that enumerate the task registry (not a test module).

An installed benchmark plug-in (docs/plugins.md) registers its own tasks in the same process-wide registry when
it is loaded (any `installed_benchmarks()` call does that); the tests that pair every task with a sample input
or an answer key cover reportbench's tasks, and each plug-in tests its own.
"""

from __future__ import annotations

from reportbench.judges.base import JudgeTask


def builtin_tasks() -> dict[str, JudgeTask]:
    """Registered tasks whose input model is defined inside the `reportbench` package."""
    from reportbench.judges.tasks import TASKS

    return {n: t for n, t in TASKS.items() if t.input_model.__module__.split(".")[0] == "reportbench"}
