"""`kind: human_exemplar` — the paper's own related-work section as a system (DeepScholar Table 2, row 1).

Why a system: the paper scores the human-written exemplars with the same seven metrics (Organization is .5 by
construction, Nugget Coverage and Reference Coverage 1.0 against themselves), and Table 6 describes them next
to every system. Running the exemplar through the same stages checks those identities end to end and gives
the Table 6 row (4381.75 characters, 497.92 words per section on the public release).

The report body is the exemplar exactly as the release ships it (LaTeX, comments kept: what the authors
compared against and what the paper's statistics use). Inline citations are the pipeline's
`\\cite[^{}]*{keys}` commands (\\cite, \\citep, \\citet, \\cite[..]{..}) outside LaTeX comments (as the pipeline
extracted them); keys resolve through the release's exemplar references (title, arXiv id, abstract).
Comments are blanked out of the judged claims (markers without keys), never out of the body.
Paper footnote 1: the exemplar's Cite-P and Claim Coverage rest on titles and abstracts only (no snippets),
so the paper left them out of its geometric mean; docs/deepscholar.md says how to read that row.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from reportbench.systems.base import SystemError_, TaskOutcome, register_kind
from reportbench.systems.common import load_release_for
from reportbench.types import ExemplarRef, Report, Source, Task

CITE_RE = re.compile(r"\\cite[^{}]*\{([^}]+)\}")  # data_pipeline/latex_extractor.py (spec §1.6)
COMMENT_RE = re.compile(r"(?<!\\)(?:\\\\)*(%)[^\n]*")


def exemplar_sources(refs: list[ExemplarRef]) -> dict[str, Source]:
    """cite key -> Source from the release's exemplar references."""
    out: dict[str, Source] = {}
    for r in refs:
        out.setdefault(
            r.ref_key,
            Source(
                key=r.ref_key,
                title=r.title,
                url=r.url,
                arxiv_id=r.arxiv_id,
                doi=r.doi,
                abstract=r.abstract,
                raw=f"\\cite{{{r.ref_key}}}",
            ),
        )
    return out


def comment_spans(text: str) -> list[tuple[int, int]]:
    """LaTeX comments: from a `%` preceded by an even number of backslashes to the end of its line (the
    pipeline's escape-aware `_remove_latex_comments`, spec §1.4)."""
    return [(m.start(1), m.end()) for m in COMMENT_RE.finditer(text)]


def exemplar_report(task: Task, refs: list[ExemplarRef], system: str) -> Report:
    """The exemplar as a Report: body unchanged (the statistics need it as shipped), one marker per \\cite
    command outside comments (its keys, in order), and comments blanked out of the judged claims (a marker
    with no key), as the pipeline ignored them when it extracted the citations."""
    from reportbench.reports.base import build_report  # lazy: +291 ms to import (python -X importtime)
    from reportbench.reports.citations import Marker  # lazy: +159 ms to import (python -X importtime)

    body = task.exemplar or ""
    comments = comment_spans(body)

    def in_comment(start: int, end: int) -> bool:  # overlaps a comment (a \\cite split by one counts too)
        return any(a < end and start < b for a, b in comments)

    markers = [  # a LaTeX tie before the command ("work~\\cite{x}") belongs to the citation
        Marker(m.start() - (m.start() > 0 and body[m.start() - 1] == "~"), m.end(),
               tuple(k.strip() for k in m.group(1).split(",") if k.strip()))  # fmt: skip
        for m in CITE_RE.finditer(body)
        if not in_comment(m.start(), m.end())
    ]
    markers += [Marker(a, b, ()) for a, b in comments]
    markers.sort(key=lambda mk: mk.start)
    return build_report(
        body=body,
        sources=exemplar_sources(refs),
        fmt="human_exemplar",
        task_id=task.task_id,
        system=system,
        path=None,
        markers=markers,
    )


@register_kind("human_exemplar")
def run_human_exemplar(
    name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path
) -> tuple[list[Report], list[TaskOutcome]]:
    release = load_release_for(name, spec, tasks, out_dir)
    refs_by_task: dict[str, list[ExemplarRef]] = {}
    for r in release.exemplar_ref_rows:
        refs_by_task.setdefault(r.task_id, []).append(r)
    reports: list[Report] = []
    outcomes: list[TaskOutcome] = []
    for task in tasks:
        if not (task.exemplar or "").strip():
            outcomes.append(TaskOutcome(task_id=task.task_id, status="missing", reason="the release has no exemplar"))
            continue
        refs = sorted(refs_by_task.get(task.task_id, []), key=lambda r: r.position)
        try:
            report = exemplar_report(task, refs, name)
        except ValueError as exc:  # a malformed exemplar must not lose the other tasks
            outcomes.append(TaskOutcome(task_id=task.task_id, status="parse_error", reason=str(exc)))
            continue
        reports.append(report)
        outcomes.append(TaskOutcome(task_id=task.task_id, status="ok", report_id=report.report_id))
    if not reports and tasks:
        raise SystemError_(f"systems.{name}: no task of the release has an exemplar")
    return reports, outcomes
