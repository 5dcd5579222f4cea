"""Per-task metric rows -> a system summary, keeping "the judge failed" apart from "nothing to score".

Every per-task row carries a `status`:

- `ok`: a defined value.
- `failed`: a judgment it needs failed after retries or did not parse. NaN, excluded from the mean, counted
  in `n_failed` and shown — never 0.
- `undefined`: the protocol leaves the value undefined (e.g. a win rate with no decisive game). NaN, excluded,
  counted in `n_undefined`.
- `no_report` / `nothing_to_score`: the system itself left something out. The metric's `missing_report`
  decides: "zero" scores it 0 (and counts it in `n_zero_missing`), "undefined" makes it NaN (counted in
  `n_undefined`).

New benchmarks build their summaries with `summarise_rows`, so the leaderboard shows both counts for every
metric of every benchmark.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from reportbench.metrics.registry import MetricSpec, reason_code
from reportbench.metrics.stats import nan_mean

ROW_SCHEMA: dict[str, Any] = {
    "system": pl.String,
    "task_id": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "status": pl.String,
    "reason": pl.String,
    "group": pl.String,
    "n_items": pl.Int64,
    "n_failed": pl.Int64,
}
STATUSES = ("ok", "failed", "undefined", "no_report", "nothing_to_score")


def metric_row(
    system: str,
    task_id: str,
    metric: str,
    value: float,
    status: str = "ok",
    reason: str | None = None,
    group: str | None = None,
    n_items: int = 0,
    n_failed: int = 0,
) -> dict[str, Any]:
    if status not in STATUSES:
        raise ValueError(f"status {status!r} is not one of {STATUSES}")
    if status == "ok" and (value is None or math.isnan(value)):
        raise ValueError(f"{system}/{task_id}/{metric}: status ok needs a defined value")
    return {
        "system": system,
        "task_id": task_id,
        "metric": metric,
        "value": float("nan") if value is None else float(value),
        "status": status,
        "reason": reason,
        "group": group,
        "n_items": int(n_items),
        "n_failed": int(n_failed),
    }


def rows_frame(rows: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=ROW_SCHEMA, orient="row").sort(["system", "task_id", "metric"])


def apply_missing_policy(per_task: pl.DataFrame, specs: Mapping[str, MetricSpec]) -> pl.DataFrame:
    """Set `value` for rows the system left out, by each metric's `missing_report` ("zero" -> 0.0)."""
    zero = [m for m, s in specs.items() if s.missing_report == "zero"]
    missing = pl.col("status").is_in(["no_report", "nothing_to_score"])
    return per_task.with_columns(
        pl.when(missing & pl.col("metric").is_in(zero)).then(0.0).otherwise(pl.col("value")).alias("value")
    )


def summarise_metric(per_task: pl.DataFrame, spec: MetricSpec) -> dict[str, Any]:
    """One metric of one system: the aggregate with its counts (failed and undefined kept apart)."""
    sub = per_task.filter(pl.col("metric") == spec.name)
    status = sub["status"].to_list()
    values = sub["value"].to_list()
    out: dict[str, Any] = {
        "n_tasks": sub["task_id"].n_unique(),
        "n_failed": status.count("failed"),
        "n_undefined": status.count("undefined")
        + (0 if spec.missing_report == "zero" else status.count("no_report") + status.count("nothing_to_score")),
        "n_zero_missing": (status.count("no_report") + status.count("nothing_to_score"))
        if spec.missing_report == "zero"
        else 0,
        "n_items": int(sub["n_items"].sum()) if sub.height else 0,
        "n_failed_items": int(sub["n_failed"].sum()) if sub.height else 0,
        "higher_is_better": spec.higher_is_better,
        "aggregation": spec.aggregation,
        "unit": spec.unit,
    }
    if spec.aggregation == "group_mean":
        groups: dict[str, list[tuple[float, str, str | None]]] = {}
        for g, v, st, why in zip(sub["group"].to_list(), values, status, sub["reason"].to_list(), strict=True):
            groups.setdefault(g or "", []).append((v, st, why))
        # each group's mean under the evidence rule too: a group resting only on tasks that needed no evidence
        # while its others lacked it is NaN ("—"), as the system value would be
        group_means = {
            g: math.nan
            if _rests_on_no_evidence(spec, [st for _, st, _ in vs], [w for _, _, w in vs])
            or _rests_on_missing_zeros([st for _, st, _ in vs])
            else nan_mean(v for v, _, _ in vs).mean
            for g, vs in sorted(groups.items())
        }
        mr = nan_mean(group_means.values())
        out.update({"mean": mr.mean, "n_defined": sum(1 for v in values if v == v), "groups": group_means})
        out["task_weighted_mean"] = nan_mean(values).mean
        _evidence_rule(out, spec, status, sub["reason"].to_list())
        return out
    mr = nan_mean(values)
    out.update({"mean": mr.mean, "n_defined": mr.n_defined})
    _evidence_rule(out, spec, status, sub["reason"].to_list())
    return out


