"""LiveResearchBench (DeepEval): the authors' `summary_<ts>.json`, in and out (spec §3 outputs).

Shape: `{metadata: {provider, model, graded_at, total_reports, criteria_evaluated, input_metadata},
results_by_model: {<system>: {<criterion>: {mean, count, min, max}}}, overall_results: {...}}`. The importer
gives `{system: {criterion: (mean, count)}}` without re-judging; the exporter writes our per-report scores in
that shape (means over the reports graded, as their summary does; `count` says how many). A criterion without a
value is `mean: null` with its `reason`, and reports left out of a mean are counted (`n_left_out`, `left_out`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def summary_json(provider: str, model: str, graded_at: str,
                 scores: Mapping[str, Mapping[str, list[float]]],
                 left_out: Mapping[str, Mapping[str, Mapping[str, int]]] | None = None,
                 overall: str | None = None) -> dict[str, Any]:
    """Their summary for one judge from {system: {criterion: [per-report score]}}. Every criterion in
    `criteria_evaluated` is under every system: a mean over the defined values, or `mean: null` with the `reason`
    (from `left_out`, {system: {criterion: {reason: n_reports}}}); reports left out of a mean are counted under
    `n_left_out` / `left_out`. `overall_results` says why it holds no value (`overall`)."""
    left_out = left_out or {}
    criteria = {c for crits in scores.values() for c in crits} | {c for g in left_out.values() for c in g}
    by_model: dict[str, dict[str, Any]] = {}
    total = 0
    for system in sorted(set(scores) | set(left_out)):
        crits = scores.get(system, {})
        out: dict[str, Any] = {}
        for crit in sorted(criteria):
            values = crits.get(crit, [])
            vals = [float(v) for v in values if v is not None and not math.isnan(float(v))]
            gaps = dict(left_out.get(system, {}).get(crit, {}))
            if len(vals) < len(values) and not gaps:
                gaps = {"undefined (reason not given)": len(values) - len(vals)}
            if vals:
                out[crit] = {"mean": sum(vals) / len(vals), "count": len(vals), "min": min(vals), "max": max(vals)}
                if gaps:
                    out[crit] |= {"n_left_out": sum(gaps.values()), "left_out": gaps}
            else:
                reason = "; ".join(f"{r} (x{n})" for r, n in sorted(gaps.items())) or "no report was graded"
                out[crit] = {"mean": None, "count": 0, "min": None, "max": None, "reason": reason}
        total += max((len(v) for v in crits.values()), default=0)
        by_model[system] = out
    return {
        "metadata": {
            "provider": provider,
            "model": model,
            "graded_at": graded_at,
            "total_reports": total,
            "criteria_evaluated": sorted(criteria),
            "input_metadata": {"source": "reportbench"},
        },
        "results_by_model": by_model,
        "overall_results": {"value": None, "reason": overall or "not computed: no overall was given"},
    }


def write_summary(path: str | Path, summary: Mapping[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_summary(path: str | Path) -> dict[str, dict[str, tuple[float, int]]]:
    """{system: {criterion: (mean, count)}} from an authors' summary JSON; depth keeps its win_rate."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    by_model = data.get("results_by_model") if isinstance(data, dict) else None
    if not isinstance(by_model, dict):
        raise ValueError(f"{path}: no results_by_model object (not an authors' summary JSON)")
    out: dict[str, dict[str, tuple[float, int]]] = {}
    for system, crits in by_model.items():
        row = {}
        for crit, v in (crits or {}).items():
            if not isinstance(v, dict):
                raise ValueError(f"{path}: results_by_model.{system}.{crit}: expected an object")
            if "mean" in v and v["mean"] is None:
                continue  # ours: no value, with its `reason` (never read as 0)
            if "mean" in v:
                row[crit] = (float(v["mean"]), int(v.get("count", 0)))
            elif "win_rate" in v:
                row[crit] = (float(v["win_rate"]), int(v.get("total", 0)))
            else:
                raise ValueError(f"{path}: results_by_model.{system}.{crit}: neither mean nor win_rate")
        out[system] = row
    return out


# -- graded results (incremental/<criterion>_results.jsonl), in -------------------------------------------------

def payload_score(criterion: str, payload: dict[str, Any]) -> float | None:
    """The per-report number their summary averages: presentation average_pass_rate, coverage
    percentage_addressed, pointwise `score`; None for depth (counted as wins, not averaged) or an empty payload."""
    summary = payload.get("summary") if isinstance(payload.get("summary"), dict) else {}
    for key in ("average_pass_rate", "percentage_addressed"):
        if key in summary:
            return float(summary[key])
    if "score" in payload and criterion != "depth":
        return float(payload["score"])
    return None


def read_graded(path: str | Path) -> list[dict[str, Any]]:
    """One `incremental/<criterion>_results.jsonl`: rows {query_id, model_name, criterion, score, payload}.
    Keyed by (model_name, query_id): their resume bug (query_id only) cannot copy grades across systems here; a
    duplicate (model_name, query_id) is an error naming the line."""
    path = Path(path)
    criterion = path.name.removesuffix("_results.jsonl")
    out, seen = [], set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            qid, model = str(row["query_id"]), str(row["model_name"])
            payload = row[f"{criterion}_grading_results"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}: line {n}: not a graded row ({type(exc).__name__}: {exc})") from None
        if (model, qid) in seen:
            raise ValueError(f"{path}: line {n}: ({model}, {qid}) graded twice")
        seen.add((model, qid))
        out.append({"query_id": qid, "model_name": model, "criterion": criterion,
                    "score": payload_score(criterion, payload), "payload": payload})
    return out


def means_from_graded(rows: list[dict[str, Any]]) -> dict[str, dict[str, tuple[float, int]]]:
    """{system: {criterion: (mean, count)}} over the graded reports, as their summary computes it."""
    acc: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        if r["score"] is not None:
            acc.setdefault(r["model_name"], {}).setdefault(r["criterion"], []).append(r["score"])
    return {m: {c: (sum(v) / len(v), len(v)) for c, v in crits.items()} for m, crits in acc.items()}
