"""ResearcherBench: our scores in the authors' result files (spec §2.1-2.2), and back.

- `results/rubric_eval/<M>/<M>_evaluation_results.txt`: `"Model: <M>\\nAverage coverage: 0.xxxx\\n" + "=" * 50`,
  the plain mean of the per-question recalls rounded to 4 dp, over the questions evaluated (the authors'
  denominator is the number of results, not 65).
- `results/factual_eval/<M>/factual_results.json`: a list of `{id, model, faithfulness_score,
  groundedness_score, total_claims, verified_claims, claims_details: [{claim, context, source, result}]}`.
A question we left undefined or failed is not written (as their code writes only successful questions); the
count written is returned, so a caller can say how many were left out.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

_TXT = re.compile(r"^Model: (?P<model>.+)\nAverage coverage: (?P<avg>\d+\.\d{4})\n={50}\n?$")


def evaluation_results_text(model: str, recalls: Iterable[float]) -> tuple[str, int]:
    """(file text, questions counted): their mean of per-question recalls rounded to 4 dp."""
    vals = [round(float(r), 4) for r in recalls if r is not None and not math.isnan(float(r))]
    if not vals:
        raise ValueError(f"{model}: no evaluated question: their file would divide by zero")
    return f"Model: {model}\nAverage coverage: {sum(vals) / len(vals):.4f}\n" + "=" * 50 + "\n", len(vals)


def write_evaluation_results(out_dir: str | Path, model: str, recalls: Iterable[float]) -> Path:
    text, _ = evaluation_results_text(model, recalls)
    path = Path(out_dir) / "rubric_eval" / model / f"{model}_evaluation_results.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def read_evaluation_results(path: str | Path) -> tuple[str, float]:
    """(model, average coverage) of an authors' `<M>_evaluation_results.txt`."""
    text = Path(path).read_text(encoding="utf-8")
    m = _TXT.match(text)
    if m is None:
        raise ValueError(f"{path}: not in the authors' format ('Model: <M>', 'Average coverage: 0.xxxx', 50 '=')")
    return m["model"], float(m["avg"])


def factual_record(qid: int | str, model: str, claims: list[Mapping[str, Any]], faithfulness: float | None,
                   groundedness: float | None) -> dict[str, Any]:
    """One question in their factual_results.json shape; `result` keeps their labels (Yes/No/Unknown/...)."""
    results = [str(c.get("result", "")) for c in claims]
    return {
        "id": qid,
        "model": model,
        "faithfulness_score": faithfulness,
        "groundedness_score": groundedness,
        "total_claims": len(claims),
        "verified_claims": sum(r in ("Yes", "No") for r in results),
        "claims_details": [
            {k: c.get(k, "") for k in ("claim", "context", "source", "result")} for c in claims
        ],
    }


def write_factual_results(out_dir: str | Path, model: str, records: list[dict[str, Any]]) -> Path:
    path = Path(out_dir) / "factual_eval" / model / "factual_results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_factual_results(path: str | Path) -> list[dict[str, Any]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of per-question records")
    want = {"id", "model", "faithfulness_score", "groundedness_score", "total_claims", "verified_claims",
            "claims_details"}
    for i, rec in enumerate(data):
        missing = want - set(rec) if isinstance(rec, dict) else want
        if missing:
            raise ValueError(f"{path}: record {i}: missing {sorted(missing)}")
    return data
