"""What `reportbench check` and every system stage verify about a system's parsed reports, before judging.

- Per report: the adapter, sources found, whether a reference list was found, unresolved citation markers,
  refusal / plan / not-found / no-reference flags (reports.refusal), judge-directed text (reportbench.injection).
- **Shifted mapping.** A report that matches a neighbouring task's question far better than its own (BM25 over
  the task questions, rank-bm25) is a warning; when most reports do, or several are off by the same number
  of tasks (a run shifted by one), it is an error: the reports are on the wrong tasks and every score would be
  silently wrong. Names alone cannot catch this (`q2.md` holding q1's answer maps by name).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from reportbench.reports.refusal import detect_report

# a report "far better" matches another task: with column z-scores (>= MIN_Z_REPORTS reports) its score there is
# >= Z_MARGIN standard deviations above its own; with fewer reports the raw score is >= RATIO x and MARGIN above
MIN_Z_REPORTS = 3
Z_MARGIN = 1.0
RATIO = 1.5
MARGIN = 1.0
MIN_SYSTEMATIC = 2  # reports off by the same offset (and at least a third of them) before the run counts as shifted
MAX_QUERY_TERMS = 5000  # bounded: a report's distinct terms used as the BM25 query
_WORD = re.compile(r"[a-z0-9]{3,}", re.ASCII)
_STOP = frozenset(
    "the and for are but not you all any can had her was one our out has have this that with from they will "
    "what when which who how why their there these those into than then them been were also more most such "
    "about over under between while where each other some only very its it's may might would could should "
    "report research provide include including based using use used per via".split()
)


def terms(text: str) -> list[str]:
    """Lower-case ASCII word terms without stop words (the BM25 vocabulary)."""
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


@dataclass
class ReportFacts:
    """One report as `check` sees it."""

    task_id: str
    file: str | None
    adapter: str
    sources: int
    reference_list: bool
    unresolved_markers: int
    flags: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    own_score: float | None = None
    best_task: str | None = None
    best_score: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def report_facts(report: Any, file: str | None = None) -> ReportFacts:
    """Adapter, sources, reference list, unresolved markers and flags of one parsed report."""
    from reportbench.injection import flags_from_warnings  # lazy: +27 ms to import (python -X importtime)

    non_answers = detect_report(report)
    flags = sorted({*(f.flag for f in non_answers), *flags_from_warnings(list(report.warnings))})
    return ReportFacts(
        task_id=report.task_id,
        file=file if file is not None else report.path,
        adapter=report.format,
        sources=len(report.sources),
        reference_list=any(s.raw for s in report.sources.values()),
        unresolved_markers=len(report.unresolved_citations),
        flags=flags,
        evidence=[f"{f.flag}: {f.evidence}" for f in non_answers],
    )


def task_text(task: Any) -> str:
    """What a task asks, for matching: its title and prompt (and abstract, for DeepScholar)."""
    parts = [getattr(task, k, "") or "" for k in ("title", "task_prompt", "abstract")]
    return "\n".join(p for p in parts if p)


@dataclass
class ShiftResult:
    """The shifted-mapping verdict over one system's reports."""

    checked: int = 0
    mismatched: list[dict[str, Any]] = field(default_factory=list)  # {task_id, best_task, offset, own, best}
    offset: int | None = None  # the common offset of a shifted run
    method: str = ""
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def shift_check(tasks: list[Any], reports: list[Any], facts: dict[str, ReportFacts] | None = None) -> ShiftResult:
    """Does each report match its own task's question best? BM25 with the task questions as documents and
    each report's distinct terms as the query; with >= `MIN_Z_REPORTS` reports each task's column is
    standardised over the reports (a long, generic question otherwise attracts every report)."""
    result = ShiftResult()
    if len(tasks) < 2 or not reports:
        return result
    import numpy as np
    from rank_bm25 import BM25Okapi

    ids = [t.task_id for t in tasks]
    pos = {tid: i for i, tid in enumerate(ids)}
    bm25 = BM25Okapi([terms(task_text(t)) or ["_empty_"] for t in tasks])
    rows: list[tuple[str, int]] = []
    scores: list[list[float]] = []
    for rep in reports:
        query = sorted(set(terms(rep.body)))[:MAX_QUERY_TERMS]
        if rep.task_id in pos and query:
            rows.append((rep.task_id, pos[rep.task_id]))
            scores.append([float(x) for x in bm25.get_scores(query)])
    if not rows:
        return result
    raw = np.array(scores)
    use_z = len(rows) >= MIN_Z_REPORTS
    mat = (raw - raw.mean(axis=0)) / (raw.std(axis=0) + 1e-9) if use_z else raw
    result.checked = len(rows)
    result.method = "bm25, column z-scores" if use_z else "bm25, raw scores"
    for r, (tid, own_i) in enumerate(rows):
        row = mat[r]
        best_i = max(range(len(ids)), key=lambda i: (row[i], i == own_i))
        own, best = float(row[own_i]), float(row[best_i])
        if facts is not None and tid in facts:
            f = facts[tid]
            f.own_score, f.best_task, f.best_score = round(own, 3), ids[best_i], round(best, 3)
        far = best - own >= Z_MARGIN if use_z else (best >= RATIO * max(own, 0.0) and best - own >= MARGIN)
        if best_i != own_i and far:
            result.mismatched.append(
                {"task_id": tid, "best_task": ids[best_i], "offset": best_i - own_i,
                 "own": round(own, 3), "best": round(best, 3)}
            )
    result.error = _verdict(result)
    return result


def _verdict(result: ShiftResult) -> str | None:
    if not result.mismatched:
        return None
    offsets = Counter(m["offset"] for m in result.mismatched)
    offset, n = offsets.most_common(1)[0]
    majority = len(result.mismatched) * 2 > result.checked
    if n >= MIN_SYSTEMATIC and n * 3 >= result.checked:  # a third of the reports off by the same offset
        result.offset = offset
        pairs = ", ".join(f"{m['task_id']}→{m['best_task']}" for m in result.mismatched if m["offset"] == offset)
        return (
            f"{n} of {result.checked} reports match the question {offset:+d} task(s) away far better than their own "
            f"(shifted mapping? {_cut(pairs)})"
        )
    if majority:
        pairs = ", ".join(f"{m['task_id']}→{m['best_task']}" for m in result.mismatched)
        return (
            f"{len(result.mismatched)} of {result.checked} reports match another task's question far better than "
            f"their own ({_cut(pairs)})"
        )
    return None


def _cut(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def mismatch_warnings(result: ShiftResult) -> list[str]:
    """One line per report that matches another task far better (when the run as a whole is not shifted)."""
    return [
        f"{m['task_id']}: matches task {m['best_task']}'s question far better than its own "
        f"(score {m['best']:.2f} vs {m['own']:.2f})"
        for m in result.mismatched
    ]