EVIDENCE_CODES = ("not_checked", "no_pages", "no_counts", "no_labels", "no_games")
"""Reason codes that say the evidence a value needs is absent (REASON_CODES' first group)."""

NO_EVIDENCE_NEEDED = "zero:"
"""Reason prefix of a defined per-task value that needed no evidence (a report citing nothing scores 0)."""


def _evidence_rule(out: dict[str, Any], spec: MetricSpec, status: Sequence[str], reasons: Sequence[str | None]) -> None:
    """Set `reason` of an undefined system value; and make a value undefined when it rests on no evidence:
    every defined task needed none (reason `zero:…`, e.g. a report citing nothing) while other tasks lacked
    it (reason code = the metric's `no_evidence`). A 0.000 (1/63) from the one report with nothing to check,
    when nothing was checked for the other 62, is not a score (docs/reading-scores.md)."""
    if not math.isnan(out["mean"]) and _rests_on_no_evidence(spec, status, reasons):
        out["mean_without_evidence"] = out["mean"]
        out["mean"] = math.nan
        out["reason"] = spec.no_evidence
        return
    if not math.isnan(out["mean"]) and _rests_on_missing_zeros(status):
        # every report the system gave failed (or lacked evidence): the 0s of the reports it did not give are
        # not its score (issue 34: "all judge calls failed" must not print 0.0)
        out["mean_without_evidence"] = out["mean"]
        out["mean"] = math.nan
    if math.isnan(out["mean"]):
        out["reason"] = undefined_reason(status, reasons)


MISSING_STATUSES = ("no_report", "nothing_to_score")


def _rests_on_missing_zeros(status: Sequence[str]) -> bool:
    """True when no task has an ok value, some answered task has none (failed/undefined), and the only
    defined values are the missing-report policy's zeros."""
    return "ok" not in status and any(st not in MISSING_STATUSES for st in status)


def _rests_on_no_evidence(spec: MetricSpec, status: Sequence[str], reasons: Sequence[str | None]) -> bool:
    """True when some task lacked the metric's evidence and every defined task needed none (`zero:` reasons)."""
    if spec.no_evidence == "failed":
        return False
    pairs = list(zip(status, reasons, strict=True))
    lacked = any(st != "ok" and reason_code(r) in (spec.no_evidence, *EVIDENCE_CODES) for st, r in pairs)
    rested = any(st == "ok" and not str(r or "").startswith(NO_EVIDENCE_NEEDED) for st, r in pairs)
    return lacked and not rested


def undefined_reason(statuses: Sequence[str | None], reasons: Sequence[str | None]) -> str:
    """Why a whole system value is undefined: the most frequent code among its undefined tasks that have a
    report (`failed` for judge failures, else the protocol's code); `no_report` only when no task has one."""
    codes: dict[str, int] = {}
    for st, why in zip(statuses, reasons, strict=True):
        if st == "ok":
            continue
        code = st if st in ("failed", "no_report", "nothing_to_score") else reason_code(why)
        if st == "failed":
            code = "failed"
        codes[code] = codes.get(code, 0) + 1
    if not codes:
        return "undefined"
    # missing reports explain only the tasks without one: the tasks WITH a report say why the value is missing
    answered = {c: n for c, n in codes.items() if c != "no_report"} or codes
    return max(sorted(answered), key=lambda c: answered[c])


