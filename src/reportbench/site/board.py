"""`reportbench board [-b <benchmark>]`: each benchmark's leaderboard as a terminal table that fits 160 columns
(`--width`) however many systems it has.

Why not `dvc metrics show` / `dvc exp show`: DVC puts one metrics file on a row and every key in a column, so a
per-benchmark view either has a column per system × metric (it grew from 151 to 219 columns when a user added one
system) or a row per system with every metric's full name (DEER 215, LiveResearchBench 272 columns). Here systems
are rows, metrics are columns under their short labels, and a benchmark with more metrics than fit is printed in
blocks that repeat the rank and system columns. It reads `metrics/<b>/<R>/leaderboard.json` as the score stage
wrote it (the release from params.yaml's plan), so it shows the leaderboard's own numbers and reasons: "—" with a
reason code for an undefined value, the rank or "—" with the reason underneath, and failed tasks apart from
missing reports (docs/reading-scores.md). `dvc metrics diff` stays the way to compare revisions (its table is
long, one row per changed key).
"""

from __future__ import annotations

import argparse
import json
import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reportbench.benchmark_arg import add_benchmark_argument
from reportbench.config import ConfigError, load_params
from reportbench.types import system_label

DEFAULT_WIDTH = 160
MAX_SYSTEM = 28  # longer system names are cut with "…" (the full name is in leaderboard.json)
GAP = "  "


def _fmt(v: Any, digits: int) -> str:
    if isinstance(v, bool) or not isinstance(v, int | float) or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{float(v):.{digits}f}"


def _name(r: Mapping[str, Any]) -> str:
    """The row's label, its name cut to fit and its variant tag (agents.variant) always whole."""
    tag = system_label("", r.get("variant"))
    return _cut(str(r["system"]), max(8, MAX_SYSTEM - len(tag))) + tag


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _rank(r: Mapping[str, Any]) -> str:
    if r.get("rank") is None:
        return "—"
    return f"={r['rank']}" if r.get("tied") else str(r["rank"])


def _tasks(r: Mapping[str, Any]) -> str:
    total = r.get("n_release_tasks", r.get("n_tasks"))
    answered = r.get("n_answered", total)
    from reportbench.metrics.leaderboard import task_shortfall  # lazy: +400 ms to import (python -X importtime)

    parts = task_shortfall(r, no_report="no report")
    return f"{answered}/{total}" + (f" ({', '.join(parts)})" if parts else "")


def _cell(r: Mapping[str, Any], m: str, digits: int) -> str:
    v = (r.get("metrics") or {}).get(m)
    text = _fmt(v, digits)
    if text == "—":
        return f"— {(r.get('undefined_reason') or {}).get(m, 'undefined')}"
    n_def, n = (r.get("n_defined") or {}).get(m), r.get("n_tasks")
    failed = (r.get("n_failed") or {}).get(m)
    if failed:
        text += f" [{failed}f]"
    return text + ("*" if isinstance(n_def, int) and isinstance(n, int) and n_def < n else "")


def _layout(head: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]

    def line(cells: Sequence[str]) -> str:
        out = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)]
        return GAP.join(out).rstrip()

    return [line(head), *(line(row) for row in rows)]


