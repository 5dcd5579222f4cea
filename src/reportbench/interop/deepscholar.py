"""DeepScholar-bench: the authors' nugget files in, their results CSV out (specs/deepscholar.md §1.9, §3.0).

In: `gt_nuggets_outputs/<row>/res.json` = `{qid, query, nuggets: [{text, importance: vital|okay,
assignment: support|partial_support|not_support}], supported_nuggets, partially_supported_nuggets,
nuggets_metrics}` — the recorded nugget creation (and its assignment against the exemplar), so nugget creation
need not be re-judged. `read_gt_nuggets` checks the fields and recomputes their four scores from the nuggets (a
file whose stored metrics disagree with its own nuggets is reported, not trusted).
Out: `results.csv` merged on `baseline_name`, one column per metric, 2 decimals as `Evaluator.aggregate` rounds;
an undefined value is left EMPTY (their reader's `fillna(0)` would make it 0: that is their convention, the file
does not pretend it).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IMPORTANCE = ("vital", "okay")
ASSIGNMENT = ("support", "partial_support", "not_support")


@dataclass(frozen=True)
class GtNuggets:
    qid: str
    nuggets: list[dict[str, str]]
    metrics: dict[str, float]  # recomputed from the nuggets
    stored_metrics_agree: bool


def nugget_metrics(nuggets: list[Mapping[str, str]]) -> dict[str, float]:
    """nuggetizer's calculate_nugget_scores: strict = support only; plain = support + 0.5 partial."""
    def score(subset: list[Mapping[str, str]], strict: bool) -> float:
        if not subset:
            return 0.0
        credit = {"support": 1.0, "partial_support": 0.0 if strict else 0.5, "not_support": 0.0}
        return sum(credit[n["assignment"]] for n in subset) / len(subset)

    vital = [n for n in nuggets if n["importance"] == "vital"]
    return {
        "strict_vital_score": score(vital, True),
        "strict_all_score": score(list(nuggets), True),
        "vital_score": score(vital, False),
        "all_score": score(list(nuggets), False),
    }


def read_gt_nuggets(path: str | Path) -> GtNuggets:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "qid" not in data or not isinstance(data.get("nuggets"), list):
        raise ValueError(f"{path}: expected an object with qid and a nuggets list")
    nuggets = []
    for i, n in enumerate(data["nuggets"]):
        if not isinstance(n, dict) or n.get("importance") not in IMPORTANCE or n.get("assignment") not in ASSIGNMENT:
            raise ValueError(f"{path}: nuggets[{i}]: needs text, importance {IMPORTANCE}, assignment {ASSIGNMENT}")
        nuggets.append({"text": str(n.get("text", "")), "importance": n["importance"], "assignment": n["assignment"]})
    metrics = nugget_metrics(nuggets)
    stored = data.get("nuggets_metrics") or {}
    agree = all(math.isclose(float(stored.get(k, math.nan)), v, abs_tol=1e-9) for k, v in metrics.items())
    return GtNuggets(str(data["qid"]), nuggets, metrics, agree)


def write_results_csv(path: str | Path, rows: Mapping[str, Mapping[str, Any]]) -> Path:
    """{system: {metric: value}} -> results.csv (baseline_name + metric columns, 2 dp, undefined empty)."""
    metrics = sorted({m for r in rows.values() for m in r})
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["baseline_name", *metrics])
        for system, r in rows.items():
            cells = []
            for m in metrics:
                v = r.get(m)
                cells.append("" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{round(float(v), 2)}")
            w.writerow([system, *cells])
    return path


def read_results_csv(path: str | Path) -> dict[str, dict[str, float | None]]:
    with Path(path).open(newline="", encoding="utf-8") as f:
        return {
            row["baseline_name"]: {k: (float(v) if v != "" else None) for k, v in row.items() if k != "baseline_name"}
            for row in csv.DictReader(f)
        }
