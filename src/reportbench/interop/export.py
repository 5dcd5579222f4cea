"""`reportbench export -b <benchmark> --scores data/scores/<b>/<R> --out DIR`: a score stage's per-task tables
written in the benchmark authors' result formats (reportbench.interop.<b>), to diff against their scripts or
submit to their leaderboards.

Only defined per-task values are written: a failed or undefined task is left out of a mean and out of a file
(their scripts would read an empty cell as 0; we do not write a 0 we did not measure). Written per benchmark:
- researcherbench: `rubric_eval/<S>/<S>_evaluation_results.txt` (mean of per-question coverage);
- deepscholar: `results.csv` (baseline_name x metric, mean over the tasks with a defined value, 2 dp);
- liveresearchbench: `summary_reportbench.json` (their summary shape, one entry per system);
- deer: `<S>/final/<task>.json` with `score_avgs` (the seven dimensions; "N/A" when undefined);
- researchqa: `leaderboard.csv` (the notebook's summary table: system, mean, std) from the score stage's rating
  table (`metrics/researchqa/<R>/extra.json`, `--metrics`); a system without a defined rating is left out;
- a plug-in: its `BenchmarkSpec.export` hook (DeepResearch Bench: `<S>/raw_results.jsonl` and `<S>/race_result.txt`,
  in the plug-in's own `export.py`), given the same per-task values and failures.
Every installed benchmark is a choice; one without a result format of its authors' says so (exit 2).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

from reportbench.benchmark_arg import add_benchmark_argument
from reportbench.interop.deepscholar import write_results_csv
from reportbench.interop.liveresearchbench import summary_json, write_summary
from reportbench.interop.researcherbench import write_evaluation_results
from reportbench.interop.researchqa import write_leaderboard

OVERALL_NOTE = ("not computed: reportbench writes no cross-system overall (the authors' summary leaves its shape "
                "unspecified); each system's overall is its `avg` criterion above, the Table-1 mean of Pres, Cons, "
                "Cov and Assoc")
EXPORTERS = ("researcherbench", "deepscholar", "liveresearchbench", "deer", "researchqa")  # plug-ins: `export`


Reasons = dict[tuple[str, str, str], str]  # (system, task_id, metric) -> why the value is undefined
NOTES_NAME = "reportbench_notes.json"  # ours, beside the authors' files: every value left out, with its reason


def read_scores(
    scores_dir: Path, failures: Reasons | None = None, reasons: Reasons | None = None
) -> dict[str, dict[str, dict[str, float | None]]]:
    """{system: {task_id: {metric: value or None}}} from a score stage's `<S>.parquet` tables; `failures` (when
    given) gets (system, task, metric) -> reason for every value whose status is `failed`, `reasons` the
    "<status>: <reason>" of every undefined value. A table without a `status` column (DeepScholar's per-report
    table) is read by its values: NaN is undefined (`judgment_failed` = failed); several reports of one task are
    averaged over their defined values first, as its score stage does."""
    import polars as pl

    acc: dict[tuple[str, str, str], list[float | None]] = {}
    why: dict[tuple[str, str, str], list[str]] = {}
    files = sorted(scores_dir.glob("*.parquet"))
    if not files:
        raise FileNotFoundError(f"{scores_dir}: no <system>.parquet score tables (run the score stage first)")
    for path in files:
        df = pl.read_parquet(path, glob=False)
        missing = {"system", "task_id", "metric", "value"} - set(df.columns)
        if missing:
            raise ValueError(f"{path}: not a score table (missing columns {sorted(missing)})")
        for row in df.iter_rows(named=True):
            v, reason = row["value"], row.get("reason")
            finite = v is not None and not math.isnan(v)
            status = row.get("status") or ("ok" if finite else "failed" if reason == "judgment_failed" else
                                           "undefined")
            key = (row["system"], row["task_id"], row["metric"])
            defined = status == "ok" and finite
            acc.setdefault(key, []).append(v if defined else None)
            if not defined:
                # a number with a non-ok status is the protocol's score for it (e.g. a missing report scored 0):
                # the leaderboard counts it, the authors' files (means over what was graded) do not: said
                counted = (" (the leaderboard counts it by the protocol's missing-report rule; the authors' file "
                           "averages what was graded)") if finite else ""
                why.setdefault(key, []).append(f"{status}: {reason or status}{counted}")
                if failures is not None and status == "failed":
                    failures[key] = str(reason or "failed")
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for (system, task_id, metric), values in acc.items():
        vals = _defined(values)
        out.setdefault(system, {}).setdefault(task_id, {})[metric] = sum(vals) / len(vals) if vals else None
        if not vals and reasons is not None:
            reasons[(system, task_id, metric)] = "; ".join(sorted(set(why[(system, task_id, metric)])))
    return out


def left_out(scores: dict[str, dict[str, dict[str, float | None]]], reasons: Reasons
             ) -> dict[str, dict[str, dict[str, int]]]:
    """{system: {metric: {reason: n_tasks}}} for every task whose value is undefined or has no row (a metric
    another system has), so an exported mean never hides what it left out. Numbers in a reason read `<n>` (the
    per-task text stays in the score table)."""
    metrics = sorted({m for tasks in scores.values() for t in tasks.values() for m in t})
    out: dict[str, dict[str, dict[str, int]]] = {}
    for system, tasks in scores.items():
        for m in metrics:
            for task_id, t in tasks.items():
                if t.get(m) is None:
                    reason = reasons.get((system, task_id, m), f"no row for this metric in {system}.parquet")
                    reason = re.sub(r"\d+(?:\.\d+)?", "<n>", reason)  # one entry per kind, not per count
                    bucket = out.setdefault(system, {}).setdefault(m, {})
                    bucket[reason] = bucket.get(reason, 0) + 1
    return out


def write_notes(out: Path, scores: dict[str, dict[str, dict[str, float | None]]],
                gaps: dict[str, dict[str, dict[str, int]]], rows_left_out: dict[str, str] | None = None) -> Path:
    """`reportbench_notes.json`: per system and metric, how many tasks have a value and which were left out of
    the authors' files (reason -> count); their formats have no place for a reason."""
    systems: dict[str, Any] = {}
    for system, by_metric in sorted(gaps.items()):
        n_tasks = len(scores.get(system, {}))
        systems[system] = {
            m: {"n_tasks": n_tasks, "n_defined": n_tasks - sum(r.values()), "left_out": dict(sorted(r.items()))}
            for m, r in sorted(by_metric.items())
        }
    doc = {"about": "values left out of the exported means and files (never written as 0), with their reasons",
           "systems": systems}
    if rows_left_out:
        doc["rows_left_out"] = dict(sorted(rows_left_out.items()))  # a whole system's row, e.g. no rating
    out.mkdir(parents=True, exist_ok=True)
    path = out / NOTES_NAME
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def _defined(values: list[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def export(benchmark: str, scores_dir: Path, out: Path, metrics_dir: Path | None = None) -> list[Path]:
    """Write the authors' result files for `benchmark` under `out`; `metrics_dir` (researchqa's rating table)
    defaults to `metrics/<b>/<R>` for `scores_dir` = `data/scores/<b>/<R>`."""
    hook = None
    if benchmark not in EXPORTERS:
        from reportbench.benchmarks import (  # lazy: +600 ms to import (python -X importtime)
            BenchmarkError,
            get_benchmark,
        )

        try:
            hook = get_benchmark(benchmark).export  # a plug-in brings its own authors' format (or has none)
        except BenchmarkError as exc:
            raise ValueError(f"no exporter for {benchmark!r}: {exc}") from None
        if hook is None:
            raise ValueError(f"no exporter for {benchmark!r}: its authors publish no result format we write; have "
                             f"{', '.join(EXPORTERS)} and the plug-ins that declare one")
    failures: Reasons = {}
    reasons: Reasons = {}
    scores = read_scores(scores_dir, failures, reasons)
    gaps = left_out(scores, reasons)
    rows_left_out: dict[str, str] = {}
    written = _export_formats(benchmark, hook, scores, failures, gaps, scores_dir, out, metrics_dir, rows_left_out)
    return [*written, write_notes(out, scores, gaps, rows_left_out)]


def _export_formats(benchmark: str, hook: Any, scores: dict[str, dict[str, dict[str, float | None]]],
                    failures: Reasons, gaps: dict[str, dict[str, dict[str, int]]], scores_dir: Path, out: Path,
                    metrics_dir: Path | None, rows_left_out: dict[str, str]) -> list[Path]:
    written: list[Path] = []
    if hook is not None:
        return list(hook(scores, failures, out))
    if benchmark == "researcherbench":
        for system, tasks in scores.items():
            recalls = _defined([m.get("coverage") for m in tasks.values()])
            if recalls:
                written.append(write_evaluation_results(out, system, recalls))
    elif benchmark == "deepscholar":
        rows: dict[str, dict[str, Any]] = {}
        for system, tasks in scores.items():
            metrics = sorted({m for t in tasks.values() for m in t})
            rows[system] = {}
            for m in metrics:
                vals = _defined([t.get(m) for t in tasks.values()])
                rows[system][m] = sum(vals) / len(vals) if vals else None
        written.append(write_results_csv(out / "results.csv", rows))
    elif benchmark == "liveresearchbench":
        by_system = {
            s: {m: [t.get(m) for t in tasks.values() if m in t] for m in sorted({k for t in tasks.values() for k in t})}
            for s, tasks in scores.items()
        }
        summary = summary_json("reportbench", "ensemble", "", {s: {m: _defined(v) for m, v in c.items()}
                                                                for s, c in by_system.items()}, left_out=gaps,
                               overall=OVERALL_NOTE)
        written.append(write_summary(out / "summary_reportbench.json", summary))
    elif benchmark == "deer":
        dims = ("information_integrity", "information_sufficiency", "request_fulfillment", "analytical_soundness",
                "structural_coherence", "format_style", "ethics_compliance")
        for system, tasks in scores.items():
            for task_id, m in sorted(tasks.items()):
                path = out / system / "final" / f"{task_id.replace('/', '_')}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                rec = {"sample_id": task_id, "score_avgs": {d: ("N/A" if m.get(d) is None else m[d]) for d in dims}}
                path.write_text(json.dumps(rec, indent=2) + "\n", encoding="utf-8")
                written.append(path)
    else:  # researchqa
        written.append(_researchqa_leaderboard(scores_dir, out, metrics_dir, rows_left_out))
    return written


def _researchqa_leaderboard(scores_dir: Path, out: Path, metrics_dir: Path | None,
                            rows_left_out: dict[str, str]) -> Path:
    """The notebook's leaderboard from the rating table the score stage chose (`ratings.reported`, `value`); a
    system without the reported statistic or its std is left out, its reason put in `rows_left_out`."""
    metrics_dir = metrics_dir or Path("metrics", *scores_dir.parts[-2:])
    extra = metrics_dir / "extra.json"
    if not extra.is_file():
        raise FileNotFoundError(f"{extra}: no rating table (researchqa's score stage writes it; or pass --metrics)")
    ratings = json.loads(extra.read_text(encoding="utf-8")).get("ratings") or {}
    table = (ratings.get("tables") or {}).get(ratings.get("reported")) or []
    column = {"mean": "boot_mean", "median": "boot_median", "point": "rating"}.get(str(ratings.get("value")), "rating")
    rows = []
    for r in table:
        if r.get(column) is not None and r.get("boot_std") is not None:
            rows.append({"system": r["system"], "mean": r[column], "std": r["boot_std"]})
        else:  # no bootstrap: not written as a 0, and said why
            rows_left_out[str(r.get("system"))] = (
                f"leaderboard.csv: no {column} / boot_std in {extra} (ratings.tables.{ratings.get('reported')}): "
                f"{r.get('reason') or r.get('ci_reason') or 'no value'}")
    return write_leaderboard(out / "leaderboard.csv", rows)



def _cmd(args: argparse.Namespace) -> int:
    try:
        paths = export(args.benchmark, Path(args.scores), Path(args.out), Path(args.metrics) if args.metrics else None)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for p in paths:
        print(p)
    notes = json.loads(paths[-1].read_text(encoding="utf-8"))["systems"]
    n = sum(sum(r["left_out"].values()) for by_metric in notes.values() for r in by_metric.values())
    for system, why in json.loads(paths[-1].read_text(encoding="utf-8")).get("rows_left_out", {}).items():
        print(f"note: {system}: left out: {why}", file=sys.stderr)
    if n:
        print(f"note: {n} (system, task, metric) values have no number and are left out of the files above "
              f"(never written as 0); each with its reason in {paths[-1]}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="write a score stage's results in the benchmark authors' result format")
    add_benchmark_argument(p, required=True, help="the benchmark whose results are written")
    p.add_argument("--scores", required=True, help="the score stage's folder, e.g. data/scores/<b>/<release>")
    p.add_argument("--out", required=True, help="where to write the authors' files")
    p.add_argument("--metrics", default=None,
                   help="researchqa: the score stage's metrics folder with extra.json (default: metrics/<b>/<release>)")
    p.set_defaults(func=_cmd)
