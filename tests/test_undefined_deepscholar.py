"""DeepScholar-bench with nothing checkable (issue 21 §2): no citation count exists for any cited paper
(offline, empty cache), so Document Importance is undefined (`no_counts`) in every output — not the 0.000
(1/63) that the one report with no arXiv link (a protocol 0: it needs no count) used to produce."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from reportbench.jsonio import write_json
from reportbench.metrics.leaderboard import build_leaderboard, per_task_columns, write_leaderboard
from reportbench.protocols.deepscholar.items import DeepScholarParams, ReleaseContext
from reportbench.protocols.deepscholar.metrics import score_system
from reportbench.types import Report, Sentence, Source, Task
from undefined_helpers import assert_undefined_everywhere

pytestmark = pytest.mark.core

SENTENCE = "Optimal income taxation was formalised by early work on incentives"


def task(i: int) -> Task:
    return Task(
        task_id=f"2506.0000{i}v1",
        title=f"Paper {i}",
        abstract="We study retrieval-augmented models for fiscal policy design.",
        published_date="2025-06-01T00:00:00+00:00",
        task_prompt="Write a related works section.",
        exemplar="\\section{Related Work} Prior work.",
    )


def report(t: Task, arxiv_ids: list[str], system: str = "s") -> Report:
    sources = {str(k): Source(key=str(k), title=f"T{k}", arxiv_id=a) for k, a in enumerate(arxiv_ids)}
    keys = list(sources)
    sent = Sentence(index=0, text=SENTENCE + ".", claim=SENTENCE + ".", citation_keys=keys)
    return Report(
        report_id=f"{system}:{t.task_id}",
        task_id=t.task_id,
        system=system,
        format="test",
        body=sent.text,
        sentences=[sent],
        sources=sources,
    )


def scored(system: str, counts: dict[str, int | None], ids: list[list[str]]) -> object:
    tasks = [task(i) for i in range(len(ids))]
    reports = [report(t, a, system) for t, a in zip(tasks, ids, strict=True)]
    return score_system(system, tasks, reports, {}, ReleaseContext(), counts, DeepScholarParams())


def write_outputs(out: Path, scores: list) -> Path:
    summaries = {sc.system: sc.summary for sc in scores}
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "systems.json", summaries)  # what the score stage writes: NaN -> null
    per_task = pl.concat([sc.per_task.select(per_task_columns(sc.per_task)) for sc in scores])
    lb = build_leaderboard([sc.summary for sc in scores], per_task, protocol="deepscholar")
    write_leaderboard(lb, out)
    return out



def test_document_importance_without_counts_is_no_counts(tmp_path: Path) -> None:
    # two reports cite arXiv papers with no count anywhere; the third cites no arXiv paper (protocol 0)
    none = scored("nocounts", {}, [["2401.00001", "2401.00002"], ["2401.00003"], []])
    di = none.summary["metrics"]["document_importance"]
    assert math.isnan(di["mean"]) and di["reason"] == "no_counts" and di["mean_without_counts"] == 0.0
    # with counts the same layout is a number, and the report without a link still scores its protocol 0
    some = scored(
        "counted",
        {"2401.00001": 700, "2401.00002": 100, "2401.00003": 50},
        [["2401.00001", "2401.00002"], ["2401.00003"], []],
    )
    assert some.summary["metrics"]["document_importance"]["mean"] == pytest.approx((400 / 647.5 + 50 / 647.5 + 0) / 3)
    out = write_outputs(tmp_path / "m", [none, some])
    assert_undefined_everywhere(out, "nocounts", "document_importance", "no_counts")
