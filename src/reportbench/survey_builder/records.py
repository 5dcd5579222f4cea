"""Records shared by the survey-builder stages: drops (every item that leaves, with its reason), filter verdicts,
and the judge runner glue.

Why one drop schema for surveys, sections, queries and rubric items: the release card and the DVC metrics count
drops per stage and reason, and a maintainer auditing a release wants one table to query.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict

from reportbench.judges.base import JudgeInput, JudgeTask, Judgment
from reportbench.judges.factory import make_judge
from reportbench.live_builder.stage_io import write_parquet

ItemKind = Literal["survey", "section", "query", "rubric_set", "rubric_item"]
DROP_SCHEMA: dict[str, Any] = {
    "item_id": pl.String,
    "kind": pl.String,
    "stage": pl.String,
    "reason_code": pl.String,
    "reason": pl.String,
}
VERDICT_SCHEMA: dict[str, Any] = {
    "query_id": pl.String,
    "order": pl.Int64,
    "filter": pl.String,
    "kind": pl.String,
    "judgment_item": pl.String,
    "value": pl.Float64,
    "passed": pl.Boolean,
    "detail": pl.String,
}


class BuildError(RuntimeError):
    """The build cannot go on (nothing survived a stage, every listing query failed): one line, exit 2."""


class Drop(BaseModel):
    """Something that left the build, where, and why (none leaves silently)."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    kind: ItemKind
    stage: str
    reason_code: str
    reason: str


class Verdict(BaseModel):
    """One filter's decision on one query: a judge task's parsed verdict, or a rule's measurement."""

    model_config = ConfigDict(extra="forbid")

    query_id: str
    order: int
    filter: str
    kind: Literal["judge", "rule"]
    judgment_item: str | None = None
    value: float | None = None
    passed: bool
    detail: str


def write_drops(path: Path, drops: Iterable[Drop]) -> int:
    rows = sorted((d.model_dump() for d in drops), key=lambda r: (r["stage"], r["item_id"], r["reason_code"]))
    write_parquet(path, pl.DataFrame(rows, schema=DROP_SCHEMA))
    return len(rows)


def read_drops(path: Path) -> list[Drop]:
    if not path.is_file():
        return []
    return [Drop.model_validate(r) for r in pl.read_parquet(path, glob=False).iter_rows(named=True)]


def write_verdicts(path: Path, verdicts: Iterable[Verdict]) -> int:
    rows = sorted((v.model_dump() for v in verdicts), key=lambda r: (r["query_id"], r["order"]))
    write_parquet(path, pl.DataFrame(rows, schema=VERDICT_SCHEMA))
    return len(rows)


def drop_counts(drops: Sequence[Drop]) -> dict[str, int]:
    return dict(sorted(Counter(d.reason_code for d in drops).items()))


def parsed(j: Judgment) -> dict[str, Any]:
    return json.loads(j.parsed) if j.ok and j.parsed else {}


JudgeFactory = Callable[[JudgeTask], Any]
Item = tuple[str, JudgeInput, dict[str, str]]


@dataclass
class JudgeLog:
    """Every judgment a stage made, by task: written as parquet, summarised as usage."""

    judge_for: JudgeFactory
    progress: bool = False
    judgments: dict[str, list[Judgment]] = field(default_factory=dict)

    def run(self, task: JudgeTask, items: Sequence[Item]) -> dict[str, Judgment]:
        """item id -> Judgment (failures included), in one concurrent batch."""
        from reportbench.judges.runner import run_judgments_sync  # lazy: +47 ms to import (python -X importtime)

        if not items:
            self.judgments.setdefault(task.name, [])
            return {}
        js = run_judgments_sync(self.judge_for(task), list(items), desc=task.name, progress=self.progress)
        self.judgments.setdefault(task.name, []).extend(js)
        return {j.item_id: j for j in js}

    def write(self, out_dir: Path) -> dict[str, Any]:
        # lazy: +47 ms to import (python -X importtime)
        from reportbench.judges.runner import usage_summary, write_judgments

        out_dir.mkdir(parents=True, exist_ok=True)
        usage = {}
        for task, js in sorted(self.judgments.items()):
            write_judgments(out_dir / f"{task}.parquet", sorted(js, key=lambda j: j.item_id))
            u = usage_summary(js)
            u.pop("wall_s", None)
            usage[task] = u
        return usage


def judge_factory(params: dict[str, Any], generator_model: str | None) -> JudgeFactory:
    """The root `judge` group with the generator role applied: `live_researchqa.generator_model` sets the model
    of every step unless `judge.task_models[<task>]` names one. Always our prompts (no authors' pack exists)."""
    from reportbench.pipeline import judge_config  # lazy: +348 ms to import (python -X importtime)

    def make(task: JudgeTask) -> Any:
        cfg = judge_config(params, task.name)
        if generator_model and not (cfg.get("task_models") or {}).get(task.name):
            cfg["model"] = generator_model
        cfg["prompts"] = "ours"
        return make_judge(task, cfg)

    return make
