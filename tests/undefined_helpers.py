"""Assertions shared by the tests/test_undefined_*.py files: an undefined value is "—" with its reason code in
every output a user reads (systems.json, leaderboard.json/.md/.csv and the site's benchmark page), never 0."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from reportbench.metrics.registry import REASON_CODES


def md_cell(md: str, system: str, column: int) -> str:
    """The markdown leaderboard cell of `system` in column `column` (0 = rank, 1 = system; a benchmark without an
    overall score has no rank column, and the columns shift left by one)."""
    shift = 0 if md.lstrip().startswith("| # |") else 1
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        name = cells[1 - shift] if len(cells) > 1 else ""
        if len(cells) > 1 and (name == system or name.startswith(system + " (partial")):
            return cells[column - shift]
    raise AssertionError(f"{system} not in the markdown leaderboard")


def site_cell(html: str, system: str, metric: str) -> str:
    """The site page's leaderboard cell of (system, metric)."""
    row = re.search(rf'<tr data-system="{re.escape(system)}">(.*?)</tr>', html, re.S)
    assert row, f"{system} not on the page"
    cell = re.search(rf'<td class="cell" data-metric="{re.escape(metric)}"[^>]*>(.*?)</td>', row.group(1), re.S)
    assert cell, f"{metric} not in {system}'s row"
    return cell.group(1)


def assert_undefined_everywhere(metrics_dir: Path, system: str, metric: str, code: str) -> None:
    """`metric` of `system` is undefined with reason `code` in every output file and on the site."""
    from reportbench.site.leaderboard_page import BenchmarkData, render_benchmark_page

    assert code in REASON_CODES, code
    summaries: dict[str, Any] = json.loads((metrics_dir / "systems.json").read_text())
    m = summaries[system]["metrics"][metric]
    assert m["mean"] is None and m["reason"] == code, (system, metric, m.get("mean"), m.get("reason"))
    lb = json.loads((metrics_dir / "leaderboard.json").read_text())
    row = next(r for r in lb["rows"] if r["system"] == system)
    assert row["metrics"][metric] is None and row["undefined_reason"][metric] == code
    md = (metrics_dir / "leaderboard.md").read_text()
    column = 2 + lb["metrics"].index(metric)
    assert md_cell(md, system, column) == f"— ({code})", md_cell(md, system, column)
    csv = pl.read_csv(metrics_dir / "leaderboard.csv", infer_schema_length=0)
    crow = csv.filter(pl.col("system") == system).row(0, named=True)
    assert crow[metric] in (None, ""), crow[metric]  # an empty cell, never 0
    assert f"{metric}={code}" in (crow["undefined"] or "").split(";")
    html = render_benchmark_page(BenchmarkData(benchmark="b", release="r", metrics_rel=".", leaderboard=lb))
    cell = site_cell(html, system, metric)
    assert f"— {code}" in cell and 'class="num"' not in cell.split("</span>")[0], cell
