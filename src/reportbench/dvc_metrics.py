"""What DVC shows: one flat, numbers-only summary per system for `dvc metrics show`, the long table behind
`dvc plots`, and the offline HTML page template for `dvc plots show` (docs/dvc.md).

Why: `dvc metrics show` flattens every declared metric file into one table (a row per file, a column per
flattened key). Declaring the rich `systems.json` (nested per-metric counts, per-category breakdowns, judge
usage) gave 25 rows of 107 columns. So the score stage declares one directory per benchmark x release,
`metrics/<b>/<R>/summary/`, holding one file per system with only `{metric: mean, overall: score}`: DVC renders
a row per system and a column per metric, and `dvc metrics diff` compares the same numbers. Undefined means
are `null` (DVC prints `-`), never 0. The detail files (`systems.json`, `extra.json`, judge usage) are still
written, as plain outputs that `dvc metrics` does not read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reportbench.jsonio import write_json
from reportbench.metrics.registry import metrics_for

SUMMARY_DIR = "summary"
BRIEF_FILE = "brief.json"  # the narrow view: `dvc exp show` / `dvc metrics show` columns that fit a terminal
PLOTS_FILE = Path("plots") / "metrics.json"


def benchmark_tag(benchmark: str) -> str:
    """The benchmark's short tag (`BenchmarkSpec.tag`, e.g. `ds`, `drb`), else its name."""
    from reportbench.benchmarks import get_benchmark  # lazy: +210 ms to import (python -X importtime)

    return get_benchmark(benchmark).tag or benchmark
PLOTS_TEMPLATE = ".reportbench/dvc_plots_template.html"


def _number(value: Any) -> float | None:
    """A finite float, or None (undefined) for NaN, inf, missing or non-numeric values."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def metric_mean(summary: Mapping[str, Any], metric: str) -> float | None:
    """A system summary's headline value of one metric (`metrics.<m>.mean`), None when undefined."""
    entry = (summary.get("metrics") or {}).get(metric)
    if isinstance(entry, Mapping):
        return _number(entry.get("mean"))
    return _number(entry)


def flat_summary(
    summary: Mapping[str, Any],
    metric_names: Iterable[str],
    overall: Mapping[str, Any] | None = None,
    keys: Mapping[str, str] | None = None,
) -> dict[str, float | None]:
    """{metric: mean, ..., overall: score}: the numbers `dvc metrics show` prints for one system.

    `overall` is `{"overall": score}` for a benchmark with a combined score, None for one without (no column).
    `keys` renames columns (`dvc_keys`: a name used with two scales carries its scale).
    """
    keys = keys or {}
    flat: dict[str, float | None] = {keys.get(m, m): metric_mean(summary, m) for m in metric_names}
    if overall is not None:
        flat[keys.get("overall", "overall")] = _number(overall.get("overall"))
    return flat


def scale_suffix(value_range: Sequence[float] | None) -> str:
    """ "" for 0-1 (or no declared range), else `_<lo>to<hi>` (`_0to100`)."""
    if value_range is None or len(value_range) != 2 or tuple(float(x) for x in value_range) == (0.0, 1.0):
        return ""
    return f"_{float(value_range[0]):g}to{float(value_range[1]):g}"


def overall_range(
    rows: Sequence[Mapping[str, Any]], ranges: Mapping[str, Sequence[float] | None]
) -> Sequence[float] | None:
    """The overall score's range: the named metric's (LRB `avg`, DEER `deer_mean`), or for a geometric / plain
    mean the range its parts share (None when they differ or there is no overall)."""
    if not rows or not isinstance(rows[0], Mapping):
        return None
    kind = rows[0].get("overall", "geomean")
    if kind is None:
        return None
    if kind not in ("geomean", "mean"):
        return ranges.get(str(kind))
    parts = rows[0].get("overall_metrics") or list(ranges)
    found = {tuple(ranges[m]) if ranges.get(m) is not None else None for m in parts}
    return next(iter(found)) if len(found) == 1 else None


def dvc_keys(
    benchmark: str, metric_names: Iterable[str], overall_range: Sequence[float] | None = None
) -> dict[str, str]:
    """metric -> its column in DVC's tables. One name, one scale: a metric name that installed benchmarks use
    with different ranges (`coverage`: ResearcherBench 0-1, ResearchQA and LiveResearchBench 0-100) carries
    its scale unless it is 0-1 (`coverage_0to100`), and so does `overall` (DEER `overall_0to10`). Why: `dvc
    metrics show` puts every benchmark's `coverage` in one column, where 0.9 and 90 read as the same scale."""
    from reportbench.benchmarks import installed_benchmarks  # lazy: +201 ms to import (python -X importtime)

    used: dict[str, set[tuple[float, ...] | None]] = {}
    for b in installed_benchmarks():
        for spec in metrics_for(b):
            rng = tuple(float(x) for x in spec.value_range) if spec.value_range is not None else None
            used.setdefault(spec.name, set()).add(rng)
    own = {spec.name: spec.value_range for spec in metrics_for(benchmark)}
    keys = {m: m + scale_suffix(own.get(m)) if len(used.get(m, ())) > 1 else m for m in metric_names}
    keys["overall"] = "overall" + scale_suffix(overall_range)
    return keys


def row_name(system: str, summary: Mapping[str, Any]) -> str:
    """The system's row in DVC's tables: its label (`storm [encoder: hashed]`, the summary's `label`), so that two
    runs that differ in a variant never share a row of `dvc metrics show/diff` or `dvc exp show`."""
    return str(summary.get("label") or system)


