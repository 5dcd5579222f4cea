"""Systems under test. A system entry in conf/systems/*.yaml has a `kind`; each kind turns the release's
tasks into reports and records one outcome per task (ok / missing / parse_error / failed), so one bad
report never loses the rest of a run.

Run outputs (written by `run_system`, read by every later stage):
- `<out>/reports.jsonl`: one parsed `Report` per line (only tasks with status ok), task order.
- `<out>/outcomes.jsonl`: one `TaskOutcome` per task of the release, task order.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from reportbench.types import Report, Task

OutcomeStatus = Literal["ok", "missing", "parse_error", "failed"]


class TaskOutcome(BaseModel):
    """What happened for one (system, task): a report, or an explicit reason why there is none."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    status: OutcomeStatus
    reason: str | None = None
    path: str | None = None
    report_id: str | None = None


class SystemError_(ValueError):
    """A system entry in the config is malformed; the message names the entry and field."""


SystemRunner = Callable[[str, dict[str, Any], list[Task], Path], tuple[list[Report], list[TaskOutcome]]]
SYSTEM_KINDS: dict[str, SystemRunner] = {}


def register_kind(name: str) -> Callable[[SystemRunner], SystemRunner]:
    def deco(fn: SystemRunner) -> SystemRunner:
        SYSTEM_KINDS[name] = fn
        return fn

    return deco


def run_system(name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path) -> list[TaskOutcome]:
    """Run (or read) one system over the release's tasks and write reports.jsonl + outcomes.jsonl."""
    from reportbench.systems import (  # noqa: F401  (registers the built-in kinds)
        command,
        deepscholar_exemplar,
        deepscholar_ref,
        endpoint,
        folder,
        offline_baseline,
    )

    kind = spec.get("kind")
    if kind not in SYSTEM_KINDS:
        raise SystemError_(
            f"systems.{name}.kind: unknown kind {kind!r}; known: {sorted(SYSTEM_KINDS)}"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    reports, outcomes = SYSTEM_KINDS[kind](name, spec, tasks, out_dir)
    write_run(out_dir, reports, outcomes)
    return outcomes


def write_run(out_dir: Path, reports: list[Report], outcomes: list[TaskOutcome]) -> None:
    with open(out_dir / "reports.jsonl", "w", encoding="utf-8") as f:
        for r in reports:
            f.write(r.model_dump_json() + "\n")
    with open(out_dir / "outcomes.jsonl", "w", encoding="utf-8") as f:
        for o in outcomes:
            f.write(o.model_dump_json() + "\n")


def read_reports(run_dir: Path) -> list[Report]:
    path = Path(run_dir) / "reports.jsonl"
    reports = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                try:
                    reports.append(Report.model_validate_json(line))
                except ValueError as exc:
                    raise ValueError(f"{path}: line {lineno} is not a valid Report: {exc}") from exc
    return reports


def read_outcomes(run_dir: Path) -> list[TaskOutcome]:
    path = Path(run_dir) / "outcomes.jsonl"
    with open(path, encoding="utf-8") as f:
        return [TaskOutcome.model_validate(json.loads(line)) for line in f if line.strip()]
