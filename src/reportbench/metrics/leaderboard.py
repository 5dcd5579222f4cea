"""Leaderboard from several systems' summaries and per-task tables: JSON, markdown, CSV, HTML.

Why this shape: the JSON is the DVC metrics file (`cache: false`, diffable across releases), the CSV is
what `dvc plots` reads, the markdown goes into docs/PRs, and the HTML is self-contained (no CDN: `dvc plots
show` pulls vega from jsdelivr, which does not render offline). Rows are sorted by the geometric mean of a
system's metric means (ties, e.g. all 0 because one metric is 0, by the arithmetic mean of the defined metric
means); NaN metrics make the geometric mean NaN and such rows sort last.

Inputs are plain data (a summary dict per system as written by a protocol's `score_system`, and a long
per-task table with columns system, task_id, metric, value) so this module knows no protocol.
"""

from __future__ import annotations

import html
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
from reportbench.metrics.stats import geometric_mean, nan_mean, paired_ttest


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

    def as_dict(self) -> dict[str, Any]:
        return json_safe(
            {"protocol": self.protocol, "metrics": self.metrics, "rows": self.rows, "pairwise": self.pairwise}
        )


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


def build_leaderboard(
    summaries: Sequence[Mapping[str, Any]],
    per_task: pl.DataFrame | None = None,
    *,
    metrics: Sequence[str] | None = None,
    protocol: str | None = None,
    overall: str | None = "geomean",
    overall_metrics: Sequence[str] | None = None,
) -> Leaderboard:
    """Rows from `summaries` (each {"system", "metrics": {name: {"mean", "n_defined", ...}}, ...});
    pairwise tests from `per_task` (all systems concatenated) when given.

    `overall` ranks the rows: "geomean" (DeepScholar's overall score), "mean" (arithmetic mean), a metric name,
    or None (no overall; rows by name). `overall_metrics` restricts which metrics enter it (e.g. LRB's Avg of four);
    the value is stored as `geomean` for the CSV/plot column either way."""
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
            }
        )
    def rank_key(r: dict[str, Any]) -> tuple[bool, float, float, str]:
        # Geometric mean first; it is 0 as soon as one metric is 0, so ties are broken by the arithmetic
        # mean of the defined metric means, then by name (deterministic).
        g = r["geomean"]
        arith = nan_mean(r["metrics"].values()).mean
        return (math.isnan(g), -g if not math.isnan(g) else 0.0, -arith if not math.isnan(arith) else 0.0, r["system"])

    rows.sort(key=rank_key)
    for i, r in enumerate(rows, 1):
        r["rank"] = i
    pairwise: list[dict[str, Any]] = []
    if per_task is not None and per_task.height:
        systems = [r["system"] for r in rows]
        for m in names:
            spec = _spec(m, protocol)
            if spec is not None and spec.aggregation == "rating":
                continue  # a cross-system rating has no per-task values to pair; its intervals come with it
            vals = {sy: _task_values(per_task, sy, m) for sy in systems}
            for a, b in combinations(systems, 2):
                pairwise.append(
                    {"metric": m, "system_a": a, "system_b": b, **paired_ttest(vals[a], vals[b]).as_dict()}
                )
    return Leaderboard(protocol, names, rows, pairwise)


def from_scores(scores: Iterable[ScoresLike], **kw: Any) -> Leaderboard:
    """Convenience: build from protocol `SystemScores` objects."""
    scores = list(scores)
    frames = [s.per_task.select(["system", "task_id", "metric", "value"]) for s in scores]
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
        cells = [str(r["rank"]), r["system"]]
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
        "[f failed] = tasks whose judgments failed (NaN, excluded, never 0)."
    )
    if lb.pairwise:
        lines += ["", "Paired t-tests (A − B, over tasks both define):", ""]
        lines.append("| metric | A | B | mean diff | t | p | n | note |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for pw in lb.pairwise:
            lines.append(
                f"| {_label(pw['metric'], lb.protocol)} | {pw['system_a']} | {pw['system_b']} | "
                f"{_fmt(pw['mean_diff'])} | {_fmt(pw['t'], 2)} | {_fmt_p(pw['p'])} | {pw['n']} | "
                f"{pw['note']} |"
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


_CSS = (
    "body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
    "td,th{padding:4px 8px;border-bottom:1px solid #ddd;text-align:right}td.s,th.s{text-align:left}"
    ".b{position:relative;min-width:90px}.b i{position:absolute;left:0;top:2px;bottom:2px;background:#cfe3f7;"
    "z-index:0}.b span{position:relative;z-index:1}"
)


def to_html(lb: Leaderboard, title: str = "reportbench leaderboard") -> str:
    """One self-contained page: a table whose cells carry CSS bars (scaled to the column's max)."""
    cols = [*lb.metrics, "geomean"] if _overall(lb) is not None else list(lb.metrics)
    col_max: dict[str, float] = {}
    for c in cols:
        vals = [r["geomean"] if c == "geomean" else r["metrics"][c] for r in lb.rows]
        finite = [v for v in vals if not math.isnan(v)]
        col_max[c] = max(finite) if finite and max(finite) > 0 else 1.0
    esc = html.escape
    head = "".join(f"<th>{esc(_label(c, lb.protocol) if c != 'geomean' else overall_label(lb))}</th>" for c in cols)
    body = []
    for r in lb.rows:
        cells = []
        for c in cols:
            v = r["geomean"] if c == "geomean" else r["metrics"][c]
            w = 0.0 if math.isnan(v) else 100.0 * v / col_max[c]
            cells.append(f'<td class="b"><i style="width:{w:.0f}%"></i><span>{esc(_fmt(v))}</span></td>')
        body.append(
            f'<tr><td>{r["rank"]}</td><td class="s">{esc(r["system"])}</td>{"".join(cells)}'
            f"<td>{r['n_tasks']}</td><td>{r['n_failed_items']}</td></tr>"
        )
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><title>{esc(title)}</title>'
        f"<style>{_CSS}</style></head><body><h1>{esc(title)}</h1>"
        f'<table><tr><th>#</th><th class="s">system</th>{head}<th>tasks</th><th>failed items</th></tr>'
        f"{''.join(body)}</table><p>Means over tasks with a defined value. Bars scale to the column maximum."
        "</p></body></html>\n"
    )


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