def summarise_rows(
    system: str, protocol: str, per_task: pl.DataFrame, specs: Sequence[MetricSpec], **extra: Any
) -> dict[str, Any]:
    """A system summary in the leaderboard's shape from per-task rows (after the missing-report policy)."""
    by_name = {s.name: s for s in specs}
    per_task = apply_missing_policy(per_task, by_name)
    return {
        "system": system,
        "protocol": protocol,
        "n_tasks": per_task["task_id"].n_unique(),
        "metrics": {s.name: summarise_metric(per_task, s) for s in specs},
        **extra,
    }


def summarise_by_group(
    per_task: pl.DataFrame, specs: Sequence[MetricSpec], group_of: Mapping[str, str], *, digits: int | None = 4
) -> dict[str, dict[str, Any]]:
    """Per-category breakdown under the same rules as the system value (missing-report policy, evidence rule):
    `{group: {metric: value or None, "n_tasks": n, "reasons": {metric: code}}}`. A category whose defined tasks
    needed no evidence while the others lacked it is None with the metric's `no_evidence` code, as the system
    value would be; it is never a bare 0.0 from the one task that cited nothing (docs/reading-scores.md)."""
    by_name = {s.name: s for s in specs}
    per_task = apply_missing_policy(per_task, by_name)
    groups: dict[str, list[str]] = {}
    for tid, g in group_of.items():
        groups.setdefault(g, []).append(tid)
    out: dict[str, dict[str, Any]] = {}
    for g, tids in sorted(groups.items()):
        sub = per_task.filter(pl.col("task_id").is_in(tids))
        no_report = sub.filter(pl.col("status") == "no_report")["task_id"].n_unique()
        row: dict[str, Any] = {"n_tasks": len(tids), **({"n_no_report": no_report} if no_report else {})}
        reasons: dict[str, str] = {}
        for spec in specs:
            if not sub.filter(pl.col("metric") == spec.name).height:
                continue
            m = summarise_metric(sub, spec)
            mean = m["mean"]
            if mean is None or math.isnan(mean):
                row[spec.name] = None
                reasons[spec.name] = str(m.get("reason") or "undefined")
            else:
                row[spec.name] = round(mean, digits) if digits is not None else mean
        if reasons:
            row["reasons"] = reasons
        out[g] = row
    return out


FACTOR_SCHEMA: dict[str, Any] = {
    "item_id": pl.String,
    "factor": pl.String,
    "value": pl.Float64,
    "status": pl.String,
    "error": pl.String,
}


def explode_factor_scores(
    judgments: Sequence[Any], key: str = "scores", expected: Mapping[str, Sequence[str]] | None = None
) -> pl.DataFrame:
    """Multi-score judge outputs (one call returning dozens of factor scores) -> one row per (item, factor).

    `parsed[key]` maps factor id -> score, or None for N/A (status `undefined`, never 0). A failed judgment
    yields a `failed` row for every factor `expected[item_id]` lists, so a failure is counted per factor.
    """
    rows: list[dict[str, Any]] = []
    for j in judgments:
        if not j.ok:
            for factor in (expected or {}).get(j.item_id, ()):
                rows.append(
                    {"item_id": j.item_id, "factor": factor, "value": math.nan, "status": "failed", "error": j.error}
                )
            continue
        import json

        scores = json.loads(j.parsed or "{}").get(key) or {}
        for factor, value in scores.items():
            na = value is None
            rows.append(
                {
                    "item_id": j.item_id,
                    "factor": str(factor),
                    "value": math.nan if na else float(value),
                    "status": "undefined" if na else "ok",
                    "error": None,
                }
            )
    return pl.DataFrame(rows, schema=FACTOR_SCHEMA, orient="row").sort(["item_id", "factor"])
