"""Stage 5 of the live builder: label the exemplars through the judge layer.

* important references: one `important_reference` judgment per exemplar reference (the paper's Fig. 4
  prompt; §1.8), which gives Reference Coverage its target set;
* nuggets, the nuggetizer protocol as DeepScholar ran it on the exemplar (§1.9): `nugget_create` on the
  exemplar, `nugget_score` (vital/okay) in windows of 10, vital first (stable), at most 30 kept, then
  `nugget_assign` of those nuggets against the exemplar itself (the stored `self_assignment`).

The judge comes from the root `judge` params (`make_judge`, offline by default; `-S judge=llm` for a real
release), so the judge cache makes a rerun free. Every judgment is written as parquet. A paper whose
labels cannot be completed (a failed importance or score judgment, no nuggets) is dropped with the reason;
a failed assign window only marks those nuggets `failed`, as the release format allows.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from reportbench.judges.base import Judgment
from reportbench.judges.runner import run_judgments_sync, usage_summary
from reportbench.judges.tasks.important_reference import (  # shared with protocols.deepscholar.labelling
    ImportanceQuestion,
    is_important,
    judge_importance,
)
from reportbench.judges.tasks.nugget_assign import NuggetAssignInput
from reportbench.judges.tasks.nugget_create import NuggetCreateInput
from reportbench.judges.tasks.nugget_score import NuggetScoreInput
from reportbench.live_builder.filter import KeptPaper
from reportbench.live_builder.live_config import LabelParams
from reportbench.live_builder.recover import RecoveredRef
from reportbench.live_builder.stage_io import DropRecord
from reportbench.protocols.deepscholar.items import NUGGET_QUERY_TEMPLATE

log = logging.getLogger(__name__)

IMPORTANT_SCHEMA: dict[str, Any] = {
    "task_id": pl.String,
    "ref_key": pl.String,
    "is_important": pl.Boolean,
    "judge_id": pl.String,
    "explanation": pl.String,
}
NUGGET_SCHEMA: dict[str, Any] = {
    "task_id": pl.String,
    "index": pl.Int64,
    "text": pl.String,
    "importance": pl.String,
    "self_assignment": pl.String,
}


@dataclass
class LabelResult:
    important: list[dict[str, Any]] = field(default_factory=list)
    nuggets: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[DropRecord] = field(default_factory=list)
    judgments: dict[str, list[Judgment]] = field(default_factory=dict)

    def usage(self) -> dict[str, Any]:
        return {task: usage_summary(js) for task, js in sorted(self.judgments.items())}


def nugget_query(abstract: str) -> str:
    return NUGGET_QUERY_TEMPLATE.format(abstract=abstract)


def _windows(items: Sequence[str], size: int) -> list[list[str]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def _parsed(j: Judgment) -> dict[str, Any]:
    return json.loads(j.parsed) if j.ok and j.parsed else {}


def _drop(result: LabelResult, dropped: dict[str, str], task_id: str, code: str, reason: str) -> None:
    if task_id not in dropped:
        dropped[task_id] = code
        result.dropped.append(DropRecord(arxiv_id=task_id, stage="label", reason_code=code, reason=reason))


def label_papers(
    kept: Sequence[KeptPaper],
    refs: Sequence[RecoveredRef],
    params: LabelParams,
    judge_for: Any,
    *,
    progress: bool = False,
) -> LabelResult:
    """`judge_for(task_name)` returns a Judge (the stage passes `make_judge(task, judge_config(params, task))`)."""
    result = LabelResult()
    dropped: dict[str, str] = {}
    papers = {kp.listing.arxiv_id: kp for kp in kept}
    refs_by_task: dict[str, list[RecoveredRef]] = defaultdict(list)
    for r in refs:
        refs_by_task[r.task_id].append(r)

    if params.important_refs:
        _label_important(result, dropped, papers, refs_by_task, judge_for, progress)
    if params.nuggets:
        _label_nuggets(result, dropped, papers, params, judge_for, progress)
    result.important = [r for r in result.important if r["task_id"] not in dropped]
    result.nuggets = [n for n in result.nuggets if n["task_id"] not in dropped]
    return result


def _label_important(
    result: LabelResult,
    dropped: dict[str, str],
    papers: dict[str, KeptPaper],
    refs_by_task: dict[str, list[RecoveredRef]],
    judge_for: Any,
    progress: bool,
) -> None:
    questions = [
        ImportanceQuestion(
            task_id=tid,
            ref_key=r.ref_key,
            paper_title=kp.listing.title,
            paper_abstract=kp.listing.abstract,
            related_work=kp.extracted.clean_section or "",
            cited_title=r.title or r.ref_key,
            cited_authors=", ".join(r.arxiv_authors or r.bib_authors),
            cited_content=r.abstract or "",
        )
        for tid, kp in papers.items()
        for r in sorted(refs_by_task.get(tid, []), key=lambda r: r.position)
    ]
    js = judge_importance(questions, judge_for("important_reference"), progress=progress)
    result.judgments["important_reference"] = list(js)
    for j in js:
        tid, key = j.input_ids["task_id"], j.input_ids["ref_key"]
        if not j.ok:
            _drop(result, dropped, tid, "label_failed", f"important_reference for {key!r} failed: {j.error}")
            continue
        result.important.append(
            {
                "task_id": tid,
                "ref_key": key,
                "is_important": is_important(j),
                "judge_id": j.judge_id,
                "explanation": j.explanation,
            }
        )


def _label_nuggets(
    result: LabelResult,
    dropped: dict[str, str],
    papers: dict[str, KeptPaper],
    params: LabelParams,
    judge_for: Any,
    progress: bool,
) -> None:
    query = {tid: nugget_query(kp.listing.abstract) for tid, kp in papers.items()}
    passage = {tid: kp.extracted.clean_section or "" for tid, kp in papers.items()}

    # create: one call per exemplar (a single context window)
    create_items = [
        (
            tid,
            NuggetCreateInput(query=query[tid], passage=passage[tid], max_nuggets=params.max_nuggets),
            {"task_id": tid},
        )
        for tid in papers
    ]
    created = run_judgments_sync(judge_for("nugget_create"), create_items, desc="nugget_create", progress=progress)
    result.judgments["nugget_create"] = list(created)
    texts: dict[str, list[str]] = {}
    for j in created:
        tid = j.input_ids["task_id"]
        nuggets = [" ".join(str(n).split()) for n in _parsed(j).get("nuggets", []) if str(n).strip()]
        if not j.ok:
            _drop(result, dropped, tid, "label_failed", f"nugget_create failed: {j.error}")
        elif not nuggets:
            _drop(result, dropped, tid, "no_nuggets", "nugget_create returned no nuggets")
        else:
            texts[tid] = nuggets

    # score: windows of `window` nuggets
    score_items = []
    for tid, nuggets in texts.items():
        for w, chunk in enumerate(_windows(nuggets, params.window)):
            score_items.append(
                (f"{tid}#w{w}", NuggetScoreInput(query=query[tid], nuggets=chunk), {"task_id": tid, "window": str(w)})
            )
    scored = run_judgments_sync(judge_for("nugget_score"), score_items, desc="nugget_score", progress=progress)
    result.judgments["nugget_score"] = list(scored)
    importance: dict[str, dict[int, list[str]]] = defaultdict(dict)
    for j in scored:
        tid, w = j.input_ids["task_id"], int(j.input_ids["window"])
        if not j.ok:
            _drop(result, dropped, tid, "label_failed", f"nugget_score window {w} failed: {j.error}")
            continue
        importance[tid][w] = list(_parsed(j).get("importance", []))

    # vital first (stable), keep max_nuggets
    final: dict[str, list[tuple[str, str]]] = {}
    for tid, nuggets in texts.items():
        if tid in dropped:
            continue
        labels = [lab for w in sorted(importance[tid]) for lab in importance[tid][w]]
        pairs = list(zip(nuggets, labels, strict=True))
        pairs.sort(key=lambda p: 0 if p[1] == "vital" else 1)
        final[tid] = pairs[: params.max_nuggets]

    # assign against the exemplar itself
    assign_items = []
    for tid, pairs in final.items():
        for w, chunk in enumerate(_windows([t for t, _ in pairs], params.window)):
            assign_items.append(
                (
                    f"{tid}#w{w}",
                    NuggetAssignInput(query=query[tid], passage=passage[tid], nuggets=chunk),
                    {"task_id": tid, "window": str(w)},
                )
            )
    assigned = run_judgments_sync(judge_for("nugget_assign"), assign_items, desc="nugget_assign", progress=progress)
    result.judgments["nugget_assign"] = list(assigned)
    assignment: dict[str, dict[int, list[str]]] = defaultdict(dict)
    for j in assigned:
        tid, w = j.input_ids["task_id"], int(j.input_ids["window"])
        assignment[tid][w] = list(_parsed(j).get("labels", [])) if j.ok else []
    for tid, pairs in final.items():
        for i, (text, imp) in enumerate(pairs):
            w, k = divmod(i, params.window)
            labels = assignment[tid].get(w) or []
            result.nuggets.append(
                {
                    "task_id": tid,
                    "index": i,
                    "text": text,
                    "importance": imp,
                    "self_assignment": labels[k] if k < len(labels) else "failed",
                }
            )


def important_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    rows = sorted(rows, key=lambda r: (r["task_id"], r["ref_key"]))
    return pl.DataFrame(rows, schema=IMPORTANT_SCHEMA)


def nugget_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    rows = sorted(rows, key=lambda r: (r["task_id"], r["index"]))
    return pl.DataFrame(rows, schema=NUGGET_SCHEMA)
