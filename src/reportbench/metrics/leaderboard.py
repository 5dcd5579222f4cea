"""Leaderboard from several systems' summaries and per-task tables: JSON, markdown, CSV, HTML.

Why this shape: the JSON is the DVC metrics file (`cache: false`, diffable across releases), the CSV is
what `dvc plots` reads, the markdown goes into docs/PRs, and the HTML is self-contained (no CDN: `dvc plots
show` pulls vega from jsdelivr, which does not render offline). Rows are sorted by the geometric mean of a
system's metric means (ties, e.g. all 0 because one metric is 0, by the arithmetic mean of the defined metric
means); NaN metrics make the geometric mean NaN and such rows sort last.

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from reportbench.jsonio import json_safe
from reportbench.metrics.registry import MetricRegistryError, MetricSpec, get_metric
from reportbench.metrics.stats import (
    bootstrap_ci,
    fdr_adjust,
    geometric_mean,
    nan_mean,
    paired_bootstrap_diff_ci,
    paired_ttest,
    stratified_bootstrap_ci,
)

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


def rating_intervals(extra_metrics: Mapping[str, Any] | None) -> dict[str, dict[str, float]]:
    """system -> {rating, boot_median, boot_mean, ci_low, ci_high} from a cross stage's reported rating table
    (ResearchQA's Bradley–Terry bootstrap: `extra.json` ratings.tables[ratings.reported])."""
    ratings = (extra_metrics or {}).get("ratings")
    if not isinstance(ratings, Mapping):
        return {}
    table = (ratings.get("tables") or {}).get(ratings.get("reported"))
    out: dict[str, dict[str, float]] = {}
    for row in table or []:
        if isinstance(row, Mapping) and "system" in row:
            out[str(row["system"])] = {k: row[k] for k in ("rating", "boot_median", "boot_mean", "ci_low", "ci_high")
                                       if isinstance(row.get(k), int | float)}
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _interval(
    spec: MetricSpec | None,
    mean: float,
    task_vals: Mapping[str, float],
    groups: Mapping[str, str],
    rating: Mapping[str, float] | None,
) -> tuple[list[float] | None, str]:
    """A 95 % interval for one cell and how it was obtained, or None and why there is none."""
    if math.isnan(mean):
        return None, "n/a: the value is undefined"
    if spec is not None and spec.aggregation == "rating":
        if rating and "ci_low" in rating and "ci_high" in rating:
            if any(_close(mean, float(rating[k])) for k in ("rating", "boot_median", "boot_mean") if k in rating):
                return [float(rating["ci_low"]), float(rating["ci_high"])], "bootstrap over battles (cross stage)"
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
    if not _close(nan_mean(defined.values()).mean, mean):
        return None, "n/a: the summary is not the mean of per-task values"
    lo, hi = bootstrap_ci(defined.values(), n_boot=N_BOOT, seed=0)
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
) -> Leaderboard:
    """Rows from `summaries` (each {"system", "metrics": {name: {"mean", "n_defined", ...}}, ...});
    pairwise tests from `per_task` (all systems concatenated) when given.

    `overall` ranks the rows: "geomean" (DeepScholar's overall score), "mean" (arithmetic mean), a metric name,
    or None (no overall; rows by name). `overall_metrics` restricts which metrics enter it (e.g. LRB's Avg of four);
    the value is stored as `geomean` for the CSV/plot column either way. `extra_metrics` (the score stage's
    extra.json) supplies the bootstrap intervals of `rating` metrics."""
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
                "geomean": score,
                "overall": overall,
                # a geomean over a subset is labelled with its metrics; the all-metric one is kept next to it
                **({"overall_metrics": parts, "geomean_all": geometric_mean(means.values())} if subset else {}),
                "metrics": means,
                "n_defined": {m: ms.get(m, {}).get("n_defined", 0) for m in names},
                # judge failures (NaN, excluded) and protocol-undefined values, kept apart per metric
                "n_failed": {m: int(ms.get(m, {}).get("n_failed", 0)) for m in names},
                "n_undefined": {m: int(ms.get(m, {}).get("n_undefined", 0)) for m in names},
                "authors_aggregate": {m: ms.get(m, {}).get("authors_aggregate", math.nan) for m in names},
                "n_tasks": int(s.get("n_tasks", 0)),
                "n_missing_reports": int(s.get("n_missing_reports", 0)),
                "n_failed_items": int(sum(ms.get(m, {}).get("n_failed_items", 0) for m in names)),
                # reports flagged at ingestion (e.g. text addressed to the judge), when the protocol counts them
                **({"flagged_reports": int(s["flagged_reports"])} if "flagged_reports" in s else {}),
            }
        )
    def rank_key(r: dict[str, Any]) -> tuple[bool, float, float, str]:
        # Geometric mean first; it is 0 as soon as one metric is 0, so ties are broken by the arithmetic
        # mean of the defined metric means, then by name (deterministic).
        g = r["geomean"]
        arith = nan_mean(r["metrics"].values()).mean
        return (math.isnan(g), -g if not math.isnan(g) else 0.0, -arith if not math.isnan(arith) else 0.0, r["system"])

    rows.sort(key=rank_key)
    rank = 0
    for r in rows:
        # blank (null) where the overall score is undefined or the benchmark has none: never a rank by name
        if overall is None or math.isnan(r["geomean"]):
            r["rank"] = None
        else:
            rank += 1
            r["rank"] = rank
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
        for m in names:
            spec = _spec(m, protocol)
            if spec is not None and spec.aggregation == "rating":
                continue  # a cross-system rating has no per-task values to pair; its intervals come with it
            for a, b in combinations(systems, 2):
                va, vb = task_vals[(a, m)], task_vals[(b, m)]
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
    info = {m: metric_info(m, protocol) for m in names}
    first = summaries[0]
    meta = {k: first[k] for k in ("benchmark", "release", "judge", "members") if k in first}
    return Leaderboard(protocol, names, rows, pairwise, info, stats, meta)


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
    if parts is not None and overall == "geomean":
        return f"GeoMean ({len(parts)} of {len(lb.metrics)}: {', '.join(_label(m, lb.protocol) for m in parts)})"
    if overall in (None, "geomean"):
        return "GeoMean"
    if overall == "mean":
        return "Mean"
    return f"Overall ({_label(overall, lb.protocol)})"


