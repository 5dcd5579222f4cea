"""Judge records and human labels as one shape: a `Rating` per (judge, system, judge task, item).

Why a separate shape: the agreement statistics must not care whether a label came from the offline judge, an
LLM or a person. Everything here is recomputable from the files it reads (judgment parquet files written by
the judge and agreement stages, and the human-label CSV documented in docs/agreement.md).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HUMAN_LABEL_COLUMNS = ("benchmark", "system", "task", "item_id", "label", "annotator")
"""Required CSV columns; optional: `note`. One row per (annotator, item); `task` is the judge task name."""


class HumanLabelError(ValueError):
    """The human-label CSV is malformed; the message names the file, the row and the column."""


@dataclass(frozen=True)
class Rating:
    """One judge's verdict on one item, or its failure (`ok=False`: excluded from statistics, counted)."""

    judge: str
    system: str
    task: str  # judge task, e.g. 'support'
    item_id: str
    task_id: str  # benchmark task (topic): the bootstrap resamples these
    label: str | None
    value: float | None
    ok: bool = True
    input_ids: Mapping[str, str] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.system, self.task, self.item_id)


def _task_id(input_ids: Mapping[str, Any], item_id: str) -> str:
    tid = input_ids.get("task_id")
    if tid:
        return str(tid)
    report = str(input_ids.get("report_id") or "")
    return report.split("/", 1)[-1] if report else item_id


def ratings_from_judgments(judge: str, system: str, judgments: Iterable[Any]) -> list[Rating]:
    """Judgment records -> Ratings. A multi-item batch label ('Barely|Mostly|...', one per rubric item listed in
    input_ids['items']) becomes one sub-rating per rubric item (`<item_id>#<rubric item>`), so agreement is per
    rubric item, not per batch; the batch itself keeps its value (for Spearman)."""
    out: list[Rating] = []
    for j in judgments:
        ids = {str(k): str(v) for k, v in (j.input_ids or {}).items()}
        ok = j.status == "ok"
        value = float(j.value) if ok and j.value is not None and not math.isnan(float(j.value)) else None
        label = j.label if ok else None
        task_id = _task_id(ids, j.item_id)
        parts = label.split("|") if label and "|" in label else None
        sub_items = ids.get("items", "").split(",") if ids.get("items") else []
        if parts is not None and len(parts) == len(sub_items):
            out.append(Rating(judge, system, j.task, j.item_id, task_id, None, value, ok, ids))
            for sub, part in zip(sub_items, parts, strict=True):
                out.append(Rating(judge, system, j.task, f"{j.item_id}#{sub}", task_id, part, None, ok, ids))
            continue
        if not ok and sub_items:  # a failed batch: every rubric item in it failed too
            out.append(Rating(judge, system, j.task, j.item_id, task_id, None, None, False, ids))
            for sub in sub_items:
                out.append(Rating(judge, system, j.task, f"{j.item_id}#{sub}", task_id, None, None, False, ids))
            continue
        out.append(Rating(judge, system, j.task, j.item_id, task_id, label, value, ok, ids))
    return out


def read_human_labels(path: Path, benchmark: str) -> dict[str, list[Rating]]:
    """The human-label CSV -> ratings per judge name `human:<annotator>` (rows of other benchmarks skipped).

    Task ids come from the judge records at join time (the CSV need not repeat them). A label that names a
    number is kept as text; the comparison maps it onto the judge's scale.
    """
    path = Path(path)
    out: dict[str, list[Rating]] = {}
    seen: set[tuple[str, str, str, str]] = set()
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in HUMAN_LABEL_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise HumanLabelError(f"{path}: missing column(s) {missing}; required: {list(HUMAN_LABEL_COLUMNS)}")
        for line, row in enumerate(reader, start=2):
            if row["benchmark"].strip() != benchmark:
                continue
            for col in HUMAN_LABEL_COLUMNS:
                if not (row.get(col) or "").strip():
                    raise HumanLabelError(f"{path}:{line}: empty {col!r}")
            annotator = row["annotator"].strip()
            key = (annotator, row["system"].strip(), row["task"].strip(), row["item_id"].strip())
            if key in seen:
                raise HumanLabelError(f"{path}:{line}: annotator {annotator!r} labelled item {key[3]!r} twice")
            seen.add(key)
            out.setdefault(f"human:{annotator}", []).append(
                Rating(
                    judge=f"human:{annotator}",
                    system=key[1],
                    task=key[2],
                    item_id=key[3],
                    task_id="",
                    label=row["label"].strip(),
                    value=None,
                )
            )
    return out


def write_human_labels(path: Path, rows: Iterable[Mapping[str, str]]) -> Path:
    """Write rows in the documented column order (what the annotation page exports, too)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=[*HUMAN_LABEL_COLUMNS, "note"], extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row.get(k, "") for k in (*HUMAN_LABEL_COLUMNS, "note")})
    return path


def input_ids_json(ids: Mapping[str, str]) -> str:
    return json.dumps(dict(ids), sort_keys=True)
