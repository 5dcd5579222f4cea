"""What `reportbench check` and every system stage verify about a system's parsed reports, before judging.

- Per report: the adapter, sources found, whether a reference list was found, unresolved citation markers,
  refusal / plan / not-found / no-reference flags (reports.refusal), judge-directed text (reportbench.injection).
- **Shifted mapping.** A report that matches a neighbouring task's question far better than its own (BM25 over
  the task questions, rank-bm25) is a warning; when most reports do, or several are off by the same number
  of tasks (a run shifted by one), it is an error: the reports are on the wrong tasks and every score would be
  silently wrong. Names alone cannot catch this (`q2.md` holding q1's answer maps by name).
"""

from __future__ import annotations

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
# a shifted block: BLOCK_MIN consecutive reports (in the release's task order) that each score >= BLOCK_MARGIN
# z above their own task on the task the same offset away (docs/mapping.md, "Shifted reports")
BLOCK_MIN = 3
BLOCK_MARGIN = 0.5
BLOCK_GAP = 1  # a block may skip one report in a row whose displacement the scores do not show
REPORTED = "counted over the tasks with a report"
RELEASE = "counted over the release's tasks"


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


def report_facts(report: Any, file: str | None = None, non_answers: list[Any] | None = None) -> ReportFacts:
    """Adapter, sources, reference list, unresolved markers and flags of one parsed report (`non_answers`:
    `detect_report(report)` when the caller has it already)."""
    from reportbench.injection import flags_from_warnings  # lazy: +27 ms to import (python -X importtime)

    if non_answers is None:
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
    blocks: list[dict[str, Any]] = field(default_factory=list)  # {offset, length, task_ids, files}: shifted blocks
    offset: int | None = None  # the common offset of a shifted run
    method: str = ""
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def shift_check(tasks: list[Any], reports: list[Any], facts: dict[str, ReportFacts] | None = None) -> ShiftResult:
    """Does each report match its own task's question best? BM25 with the task questions as documents and each
    report's distinct terms as the query (reports.shift_index: sparse, top-k candidates, CJK bigrams); with >=
    `MIN_Z_REPORTS` reports each task's column is standardised over the reports. Three verdicts are errors: a
    shifted block (>= BLOCK_MIN consecutive reports better on the task the same offset away), a shifted run (a
    third of the reports off by one offset), most reports elsewhere; a lone mismatch is a warning and a flag."""
    result = ShiftResult()
    if len(tasks) < 2 or not reports:
        return result
    from reportbench.reports.shift_index import TaskIndex  # lazy: +683 ms to import (python -X importtime)

    pos = {t.task_id for t in tasks}
    index = TaskIndex([task_text(t) for t in tasks])
    checked = [rep for rep in reports if rep.task_id in pos]
    queries = index.query_matrix(rep.body for rep in checked)
    return shift_verdict(tasks, index, [rep.task_id for rep in checked], queries, facts)


