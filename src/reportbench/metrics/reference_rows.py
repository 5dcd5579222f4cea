"""Published reference rows: a paper's own numbers beside the measured rows, never ranked with them.

Why: a user running the `published` preset asks "where would my system sit in the paper's table?". The honest
answer is the paper's rows next to theirs, labelled as what they are (the paper's numbers, from the paper's judge
on the paper's task set, not re-judged here) and with every difference that makes the comparison unsafe printed
beside them. The rows come from a versioned file in the benchmark's package (`published_rows.yaml`) that names the
source of every number (paper, table, row, column); a number that cannot be read reliably from the paper is left
out with the reason (`omitted`). docs/reading-scores.md "Published reference rows".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

REFERENCE_FILE = "published_rows.yaml"
NOT_RE_JUDGED = "not re-judged here"


class ReferenceRowsError(ValueError):
    """A published_rows.yaml that cannot be used: the message names the file and the field."""


def _need(where: str, node: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    if key not in node or not isinstance(node[key], kind):
        raise ReferenceRowsError(f"{where}.{key}: missing or not a {getattr(kind, '__name__', kind)}")
    return node[key]


def load_table(path: Path, table: str) -> dict[str, Any]:
    """One table of a published_rows.yaml, checked: every row's values are numbers under declared columns."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ReferenceRowsError(f"{path}: cannot read ({e})") from None
    if not isinstance(data, Mapping):
        raise ReferenceRowsError(f"{path}: expected a mapping at the top level")
    tables = _need(str(path), data, "tables", Mapping)
    if table not in tables:
        raise ReferenceRowsError(f"{path}: no table {table!r} (has: {', '.join(map(str, tables))})")
    where = f"{path}: tables.{table}"
    t = tables[table]
    if not isinstance(t, Mapping):
        raise ReferenceRowsError(f"{where}: expected a mapping")
    for key in ("table", "judge", "judge_source", "tasks", "tasks_source", "location"):
        _need(where, t, key, str)
    columns = _need(where, t, "columns", Mapping)
    overall = t.get("overall")
    for i, row in enumerate(_need(where, t, "rows", list)):
        rw = f"{where}.rows[{i}]"
        if not isinstance(row, Mapping):
            raise ReferenceRowsError(f"{rw}: expected a mapping")
        _need(rw, row, "system", str)
        for m, v in _need(rw, row, "values", Mapping).items():
            if m not in columns:
                raise ReferenceRowsError(f"{rw}.values.{m}: not a declared column ({', '.join(columns)})")
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise ReferenceRowsError(f"{rw}.values.{m}: {v!r} is not a number")
        if "overall" in row and overall is None:
            raise ReferenceRowsError(f"{rw}.overall: the table declares no overall column")
    return {"paper": str(data.get("paper") or ""), "seed": data.get("seed"), "key": table, **dict(t)}


def reference_file(package_dir: str | Path) -> Path:
    """Where a benchmark keeps its published rows: `<its package>/published_rows.yaml`."""
    return Path(package_dir) / REFERENCE_FILE


def label(t: Mapping[str, Any]) -> str:
    """"published (paper Table 2, judge GPT-4o …), not re-judged here": what the rows are, on every output."""
    return f"published (paper {t['table']}, judge {t['judge']}), {NOT_RE_JUDGED}"


def _models(run_models: Iterable[str]) -> list[str]:
    return sorted({str(m) for m in run_models if m})


