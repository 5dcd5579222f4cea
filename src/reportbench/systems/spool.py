"""A system stage's reports kept on disk as they are produced, so `system@` memory stays flat in the number of
tasks (issue 36: a parsed `Report` is ~280 KB in memory, ~70 KB as a JSON line; 5,000 of them held at once were
1.4 GB).

`run_system` opens a `ReportSpool` (a hidden temp file in the run folder) around the kind. A kind that collects
its reports in `report_list()` (the folder kind does) gets a list whose `append` writes the report's line of
reports.jsonl to the spool at once (the exact bytes `write_run` writes: `model_dump_json`, or the redacted form
when it holds a secret fragment) and keeps only a `SpooledReport`: the task id, where its line is, and what the
later steps read (`_checked`: blank body and flags; the stage check: `report_facts` and the report's row of
the shift check's query matrix). Kinds that return plain lists of Reports are spooled after they return (the
same path, not the flat memory). `write_run` copies the kept lines in their order; the spool file is removed
when the stage ends, whether it wrote reports.jsonl or stopped (a shifted run writes none).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from reportbench.reports.check import ReportFacts, ShiftResult, report_facts, shift_verdict, task_text
from reportbench.reports.refusal import ALL_FLAGS, detect_report

_ACTIVE: ContextVar[ReportSpool | None] = ContextVar("reportbench_report_spool", default=None)


def report_line(model: BaseModel, secrets: tuple[str, ...] = ()) -> str:
    """One line of reports.jsonl / outcomes.jsonl (systems.write_run); a line holding a secret fragment is
    redacted field by field."""
    from reportbench.redaction import contains_secret, redact_tree  # lazy: +19 ms to import (python -X importtime)

    text = model.model_dump_json()
    if contains_secret(text, secrets):
        text = json.dumps(redact_tree(model.model_dump(mode="json"), secrets), ensure_ascii=False)
    return text + "\n"


@dataclass
class SpooledReport:
    """What a system stage keeps of one report after writing its line to the spool."""

    task_id: str
    spool: ReportSpool
    offset: int
    length: int
    blank: bool  # no body text: the outcome becomes `missing`
    flags: tuple[str, ...] = ()  # injection flags of its warnings and the refusal/plan/... flags (reports.refusal)
    facts: ReportFacts | None = None  # report_facts(report) (its file: the report's path), for the stage check
    query: Any = None  # its row of the shift check's query matrix (term ids of spool.index), or None
    error: BaseException | None = None  # deriving the above failed: raised where the parsed report would have

    def checked_flags(self) -> tuple[str, ...]:
        if self.error is not None:
            raise self.error
        return self.flags

    def facts_for(self, file: str | None) -> ReportFacts:
        """A fresh copy of its facts (the shift check fills in scores), with the outcome's file if it has one."""
        if self.error is not None:
            raise self.error
        if self.facts is None:
            raise RuntimeError(f"{self.task_id}: no facts spooled (the stage check was off when it was read)")
        return dataclasses.replace(self.facts, flags=list(self.facts.flags), evidence=list(self.facts.evidence),
                                   file=file if file is not None else self.facts.file)

    def line(self) -> bytes:
        """Its reports.jsonl line, as written to the spool."""
        return self.spool.read(self.offset, self.length)


