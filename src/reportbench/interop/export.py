"""`reportbench export <benchmark> --scores data/scores/<b>/<R> --out DIR`: a score stage's per-task tables
written in the benchmark authors' result formats (reportbench.interop.<b>), to diff against their scripts or
submit to their leaderboards.

Only defined per-task values are written: a failed or undefined task is left out of a mean and out of a file
(their scripts would read an empty cell as 0; we do not write a 0 we did not measure). Written per benchmark:
- researcherbench: `rubric_eval/<S>/<S>_evaluation_results.txt` (mean of per-question coverage);
- deepscholar: `results.csv` (baseline_name x metric, mean over the tasks with a defined value, 2 dp);
- liveresearchbench: `summary_reportbench.json` (their summary shape, one entry per system);
- deer: `<S>/final/<task>.json` with `score_avgs` (the seven dimensions; "N/A" when undefined).
ResearchQA's leaderboard table needs the bootstrap table (`interop.researchqa.write_leaderboard`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from reportbench.interop.deepscholar import write_results_csv
from reportbench.interop.liveresearchbench import summary_json, write_summary
from reportbench.interop.researcherbench import write_evaluation_results

EXPORTERS = ("researcherbench", "deepscholar", "liveresearchbench", "deer")


def read_scores(scores_dir: Path) -> dict[str, dict[str, dict[str, float | None]]]:
    """{system: {task_id: {metric: value or None}}} from a score stage's `<S>.parquet` tables."""
    import polars as pl

    out: dict[str, dict[str, dict[str, float | None]]] = {}
    files = sorted(scores_dir.glob("*.parquet"))
    if not files:
        raise FileNotFoundError(f"{scores_dir}: no <system>.parquet score tables (run the score stage first)")
    for path in files:
        df = pl.read_parquet(path, glob=False)
        missing = {"system", "task_id", "metric", "value", "status"} - set(df.columns)
        if missing:
            raise ValueError(f"{path}: not a score table (missing columns {sorted(missing)})")
        for row in df.iter_rows(named=True):
            v = row["value"]
            defined = row["status"] == "ok" and v is not None and not math.isnan(v)
            out.setdefault(row["system"], {}).setdefault(row["task_id"], {})[row["metric"]] = v if defined else None
    return out


def _defined(values: list[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def export(benchmark: str, scores_dir: Path, out: Path) -> list[Path]:
    scores = read_scores(scores_dir)
    written: list[Path] = []
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
                                                                for s, c in by_system.items()})
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
    else:
        raise ValueError(f"no exporter for {benchmark!r}; have {EXPORTERS}")
    return written


def _cmd(args: argparse.Namespace) -> int:
    try:
        paths = export(args.benchmark, Path(args.scores), Path(args.out))
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for p in paths:
        print(p)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="write a score stage's results in the benchmark authors' result format")
    p.add_argument("benchmark", choices=EXPORTERS)
    p.add_argument("--scores", required=True, help="the score stage's folder, e.g. data/scores/<b>/<release>")
    p.add_argument("--out", required=True, help="where to write the authors' files")
    p.set_defaults(func=_cmd)
