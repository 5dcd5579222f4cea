"""Rubric-judge meta-evaluation (paper Table 3): judge labels vs human labels per (question, rubric item).

Human labels come in the authors' meta-eval format, one file per (question, annotator):
`Q{id}_result_{annotator}.json` = `{"rubric_eval": [{"point": str, "covered": bool}, ...], ...}`, in rubric
order. We join on the item's index within the question (the authors matched by word-set Jaccard >= 0.3,
first match wins, and looked weights up by a 50-character prefix, which two items of one question share);
the point text is checked against the rubric so a reordered file fails loudly instead of mis-joining.

Metrics are micro-pooled over every (question, item) pair: the confusion matrix with "covered" as the
positive class, accuracy, precision, recall and F1, unweighted (counts) and weighted (sums of item weights).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from reportbench.protocols.researcherbench.release import task_id_for

Key = tuple[str, str]  # (task_id, item_id)
_FILE_RE = re.compile(r"^Q(\d+)_result_(.+)\.json$")


class MetaEvalError(ValueError):
    """A human-label file that does not line up with the release's rubric."""


def _norm_text(s: str) -> str:
    return " ".join(s.split()).lower()


def _label(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("yes", "no", "true", "false"):
        return value.strip().lower() in ("yes", "true")
    raise MetaEvalError(f"{where}: covered must be a boolean (or yes/no), got {value!r}")


def load_human_labels(folder: str | Path, release: Any, annotator: str = "A") -> dict[Key, bool]:
    """(task_id, item_id) -> covered, from every `Q{id}_result_{annotator}.json` in `folder`."""

    out: dict[Key, bool] = {}
    files = sorted(p for p in Path(folder).glob("Q*_result_*.json") if _FILE_RE.match(p.name))
    for path in files:
        m = _FILE_RE.match(path.name)
        assert m is not None
        if m.group(2) != annotator:
            continue
        tid = task_id_for(int(m.group(1)))
        items = release.rubric(tid)
        if not items:
            raise MetaEvalError(f"{path.name}: question {m.group(1)} is not in the release")
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = data.get("rubric_eval") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise MetaEvalError(f"{path.name}: no 'rubric_eval' list")
        if len(rows) != len(items):
            raise MetaEvalError(f"{path.name}: {len(rows)} labels for {len(items)} rubric items")
        for i, (row, item) in enumerate(zip(rows, items, strict=True)):
            where = f"{path.name}[{i}]"
            if not isinstance(row, dict) or "covered" not in row:
                raise MetaEvalError(f"{where}: needs 'covered'")
            if "point" in row and _norm_text(str(row["point"])) != _norm_text(item.text):
                raise MetaEvalError(f"{where}: point text differs from rubric item {item.item_id} (join is by index)")
            out[(tid, item.item_id)] = _label(row["covered"], where)
    return out


def judge_labels(judgments: Iterable[Any]) -> tuple[dict[Key, bool], int]:
    """(task_id, item_id) -> covered from rubric judgments, and how many failed (left out, counted)."""
    out: dict[Key, bool] = {}
    failed = 0
    for j in judgments:
        if not j.ok:
            failed += 1
            continue
        out[(j.input_ids["task_id"], j.input_ids["item_id"])] = bool(j.value)
    return out, failed


def _scores(tp: float, fp: float, fn: float, tn: float) -> dict[str, float]:
    total = tp + fp + fn + tn
    prec = tp / (tp + fp) if tp + fp else math.nan
    rec = tp / (tp + fn) if tp + fn else math.nan
    f1 = 2 * prec * rec / (prec + rec) if prec == prec and rec == rec and prec + rec else math.nan
    return {
        "accuracy": (tp + tn) / total if total else math.nan,
        "precision": prec,
        "recall": rec,
        "f1": f1,
    }


def meta_evaluate(
    human: Mapping[Key, bool],
    judge: Mapping[Key, bool],
    weights: Mapping[Key, float],
    *,
    judge_failed: int = 0,
) -> dict[str, Any]:
    """Micro-pooled agreement over the pairs both sides labelled; unweighted and weight-summed."""
    pairs = sorted(set(human) & set(judge))
    cm = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    wcm = {"tp": 0.0, "fp": 0.0, "fn": 0.0, "tn": 0.0}
    for k in pairs:
        h, j = human[k], judge[k]
        cell = "tp" if h and j else "fp" if j else "fn" if h else "tn"
        cm[cell] += 1
        wcm[cell] += float(weights[k])
    return {
        "n_pairs": len(pairs),
        "n_human_only": len(set(human) - set(judge)),
        "n_judge_failed": judge_failed,
        "confusion": cm,
        "weighted_confusion": wcm,
        "unweighted": _scores(**cm),
        "weighted": _scores(**wcm),
    }


def meta_eval_from_files(release: Any, human_dir: str | Path, judgments: Iterable[Any], annotator: str = "A") -> dict:
    """Everything in one call: human files + our rubric judgments of the same (question, system) responses."""
    weights = {(r.task_id, r.item_id): float(r.weight) for r in release.table("rubric_items")}
    judged, failed = judge_labels(judgments)
    return meta_evaluate(load_human_labels(human_dir, release, annotator), judged, weights, judge_failed=failed)
