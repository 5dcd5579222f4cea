"""Shared plumbing for the system kinds that *produce* reports (offline baseline, DeepScholar-ref, command,
endpoint): what a system may see of a task, the publication cut-off, raw outputs, and turning a raw output
into a parsed report or a recorded failure.

Why these rules live in one place:
- A system must never see the exemplar (it is the answer key), so `task_payload` is the only view of a task
  handed to anything outside the harness.
- The cut-off is the task paper's `published_date`; a document counts as usable only when it is *provably*
  older (`published_before`): same-day dates without a time, and undated documents whose arXiv id does not
  pin down an earlier month, are excluded. Leaking the future is worse than losing a borderline reference.
- Every produced report is first written as a file under `<out>/raw/<task_id>.md` (DVC tracks it with the
  run) and then parsed with the same adapters as third-party outputs, so a system gets no special treatment.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from reportbench.bounds import current_limits
from reportbench.progress import progress_bar
from reportbench.systems.base import SystemError_, TaskOutcome
from reportbench.types import Report, Task, strip_arxiv_version

RAW_DIR = "raw"
TRACE_DIR = "trace"

_NEW_STYLE_ID_RE = re.compile(r"^(\d{2})(\d{2})\.\d{4,5}$")
_OLD_STYLE_ID_RE = re.compile(r"^[a-z][a-z\-]*(?:\.[A-Z]{2})?/(\d{2})(\d{2})\d{3}$")


# --------------------------------------------------------------------------------------------- the task


def task_payload(task: Task) -> dict[str, Any]:
    """What a system under test may see of a task: everything except the exemplar (the answer key)."""
    return {
        "task_id": task.task_id,
        "title": task.title,
        "abstract": task.abstract,
        "published_date": task.published_date,
        "categories": list(task.categories),
        "task_prompt": task.task_prompt,
    }


# ---------------------------------------------------------------------------------------------- cut-off


def parse_when(value: str | date | datetime | None) -> datetime | date | None:
    """An ISO date or datetime (naive datetimes are taken as UTC); None when absent or unreadable."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return value
    text = str(value).strip()
    if not text:
        return None
    if len(text) == 10:
        try:
            return date.fromisoformat(text)
        except ValueError:
            return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def task_cutoff(task: Task) -> datetime:
    """The task paper's publication time (a date-only value means midnight UTC of that day)."""
    when = parse_when(task.published_date)
    if when is None:
        raise SystemError_(f"task {task.task_id}: published_date {task.published_date!r} is not an ISO date")
    if isinstance(when, datetime):
        return when
    return datetime(when.year, when.month, when.day, tzinfo=UTC)


def _id_month(arxiv_id: str | None) -> tuple[int, int] | None:
    """(year, month) an arXiv id was issued in, when the id encodes a real month (synthetic month 13: None)."""
    if not arxiv_id:
        return None
    aid = strip_arxiv_version(arxiv_id)
    m = _NEW_STYLE_ID_RE.match(aid) or _OLD_STYLE_ID_RE.match(aid)
    if not m:
        return None
    yy, mm = int(m.group(1)), int(m.group(2))
    if not 1 <= mm <= 12:
        return None
    return (1900 + yy if yy >= 91 else 2000 + yy), mm


def published_before(published: str | date | datetime | None, cutoff: datetime, arxiv_id: str | None = None) -> bool:
    """True only when the document was provably published strictly before `cutoff`.

    A datetime is compared exactly; a bare date must be an earlier *day* (same day is ambiguous); without a
    date, an arXiv id issued in an earlier month proves it; anything else is not usable.
    """
    when = parse_when(published)
    if isinstance(when, datetime):
        return when < cutoff
    if isinstance(when, date):
        return when < cutoff.date()
    month = _id_month(arxiv_id)
    return month is not None and month < (cutoff.year, cutoff.month)


# ------------------------------------------------------------------------------------------- documents


@dataclass(frozen=True)
class Doc:
    """A candidate source as the producing systems see it (from the local corpus, arXiv, or an oracle)."""

    doc_id: str
    title: str
    abstract: str = ""
    arxiv_id: str | None = None
    published: str | None = None
    url: str | None = None
    authors: str | None = None
    origin: str = "corpus"

    def snippet(self, max_chars: int = 1500) -> str:
        text = f"Title: {self.title}\nAbstract: {self.abstract or '(no abstract)'}"
        return text if len(text) <= max_chars else text[: max_chars - 3] + "..."

    def reference_line(self, number: int) -> str:
        """A numbered reference entry the markdown adapter resolves (`arXiv:<id>` or the URL)."""
        title = " ".join(self.title.split()).rstrip(".")
        if self.arxiv_id:
            return f"[{number}] {title}. arXiv:{self.arxiv_id}"
        if self.url:
            return f"[{number}] {title}. {self.url}"
        year = (self.published or "")[:4]
        return f"[{number}] {title}." + (f" ({year})" if year else "")