def write_dvc_metrics(
    metrics_dir: Path,
    summaries: Mapping[str, Mapping[str, Any]],
    metric_names: Iterable[str],
    overall: Mapping[str, float | None] | None = None,
    higher_is_better: Mapping[str, bool] | None = None,
    value_ranges: Mapping[str, Sequence[float] | None] | None = None,
    keys: Mapping[str, str] | None = None,
) -> dict[str, Path]:
    """Write `summary/<system>.json` for every system and `plots/metrics.json` (long: system x metric).

    The summary directory is rewritten from scratch: a system that is no longer configured has no file. Each
    plot row carries the metric's declared range (`lo`, `hi`; null when it has none) so the panel is drawn on
    it, not on the data's; an undefined value is a row with `value: null` (drawn as "undefined", never as 0).
    """
    metrics_dir = Path(metrics_dir)
    names = list(metric_names)
    overall = overall or {}
    higher = higher_is_better or {}
    ranges = value_ranges or {}
    keys = keys or {}
    column = {keys.get(m, m): m for m in [*names, "overall"]}  # DVC column -> metric
    out_dir = metrics_dir / SUMMARY_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    stems = {system: row_name(system, summaries[system]) for system in summaries}
    for stale in out_dir.glob("*.json"):
        if stale.stem not in stems.values():
            stale.unlink()
    written: dict[str, Path] = {}
    rows: list[dict[str, Any]] = []
    for system in sorted(summaries):
        flat = flat_summary(summaries[system], names, {"overall": overall[system]} if system in overall else None, keys)
        written[system] = write_json(out_dir / f"{stems[system]}.json", flat)
        for key, value in flat.items():
            metric = column.get(key, key)
            rng = ranges.get(metric) if metric != "overall" else None
            lo, hi = (float(rng[0]), float(rng[1])) if rng is not None and len(rng) == 2 else (None, None)
            scale = f"{lo:g}–{hi:g}, " if lo is not None else ""
            direction = (
                "" if metric == "overall" else ("higher is better" if higher.get(metric, True) else "lower is better")
            )
            label = f"{key} ({scale}{direction})" if (scale or direction) else key
            rows.append({"system": stems[system], "metric": label, "value": value, "lo": lo, "hi": hi})
    write_json(metrics_dir / PLOTS_FILE, rows)
    return written


def short_keys(names: Iterable[str]) -> dict[str, str]:
    """metric -> a short, unique column key (`citation_precision` -> `cit_pre`): three letters per word."""
    out: dict[str, str] = {}
    for name in names:
        key = "_".join(w[:3] for w in str(name).split("_") if w)[:11] or str(name)
        base, n = key, 2
        while key in out.values():
            key, n = f"{base}{n}", n + 1
        out[str(name)] = key
    return out


def brief(
    benchmark: str,
    summaries: Mapping[str, Mapping[str, Any]],
    metric_names: Iterable[str],
    overall: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """`{tag: {system: overall}}`, or `{tag: {system: {short metric: mean}}}` for a benchmark with no overall.

    Why: `dvc exp show` names a column `path:key` when a key repeats across files and `dvc metrics show` gives
    one row per file, so the per-system summaries were 16 columns of ~65 characters. One file per benchmark and
    release whose keys start with a short benchmark tag gives columns like `ds.careful_writer`
    (docs/dvc.md shows the `dvc exp show --keep` flags that select one tag)."""
    tag = benchmark_tag(benchmark)
    if overall:
        return {tag: {row_name(s, summaries[s]): _number((overall or {}).get(s)) for s in sorted(summaries)}}
    keys = short_keys(metric_names)
    return {tag: {row_name(s, summaries[s]): {k: metric_mean(summaries[s], m) for m, k in keys.items()}
                  for s in sorted(summaries)}}  # fmt: skip


def write_brief(
    metrics_dir: Path,
    benchmark: str,
    summaries: Mapping[str, Mapping[str, Any]],
    metric_names: Iterable[str],
    overall: Mapping[str, Any] | None,
) -> Path:
    return write_json(Path(metrics_dir) / BRIEF_FILE, brief(benchmark, summaries, metric_names, overall))


def plots_html_template() -> str:
    """DVC's `plots.html_template`: its page with vega, vega-lite and vega-embed inlined (no CDN).

    The libraries come from `vl-convert-python`, which bundles them (with all their dependencies) as one
    script that defines `window.vegaEmbed`, the global DVC's plot divs call. The page has no `{scripts}`
    placeholder, so DVC's CDN script tags are never inserted.
    """
    import vl_convert

    bundle = vl_convert.javascript_bundle()
    if "</script" in bundle.lower():  # would end our inline <script> early
        raise ValueError("vl-convert's bundle contains '</script'; cannot inline it")
    return (
        '<!DOCTYPE html>\n<html>\n<head>\n    {refresh_tag}\n    <meta charset="utf-8">\n'
        "    <title>reportbench: DVC plots (offline)</title>\n"
        f"    <!-- vega {vl_convert.get_vega_version()}, vega-embed {vl_convert.get_vega_embed_version()}, "
        "vega-lite (latest bundled by vl-convert-python); no network needed -->\n"
        f'    <script type="text/javascript">\n{bundle}\n    </script>\n'
        "    <style>body { font-family: sans-serif; } table { border-spacing: 15px; }</style>\n"
        "</head>\n<body>\n    {plot_divs}\n</body>\n</html>\n"
    )


def write_plots_template(out: Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(plots_html_template(), encoding="utf-8")
    return out
