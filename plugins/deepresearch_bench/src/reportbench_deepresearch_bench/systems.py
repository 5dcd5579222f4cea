"""System kind `drb_jsonl`: a model's submission in the authors' format, one JSONL file of `{id, prompt, article}`
(their `data/test_data/raw_data/<model>.jsonl`).

A line maps to the task whose prompt is exactly its `prompt` (the authors' join); when the line also carries an
`id`, it must equal that task's id, or the line maps to nothing (never a guess). Each article is written to
`<run>/articles/<task_id>.md` and read with the markdown adapter, so the judge sees the article as submitted.
A malformed line, a line that maps to no task, or a second line for the same task is an `unmapped` outcome
naming the file and line; a task without a line is `missing`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reportbench.systems import SystemError_, TaskOutcome, register_kind
from reportbench.systems.common import isolated_load, subset_full_task_ids
from reportbench.types import Report, Task

KIND = "drb_jsonl"
MAX_BYTES = 200_000_000


@register_kind(KIND)
def run_drb_jsonl(
    name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path
) -> tuple[list[Report], list[TaskOutcome]]:
    from reportbench.reports.base import confined_to

    path = Path(str(spec.get("path") or ""))
    if not path.is_file():
        raise SystemError_(f"systems.{name}.path: {spec.get('path')!r} is not a JSONL file of {{id, prompt, article}}")
    if path.stat().st_size > MAX_BYTES:
        raise SystemError_(f"systems.{name}.path: {path} is larger than {MAX_BYTES} bytes")
    by_prompt = {t.task_prompt: t for t in tasks}
    outside = set(subset_full_task_ids(spec) or ()) - {t.task_id for t in tasks}  # a quick subset's other tasks
    articles: dict[str, str] = {}
    unmapped: list[TaskOutcome] = []
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            unmapped.append(TaskOutcome(task_id="", status="unmapped", path=where, reason=f"not JSON: {exc.msg}"))
            continue
        if (
            not isinstance(obj, dict)
            or not isinstance(obj.get("prompt"), str)
            or not isinstance(obj.get("article"), str)
        ):
            unmapped.append(
                TaskOutcome(task_id="", status="unmapped", path=where, reason="needs string prompt and article")
            )
            continue
        task = by_prompt.get(obj["prompt"])
        if task is None and str(obj.get("id")) in outside:
            continue  # a task of the full release that this quick subset (limit) does not hold: ignored
        if task is None:
            unmapped.append(TaskOutcome(task_id="", status="unmapped", path=where, reason="prompt matches no task"))
            continue
        if "id" in obj and str(obj["id"]) != task.task_id:
            reason = f"id {obj['id']!r} but its prompt is task {task.task_id}"
            unmapped.append(TaskOutcome(task_id="", status="unmapped", path=where, reason=reason))
            continue
        if task.task_id in articles:
            unmapped.append(
                TaskOutcome(task_id="", status="unmapped", path=where, reason=f"second line for task {task.task_id}")
            )
            continue
        articles[task.task_id] = obj["article"]
    folder = out_dir / "articles"
    folder.mkdir(parents=True, exist_ok=True)
    reports: list[Report] = []
    outcomes: list[TaskOutcome] = []
    with confined_to(folder):
        for t in tasks:
            if t.task_id not in articles:
                outcomes.append(TaskOutcome(task_id=t.task_id, status="missing", reason=f"no line in {path}"))
                continue
            f = folder / f"{t.task_id}.md"
            f.write_text(articles[t.task_id], encoding="utf-8")
            report, outcome = isolated_load(f, fmt="markdown", task_id=t.task_id, system=name)
            if report is not None:
                reports.append(report)
            outcomes.append(outcome)
    return reports, outcomes + unmapped


STEERING_FLAGS = ("judge_directed_text", "hidden_text")


def raw_article(report: Any, flags: Any = ()) -> str:
    """The article as submitted (the file the kind wrote), which the authors' judges read in full. When the spine
    flagged text that tries to steer a judge (`flags` of the task's outcome), the judge gets the report as the
    spine cleaned it instead: the body plus its reference list rebuilt from the parsed sources."""
    if report.path and Path(report.path).is_file() and not set(flags or ()) & set(STEERING_FLAGS):
        return Path(report.path).read_text(encoding="utf-8")
    refs = [
        s.raw or f"[{k}] {(s.title or '').strip()} {s.url or ''}".strip()
        for k, s in report.sources.items()
        if not k.startswith("http")
    ]
    return str(report.body) + ("\n\n## References\n" + "\n".join(refs) + "\n" if refs else "")