def shift_verdict(
    tasks: list[Any], index: Any, report_task_ids: list[str], queries: Any, facts: dict[str, ReportFacts] | None
) -> ShiftResult:
    """`shift_check` from the reports' query rows (`index.query_matrix` of their bodies, one row per id of
    `report_task_ids`, each a task of `tasks`): a system stage takes the rows as it reads the reports
    (systems.spool), so no parsed report is held for the check."""
    result = ShiftResult()
    ids = [t.task_id for t in tasks]
    pos = {tid: i for i, tid in enumerate(ids)}
    has_terms = queries.getnnz(axis=1) > 0
    keep = [i for i in range(len(report_task_ids)) if has_terms[i]]
    if not keep:
        return result
    queries = queries[keep]
    checked = [report_task_ids[i] for i in keep]
    own = [pos[tid] for tid in checked]
    use_z = len(checked) >= MIN_Z_REPORTS
    result.checked = len(checked)
    result.method = "bm25 (sparse), column z-scores" if use_z else "bm25 (sparse), raw scores"
    # (what the offset counts, offset) -> positions of the reports scoring >= BLOCK_MARGIN better on the task that
    # far away: counted over the tasks with a report (files shifted within a partial folder) when that task has
    # one, else over the release's tasks; for a complete folder the two are the same
    rank = {p: k for k, p in enumerate(sorted(own))}
    better: dict[tuple[str, int], set[int]] = {}
    for cand in index.candidates(queries, own, standardise=use_z):
        tid, own_i = checked[cand.row], own[cand.row]
        best_i, best = own_i, cand.own
        if cand.tasks.size and float(cand.scores[0]) > cand.own:
            best_i, best = int(cand.tasks[0]), float(cand.scores[0])
        if facts is not None and tid in facts:
            f = facts[tid]
            f.own_score, f.best_task, f.best_score = round(cand.own, 3), ids[best_i], round(best, 3)
        for j, score in zip(cand.tasks.tolist(), cand.scores.tolist(), strict=True):
            if score - cand.own >= BLOCK_MARGIN:
                key = (REPORTED, rank[j] - rank[own_i]) if j in rank else (RELEASE, j - own_i)
                better.setdefault(key, set()).add(own_i)
        if use_z:
            far = best - cand.own >= Z_MARGIN
        else:
            far = best >= RATIO * max(cand.own, 0.0) and best - cand.own >= MARGIN
        if best_i != own_i and far:
            result.mismatched.append(
                {"task_id": tid, "best_task": ids[best_i], "offset": best_i - own_i,
                 "own": round(cand.own, 3), "best": round(best, 3)}
            )
    if use_z:
        files = {tid: f.file for tid, f in (facts or {}).items()}
        result.blocks = _blocks(better, ids, rank, files)
    result.error = _verdict(result)
    return result


def _blocks(
    better: dict[tuple[str, int], set[int]], ids: list[str], rank: dict[int, int], files: dict[str, str | None]
) -> list[dict[str, Any]]:
    """Runs of >= BLOCK_MIN reports, consecutive among the checked reports in task order (a task without a report
    neither breaks nor extends a run), that each score better on the task `offset` away than on their own. A run
    may skip one report (BLOCK_GAP: a displaced report whose scores do not show it), once: alternating hits
    never make a block."""
    found: list[dict[str, Any]] = []
    for (over, offset), hits in sorted(better.items()):
        segments: list[list[int]] = []  # maximal runs of consecutive hits
        for p in sorted(hits):
            if segments and rank[p] == rank[segments[-1][-1]] + 1:
                segments[-1].append(p)
            else:
                segments.append([p])
        used = -1
        for i, seg in enumerate(segments):
            if i <= used:
                continue
            run = seg
            nxt = segments[i + 1] if i + 1 < len(segments) else None
            if nxt and rank[nxt[0]] - rank[seg[-1]] == 1 + BLOCK_GAP:
                run, used = seg + nxt, i + 1
            found += _block(run, over, offset, ids, files)
    return sorted(found, key=lambda b: (-b["length"], b["task_ids"][0]))


def _block(
    run: list[int], over: str, offset: int, ids: list[str], files: dict[str, str | None]
) -> list[dict[str, Any]]:
    if len(run) < BLOCK_MIN:
        return []
    task_ids = [ids[p] for p in run]
    return [{"offset": offset, "counted_over": over, "length": len(run), "task_ids": task_ids,
             "files": [files.get(t) or t for t in task_ids]}]


def _verdict(result: ShiftResult) -> str | None:
    if result.blocks:
        parts = []
        for b in result.blocks[:5]:
            names = ", ".join(str(f) for f in b["files"])
            parts.append(
                f"{b['length']} consecutive reports (tasks {b['task_ids'][0]}–{b['task_ids'][-1]}) match the "
                f"question {b['offset']:+d} task(s) away ({b['counted_over']}) better than their own: "
                f"{_cut(names, 300)}"
            )
        more = f" (and {len(result.blocks) - 5} more blocks)" if len(result.blocks) > 5 else ""
        result.offset = result.blocks[0]["offset"]
        return f"shifted mapping, a block: {'; '.join(parts)}{more}"
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

