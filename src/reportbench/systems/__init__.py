"""Systems under test. A system entry in conf/systems/*.yaml has a `kind`; each kind turns the release's
tasks into reports and records one outcome per task (ok / missing / parse_error / failed), so one bad
report never loses the rest of a run.

Run outputs (written by `run_system`, read by every later stage):
- `<out>/reports.jsonl`: one parsed `Report` per line (only tasks with status ok), task order.
- `<out>/outcomes.jsonl`: one `TaskOutcome` per task of the release, task order; then one `unmapped` row
  (task_id "") per file of a systems folder that maps to no task.

Guarantees `run_system` adds to every kind (docs/reliability.md, "Reports and inputs"):
- isolation: if a kind raises anything but a config/fatal error on the whole batch, it is rerun task by task
  and each task that still raises becomes that task's `parse_error` (with the reason); the rest are kept;
- an ok report with an empty body is turned into `missing` (scored as a missing report);
- `flags` on each outcome (e.g. `judge_directed_text`) from the injection scan (reportbench.injection), and
  `refusal` / `plan_not_answer` / `not_found` / `no_references` from reportbench.reports.refusal, and
  `mapping_suspect` on a report matching another task's question far better (reportbench.systems.check);
- redaction: no fragment of a secret-looking environment value (reportbench.redaction) survives in
  reports.jsonl, outcomes.jsonl or any file the kind left in the run folder (raw outputs, traces).
"""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reportbench.judges.errors import FatalError
from reportbench.systems.base import (  # the shared records and the kind registry (re-exported)
    FAILED_STATUSES,
    SYSTEM_KINDS,
    AllTasksFailed,
    OutcomeStatus,
    SystemError_,
    SystemRunner,
    TaskOutcome,
    register_kind,
)
from reportbench.types import Report, Task

if TYPE_CHECKING:
    from reportbench.systems.spool import SpooledReport

__all__ = [
    "FAILED_STATUSES",
    "SYSTEM_KINDS",
    "AllTasksFailed",
    "OutcomeStatus",
    "SystemError_",
    "SystemRunner",
    "TaskOutcome",
    "read_outcomes",
    "read_reports",
    "register_kind",
    "run_system",
    "write_run",
]


# Where each built-in kind registers itself: a stage imports only the module of the kind it runs (importing them
# all cost ~1.2 s per system stage: aiohttp for the agents, the LLM client for deepscholar_ref/endpoint).
_KIND_MODULES = {
    "folder": "reportbench.systems.folder",
    "offline_baseline": "reportbench.systems.offline_baseline",
    "deepscholar_ref": "reportbench.systems.deepscholar_ref",
    "human_exemplar": "reportbench.systems.deepscholar_exemplar",
    "command": "reportbench.systems.command",
    "endpoint": "reportbench.systems.endpoint",
}


def _load_kind(kind: Any) -> None:
    """Import the module that registers `kind` (a benchmark's own kinds register when its package is imported);
    for an unknown kind, every module, so the error lists every kind there is."""
    if kind in SYSTEM_KINDS:
        return
    from reportbench.agents.protocol import AGENT_KINDS  # lazy: +120 ms to import (python -X importtime)

    if kind in _KIND_MODULES:
        importlib.import_module(_KIND_MODULES[kind])
    elif kind in AGENT_KINDS:
        importlib.import_module("reportbench.agents.runner")
    else:
        for module in [*_KIND_MODULES.values(), "reportbench.agents.runner"]:
            importlib.import_module(module)


# Kinds whose tasks are independent runs worth spreading over machines (runtime.executor: ray); a folder kind
# only reads files, so it stays in the stage's process. The agent kinds (agents.protocol.AGENT_KINDS, named here:
# importing it costs 120 ms) each run a task with its own budget proxy and sandbox on the node that runs it.
AGENT_FANOUT_KINDS = frozenset({
    "storm", "open_deep_research", "gpt_researcher", "smolagents_deep_research", "search_llm", "provider_deep_research",
})
FANOUT_KINDS = frozenset({"offline_baseline", "command", "endpoint"}) | AGENT_FANOUT_KINDS


