"""Registry of judge tasks: name -> `JudgeTask` (typed input, typed output, strict parser, offline rule).

Backends and metrics look tasks up by name from config (`get_task("support")`), never by import path, so
a new task is one module plus one `register_task` line.
"""

from __future__ import annotations

from reportbench.judges.base import JudgeTask
from reportbench.judges.tasks import (
    important_reference,
    nugget_assign,
    nugget_create,
    nugget_score,
    organization,
    relevance,
    support,
)

TASKS: dict[str, JudgeTask] = {}


def register_task(task: JudgeTask, *, replace: bool = False) -> JudgeTask:
    """Add a task; re-registering a name is an error unless `replace=True` (tests, experiments)."""
    if task.name in TASKS and not replace and TASKS[task.name] is not task:
        raise ValueError(f"judge task {task.name!r} is already registered")
    TASKS[task.name] = task
    return task


def get_task(name: str) -> JudgeTask:
    try:
        return TASKS[name]
    except KeyError:
        raise KeyError(f"unknown judge task {name!r}; known: {sorted(TASKS)}") from None


for _module in (
    support,
    relevance,
    organization,
    nugget_assign,
    nugget_create,
    nugget_score,
    important_reference,
):
    register_task(_module.TASK)

__all__ = ["TASKS", "get_task", "register_task"]
