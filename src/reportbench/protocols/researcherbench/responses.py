"""The authors' response files as a system (`kind: researcherbench_responses`), and raw-text lookup.

A response file is `[{id, question, response}]`, one file per system (`data/user_data/<System>.json`).
Each response goes through our markdown adapter (the shared `reportbench.reports` code), so citations are
resolved the same way as for any other system. The judge steps need the response exactly as written
(the rubric judge sees the whole response, references included): `raw_response` re-reads it from the file.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from reportbench.protocols.researcherbench.release import qid_of
from reportbench.protocols.researcherbench.text import URL_RE, references_text
from reportbench.reports.formats.markdown import split_markdown_report
from reportbench.reports.task_names import TaskNaming
from reportbench.systems import SystemError_, TaskOutcome, register_kind
from reportbench.systems.common import subset_full_task_ids
from reportbench.systems.folder import allowed_missing_share, map_answer_file, mapping_error, write_mapping
from reportbench.types import Report, Source, Task

KIND = "researcherbench_responses"


@lru_cache(maxsize=16)
def _load_file(path: str, mtime_ns: int) -> dict[int, dict[str, Any]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: a response file is a JSON list of {{id, question, response}}")
    out: dict[int, dict[str, Any]] = {}
    for i, e in enumerate(data):
        if not isinstance(e, dict) or "id" not in e or not isinstance(e.get("response"), str):
            raise ValueError(f"{path}[{i}]: needs id and a string response")
        out[int(e["id"])] = e
    return out


def load_responses(path: str | Path) -> dict[int, dict[str, Any]]:
    """id -> {id, question, response} of one response file (cached by path and mtime)."""
    p = Path(path)
    return _load_file(str(p), p.stat().st_mtime_ns)


def parse_response(text: str, task_id: str, system: str, path: str | None) -> Report:
    """One response through the markdown adapter (the format every shared response file uses)."""

    parts = split_markdown_report(text)
    report = parts.to_report("markdown", task_id, system, Path(path) if path else None)  # type: ignore[arg-type]
    return keep_every_entry_url(report)


def keep_every_entry_url(report: Report) -> Report:
    """A reference entry with several URLs keeps them all: the 2nd, 3rd, ... become sources `<key>~2`, ...

    The shared adapter keeps one URL per entry (Source has one url); ResearcherBench verifies claims against
    every cited page, so the others must reach the fetch stage too. Recorded in the report's warnings.
    """
    from reportbench.fetch.urls import normalise_url  # lazy: +506 ms to import (python -X importtime)

    known = {normalise_url(s.url) for s in report.sources.values() if s.url}
    extra: dict[str, Source] = {}
    for key, src in report.sources.items():
        if not src.raw or not src.url:
            continue
        n = 1
        for u in URL_RE.findall(src.raw):
            u = u.rstrip(".,;:*")
            if normalise_url(u) in known:
                continue
            n += 1
            known.add(normalise_url(u))
            extra[f"{key}~{n}"] = Source(key=f"{key}~{n}", url=u, title=src.title, raw=src.raw)
    if not extra:
        return report
    warning = f"{len(extra)} extra URL(s) in multi-URL reference entries kept as {sorted(extra)[:5]}"
    return report.model_copy(update={"sources": {**report.sources, **extra}, "warnings": [*report.warnings, warning]})


@register_kind(KIND)
def run_response_file_system(
    name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path
) -> tuple[list[Report], list[TaskOutcome]]:
    path = spec.get("path")
    if not path or not Path(str(path)).is_file():
        raise SystemError_(f"systems.{name}.path: {path!r} is not a response file")
    try:
        entries = load_responses(str(path))
    except (OSError, ValueError) as exc:
        raise SystemError_(f"systems.{name}.path: {exc}") from exc
    _check_mapping(name, spec, Path(str(path)), tasks, out_dir)
    reports: list[Report] = []
    outcomes: list[TaskOutcome] = []
    for t in tasks:
        e = entries.get(qid_of(t.task_id))
        if e is None:
            outcomes.append(TaskOutcome(task_id=t.task_id, status="missing", reason=f"no id {qid_of(t.task_id)}"))
            continue
        report = parse_response(e["response"], t.task_id, name, str(path))
        reports.append(report)
        outcomes.append(TaskOutcome(task_id=t.task_id, status="ok", path=str(path), report_id=report.report_id))
    return reports, outcomes


# How ResearcherBench's task ids are spelled in file names (docs/mapping.md): a bare number n is q<n>.
TASK_NAMING = TaskNaming(spelled="q<id>", numbers="id_number", number_format="q{n}", number_range=(1, 65),
                         numbers_note="the authors' question ids run 1..65")

def _check_mapping(name: str, spec: dict[str, Any], path: Path, tasks: list[Task], out_dir: Path) -> None:
    """The response ids mapped by ResearcherBench's naming rule (id n -> q<n>; docs/mapping.md): the mapping
    table next to outcomes.jsonl, and the stage stops when an id maps to no task while a task has no answer."""

    ids = list(spec.get("_all_task_ids") or [t.task_id for t in tasks])
    _, rows = map_answer_file(path, ids, TASK_NAMING, subset_full_task_ids(spec))
    mapped = {r.task_id for r in rows if r.status == "mapped"}
    missing = [t for t in ids if t not in mapped]
    share = allowed_missing_share(name, spec.get("allow_missing"))
    err = mapping_error(name, str(path), rows, missing, len(ids), share, TASK_NAMING)
    if err:
        raise SystemError_(err)
    write_mapping(out_dir, rows)


def raw_response(report: Any) -> str:
    """The response as the system wrote it: from its response file or report file; else body + references."""

    path = getattr(report, "path", None)
    if path:
        p = Path(path)
        try:
            if p.suffix == ".json":
                e = load_responses(p).get(qid_of(report.task_id))
                if e is not None:
                    return str(e["response"])
            elif p.is_file():
                return p.read_text(encoding="utf-8")
        except (OSError, ValueError):
            pass
    refs = references_text(report.sources)
    return report.body + (f"\n\n## References\n{refs}\n" if refs else "")


def response_file_question(report: Any) -> str | None:
    """The question text as copied into the response file (mojibake for some ids), if the report has one."""

    path = getattr(report, "path", None)
    if not path or not str(path).endswith(".json"):
        return None
    try:
        e = load_responses(path).get(qid_of(report.task_id))
    except (OSError, ValueError):
        return None
    return str(e["question"]) if e and "question" in e else None