def run_system(
    name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path, executor: Any = None
) -> list[TaskOutcome]:
    """Run (or read) one system over the release's tasks and write reports.jsonl + outcomes.jsonl.

    `executor` (reportbench.executor; None = this process): a non-local one runs each task of a FANOUT_KINDS
    system as its own unit, isolated as the task-by-task rerun below isolates it; results keep task order."""
    _load_kind(spec.get("kind"))
    kind = spec.get("kind")
    if kind not in SYSTEM_KINDS:
        raise SystemError_(f"systems.{name}.kind: unknown kind {kind!r}; known: {sorted(SYSTEM_KINDS)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    from reportbench.systems.check import stage_check  # lazy: +98 ms to import (python -X importtime)
    from reportbench.systems.spool import spooling  # lazy: +174 ms to import (python -X importtime)

    secrets = _spec_secrets(spec)
    # each report goes to a spool in the run folder as the kind produces it (systems.spool): memory flat in tasks
    checked = str(spec.get("shift_check") or "error") in ("error", "warn")  # stage_check will check the content
    with spooling(out_dir, secrets, tasks, checked) as spool:
        if executor is not None and getattr(executor, "name", "local") != "local" and kind in FANOUT_KINDS:
            reports, outcomes = _run_fanned(executor, name, spec, tasks, out_dir)
        else:
            reports, outcomes = _run_isolated(SYSTEM_KINDS[kind], name, spec, tasks, out_dir)
        spooled = [spool.keep(r) for r in reports]  # a kind that returned parsed Reports: spooled now
        del reports
        spooled, outcomes = _checked(spooled, outcomes)
        summary = stage_check(name, spec, tasks, spooled, outcomes, out_dir)  # check.json; a shifted run stops here
        suspects = {m["task_id"] for m in (summary.get("shift") or {}).get("mismatched") or []}
        outcomes = [
            o.model_copy(update={"flags": sorted({*o.flags, "mapping_suspect"})}) if o.task_id in suspects else o
            for o in outcomes
        ]
        write_run(out_dir, spooled, outcomes, secrets)
    _scrub_run_dir(out_dir, secrets)
    return outcomes


def _is_fatal(exc: BaseException) -> bool:
    """Errors no per-task retry fixes: a malformed config entry, a fatal provider error (bad key, quota)."""

    return isinstance(exc, SystemError_ | FatalError | KeyboardInterrupt | SystemExit)


def _run_isolated(
    runner: SystemRunner, name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path
) -> tuple[list[Report], list[TaskOutcome]]:
    """Run the kind on all tasks; if it raises (a bug, a malformed report it did not isolate), rerun it one
    task at a time so that only the tasks that really fail are lost, each with its reason."""
    import logging

    try:
        return runner(name, spec, tasks, out_dir)
    except Exception as exc:  # noqa: BLE001 - decided below: fatal errors propagate, the rest are isolated
        if _is_fatal(exc) or not tasks:
            raise
        if len(tasks) == 1:
            return [], [_crash_outcome(tasks[0].task_id, exc)]
        logging.getLogger(__name__).warning(
            "system %s: %s: %s on the whole batch; rerunning task by task", name, type(exc).__name__, exc
        )
    reports: list[Report] = []
    outcomes: list[TaskOutcome] = []
    unmapped: list[TaskOutcome] = []
    for task in tasks:
        try:
            # one task of many: a folder kind still maps the folder against every task (unmapped rows stay right)
            one = {**spec, "_all_task_ids": [t.task_id for t in tasks]}
            got_reports, got_outcomes = runner(name, one, [task], out_dir)
        except Exception as exc:  # noqa: BLE001 - this task's failure, recorded with its reason
            if _is_fatal(exc):
                raise
            outcomes.append(_crash_outcome(task.task_id, exc))
            continue
        reports.extend(r for r in got_reports if r.task_id == task.task_id)
        outcomes.extend(o for o in got_outcomes if o.task_id == task.task_id)
        unmapped = [o for o in got_outcomes if o.status == "unmapped"]  # the same on every rerun: keep one copy
    return reports, outcomes + unmapped


def run_one_task(name: str, spec: dict[str, Any], task: Task, out_dir: Path) -> tuple[list[Report], list[TaskOutcome]]:
    """One task of a system as an executor unit (on any node): its kind loaded there, the task isolated."""
    _load_kind(spec.get("kind"))
    return _run_isolated(SYSTEM_KINDS[spec["kind"]], name, spec, [task], out_dir)


def _run_fanned(
    executor: Any, name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path
) -> tuple[list[Report], list[TaskOutcome]]:
    """Every task as its own executor unit; reports and outcomes merged in task order (as `_run_isolated`'s
    task-by-task rerun merges them), so the run folder is the one the stage writes in-process."""
    # a sandboxed kind's unit writes its share of the stage's files (sandbox.json, agent_usage.json), merged below
    sandboxed = spec.get("kind") == "command" or spec.get("kind") in AGENT_FANOUT_KINDS
    unit_spec = {**spec, "_unit": True} if sandboxed else spec
    results = executor.map(run_one_task, [(name, unit_spec, task, out_dir) for task in tasks])
    reports: list[Report] = []
    outcomes: list[TaskOutcome] = []
    unmapped: list[TaskOutcome] = []
    for task, result in zip(tasks, results, strict=True):
        got_reports, got_outcomes = result.value
        reports.extend(r for r in got_reports if r.task_id == task.task_id)
        outcomes.extend(o for o in got_outcomes if o.task_id == task.task_id)
        unmapped = [o for o in got_outcomes if o.status == "unmapped"]
    # the stage's files over every unit's task: sandbox.json (command and agent kinds), agent_usage.json (agents)
    # lazy: +278 ms to import (python -X importtime)
    from reportbench.systems.sandbox import UNIT_PARTS, merge_unit_records

    merge_unit_records(out_dir, [t.task_id for t in tasks])
    if spec.get("kind") in AGENT_FANOUT_KINDS:
        # lazy: +1374 ms to import (python -X importtime); only when an agent kind ran
        from reportbench.agents.runner import finish_fanned_units

        finish_fanned_units(name, spec, tasks, out_dir)
    with contextlib.suppress(OSError):
        (out_dir / UNIT_PARTS).rmdir()  # empty now
    return reports, outcomes + unmapped


def _crash_outcome(task_id: str, exc: Exception) -> TaskOutcome:
    """The outcome of a task whose kind raised: an empty report is `missing`, anything else `parse_error`."""
    # lazy: +204 ms to import (python -X importtime)
    from reportbench.reports.base import EmptyReportError, ReportParseError

    if isinstance(exc, EmptyReportError):
        return TaskOutcome(task_id=task_id, status="missing", reason=str(exc)[:1000], path=exc.path)
    if isinstance(exc, ReportParseError):
        return TaskOutcome(task_id=task_id, status="parse_error", reason=str(exc)[:1000], path=exc.path)
    return TaskOutcome(task_id=task_id, status="parse_error", reason=f"internal: {type(exc).__name__}: {exc}"[:1000])


def _checked(
    reports: list[SpooledReport], outcomes: list[TaskOutcome]
) -> tuple[list[SpooledReport], list[TaskOutcome]]:
    """Empty ok reports become `missing`; ok outcomes get their report's injection flags and the refusal /
    plan / not-found / no-reference flags (reportbench.reports.refusal; taken as the report was spooled)."""
    by_task = {r.task_id: r for r in reports}
    kept: list[SpooledReport] = []
    fixed: list[TaskOutcome] = []
    for o in outcomes:
        report = by_task.get(o.task_id) if o.status == "ok" else None
        if o.status == "ok" and report is None:
            o = o.model_copy(update={"status": "failed", "reason": "internal: an ok outcome without a report"})
        elif report is not None and report.blank:
            o = o.model_copy(update={"status": "missing", "reason": "empty report: no body text", "report_id": None})
        elif report is not None:
            found = {*o.flags, *report.checked_flags()}
            o = o.model_copy(update={"flags": sorted(found)})
            kept.append(report)
        fixed.append(o)
    return kept, fixed


def _spec_secrets(spec: dict[str, Any]) -> tuple[str, ...]:
    """Secret-looking values a config entry passes to its system (a command's `env:`), besides os.environ."""
    from reportbench.redaction import looks_secret  # lazy: +19 ms to import (python -X importtime)

    env = spec.get("env") if isinstance(spec.get("env"), dict) else {}
    return tuple(str(v) for k, v in env.items() if looks_secret(str(k), str(v)))


def _scrub_run_dir(out_dir: Path, secrets: tuple[str, ...]) -> None:
    """Redact secret fragments from every file a kind left in the run folder (raw outputs, traces, usage)."""
    from reportbench.redaction import scrub_file, secret_values  # lazy: +19 ms to import (python -X importtime)

    if not (secrets or secret_values()):
        return
    for path in sorted(Path(out_dir).rglob("*")):
        if path.is_file() and not path.is_symlink():
            scrub_file(path, secrets)


def write_run(
    out_dir: Path, reports: Sequence[Report | SpooledReport], outcomes: list[TaskOutcome], secrets: tuple[str, ...] = ()
) -> None:
    """reports.jsonl + outcomes.jsonl; a line holding a secret fragment is redacted field by field. A spooled
    report's line is copied from the spool, where it was written by `report_line` with the same secrets."""
    # lazy: +174 ms to import (python -X importtime)
    from reportbench.systems.spool import SpooledReport, report_line

    with open(out_dir / "reports.jsonl", "wb") as f:
        for r in reports:
            f.write(r.line() if isinstance(r, SpooledReport) else report_line(r, secrets).encode("utf-8"))
    with open(out_dir / "outcomes.jsonl", "w", encoding="utf-8") as f:
        for o in outcomes:
            f.write(report_line(o, secrets))


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
