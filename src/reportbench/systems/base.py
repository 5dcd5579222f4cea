"""What every system kind shares: the per-task outcome record, the config error, the kind registry.

Below the kinds (each registers itself with `register_kind`) and the package's `run_system`, which imports
them: the kinds import this module, never the package (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from reportbench.types import Report, Task

OutcomeStatus = Literal["ok", "missing", "parse_error", "failed", "unmapped"]


class TaskOutcome(BaseModel):
    """What happened for one (system, task): a report, or an explicit reason why there is none.

    `unmapped` rows (task_id "") name a file of a systems folder that maps to no task. `flags` mark what a
    user must see about an ok report, e.g. `judge_directed_text` (it tried to steer the judge; the text was
    removed before judging) or `hidden_text` (invisible characters carried text).
    """

    model_config = ConfigDict(extra="forbid")

    task_id: str
    status: OutcomeStatus
    reason: str | None = None
    path: str | None = None
    report_id: str | None = None
    flags: list[str] = Field(default_factory=list)


class SystemError_(ValueError):
    """A system entry in the config is malformed; the message names the entry and field."""


FAILED_STATUSES = ("failed", "parse_error")
"""Outcomes where the system itself broke (a crash, an exit code, a timeout, output that does not parse), as
opposed to `missing` (no report supplied): counted apart on every leaderboard (docs/reading-scores.md)."""


class AllTasksFailed(RuntimeError):
    """No task of a system stage produced a report and at least one failed: the stage fails (non-zero exit) with
    the first error, instead of a leaderboard row that looks like a system scoring 0."""


SystemRunner = Callable[[str, dict[str, Any], list[Task], Path], tuple[list[Report], list[TaskOutcome]]]
SYSTEM_KINDS: dict[str, SystemRunner] = {}


def register_kind(name: str) -> Callable[[SystemRunner], SystemRunner]:
    def deco(fn: SystemRunner) -> SystemRunner:
        SYSTEM_KINDS[name] = fn
        return fn

    return deco