def corpus_docs(release: Any) -> list[Doc]:
    """The release's reference pool as `Doc`s (the offline baseline's whole search space)."""
    return [
        Doc(
            doc_id=d.doc_id,
            title=d.title,
            abstract=d.abstract or "",
            arxiv_id=d.arxiv_id,
            published=d.published_date,
            url=d.url,
            authors=d.authors,
            origin="corpus",
        )
        for d in release.corpus
    ]


def is_task_paper(doc: Doc, task: Task) -> bool:
    """The task paper itself is never a usable source (it is the answer's own paper)."""
    task_aid = strip_arxiv_version(task.task_id)
    if doc.arxiv_id and strip_arxiv_version(doc.arxiv_id) == task_aid:
        return True
    return " ".join(doc.title.lower().split()) == " ".join(task.title.lower().split())


def usable_docs(docs: list[Doc], task: Task) -> tuple[list[Doc], list[str]]:
    """(docs provably published before the task, ids of those dropped by the cut-off or as the task paper)."""
    cutoff = task_cutoff(task)
    kept: list[Doc] = []
    dropped: list[str] = []
    for doc in docs:
        if is_task_paper(doc, task) or not published_before(doc.published, cutoff, doc.arxiv_id):
            dropped.append(doc.doc_id)
        else:
            kept.append(doc)
    return kept, dropped


# ------------------------------------------------------------------------------------------- the release


