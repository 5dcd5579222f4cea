"""Leaderboard from several systems' summaries and per-task tables: JSON, markdown, CSV, HTML.

Why this shape: the JSON is the DVC metrics file (`cache: false`, diffable across releases), the CSV is
what `dvc plots` reads, the markdown goes into docs/PRs, and the HTML is self-contained (no CDN: `dvc plots
show` pulls vega from jsdelivr, which does not render offline). Rows are ranked by the benchmark's overall
score (named for what it is: `geomean`, `mean`, or the ranking metric), and only rows evaluated on the same task
set are ranked (docs/reading-scores.md): partial submissions are listed unranked with the reason (or ranked and
marked with `min_task_share`), with a shared-task comparison; equal scores share a rank unless a tie-break is
configured. An undefined value is "—" with its reason code in every output, never 0.

Inputs are plain data (a summary dict per system as written by a protocol's `score_system`, and a long
per-task table with columns system, task_id, metric, value[, group]) so this module knows no protocol.

Uncertainty (issue 13): every cell carries a 95 % percentile bootstrap interval over tasks (stratified by
group for `group_mean` metrics, read from the cross stage's bootstrap for `rating` metrics), or `null` with
the reason in `ci_method` when no honest interval exists; every pairwise test carries a Benjamini–Hochberg
adjusted p-value over all the leaderboard's tests (`p_fdr`) and a paired bootstrap interval of the mean
difference. Rank is `null` where the overall score is undefined (or the benchmark has none): a row is
never ranked on a score it does not have.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from reportbench.jsonio import json_safe
from reportbench.metrics.notice import notice
from reportbench.metrics.reference_rows import NOT_RE_JUDGED, unsafe_line
from reportbench.metrics.registry import MetricRegistryError, MetricSpec, get_metric, reason_code, short_failure
from reportbench.metrics.stats import (
    bootstrap_ci,
    fdr_adjust,
    geometric_mean,
    nan_mean,
    paired_bootstrap_diff_ci,
    paired_ttest,
    stratified_bootstrap_ci,
)
from reportbench.types import system_label

N_BOOT = 2000  # bootstrap replicates for every interval on the leaderboard (seeded: byte-stable files)
CI_LEVEL = 0.95
FDR_METHOD = "Benjamini-Hochberg over every pairwise test of this leaderboard (scipy.stats.false_discovery_control)"


class ScoresLike(Protocol):
    system: str
    per_task: pl.DataFrame
    summary: dict[str, Any]


@dataclass
class Leaderboard:
    """Sorted rows (one per system) and paired t-tests per metric between every pair of systems."""

    protocol: str | None
    metrics: list[str]
    rows: list[dict[str, Any]]
    pairwise: list[dict[str, Any]] = field(default_factory=list)
    metric_info: dict[str, dict[str, Any]] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)  # benchmark, release, judge, members (from the summaries)
    shared: dict[str, Any] | None = None  # the shared-task comparison (partial submissions), or None
    # the paper's own rows (metrics/reference_rows.py): shown apart, never ranked; None unless a preset asks
    reference: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return json_safe(
            {
                "protocol": self.protocol,
                "metrics": self.metrics,
                "metric_info": self.metric_info,
                "rows": self.rows,
                "pairwise": self.pairwise,
                "stats": self.stats,
                "meta": self.meta,
                "shared_tasks": self.shared,
                **({"reference": self.reference} if self.reference is not None else {}),
            }
        )


def metric_info(metric: str, protocol: str | None) -> dict[str, Any]:
    """What a reader needs to read a column: full name, label, one-line definition, direction, range."""
    spec = _spec(metric, protocol)
    if spec is None:
        return {"name": metric, "label": metric, "full_name": _humanise(metric), "description": "",
                "higher_is_better": True, "unit": None, "value_range": None, "aggregation": None}
    return {
        "name": spec.name,
        "label": spec.label,
        "full_name": display_name(spec),
        "description": spec.description,
        "higher_is_better": spec.higher_is_better,
        "unit": spec.unit,
        "value_range": list(spec.value_range) if spec.value_range is not None else None,
        # per-task values may differ (DeepScholar DocImp: ratios above 1, the system mean is clipped at 1)
        "task_range": list(spec.task_range) if spec.task_range is not None else None,
        "evidence": spec.needs,
        "aggregation": spec.aggregation,
    }


def display_name(spec: Any) -> str:
    """One display name per (name, scale): the paper's name (or the humanised key), plus the scale when it is not
    0-1, so `coverage` reads "Coverage" in ResearcherBench (0-1) and "Coverage (0-100)" in ResearchQA / LRB."""
    name = spec.full_name or _humanise(spec.name)
    rng = spec.value_range
    if rng is not None and tuple(float(x) for x in rng) != (0.0, 1.0):
        name += f" ({rng[0]:g}–{rng[1]:g})"
    return name


def _humanise(name: str) -> str:
    return " ".join(w if w.isupper() else w.capitalize() for w in name.replace("_", " ").split())


def _spec(metric: str, protocol: str | None) -> MetricSpec | None:
    try:
        return get_metric(metric, protocol)
    except MetricRegistryError:
        return None


def _label(metric: str, protocol: str | None) -> str:
    spec = _spec(metric, protocol)
    return spec.label if spec else metric


def _task_values(per_task: pl.DataFrame, system: str, metric: str) -> dict[str, float]:
    """task_id -> NaN-aware mean over that task's reports (one value per task for the paired test)."""
    sub = per_task.filter((pl.col("system") == system) & (pl.col("metric") == metric))
    out: dict[str, float] = {}
    for (tid,), grp in sub.group_by(["task_id"], maintain_order=True):
        out[str(tid)] = nan_mean(grp["value"].to_list()).mean
    return out


