"""What the judge saw: the chat messages of every judgment, re-rendered for the viewer.

Why: a judgment record keeps the prompt id and hash and the ids of its inputs, not the messages sent. The item
plan is deterministic, so replaying the benchmark's judge steps over the stored run (earlier steps' answers taken
from the stored records, never from a judge) gives back each item's typed input; rendering it with the prompt
file gives the messages. They are shown only when the prompt file's sha256 equals the record's `prompt_hash`
(the prompt at that hash); otherwise the viewer says why it shows none. Nothing here calls a judge.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("reportbench")

SOURCE_RERENDERED = "re-rendered from the stored inputs and the prompt at the recorded hash"


@dataclass
class Rendered:
    """The messages of one judgment item (or why there are none); `source` says where they come from."""

    messages: list[dict[str, str]] = field(default_factory=list)
    source: str = SOURCE_RERENDERED
    prompt_sha256: str | None = None
    note: str | None = None  # set when no messages are shown: why


def _render(task_name: str, prompts_mode: str, inputs: Any, prompts_dir: Path) -> tuple[list[dict[str, str]], str]:
    """(messages, sha256 of the prompt) as the LLM judge renders them (judges/llm.py)."""
    from reportbench.judges.tasks import get_task  # lazy: +286 ms to import (python -X importtime)

    task = get_task(task_name)
    if prompts_mode == "authors":
        from reportbench.prompt_packs.judging import authors_prompt  # lazy: +41 ms to import (python -X importtime)

        prompt = authors_prompt(task)
        return prompt.messages(inputs), str(prompt.sha256)
    from reportbench.prompts import load_prompt  # lazy: +21 ms to import (python -X importtime)

    tmpl = load_prompt(task.prompt_id, prompts_dir)
    return tmpl.render(**inputs.prompt_values()), tmpl.sha256


def rerender_messages(
    params: Mapping[str, Any],
    root: Path,
    benchmark: str,
    release: str,
    system: str,
    member: str,
    records: Mapping[str, list[Mapping[str, Any]]],
    only: set[int] | None = None,
    reports: list[Any] | None = None,
) -> dict[tuple[str, str], Rendered]:
    """(step, item_id) -> Rendered for one (system, member); `records` = step -> its stored judgment rows; with
    `only` (ids of some of those rows), only those rows' messages are rendered.

    Failures are per system (a release or run that cannot be read gives an empty map, logged) or per item (a
    `Rendered` with a note), never raised: the viewer still renders everything else."""
    from reportbench.benchmarks import get_benchmark  # lazy: +203 ms to import (python -X importtime)
    from reportbench.judges.base import Judgment  # lazy: +83 ms to import (python -X importtime)

    # lazy: +181 ms to import (python -X importtime)
    from reportbench.pipeline import judge_config, judge_context
    from reportbench.prompt_packs.judging import prompts_mode  # lazy: +41 ms to import (python -X importtime)

    data = root / "data"
    try:
        spec = get_benchmark(benchmark)
        ctx = judge_context(
            params, benchmark, system, member, data / "releases" / benchmark / release,
            data / "runs" / benchmark / release / system, data / "pages" / benchmark / release,
            reports=reports if reports is not None and items_per_task(spec) else None,
        )  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - the pages still render, without messages
        log.warning("%s/%s/%s: judge inputs not re-rendered (%s)", benchmark, release, system, exc)
        return {}
    out: dict[tuple[str, str], Rendered] = {}
    for step in spec.judge_steps:
        try:
            if step.kind == "compute":
                if step.compute is not None:
                    ctx.derived[step.derived_table or step.name] = step.compute(ctx)
                continue
            if step.items is None:
                continue
            rows = list(records.get(step.name) or [])
            ctx.judgments[step.name] = [Judgment.model_validate(_judgment_row(r)) for r in rows]
            if step.derive is not None:  # as the judge stage does: later steps' items read it (DRB: `cleaned`)
                ctx.derived[step.derived_table or step.name] = step.derive(ctx, ctx.judgments[step.name])
            by_item = {str(r.get("item_id")): r for r in rows}
            cfg = judge_config(params, step.judge_task, benchmark, member)
            mode, pdir = prompts_mode(cfg), root / str(cfg.get("prompts_dir") or "prompts")
            for item in step.items(ctx):
                rec = by_item.get(item.item_id)
                if rec is None or (only is not None and id(rec) not in only):  # `only`: records with a page
                    continue
                out[(step.name, item.item_id)] = _one(step.judge_task, mode, item, rec, pdir)
        except Exception as exc:  # noqa: BLE001 - later steps may need this one: stop here, say why
            log.warning("%s/%s/%s: step %s not re-rendered (%s)", benchmark, release, system, step.name, exc)
            break
    return out


def items_per_task(spec: Any) -> bool:
    """Whether the items of a task's judgments can be re-planned from that task's report and records alone: per
    report (`items_per_report`), or a benchmark that declares its steps task-local (`judge_items_per_task`: LRB's
    claims, relevance and support steps). Then the viewer re-plans only the tasks of the pages it writes."""
    return items_per_report(spec) or bool(getattr(spec, "judge_items_per_task", False))


def items_per_report(spec: Any) -> bool:
    """Whether a benchmark's judge items of a report depend on that report alone: every step a judge step with
    no derived table (a compute or derive step may read across reports). Then the viewer builds the items of the
    pages it writes from their reports only, not from every report of the run (~1 GB parsed at 5,000 tasks)."""
    return all(st.kind == "judge" and st.derive is None for st in spec.judge_steps)


def _judgment_row(row: Mapping[str, Any]) -> dict[str, Any]:
    import json

    from reportbench.judges.base import Judgment  # lazy: +83 ms to import (python -X importtime)

    data = {k: v for k, v in row.items() if k in Judgment.model_fields}
    ids = data.get("input_ids")
    data["input_ids"] = json.loads(ids) if isinstance(ids, str) and ids else (ids or {})
    return data


def _one(task: str, mode: str, item: Any, rec: Mapping[str, Any], prompts_dir: Path) -> Rendered:
    recorded = str(rec.get("prompt_hash") or "")
    try:
        messages, sha = _render(task, mode, item.typed(), prompts_dir)
    except Exception as exc:  # noqa: BLE001 - e.g. the authors' pack is not cached offline
        return Rendered(note=f"cannot re-render: {type(exc).__name__}: {str(exc)[:300]}")
    if recorded and sha != recorded:
        return Rendered(
            prompt_sha256=sha,
            note=f"the prompt changed since this judgment (now sha256 {sha[:12]}, recorded {recorded[:12]}): "
            "its messages are not shown",
        )
    return Rendered(messages=messages, prompt_sha256=sha)