def render_board(lb: Mapping[str, Any], benchmark: str, release: str, width: int = DEFAULT_WIDTH) -> str:
    """The leaderboard as text no wider than `width` (metrics in as many blocks as needed)."""
    from reportbench.metrics.registry import short_failure  # lazy: +49 ms to import (python -X importtime)
    from reportbench.site.leaderboard_page import DIGITS_BY_UNIT  # lazy: +68 ms to import (python -X importtime)

    rows = list(lb.get("rows") or [])
    metrics = [str(m) for m in lb.get("metrics") or []]
    info = lb.get("metric_info") or {}
    overall = rows[0].get("overall") if rows else None
    judge = (lb.get("meta") or {}).get("judge") or {}
    title = f"{benchmark} · {release}" + (f" (judge {judge.get('name')})" if judge.get("name") else "")
    out = [title]
    fixed_head = (["#"] if overall is not None else []) + ["system"]
    fixed = [([_rank(r)] if overall is not None else []) + [_name(r)] for r in rows]
    tail_head = (["overall"] if overall is not None else []) + ["tasks"]
    digits = {m: DIGITS_BY_UNIT.get(str((info.get(m) or {}).get("unit")), 3) for m in metrics}
    overall_digits = digits.get(str(overall), 3)
    tail = [([_fmt(r.get("overall_value"), overall_digits)] if overall is not None else []) + [_tasks(r)] for r in rows]
    cols = {m: [_cell(r, m, digits[m]) for r in rows] for m in metrics}
    labels = {m: _cut(str((info.get(m) or {}).get("label") or m), 16) for m in metrics}

    def col_width(h: str, values: Sequence[str]) -> int:
        return max([len(h), *(len(v) for v in values)])

    base = sum(col_width(h, [f[i] for f in fixed]) for i, h in enumerate(fixed_head)) + len(GAP) * (len(fixed_head) - 1)
    tail_w = sum(col_width(h, [t[i] for t in tail]) + len(GAP) for i, h in enumerate(tail_head))
    blocks: list[list[str]] = [[]]
    used = base
    for m in metrics:
        w = col_width(labels[m], cols[m]) + len(GAP)
        if blocks[-1] and used + w + tail_w > width:
            blocks.append([])
            used = base
        blocks[-1].append(m)
        used += w
    for k, block in enumerate(blocks):
        last = k == len(blocks) - 1
        head = [*fixed_head, *(labels[m] for m in block), *(tail_head if last else [])]
        body = [
            [*fixed[i], *(cols[m][i] for m in block), *(tail[i] if last else [])] for i in range(len(rows))
        ]
        tail_right = [h != "tasks" for h in tail_head] if last else []
        right = [h == "#" for h in fixed_head] + [True] * len(block) + tail_right
        if len(blocks) > 1:
            out.append(f"[{k + 1}/{len(blocks)}]")
        out += _layout(head, body, right)
    notes = ["*: some tasks have no defined value (the mean is over the others); [kf]: k tasks' judgments failed; "
             "— code: undefined, with its reason (docs/reading-scores.md)."]
    if overall is None:
        notes.append(f"Not ranked: {benchmark} has no overall score (its protocol combines no metrics).")
    unranked = [r for r in rows if r.get("rank") is None and overall is not None]
    if unranked:
        notes.append("Not ranked: " + "; ".join(f"{r['system']} ({r.get('unranked_reason')})" for r in unranked) + ".")
    for r in rows:
        if r.get("n_failed_tasks"):
            first = r.get("first_failure") or {}
            notes.append(
                f"Failed tasks: {r['system']}: {r['n_failed_tasks']} failed, first {first.get('task_id', '?')}: "
                f"{short_failure(first.get('reason'))} (the full reason: leaderboard.json rows[].first_failure)."
            )
    shared = lb.get("shared_tasks") or None
    if shared and not shared.get("n_tasks"):
        notes.append(f"Shared-task comparison: none, {shared.get('why_no_tasks') or 'no task in common'}.")
    full = {m: str((info.get(m) or {}).get("full_name") or m) for m in metrics}
    labels_used = [f"{labels[m]} = {full[m]}" for m in metrics if labels[m] not in (m, full[m])]
    if labels_used:
        notes.append("Columns: " + "; ".join(labels_used) + ".")
    for note in notes:
        out += textwrap.wrap(note, width=width, break_on_hyphens=False, subsequent_indent="  ")
    return "\n".join(out) + "\n"


def boards(root: Path, benchmarks: Sequence[str] | None, width: int = DEFAULT_WIDTH) -> str:
    """Every requested (default: every enabled) benchmark's board, from params.yaml's plan and the metrics files."""
    params = load_params(root / "params.yaml")
    plan = (params.get("plan") or {}).get("benchmarks") or {}
    chosen = list(benchmarks) if benchmarks else list(plan)
    unknown = [b for b in chosen if b not in plan]
    if unknown:
        raise ConfigError(
            f"unknown benchmark(s) {', '.join(map(repr, unknown))}; enabled in params.yaml: "
            f"{', '.join(plan) or '(none)'}"
        )
    parts = []
    for b in chosen:
        release = str(plan[b].get("release"))
        path = root / "metrics" / b / release / "leaderboard.json"
        if not path.is_file():
            parts.append(f"{b} · {release}: no leaderboard yet ({path} missing; run `dvc repro`)\n")
            continue
        parts.append(render_board(json.loads(path.read_text(encoding="utf-8")), b, release, width))
    return "\n".join(parts)


def _cmd(args: argparse.Namespace) -> int:
    print(boards(Path(args.root), args.benchmark or None, args.width), end="")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "board",
        help="each benchmark's leaderboard as a table that fits the terminal (160 columns), systems as rows",
        description="Print the leaderboard of every enabled benchmark (or those named with -b) from "
        "metrics/<b>/<R>/leaderboard.json: rank (or — and why), each metric under its short label, the overall "
        "score, and tasks answered with failed tasks apart from missing reports. Wider benchmarks are printed in "
        "blocks of metrics, so no line exceeds --width.",
    )
    add_benchmark_argument(p, repeatable=True, help="a benchmark (repeat for several; default: every enabled one)")
    p.add_argument("--width", type=int, default=DEFAULT_WIDTH, help=f"maximum line width (default {DEFAULT_WIDTH})")
    p.add_argument("--root", default=".", help="the repository (params.yaml, metrics/)")
    p.set_defaults(func=_cmd)