def _task_groups(per_task: pl.DataFrame, system: str, metric: str) -> dict[str, str]:
    """task_id -> its group (DEER's domain) for `group_mean` metrics; {} when the table has no group column."""
    if "group" not in per_task.columns:
        return {}
    sub = per_task.filter((pl.col("system") == system) & (pl.col("metric") == metric))
    return {str(t): str(g or "") for t, g in zip(sub["task_id"].to_list(), sub["group"].to_list(), strict=True)}


def rating_intervals(extra_metrics: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """system -> {rating, boot_median, boot_mean, ci_low, ci_high} from a cross stage's reported rating table
    (ResearchQA's Bradley–Terry bootstrap: `extra.json` ratings.tables[ratings.reported])."""
    ratings = (extra_metrics or {}).get("ratings")
    if not isinstance(ratings, Mapping):
        return {}
    table = (ratings.get("tables") or {}).get(ratings.get("reported"))
    out: dict[str, dict[str, Any]] = {}
    for row in table or []:
        if isinstance(row, Mapping) and "system" in row:
            out[str(row["system"])] = {k: row[k] for k in ("rating", "boot_median", "boot_mean", "ci_low", "ci_high")
                                       if isinstance(row.get(k), int | float)}
            if row.get("ci_reason"):
                out[str(row["system"])]["ci_reason"] = str(row["ci_reason"])
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _interval(
    spec: MetricSpec | None,
    mean: float,
    task_vals: Mapping[str, float],
    groups: Mapping[str, str],
    rating: Mapping[str, Any] | None,
) -> tuple[list[float] | None, str]:
    """A 95 % interval for one cell and how it was obtained, or None and why there is none."""
    if math.isnan(mean):
        return None, "n/a: the value is undefined"
    if spec is not None and spec.aggregation == "rating":
        if rating and "ci_low" in rating and "ci_high" in rating:
            if any(_close(mean, float(rating[k])) for k in ("rating", "boot_median", "boot_mean") if k in rating):
                return [float(rating["ci_low"]), float(rating["ci_high"])], "bootstrap over battles (cross stage)"
        if rating and rating.get("ci_reason"):
            return None, f"n/a: {rating['ci_reason']}"
        return None, "n/a: no bootstrap table for this rating"
    defined = {t: v for t, v in task_vals.items() if not math.isnan(v)}
    if len(defined) < 2:
        return None, "n/a: fewer than 2 tasks with a defined value"
    if spec is not None and spec.aggregation == "group_mean" and groups:
        by_group: dict[str, list[float]] = {}
        for t, v in defined.items():
            by_group.setdefault(groups.get(t, ""), []).append(v)
        point = nan_mean(nan_mean(vs).mean for vs in by_group.values()).mean
        if not _close(point, mean):
            return None, "n/a: the summary is not the macro mean of per-task values"
        if max(len(vs) for vs in by_group.values()) < 2:  # resampling within groups of one cannot vary
            return None, "n/a: no group has 2 tasks with a defined value"
        lo, hi = stratified_bootstrap_ci(by_group, n_boot=N_BOOT, seed=0)
        return [lo, hi], "bootstrap over tasks, stratified by group"
    raw = nan_mean(defined.values()).mean
    rng = spec.value_range if spec is not None else None
    clipped = spec is not None and spec.clip_mean and rng is not None
    if clipped and rng is not None:
        raw = min(max(raw, rng[0]), rng[1])
    if not _close(raw, mean):
        return None, "n/a: the summary is not the mean of per-task values"
    lo, hi = bootstrap_ci(defined.values(), n_boot=N_BOOT, seed=0)
    if clipped and rng is not None:
        # the reported statistic is the mean clipped to the declared range (e.g. DeepScholar's Document
        # Importance, Table 2): clipping is monotone, so the interval of the clipped mean is the clipped interval
        return [min(max(lo, rng[0]), rng[1]), min(max(hi, rng[0]), rng[1])], "bootstrap over tasks, clipped mean"
    return [lo, hi], "bootstrap over tasks"


def build_leaderboard(
    summaries: Sequence[Mapping[str, Any]],
    per_task: pl.DataFrame | None = None,
    *,
    metrics: Sequence[str] | None = None,
    protocol: str | None = None,
    overall: str | None = "geomean",
    overall_metrics: Sequence[str] | None = None,
    extra_metrics: Mapping[str, Any] | None = None,
    release_tasks: Sequence[str] | None = None,
    task_sets: Mapping[str, Collection[str]] | None = None,
    min_task_share: float = 1.0,
    tie_break: str | None = None,
) -> Leaderboard:
    """Rows from `summaries` (each {"system", "metrics": {name: {"mean", "n_defined", ...}}, ...});
    pairwise tests from `per_task` (all systems concatenated) when given.

    `overall` ranks the rows: "geomean" (DeepScholar's overall score), "mean" (arithmetic mean), a metric name,
    or None (no overall; rows by name). `overall_metrics` restricts which metrics enter it (e.g. LRB's Avg of four);
    the value is stored as `overall_value` (and as `geomean` only when it is one). `extra_metrics` (the score
    stage's extra.json) supplies the bootstrap intervals of `rating` metrics.

    Ranking (docs/reading-scores.md): only systems evaluated on the same task set are ranked — those with a
    report for at least `min_task_share` of `release_tasks` (default 1.0: the full set; below 1 partial rows
    are ranked and marked `partial`); `task_sets` (system -> task ids with a report) says who answered what.
    Equal overall scores share a rank unless `tie_break` ("arithmetic_mean": the mean of the defined metric
    means) is configured. Every unranked row says why (`unranked_reason`)."""
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break {tie_break!r} is not one of {TIE_BREAKS}")
    if not 0.0 < min_task_share <= 1.0:
        raise ValueError(f"min_task_share {min_task_share!r} must be in (0, 1]")
    if not summaries:
        raise ValueError("no system summaries")
    protocol = protocol or summaries[0].get("protocol")
    names = list(metrics) if metrics is not None else list(summaries[0]["metrics"])
    rows: list[dict[str, Any]] = []
    parts = list(overall_metrics) if overall_metrics is not None else names
    for s in summaries:
        ms = s["metrics"]
        means = {m: float(ms[m]["mean"]) if m in ms else math.nan for m in names}
        chosen = [float(ms[m]["mean"]) if m in ms else math.nan for m in parts]
        if overall == "geomean":
            score = geometric_mean(chosen)
        elif overall == "mean":
            score = math.nan if any(math.isnan(v) for v in chosen) or not chosen else sum(chosen) / len(chosen)
        elif overall is None:
            score = math.nan
        else:
            score = means.get(overall, math.nan)
        subset = overall_metrics is not None and list(parts) != names
        rows.append(
            {
                "system": s["system"],
                **({"geomean": score} if overall == "geomean" else {}),
                "overall_value": score,
                "overall": overall,
                # a geomean over a subset is labelled with its metrics; the all-metric one is kept next to it
                **({"overall_metrics": parts, "geomean_all": geometric_mean(means.values())} if subset else {}),
                "metrics": means,
                "n_defined": {m: ms.get(m, {}).get("n_defined", 0) for m in names},
                # judge failures (NaN, excluded) and protocol-undefined values, kept apart per metric
                "n_failed": {m: int(ms.get(m, {}).get("n_failed", 0)) for m in names},
                "n_undefined": {m: int(ms.get(m, {}).get("n_undefined", 0)) for m in names},
                # why a metric has no value (docs/reading-scores.md): shown as "—" with this code, never 0
                "undefined_reason": {m: _why(ms.get(m)) for m in names if math.isnan(means[m])},
                "authors_aggregate": {m: ms.get(m, {}).get("authors_aggregate", math.nan) for m in names},
                "n_tasks": int(s.get("n_tasks", 0)),
                "n_missing_reports": int(s.get("n_missing_reports", 0)),
                # of the tasks without a report: those the system failed on (crash, exit code), with the first
                # reason, apart from those it supplied nothing for (`n_no_report`)
                "n_failed_tasks": int(s.get("n_failed_tasks", 0)),
                "n_no_report": max(0, int(s.get("n_missing_reports", 0)) - int(s.get("n_failed_tasks", 0))),
                **({"first_failure": dict(s["first_failure"])} if s.get("first_failure") else {}),
                "n_failed_items": int(sum(ms.get(m, {}).get("n_failed_items", 0) for m in names)),
                # a system whose code ran outside the sandbox (`sandbox: none`) says so wherever its name appears
                **({"sandbox": "unsandboxed"} if s.get("sandbox") == "unsandboxed" else {}),
                # how it departs from the agent as published (agents.variant): next to its name wherever it scores
                **({"variant": str(s["variant"]), "label": system_label(s["system"], s["variant"])}
                   if s.get("variant") else {}),  # fmt: skip
                # reports flagged at ingestion (e.g. text addressed to the judge), when the protocol counts them
                **({"flagged_reports": int(s["flagged_reports"])} if "flagged_reports" in s else {}),
            }
        )
        _explain_undefined_overall(rows[-1], names, overall, protocol)
    _rank_rows(rows, summaries, overall, release_tasks, task_sets, min_task_share, tie_break)
    ratings = rating_intervals(extra_metrics)
    has_tasks = per_task is not None and per_task.height > 0
    task_vals: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows:
        r["ci"], r["ci_method"] = {}, {}
        for m in names:
            spec = _spec(m, protocol)
            vals = _task_values(per_task, r["system"], m) if has_tasks else {}
            task_vals[(r["system"], m)] = vals
            groups = _task_groups(per_task, r["system"], m) if has_tasks and spec and spec.group_by else {}
            r["ci"][m], r["ci_method"][m] = _interval(spec, r["metrics"][m], vals, groups, ratings.get(r["system"]))
    pairwise: list[dict[str, Any]] = []
    if has_tasks:
        systems = [r["system"] for r in rows]
        why_of = {r["system"]: r["undefined_reason"] for r in rows}
        for m in names:
            spec = _spec(m, protocol)
            if spec is not None and spec.aggregation == "rating":
                continue  # a cross-system rating has no per-task values to pair; its intervals come with it
            for a, b in combinations(systems, 2):
                va, vb = task_vals[(a, m)], task_vals[(b, m)]
                # a system whose value is undefined (e.g. DocImp "no_counts": its per-task zeros are no evidence)
                # is not compared through those per-task values: no mean difference, the reason instead
                why = [f"{s} {why_of[s][m]}" for s in (a, b) if m in why_of[s]]
                if why:
                    test = {"t": math.nan, "p": math.nan, "n": 0, "mean_diff": math.nan,
                            "note": "undefined system value: " + ", ".join(why)}  # fmt: skip
                    pairwise.append({"metric": m, "system_a": a, "system_b": b, **test, "diff_ci": None})
                    continue
                test = paired_ttest(va, vb).as_dict()
                lo, hi = paired_bootstrap_diff_ci(va, vb, n_boot=N_BOOT, seed=0)
                diff_ci = None if math.isnan(lo) else [lo, hi]
                pairwise.append({"metric": m, "system_a": a, "system_b": b, **test, "diff_ci": diff_ci})
        for pw, q in zip(pairwise, fdr_adjust(pw["p"] for pw in pairwise), strict=True):
            pw["p_fdr"] = q
    stats = {
        "ci_level": CI_LEVEL,
        "n_boot": N_BOOT,
        "ci": "percentile bootstrap of the system's aggregate over tasks (seed 0)",
        "pairwise_test": "two-sided paired t-test over tasks both systems define (scipy.stats.ttest_rel)",
        "fdr": FDR_METHOD,
        "n_tests": sum(1 for pw in pairwise if not math.isnan(pw["p"])),
    }
    stats["ranking"] = {
        "min_task_share": min_task_share,
        "tie_break": tie_break or "none: equal overall scores share a rank",
        "rule": "only systems with reports for the same task set (the release's, or min_task_share of it) are "
        "ranked; the others are listed unranked with the reason (docs/reading-scores.md)",
    }
    info = {m: metric_info(m, protocol) for m in names}
    stats["range_violations"] = range_violations(rows, info)
    first = summaries[0]
    meta = {k: first[k] for k in ("benchmark", "release", "judge", "members") if k in first}
    combined = overall in ("geomean", "mean")
    meta["overall"] = {"kind": overall, "column": overall_column(overall), "metrics": parts if combined else None}
    lb = Leaderboard(protocol, names, rows, pairwise, info, stats, meta)
    if task_sets is not None and has_tasks:
        lb.shared = shared_task_comparison(rows, per_task, names, protocol, task_sets, release_tasks)
    return lb


def _explain_undefined_overall(row: dict[str, Any], names: Sequence[str], overall: str | None,
                               protocol: str | None) -> None:
    """An undefined combined score names what it lacks (`overall_reason`, `geomean_all_reason`: "RefCov: no_labels;
    DocImp: no_counts"), so no output shows a bare "—" for it (docs/reading-scores.md)."""
    why = row["undefined_reason"]
    for key, parts in (
        ("overall_value", row.get("overall_metrics") or (names if overall in ("geomean", "mean") else [overall])),
        ("geomean_all", names),
    ):
        v = row.get(key)
        if overall is None or key not in row or not (v is None or (isinstance(v, float) and math.isnan(v))):
            continue
        lacking = [f"{_label(m, protocol)}: {why.get(m, 'undefined')}" for m in parts if m in why]
        row["overall_reason" if key == "overall_value" else "geomean_all_reason"] = (
            "; ".join(lacking) if lacking else "undefined"
        )


TIE_BREAKS = (None, "arithmetic_mean")
TASK_MEANS = ("mean", "count_mean", "win_rate")  # aggregations that are the mean of per-task values


def _why(summary_metric: Mapping[str, Any] | None) -> str:
    """The reason code of an undefined system value (`reason` in the summary; `undefined` when unstated)."""
    reason = (summary_metric or {}).get("reason")
    return reason_code(str(reason)) if reason else "undefined"


def overall_column(overall: str | None) -> str | None:
    """The overall column's name in every output, named for what it is: `geomean` / `mean` (over the metrics),
    or `overall_<metric>` when one metric ranks (DEER's `overall_deer_mean`, LRB's `overall_avg`)."""
    if overall is None:
        return None
    return overall if overall in ("geomean", "mean") else f"overall_{overall}"


def _rank_rows(
    rows: list[dict[str, Any]],
    summaries: Sequence[Mapping[str, Any]],
    overall: str | None,
    release_tasks: Sequence[str] | None,
    task_sets: Mapping[str, Collection[str]] | None,
    min_task_share: float,
    tie_break: str | None,
) -> None:
    """Sort `rows` in place and set rank, task coverage and (for unranked rows) the reason."""
    n_release = len(set(release_tasks)) if release_tasks is not None else None
    for r, s in zip(rows, summaries, strict=True):
        total = n_release if n_release is not None else int(s.get("n_tasks", 0))
        if task_sets is not None and r["system"] in task_sets:
            done = set(task_sets[r["system"]])
            answered = len(done & set(release_tasks)) if release_tasks is not None else len(done)
        else:
            answered = max(0, total - int(s.get("n_missing_reports", 0)))
        share = answered / total if total else 0.0
        r["n_release_tasks"], r["n_answered"], r["task_share"] = total, answered, share
        r["partial"] = answered < total
        r["task_note"] = task_note(r) if r["partial"] else None
        g = r["overall_value"]
        needs = "all" if min_task_share >= 1 else f"at least {min_task_share:.0%}"
        if share + 1e-12 < min_task_share:  # the task set first: it is why a partial row has no rank
            r["unranked_reason"] = f"{r['task_note']}; ranking needs {needs} of the release's tasks"
        elif overall is None:
            r["unranked_reason"] = "the benchmark has no overall score"
        elif math.isnan(g):
            r["unranked_reason"] = f"overall score undefined ({_undefined_parts(r)})"
        else:
            r["unranked_reason"] = None

    def arith(r: dict[str, Any]) -> float:
        a = nan_mean(r["metrics"].values()).mean
        return a if not math.isnan(a) else -math.inf

    def key(r: dict[str, Any]) -> tuple[bool, float, float, str]:
        g = r["overall_value"]
        return (
            r["unranked_reason"] is not None,
            -g if not math.isnan(g) else math.inf,
            -arith(r) if tie_break == "arithmetic_mean" else 0.0,
            r["system"],
        )

    rows.sort(key=key)
    ranked = [r for r in rows if r["unranked_reason"] is None]
    for i, r in enumerate(ranked):
        r["rank"] = i + 1  # competition ranking: a tie takes the rank of the first of its group (1, 2, 2, 4)
        if i:
            prev = ranked[i - 1]
            same = _close(prev["overall_value"], r["overall_value"])
            if same and tie_break == "arithmetic_mean":
                same = _close(arith(prev), arith(r))
            if same:
                r["rank"] = prev["rank"]
    counts: dict[int, int] = {}
    for r in ranked:
        counts[r["rank"]] = counts.get(r["rank"], 0) + 1
    for r in rows:
        if r["unranked_reason"] is not None:
            r["rank"] = None
        r["tied"] = r["rank"] is not None and counts.get(r["rank"], 0) > 1
        if r["unranked_reason"] is None:
            del r["unranked_reason"]


def task_note(r: Mapping[str, Any]) -> str:
    """"2/3 tasks: 1 failed (exit code 2), 1 no report": what a partial row's task set is short of."""
    parts = []
    if r.get("n_failed_tasks"):
        parts.append(f"{r['n_failed_tasks']} failed ({short_failure((r.get('first_failure') or {}).get('reason'))})")
    if r.get("n_no_report"):
        parts.append(f"{r['n_no_report']} no report")
    answered, total = r.get("n_answered"), r.get("n_release_tasks", r.get("n_tasks"))
    return f"{answered}/{total} tasks" + (f": {', '.join(parts)}" if parts else "")


def _undefined_parts(r: Mapping[str, Any]) -> str:
    """Which metrics left the overall score undefined, with their codes ("organization: failed")."""
    reasons = r.get("undefined_reason") or {}
    parts = r.get("overall_metrics") or list(r.get("metrics") or {})
    named = [f"{m}: {reasons[m]}" for m in parts if m in reasons]
    return "; ".join(named) if named else "a part is undefined"


def shared_task_comparison(
    rows: Sequence[Mapping[str, Any]],
    per_task: pl.DataFrame,
    names: Sequence[str],
    protocol: str | None,
    task_sets: Mapping[str, Collection[str]],
    release_tasks: Sequence[str] | None,
) -> dict[str, Any] | None:
    """Every listed system's metric means over the tasks ALL of them answered, so partial submissions can be
    compared like with like; None when every system answered the same tasks. Ratings (cross-system) are left
    out: they have no per-task values."""
    systems = [str(r["system"]) for r in rows]
    sets = {s: set(task_sets.get(s, ())) for s in systems}
    if release_tasks is not None:
        sets = {s: x & set(release_tasks) for s, x in sets.items()}
    if not sets or all(x == next(iter(sets.values())) for x in sets.values()):
        return None
    # a system with no report at all has nothing to compare: it is left out (and named), so one crashed system
    # does not collapse everyone's comparison to 0 tasks
    left_out = {s: "no report for any task" for s, x in sets.items() if not x}
    listed = [s for s in systems if s not in left_out]
    shared = sorted(set.intersection(*(sets[s] for s in listed))) if listed else []
    why_none = None
    if not shared:
        why_none = (
            "no system has a report for any task" if not listed
            else "no task has a report from every listed system ("
            + "; ".join(f"{s}: {', '.join(sorted(sets[s])[:5])}{' …' if len(sets[s]) > 5 else ''}" for s in listed)
            + ")"
        )
    metrics = [m for m in names if (sp := _spec(m, protocol)) is None or sp.aggregation in TASK_MEANS]
    values: dict[str, dict[str, float]] = {}
    for r in rows:
        s = str(r["system"])
        if s in left_out:
            continue
        values[s] = {}
        for m in metrics:
            if math.isnan(r["metrics"][m]):  # undefined for the system (e.g. no evidence): undefined here too
                values[s][m] = math.nan
                continue
            tv = _task_values(per_task, s, m)
            values[s][m] = nan_mean(tv.get(t, math.nan) for t in shared).mean
    # an undefined cell's reason: the system's own (e.g. no_counts), else no shared task defines it
    why = {
        s: {m: (r["undefined_reason"].get(m) or "undefined on the shared tasks")
            for m, v in values[s].items() if math.isnan(v)}
        for r in rows if (s := str(r["system"])) in values
    }  # fmt: skip
    return {
        "n_tasks": len(shared),
        "task_ids": shared,
        "metrics": metrics,
        "values": values,
        "why": {s: w for s, w in why.items() if w},  # system -> metric -> reason of a "—" cell
        "left_out": left_out,  # system -> why it is not in the comparison
        "why_no_tasks": why_none,  # set when n_tasks is 0: the comparison never collapses silently
        "note": "means over the tasks every listed system has a report for (macro mean of defined values); "
        "group means (per-domain macro) and cross-system ratings are left out",
    }


def range_violations(rows: Sequence[Mapping[str, Any]], info: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Values or interval ends outside a metric's declared range (should be empty; tests assert it)."""
    out = []
    for r in rows:
        for m, meta in info.items():
            rng = meta.get("value_range")
            if not rng:
                continue
            lo, hi = rng
            v = r["metrics"].get(m)
            ci = (r.get("ci") or {}).get(m) or []
            for what, x in (("value", v), *(("ci", c) for c in ci)):
                if isinstance(x, float | int) and not math.isnan(x) and not (lo - 1e-9 <= x <= hi + 1e-9):
                    out.append(f"{r['system']}/{m}: {what} {x:.4g} outside [{lo}, {hi}]")
    return out


def per_task_columns(per_task: pl.DataFrame) -> list[str]:
    """The per-task columns the leaderboard reads (`group` only where a protocol has one)."""
    return ["system", "task_id", "metric", "value", *(["group"] if "group" in per_task.columns else [])]


def from_scores(scores: Iterable[ScoresLike], **kw: Any) -> Leaderboard:
    """Convenience: build from protocol `SystemScores` objects."""
    scores = list(scores)
    frames = [s.per_task.select(per_task_columns(s.per_task)) for s in scores]
    per_task = pl.concat(frames) if frames else None
    return build_leaderboard([s.summary for s in scores], per_task, **kw)


# --------------------------------------------------------------------------------------------- render
def _fmt(v: float | None, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:.{digits}f}"


def _fmt_why(v: float | None, reason: str | None) -> str:
    """A combined score, or "— (what it lacks)" when undefined."""
    text = _fmt(v)
    return f"— ({reason or 'undefined'})" if text == "—" else text


def _fmt_p(p: float) -> str:
    if math.isnan(p):
        return "—"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _overall(lb: Leaderboard) -> str | None:
    return lb.rows[0].get("overall", "geomean") if lb.rows else "geomean"


def overall_label(lb: Leaderboard) -> str:
    """Header of the overall column: GeoMean, Mean, or the ranking metric's label."""
    overall = _overall(lb)
    parts = lb.rows[0].get("overall_metrics") if lb.rows else None
    if overall == "mean" and parts is not None:
        return f"Mean ({', '.join(_label(m, lb.protocol) for m in parts)})"
    if parts is not None and overall == "geomean":
        return f"GeoMean ({len(parts)} of {len(lb.metrics)}: {', '.join(_label(m, lb.protocol) for m in parts)})"
    if overall in (None, "geomean"):
        return "GeoMean"
    if overall == "mean":
        return "Mean"
    return f"Overall ({_label(overall, lb.protocol)})"


def _cell(r: Mapping[str, Any], m: str, rating: bool) -> str:
    """One metric cell: the value, or "—" with the reason code; (k/n) defined/total; [f failed]."""
    v = r["metrics"][m]
    if isinstance(v, float) and math.isnan(v):
        cell = f"— ({(r.get('undefined_reason') or {}).get(m, 'undefined')})"
    else:
        cell = _fmt(v)
    if not rating and r["n_defined"][m] < r["n_tasks"] and not math.isnan(v):
        cell += f" ({r['n_defined'][m]}/{r['n_tasks']})"
    if r.get("n_failed", {}).get(m):
        cell += f" [{r['n_failed'][m]} failed]"
    return cell


def _is_rating(lb: Leaderboard, m: str) -> bool:
    return (lb.metric_info.get(m) or {}).get("aggregation") == "rating"


def row_label(r: Mapping[str, Any]) -> str:
    """The name a row is shown under: `storm [encoder: hashed]` for a variant, else the system's name."""
    return system_label(str(r["system"]), r.get("variant"))


def _labels(lb: Leaderboard) -> dict[str, str]:
    return {str(r["system"]): row_label(r) for r in lb.rows}


def to_markdown(lb: Leaderboard) -> str:
    """A ranking table, then unranked rows' reasons, the shared-task comparison (partial submissions) and one
    paired t-test table (A − B) over tasks both systems have defined."""
    show_overall = _overall(lb) is not None  # a benchmark without a combined score (ResearcherBench) shows none
    # no rank column where nothing can be ranked: a column of blanks would read as "not computed"
    heads = [*(["#"] if show_overall else []), "system", *[_label(m, lb.protocol) for m in lb.metrics]]
    heads += [overall_label(lb)] if show_overall else []
    show_all = show_overall and any("geomean_all" in r for r in lb.rows)
    heads += [f"GeoMean (all {len(lb.metrics)})"] if show_all else []
    heads += ["tasks", "failed items"]
    header = [f"> **{notice(lb.meta)}**", ""] if notice(lb.meta) else []  # a quick subset (metrics/notice.py)
    lines = [*header, "| " + " | ".join(heads) + " |", "|" + "|".join(["---"] * len(heads)) + "|"]
    for r in lb.rows:
        rank = "—" if r["rank"] is None else (f"={r['rank']}" if r.get("tied") else str(r["rank"]))
        name = row_label(r) + (f" (partial: {r['n_answered']}/{r['n_release_tasks']})" if r.get("partial") else "")
        name += " [unsandboxed]" if r.get("sandbox") == "unsandboxed" else ""
        cells = [rank] if show_overall else []
        cells.append(name)
        cells += [_cell(r, m, _is_rating(lb, m)) for m in lb.metrics]
        cells += [_fmt_why(r["overall_value"], r.get("overall_reason"))] if show_overall else []
        cells += [_fmt_why(r.get("geomean_all"), r.get("geomean_all_reason"))] if show_all else []
        cells += [tasks_cell(r), str(r["n_failed_items"])]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "Means are over tasks with a defined value; (k/n) = defined/total when some are undefined; "
        "— (code) = undefined, with its reason code (docs/reading-scores.md), never 0; "
        "[f failed] = tasks whose judgments failed (NaN, excluded, never 0); =k = tied rank; tasks: k failed = "
        "the system failed on k tasks (crash, exit code: no report), no_report = no report supplied. "
        "95 % bootstrap intervals: leaderboard.json (`ci`) and the scorecard site."
    )
    lines += ["", line] if (line := not_ranked_line(lb)) else []
    lines += reference_markdown(lb)
    failed = [r for r in lb.rows if r.get("n_failed_tasks")]
    if failed:
        lines += ["", "Failed tasks (the system itself failed, so there is no report; each such task is scored as "
                  "the protocol scores a missing report): " + "; ".join(failure_text(r) for r in failed) + "."]
    if lb.shared:
        sh = lb.shared
        left = "".join(f" {s} is left out ({why})." for s, why in (sh.get("left_out") or {}).items())
        if not sh["n_tasks"]:
            lines += ["", f"Shared-task comparison: none, {sh.get('why_no_tasks') or 'no task in common'}.{left}"]
        else:
            lines += ["", f"Shared-task comparison: means over the {sh['n_tasks']} task(s) every system below has a "
                      f"report for.{left}", ""]
            lines.append("| system | " + " | ".join(_label(m, lb.protocol) for m in sh["metrics"]) + " |")
            lines.append("|" + "|".join(["---"] * (len(sh["metrics"]) + 1)) + "|")
            for sys_name, vals in sh["values"].items():
                shown = _labels(lb).get(str(sys_name), str(sys_name))
                why = (sh.get("why") or {}).get(str(sys_name)) or {}
                lines.append(f"| {shown} | " + " | ".join(_fmt_why(vals[m], why.get(m)) for m in sh["metrics"]) + " |")
    if lb.pairwise:
        lines += ["", "Paired t-tests (A − B, over tasks both define); p (FDR) = Benjamini–Hochberg adjusted over "
                  "all the tests below:", ""]
        lines.append("| metric | A | B | mean diff | 95% CI | t | p | p (FDR) | n | note |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        for pw in lb.pairwise:
            ci = pw.get("diff_ci")
            ci_txt = f"[{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else "—"
            lines.append(
                f"| {_label(pw['metric'], lb.protocol)} | {_labels(lb).get(pw['system_a'], pw['system_a'])} | "
                f"{_labels(lb).get(pw['system_b'], pw['system_b'])} | "
                f"{_fmt(pw['mean_diff'])} | {ci_txt} | {_fmt(pw['t'], 2)} | {_fmt_p(pw['p'])} | "
                f"{_fmt_p(pw.get('p_fdr', math.nan))} | {pw['n']} | {pw['note']} |"
            )
    return "\n".join(lines) + "\n"


def reference_markdown(lb: Leaderboard) -> list[str]:
    """The paper's rows in their own table under the ranking (never in it), with their label, the differences
    that make a comparison unsafe and the source of the numbers; [] when the leaderboard has none."""
    ref = lb.reference
    if not ref:
        return []
    overall = ref.get("overall_column")
    shown = list(ref.get("shown_metrics") or lb.metrics)
    heads = ["system (published)", *[_label(m, lb.protocol) for m in shown], *([str(overall)] if overall else [])]
    lines = ["", f"**Reference rows: {ref['label']}.** Never ranked with the rows above; from "
             f"`{ref['source_file']}` ({ref['location']}).", "",
             "| " + " | ".join(heads) + " |", "|" + "|".join(["---"] * len(heads)) + "|"]
    for r in ref["rows"]:
        cells = [str(r["system"]) + (f" ({r['note']})" if r.get("note") else "")]
        for m in shown:
            v = r["metrics"].get(m)
            cells.append(_fmt(v) if v is not None else f"— ({r['not_shown'].get(m, 'not published')})")
        if overall:
            cells.append(_fmt(r.get("overall_value")))
        lines.append("| " + " | ".join(cells) + " |")
    if ref.get("not_in_paper"):
        lines += ["", f"Not columns of the paper's {ref['table']} (no published value): "
                  + ", ".join(_label(m, lb.protocol) for m in ref["not_in_paper"]) + "."]
    lines += ["", unsafe_line(ref)]
    return lines


def task_shortfall(r: Mapping[str, Any], no_report: str = "no_report") -> list[str]:
    """["1 failed", "1 no_report"]: of a row's tasks without a report, those it failed on and those it left out."""
    parts = []
    if r.get("n_failed_tasks"):
        parts.append(f"{r['n_failed_tasks']} failed")
    missing = r.get("n_no_report", r.get("n_missing_reports", 0))
    if missing:
        parts.append(f"{missing} {no_report}")
    return parts


def tasks_cell(r: Mapping[str, Any]) -> str:
    """"3 (1 failed, 1 no_report)": the release's task count, and how many have no report and why."""
    parts = task_shortfall(r)
    return f"{r['n_tasks']} ({', '.join(parts)})" if parts else str(r["n_tasks"])


def failure_text(r: Mapping[str, Any]) -> str:
    """"cmd: 1 of 3 tasks failed, first q3: exit code 2; stderr: boom"."""
    first = r.get("first_failure") or {}
    return (
        f"{row_label(r)}: {r['n_failed_tasks']} of {r.get('n_release_tasks', r['n_tasks'])} tasks failed, first "
        f"{first.get('task_id', '?')}: {first.get('reason') or 'no reason recorded'}"
    )


def not_ranked_line(lb: Leaderboard) -> str | None:
    """Why rows have no rank, in one line (None when every row is ranked): never a blank rank without a reason."""
    unranked = [r for r in lb.rows if r.get("rank") is None]
    if not unranked:
        return None
    if _overall(lb) is None:
        partial = [r for r in lb.rows if r.get("partial")]
        line = (f"Not ranked: {lb.meta.get('benchmark') or lb.protocol or 'this benchmark'} has no overall score "
                "(its protocol combines no metrics); compare the systems metric by metric.")
        if partial:
            line += " Partial task sets: " + "; ".join(f"{row_label(r)} ({r['task_note']})" for r in partial) + "."
        return line
    return "Not ranked: " + "; ".join(f"{row_label(r)} ({r.get('unranked_reason')})" for r in unranked) + "."


def to_csv_frame(lb: Leaderboard) -> pl.DataFrame:
    """Wide table for `dvc plots`. The overall column is named for what it is (`geomean`, `overall_avg`,
    …; none when the benchmark has no overall score); undefined values are empty cells with
    their reason codes in `undefined` (`metric=code;…`); `ranked_why_not` says why a row has no rank."""
    column = overall_column(_overall(lb))
    rows = []
    for r in lb.rows:
        reasons = r.get("undefined_reason") or {}
        rows.append(
            {
                "rank": r["rank"],
                # the label: two runs that differ in a variant are two rows of `dvc plots`, never one
                "system": row_label(r),
                # a column only when some system is a variant (the tag alone; full releases' bytes unchanged)
                **({"variant": r.get("variant") or ""} if any(x.get("variant") for x in lb.rows) else {}),
                **({column: _null(r["overall_value"])} if column else {}),
                **{m: _null(r["metrics"][m]) for m in lb.metrics},
                "undefined": ";".join(f"{m}={c}" for m, c in reasons.items()),
                "n_tasks": r["n_tasks"],
                "n_answered": r.get("n_answered", r["n_tasks"]),
                "n_missing_reports": r.get("n_missing_reports", 0),
                "n_failed_tasks": r.get("n_failed_tasks", 0),
                "first_failure": failure_text(r) if r.get("n_failed_tasks") else "",
                "n_failed_items": r["n_failed_items"],
                "ranked_why_not": r.get("unranked_reason") or "",
                # a column only when some system ran unsandboxed (full releases' bytes unchanged otherwise)
                **({"sandbox": r.get("sandbox") or ""} if any(x.get("sandbox") for x in lb.rows) else {}),
                # a quick subset: the same line on every row (metrics/notice.py); no column on a full release
                **({"subset": notice(lb.meta)} if notice(lb.meta) else {}),
            }
        )
    if lb.reference:  # the paper's rows, after the measured ones, unranked and labelled on every line
        for r in rows:
            r["row_kind"] = "measured"
        for ref in lb.reference["rows"]:
            rows.append(
                {
                    "rank": None,
                    "system": ref["system"],
                    **({column: _null(ref.get("overall_value"))} if column else {}),
                    **{m: _null(ref["metrics"].get(m)) for m in lb.metrics},
                    "undefined": ";".join(f"{m}=not_published" for m in ref.get("not_shown") or {}),
                    "n_tasks": None, "n_answered": None, "n_missing_reports": None, "n_failed_tasks": None,
                    "first_failure": "", "n_failed_items": None,
                    "ranked_why_not": f"{lb.reference['label']}: a reference row, never ranked",
                    **({"sandbox": ""} if any(x.get("sandbox") for x in lb.rows) else {}),
                    **({"subset": notice(lb.meta)} if notice(lb.meta) else {}),
                    "row_kind": f"reference: {NOT_RE_JUDGED}",
                }
            )
    schema = {m: pl.Float64 for m in lb.metrics} | ({column: pl.Float64} if column else {}) | {"rank": pl.Int64}
    schema |= {k: pl.Int64 for k in ("n_tasks", "n_answered", "n_missing_reports", "n_failed_tasks",
                                      "n_failed_items")} if lb.reference else {}
    return pl.DataFrame(rows, schema_overrides=schema)


def _null(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def to_html(lb: Leaderboard, title: str | None = None) -> str:
    """One self-contained page (inline CSS/JS, no CDN): the same renderer as the scorecard site's benchmark
    page, from the leaderboard alone (`data-src` points at the sibling leaderboard.json)."""
    # lazy: +18 ms to import (python -X importtime)
    from reportbench.site.leaderboard_page import BenchmarkData, render_benchmark_page

    data = lb.as_dict()
    meta = data.get("meta") or {}
    judge = meta.get("judge") or {}
    provenance = {
        "judge": " / ".join(str(judge.get(k)) for k in ("name", "backend", "model") if judge.get(k)),
        "ensemble members": ", ".join(map(str, meta.get("members") or [])),
    }
    page_data = BenchmarkData(
        benchmark=str(meta.get("benchmark") or lb.protocol or title or "leaderboard"),
        release=str(meta.get("release") or ""),
        metrics_rel=".",
        leaderboard=data,
        provenance={k: v for k, v in provenance.items() if v},
    )
    return render_benchmark_page(page_data)


def write_leaderboard(lb: Leaderboard, out_dir: str | Path, stem: str = "leaderboard") -> dict[str, Path]:
    """Write `{stem}.json|.md|.csv|.html` and `{stem}_pairwise.csv`; returns the paths by kind."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": out / f"{stem}.json",
        "md": out / f"{stem}.md",
        "csv": out / f"{stem}.csv",
        "html": out / f"{stem}.html",
        "pairwise_csv": out / f"{stem}_pairwise.csv",
    }
    paths["json"].write_text(json.dumps(lb.as_dict(), indent=2, sort_keys=True, allow_nan=False) + "\n")
    paths["md"].write_text(to_markdown(lb))
    to_csv_frame(lb).write_csv(paths["csv"])
    paths["html"].write_text(to_html(lb))
    pw_schema = {
        "metric": pl.String,
        "system_a": pl.String,
        "system_b": pl.String,
        "t": pl.Float64,
        "p": pl.Float64,
        "n": pl.Int64,
        "mean_diff": pl.Float64,
        "note": pl.String,
    }
    pl.DataFrame(lb.pairwise, schema=pw_schema).write_csv(paths["pairwise_csv"])
    return paths