def to_markdown(lb: Leaderboard) -> str:
    """A ranking table, then one paired t-test table (A − B) over tasks both systems have defined."""
    show_overall = _overall(lb) is not None  # a benchmark without a combined score (ResearcherBench) shows none
    heads = ["#", "system", *[_label(m, lb.protocol) for m in lb.metrics]]
    heads += [overall_label(lb)] if show_overall else []
    show_all = show_overall and any("geomean_all" in r for r in lb.rows)
    heads += [f"GeoMean (all {len(lb.metrics)})"] if show_all else []
    heads += ["tasks", "failed items"]
    lines = ["| " + " | ".join(heads) + " |", "|" + "|".join(["---"] * len(heads)) + "|"]
    for r in lb.rows:
        cells = ["" if r["rank"] is None else str(r["rank"]), r["system"]]
        for m in lb.metrics:
            cell = _fmt(r["metrics"][m])
            if r["n_defined"][m] < r["n_tasks"]:
                cell += f" ({r['n_defined'][m]}/{r['n_tasks']})"
            if r.get("n_failed", {}).get(m):
                cell += f" [{r['n_failed'][m]} failed]"
            cells.append(cell)
        cells += [_fmt(r["geomean"])] if show_overall else []
        cells += [_fmt(r.get("geomean_all"))] if show_all else []
        missing = r.get("n_missing_reports", 0)
        cells += [f"{r['n_tasks']} ({missing} no_report)" if missing else str(r["n_tasks"]), str(r["n_failed_items"])]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "Means are over tasks with a defined value; (k/n) = defined/total when some are undefined; "
        "[f failed] = tasks whose judgments failed (NaN, excluded, never 0); no rank where the overall "
        "score is undefined. 95 % bootstrap intervals: leaderboard.json (`ci`) and the scorecard site."
    )
    if lb.pairwise:
        lines += ["", "Paired t-tests (A − B, over tasks both define); p (FDR) = Benjamini–Hochberg adjusted over "
                  "all the tests below:", ""]
        lines.append("| metric | A | B | mean diff | 95% CI | t | p | p (FDR) | n | note |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        for pw in lb.pairwise:
            ci = pw.get("diff_ci")
            ci_txt = f"[{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else "—"
            lines.append(
                f"| {_label(pw['metric'], lb.protocol)} | {pw['system_a']} | {pw['system_b']} | "
                f"{_fmt(pw['mean_diff'])} | {ci_txt} | {_fmt(pw['t'], 2)} | {_fmt_p(pw['p'])} | "
                f"{_fmt_p(pw.get('p_fdr', math.nan))} | {pw['n']} | {pw['note']} |"
            )
    return "\n".join(lines) + "\n"


def to_csv_frame(lb: Leaderboard) -> pl.DataFrame:
    """Wide table for `dvc plots` (e.g. template bar_horizontal, x: geomean, y: system)."""
    rows = []
    for r in lb.rows:
        rows.append(
            {
                "rank": r["rank"],
                "system": r["system"],
                "geomean": r["geomean"],
                **{m: r["metrics"][m] for m in lb.metrics},
                "n_tasks": r["n_tasks"],
                "n_failed_items": r["n_failed_items"],
            }
        )
    return pl.DataFrame(rows)


def to_html(lb: Leaderboard, title: str | None = None) -> str:
    """One self-contained page (inline CSS/JS, no CDN): the same renderer as the scorecard site's benchmark
    page, from the leaderboard alone (`data-src` points at the sibling leaderboard.json)."""
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


