"""LiveResearchBench's `score@` memory (issue 36): bounded by bytes decoded and Python bytes held, never by time.

- the claims table's claim texts (most of its bytes) are not decoded for the score: only the four columns it reads;
- the citation-accuracy rows hold Python objects for the task being scored, not every (claim, URL) pair at once.
"""

from __future__ import annotations

import json
import math
import tracemalloc
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import polars as pl
import pytest

from reportbench.pipeline import MemberTables
from reportbench.protocols.liveresearchbench import benchmark as lrb

pytestmark = pytest.mark.core

CLAIM_TEXT = "x" * 1_000  # a claim's sentence: ~1 KB, as long reports' claims are


def _claims(n_tasks: int, per_task: int, claim_text: str = CLAIM_TEXT) -> pl.DataFrame:
    rows = [
        {
            "task_id": f"t{t:05d}",
            "report_id": f"r{t:05d}",
            "claim_id": f"t{t:05d}-c{k:04d}",
            "claim": claim_text,
            "url": f"https://example.org/{t}/{k % 40}",
            "url_status": "ok" if k % 3 else "invalid",
            "http_status": 200,
        }
        for t in range(n_tasks)
        for k in range(per_task)
    ]
    return pl.DataFrame(rows, schema=lrb.PAIR_SCHEMA, orient="row")


def test_score_reads_only_the_claims_columns_it_uses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stage's derived tables (MemberTables, read as score_stage reads them) give the score the claims table's
    four columns without decoding the claim texts: bytes decoded ≤ a third of the table's."""
    n_tasks, per_task = 50, 40
    table = _claims(n_tasks, per_task)
    member_dir = tmp_path / "sys" / "main" / "derived"
    member_dir.mkdir(parents=True)
    table.write_parquet(member_dir / "claims.parquet")
    decoded: list[int] = []
    real_read = pl.read_parquet

    def recording_read(*args: Any, **kwargs: Any) -> pl.DataFrame:
        df = real_read(*args, **kwargs)
        decoded.append(int(df.estimated_size()))
        return df

    monkeypatch.setattr(pl, "read_parquet", recording_read)
    tables = MemberTables(tmp_path / "sys", ["main"], lambda p: pl.read_parquet(p, glob=False), "derived", [])
    got = lrb._claim_columns(tables["main"])
    assert got is not None and got.columns == lrb.CLAIM_COLUMNS
    assert got.equals(table.select(lrb.CLAIM_COLUMNS))
    assert decoded, "the claims table was not read"
    assert sum(decoded) <= table.estimated_size() / 3, (sum(decoded), table.estimated_size())


def _ctx(claims: pl.DataFrame, n_tasks: int) -> Any:
    tasks = [SimpleNamespace(task_id=f"t{t:05d}", categories=[]) for t in range(n_tasks)]
    return SimpleNamespace(
        params={},
        partials=None,  # reported_tasks from ctx.reports
        reports={"s": [SimpleNamespace(task_id=t.task_id) for t in tasks]},
        release=SimpleNamespace(tasks=tasks),
        derived={"s": {"main": {"claims": claims}}},
        judgments={"s": {"main": {}}},
    )


def test_accuracy_rows_hold_one_tasks_pairs_at_a_time() -> None:
    """Peak Python bytes of the citation-accuracy rows over 500 tasks × 120 pairs: below 60 bytes a pair (every
    pair held as a tuple of three strings is ~250), the values unchanged from the per-task count."""
    n_tasks, per_task = 500, 120
    claims = _claims(n_tasks, per_task, claim_text="c")
    ctx = _ctx(claims, n_tasks)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        rows = lrb._accuracy_rows("s", ctx, ["main"], {})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    n_pairs = n_tasks * per_task
    assert peak - before <= 60 * n_pairs, f"{(peak - before) / n_pairs:.0f} bytes a pair"
    by = {(r["task_id"], r["metric"]): r for r in rows}
    last_status = {f"u{k % 40}": "ok" if k % 3 else "invalid" for k in range(per_task)}  # the last row of a URL
    assert by[("t00000", "cit_n_urls")]["value"] == 40.0
    assert by[("t00499", "cit_e1")]["value"] == sum(1 for st in last_status.values() if st == "invalid")
    assert math.isnan(by[("t00000", "cit_e2")]["value"])  # nothing judged: not_checked, never 0


def _site_inputs(root: Path, n_tasks: int, per_task: int) -> None:
    """One system's outcomes and judgment records as the pipeline writes them (raw outputs of ~2 KB)."""
    run = root / "data" / "runs" / "liveresearchbench" / "R" / "s"
    run.mkdir(parents=True)
    (run / "outcomes.jsonl").write_text(
        "".join(json.dumps({"task_id": f"t{t:03d}", "status": "ok"}) + "\n" for t in range(n_tasks))
    )
    jdir = root / "data" / "judgments" / "liveresearchbench" / "R" / "s" / "main"
    jdir.mkdir(parents=True)
    pl.DataFrame(
        [
            {
                "task": "lrb_presentation",
                "item_id": f"t{t:03d}:{k}",
                "input_ids": json.dumps({"task_id": f"t{t:03d}"}),
                "member": "main",
                "status": "failed" if (t + k) % 5 == 0 else "ok",
                "raw_output": "r" * 2_000,
            }
            for t in range(n_tasks)
            for k in range(per_task)
        ]
    ).write_parquet(jdir / "presentation.parquet")


def test_site_keeps_whole_records_only_for_the_pages_it_writes(tmp_path: Path) -> None:
    """`site` at 5,000 tasks held every record of every task: only the first n tasks (the sample pages written)
    keep their records whole; the system page (judgments and failed counts of every task) reads the same."""
    from reportbench.site.samples import load_system, render_system_page

    n_tasks, per_task, pages = 40, 3, 5
    _site_inputs(tmp_path, n_tasks, per_task)
    whole = load_system(tmp_path, "liveresearchbench", "R", "s", ["main"])
    slim = load_system(tmp_path, "liveresearchbench", "R", "s", ["main"], ledger_tasks=pages, full_records=pages)
    held = [r for rs in slim.judgments.values() for r in rs if "raw_output" in r]
    assert len(held) == pages * per_task
    assert {r["_ids"]["task_id"] for r in held} == set(whole.task_ids[:pages])
    assert slim.task_ids == whole.task_ids
    shown = set(whole.task_ids[:pages])
    assert render_system_page(slim, [], {}, rendered=shown) == render_system_page(whole, [], {}, rendered=shown)