def differences(
    t: Mapping[str, Any],
    *,
    run_judge: Mapping[str, Any],
    run_models: Iterable[str],
    n_tasks: int,
    release: str,
    notice: str | None,
    prompts: str | None,
) -> list[dict[str, Any]]:
    """What makes "my row vs the paper's row" unsafe, one entry per aspect ({aspect, paper, this_run, same})."""
    models = _models(run_models)
    paper_models = sorted(str(m) for m in t.get("judge_models") or [])
    backend = str(run_judge.get("backend") or "")
    if backend in ("offline", "stub") or not models:
        this_judge = f"{run_judge.get('name') or backend} judge ({', '.join(models) or 'no model'}): not an LLM judge"
        same_judge = False
    else:
        this_judge = ", ".join(models)
        same_judge = bool(paper_models) and set(models) == set(paper_models)
    out = [
        {"aspect": "judge", "paper": f"{t['judge']} [{t['judge_source']}]", "this_run": this_judge,
         "same": same_judge},
        {"aspect": "tasks", "paper": f"{t['tasks']} [{t['tasks_source']}]",
         "this_run": f"release {release}: {n_tasks} task(s)" + (f"; {notice}" if notice else ""),
         "same": t.get("n_tasks") == n_tasks and not notice},
        {"aspect": "preset", "paper": "the authors' own runs for the paper",
         "this_run": "preset published (the paper's settings as far as docs/presets.md maps them)", "same": None},
        {"aspect": "prompts", "paper": "the authors' prompts at the time of the paper",
         "this_run": f"prompts: {prompts or 'unknown'}", "same": None},
        {"aspect": "reports", "paper": "the systems' reports as the authors collected them",
         "this_run": "this run's reports (the paper's rows were not re-judged here)", "same": False},
    ]
    for note in t.get("notes") or []:
        out.append({"aspect": "note", "paper": str(note), "this_run": "", "same": None})
    return out


def reference_block(
    t: Mapping[str, Any],
    metrics: Sequence[str],
    *,
    source_file: str,
    diffs: list[dict[str, Any]],
) -> dict[str, Any]:
    """The leaderboard's `reference` block: the paper's rows on the leaderboard's metrics (a metric the paper's
    table has no column for is absent with the reason), each number with its source; never ranked."""
    columns: Mapping[str, str] = t["columns"]
    overall = t.get("overall") or None
    rows = []
    for row in t["rows"]:
        values = dict(row.get("values") or {})
        omitted = dict(row.get("omitted") or {})
        cells: dict[str, float | None] = {}
        why: dict[str, str] = {}
        sources: dict[str, str] = {}
        for m in metrics:
            if m in values:
                cells[m] = float(values[m])
                sources[m] = f"{t['table']}, row {row['system']!r}, column {columns[m]!r}"
            else:
                cells[m] = None
                why[m] = str(omitted.get(m) or ("not a column of the paper's " + str(t["table"])))
        out_row: dict[str, Any] = {
            "system": row["system"],
            "metrics": cells,
            "not_shown": why,
            "source": sources,
            "rank": None,
        }
        if overall is not None:
            column = str(overall.get("column") or "")
            if overall.get("kind") == "metric":  # the overall is one of the metric columns (LRB's Avg)
                m = next((k for k, c in columns.items() if c == column), None)
                v = values.get(m) if m else None
            else:
                v = row.get("overall")
            out_row["overall_value"] = float(v) if isinstance(v, int | float) else None
            if out_row["overall_value"] is not None:
                out_row["source"]["overall"] = f"{t['table']}, row {row['system']!r}, column {column!r}"
        if row.get("note"):
            out_row["note"] = str(row["note"])
        rows.append(out_row)
    return {
        "label": label(t),
        "paper": t.get("paper"),
        "table": t["table"],
        "title": t.get("title"),
        "location": t["location"],
        "judge": t["judge"],
        "source_file": source_file,
        "ranked": False,
        "rule": "reference rows are the paper's own numbers: shown beside the measured rows, never ranked with "
        "them, never re-judged here",
        # the overall as its own column only when it is not one of the metric columns (LRB's Avg is)
        "overall_column": None if (overall or {}).get("kind") == "metric" else (overall or {}).get("column"),
        "shown_metrics": [m for m in metrics if m in columns],
        "not_in_paper": [m for m in metrics if m not in columns],
        "differences": diffs,
        "rows": rows,
    }


def unsafe_line(block: Mapping[str, Any]) -> str:
    """"Not comparable as is: judge (paper …; this run …); tasks (…)": the differences that are not the same."""
    parts = [f"{d['aspect']} (paper: {d['paper']}; this run: {d['this_run']})"
             for d in block.get("differences") or [] if d.get("same") is False]
    notes = [d["paper"] for d in block.get("differences") or [] if d.get("aspect") == "note"]
    line = "Differences that make a comparison unsafe: " + ("; ".join(parts) if parts else "none recorded") + "."
    return line + (" Notes: " + "; ".join(notes) + "." if notes else "")