class ReportSpool:
    """The spool file of one system stage and the context the reports' facts are taken in."""

    def __init__(self, out_dir: Path, secrets: tuple[str, ...], tasks: Sequence[Any], checked: bool) -> None:
        self.secrets = secrets
        self.tasks = tasks
        self.checked = checked  # the stage check will run (shift_check not off): take facts and query rows
        self.index: Any = None  # reports.shift_index.TaskIndex over the tasks, built on the first report
        fd, name = tempfile.mkstemp(dir=out_dir, prefix=".reports-", suffix=".spool")
        self.path = Path(name)
        self._file = os.fdopen(fd, "w+b")
        self._end = 0
        self._lock = threading.Lock()  # kinds that run tasks on threads (command, agents) add from each

    def add(self, report: Any) -> SpooledReport:
        """Write the report's line and keep what the later steps need of it (one report at a time)."""
        with self._lock:
            return self._add(report)

    def _add(self, report: Any) -> SpooledReport:
        data = report_line(report, self.secrets).encode("utf-8")
        self._file.write(data)
        offset, self._end = self._end, self._end + len(data)
        blank = not report.body.strip()
        kept = SpooledReport(report.task_id, self, offset, len(data), blank)
        if blank:  # becomes `missing`: neither flagged nor checked
            return kept
        try:
            kept.flags, kept.facts, kept.query = self._derived(report)
        except Exception as exc:  # noqa: BLE001 - raised later, where the stage used the parsed report
            kept.error = exc
        return kept

    def _derived(self, report: Any) -> tuple[tuple[str, ...], ReportFacts | None, Any]:
        from reportbench.injection import flags_from_warnings  # lazy: +42 ms to import (python -X importtime)

        non_answers = detect_report(report)
        got = {f.flag for f in non_answers}
        flags = (*flags_from_warnings(report.warnings), *(f for f in ALL_FLAGS if f in got))  # as refusal.flags_of
        if not self.checked:
            return flags, None, None
        facts = report_facts(report, None, non_answers=non_answers)
        query = None
        if len(self.tasks) >= 2:
            if self.index is None:
                # lazy: +683 ms to import (python -X importtime)
                from reportbench.reports.shift_index import TaskIndex

                self.index = TaskIndex([task_text(t) for t in self.tasks])
            query = self.index.query_row(report.body)
        return flags, facts, query

    def keep(self, report: Any) -> SpooledReport:
        """A kind's report as a spooled one (a kind that returned parsed Reports is spooled here)."""
        return report if isinstance(report, SpooledReport) else self.add(report)

    def read(self, offset: int, length: int) -> bytes:
        self._file.flush()
        return os.pread(self._file.fileno(), length, offset)

    def close(self) -> None:
        self._file.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


class SpoolList(list):  # type: ignore[type-arg]
    """A kind's list of reports whose `append` spools the report (the list holds SpooledReports)."""

    def __init__(self, spool: ReportSpool) -> None:
        super().__init__()
        self._spool = spool

    def append(self, report: Any) -> None:
        super().append(self._spool.keep(report))


def active_spool() -> ReportSpool | None:
    """The system stage's spool, if a kind runs inside one (read where the kind starts: threads it starts do not
    inherit the context)."""
    return _ACTIVE.get()


def report_list() -> list[Any]:
    """The list a kind collects its reports in: in a system stage, one that spools each report as it is added (a
    parsed report is then freed at once); elsewhere a plain list."""
    spool = _ACTIVE.get()
    return SpoolList(spool) if spool is not None else []


@contextlib.contextmanager
def spooling(out_dir: Path, secrets: tuple[str, ...], tasks: Sequence[Any], checked: bool) -> Iterator[ReportSpool]:
    """A spool active for the kinds run inside (report_list), removed on the way out."""
    spool = ReportSpool(out_dir, secrets, tasks, checked)
    token = _ACTIVE.set(spool)
    try:
        yield spool
    finally:
        _ACTIVE.reset(token)
        spool.close()


def spooled_shift_check(
    tasks: Sequence[Any], reports: Sequence[SpooledReport], facts: dict[str, ReportFacts]
) -> ShiftResult:
    """`reports.check.shift_check` on spooled reports: the query rows taken as each was produced."""
    if len(tasks) < 2 or not reports:
        return ShiftResult()
    pos = {t.task_id for t in tasks}
    checked = [r for r in reports if r.task_id in pos]
    index = reports[0].spool.index
    if index is None:  # no report reached the index (cannot happen with reports present): nothing to compare
        return ShiftResult()
    queries = index.stack([r.query for r in checked])
    return shift_verdict(list(tasks), index, [r.task_id for r in checked], queries, facts)