def subset_full_task_ids(spec: Mapping[str, Any]) -> list[str] | None:
    """The full release's task ids when the run's release (`spec.release_dir`, set by the pipeline) is a quick
    subset of it (`limit`: release.json `subset.task_ids_of_full`), else None. A kind that maps reports by name
    uses it to ignore reports of the other tasks (`outside_release`), never to count them as unmapped."""
    given = spec.get("release_dir")
    if not given:
        return None
    try:
        manifest = json.loads((Path(str(given)) / "release.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ids = (manifest.get("subset") or {}).get("task_ids_of_full") if isinstance(manifest, dict) else None
    return [str(t) for t in ids] if isinstance(ids, list) and ids else None


def resolve_release_dir(name: str, spec: Mapping[str, Any], out_dir: Path) -> Path:
    """Where the release lives: `spec.release_dir`, else the DVC layout `data/runs/<b>/<rel>/<sys>` ->
    `data/releases/<b>/<rel>` (the `system` stage's `--out`; also the older `data/runs/<rel>/<sys>`), so config
    entries need not repeat the release."""
    given = spec.get("release_dir")
    if given:
        path = Path(str(given))
        if not (path / "release.json").is_file():
            raise SystemError_(f"systems.{name}.release_dir: {path} is not a release directory")
        return path
    out = Path(out_dir)
    if out.parent.parent.parent.name == "runs":
        guess = out.parent.parent.parent.parent / "releases" / out.parent.parent.name / out.parent.name
        if (guess / "release.json").is_file():
            return guess
    if out.parent.parent.name == "runs":
        guess = out.parent.parent.parent / "releases" / out.parent.name
        if (guess / "release.json").is_file():
            return guess
    raise SystemError_(
        f"systems.{name}: needs the release (corpus / exemplar refs); set release_dir or use the DVC "
        f"layout data/runs/<release>/<system> (got --out {out})"
    )


def load_release_for(name: str, spec: Mapping[str, Any], tasks: list[Task], out_dir: Path) -> Any:
    """The release behind `tasks`, checked to really contain them (a stale path is an error, not a mix-up)."""
    from reportbench.release.format import read_release  # lazy: +235 ms to import (python -X importtime)

    release = read_release(resolve_release_dir(name, spec, out_dir))
    known = set(release.task_ids)
    missing = [t.task_id for t in tasks if t.task_id not in known]
    if missing:
        raise SystemError_(f"systems.{name}: release {release.meta.name!r} has no task(s) {missing[:5]}")
    return release


# ------------------------------------------------------------------------------------- raw output files


def safe_name(task_id: str) -> str:
    """A file name for a task id: path separators and odd characters flattened, so it never escapes a dir."""
    return re.sub(r"[^A-Za-z0-9._\-]+", "_", task_id).strip(".") or "task"


def raw_path(out_dir: Path, task_id: str, suffix: str = ".md") -> Path:
    """`<out>/raw/<task_id><suffix>`: the produced output, DVC-tracked as part of the run directory."""
    return Path(out_dir) / RAW_DIR / f"{safe_name(task_id)}{suffix}"


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_trace(out_dir: Path, task_id: str, trace: Mapping[str, Any]) -> Path:
    """Per-task trace (queries, retrieved ids, decisions). Deterministic: no timings, no cache flags,
    so a rerun with identical answers leaves the DVC-tracked run directory byte-identical."""
    path = Path(out_dir) / TRACE_DIR / f"{safe_name(task_id)}.json"
    return write_text(path, json.dumps(trace, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n")


def isolated_load(
    path: Path, *, fmt: str = "auto", task_id: str, system: str
) -> tuple[Report | None, TaskOutcome]:
    """Load one report so that nothing about it can stop the run: an empty report is `missing`, anything
    unreadable (a parse error, an adapter bug, recursion, odd types) is `parse_error` with file and reason."""
    # lazy: +187 ms to import (python -X importtime)
    from reportbench.reports.base import EmptyReportError, ReportParseError, load_report

    try:
        report = load_report(path, fmt=fmt, task_id=task_id, system=system, max_bytes=current_limits()[0].max_bytes)
    except EmptyReportError as exc:
        return None, TaskOutcome(task_id=task_id, status="missing", reason=str(exc)[:1000], path=str(path))
    except ReportParseError as exc:
        return None, TaskOutcome(task_id=task_id, status="parse_error", reason=str(exc)[:1000], path=str(path))
    except Exception as exc:  # noqa: BLE001 - per-report isolation: one bad report never loses the rest
        reason = f"{path}: could not read it: {type(exc).__name__}: {exc}"
        return None, TaskOutcome(task_id=task_id, status="parse_error", reason=reason[:1000], path=str(path))
    return report, TaskOutcome(task_id=task_id, status="ok", path=str(path), report_id=report.report_id)


def parse_output(
    path: Path, *, system: str, task_id: str, fmt: str = "markdown", warnings: list[str] | None = None
) -> tuple[Report | None, TaskOutcome]:
    """Parse a produced output with the report adapters; a missing or empty output is a failed outcome (the
    system was asked for a report and produced none), any unreadable output a parse_error."""
    from reportbench.reports.base import confined_to  # lazy: +187 ms to import (python -X importtime)

    if not path.exists() and not path.is_symlink():
        return None, TaskOutcome(task_id=task_id, status="failed", reason="empty output: no file written")
    root = path if path.is_dir() and not path.is_symlink() else path.parent
    with confined_to(root):  # a produced output never reads outside its run folder
        report, outcome = isolated_load(path, fmt=fmt, task_id=task_id, system=system)
    if outcome.status == "missing":
        problem = (outcome.reason or "").split(": empty report: ", 1)[-1]
        bare = {"only whitespace", "the file holds no text", "the folder is empty"}
        reason = "empty output" if problem in bare else f"empty output: {problem}"
        return None, TaskOutcome(task_id=task_id, status="failed", reason=reason, path=str(path))
    if report is not None and warnings:
        report.warnings.extend(warnings)
    return report, outcome


@dataclass
class RunCollector:
    """Reports and outcomes in task order, whatever order the work finished in. In a system stage each report is
    spooled to the run folder as it is added (systems.spool), so the command, endpoint and agent kinds hold no
    parsed report past its task (issue 36), as the folder kind does."""

    task_ids: list[str]
    reports: dict[str, Report] = field(default_factory=dict)  # in a stage: SpooledReports
    outcomes: dict[str, TaskOutcome] = field(default_factory=dict)
    progress: Any = field(default=None, repr=False)  # a bar with ETA over the tasks (reportbench.progress)
    spool: Any = field(default=None, repr=False)  # the stage's ReportSpool, taken here (worker threads lack it)

    def __post_init__(self) -> None:
        if self.progress is None:
            self.progress = progress_bar(len(self.task_ids))
        spool_module = sys.modules.get("reportbench.systems.spool")  # not imported: no spool is active
        if self.spool is None and spool_module is not None:
            self.spool = spool_module.active_spool()

    def _tick(self, task_id: str) -> None:
        if task_id not in self.outcomes:
            self.progress.update(1)

    def add(self, report: Report | None, outcome: TaskOutcome) -> None:
        if report is not None:
            self.reports[outcome.task_id] = self.spool.keep(report) if self.spool is not None else report
        self._tick(outcome.task_id)
        self.outcomes[outcome.task_id] = outcome

    def fail(self, task_id: str, reason: str) -> None:
        self._tick(task_id)
        self.outcomes[task_id] = TaskOutcome(task_id=task_id, status="failed", reason=reason[:1000])

    def result(self) -> tuple[list[Report], list[TaskOutcome]]:
        self.progress.close()
        outcomes = [
            self.outcomes.get(t) or TaskOutcome(task_id=t, status="failed", reason="internal: no outcome")
            for t in self.task_ids
        ]
        reports = [self.reports[t] for t in self.task_ids if t in self.reports]
        return reports, outcomes


def merged(defaults: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults overlaid with the config entry (one level of nesting merged, e.g. `search:`)."""
    out: dict[str, Any] = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in defaults.items()}
    for key, value in spec.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **dict(value)}
        else:
            out[key] = value
    return out
