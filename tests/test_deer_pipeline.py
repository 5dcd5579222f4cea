"""DEER demo release end to end through the real stage functions (offline judge), the spec §7 edge cases
(no references, inline links only, ranges [3-5]) and the licence rule: the EG never reaches a metric file."""

from __future__ import annotations

import json
import time
from pathlib import Path

import polars as pl
import pytest

from reportbench.judges.runner import read_judgments
from reportbench.release.format import read_release
from spine_helpers import benchmark_params, run_benchmark

pytestmark = pytest.mark.integration

EG_MARKER = "SYNTHETIC-EG-MARKER-7f3a"


@pytest.fixture()
def deer_params(repo_root: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.chdir(repo_root)
    return benchmark_params(repo_root, "deer")


def _run(params: dict, out: Path) -> tuple[Path, float]:
    t0 = time.perf_counter()
    root = run_benchmark(params, "deer", out)
    return root, time.perf_counter() - t0


def test_demo_release_end_to_end(deer_params: dict, tmp_path: Path) -> None:
    root, seconds = _run(deer_params, tmp_path / "out")
    release = read_release(root / "releases")
    assert sorted(t.task_id for t in release.tasks) == ["ai-1", "history-1", "physics-1"]  # temp/ skipped
    assert {t.categories[0] for t in release.tasks} == {"ai", "history", "physics"}
    kinds = [r.kind for r in release.table("rubric_items")]
    assert len(kinds) == 101 + 3 and kinds.count("EG") == 3
    card = (root / "releases" / "CARD.md").read_text()
    assert EG_MARKER not in card

    jdir = root / "judgments" / "careful_writer" / "main"
    for call in (
        "request_fulfillment",
        "analytical_soundness",
        "structural_coherence",
        "format_style",
        "information_ethics",
    ):
        js = read_judgments(jdir / f"rubric_{call}.parquet")
        assert len(js) == 3 and all(j.ok for j in js)
    factors = pl.read_parquet(jdir / "derived" / "factors_format_style.parquet")
    assert factors.height == 17 * 3 and set(factors["status"]) == {"ok"} and factors["rationale"].null_count() == 0
    claims = pl.read_parquet(jdir / "derived" / "claims.parquet")
    verifs = pl.read_parquet(jdir / "derived" / "verifications.parquet")
    sources = pl.read_parquet(jdir / "derived" / "sources.parquet")
    assert claims.height > 10 and set(claims["claim_type"]) <= set("ABCDEF")
    ai = claims.filter(pl.col("report_id").str.contains("ai-1"))
    ranged = [json.loads(u) for u in ai["urls"] if "3-5" in u]
    assert ranged, "the [3-5] range stays a raw unresolved index in code parsing"
    assert "error" in set(verifs["result"]) and "supported" in set(verifs["result"])
    gone = sources.filter(pl.col("url") == "https://example.org/deer/gone")
    assert gone.height == 1 and gone["shown"][0] and gone["error_class"][0] is not None

    summary = json.loads((root / "metrics" / "systems.json").read_text())
    careful = summary["careful_writer"]["metrics"]
    link = summary["link_writer"]["metrics"]
    for name in ("request_fulfillment", "information_integrity", "information_sufficiency", "deer_mean"):
        assert careful[name]["n_failed"] == 0 and careful[name]["n_defined"] == 3
        assert 0.0 <= careful[name]["mean"] <= 10.0
    assert link["deer_mean"]["n_defined"] == 3  # no references / inline links only: scored, no crash
    assert careful["information_integrity"]["mean"] > link["information_integrity"]["mean"]
    assert set(careful["deer_mean"]["groups"]) == {"ai", "history", "physics"}
    assert "task_weighted_mean" in careful["deer_mean"]

    # history-1 of link_writer has no references: integrity comes only from the zero denominators
    per_task = pl.read_parquet(root / "scores" / "link_writer.parquet")
    row = per_task.filter((pl.col("task_id") == "history-1") & (pl.col("metric") == "information_integrity"))
    assert row.height == 1 and row["status"][0] == "ok" and row["value"][0] <= 10 / 15 + 1e-9

    # the EG never appears in a metric file or a score file, nor in any judgment/derived table
    for path in [*(root / "metrics").rglob("*"), *(root / "scores").rglob("*")]:
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "ignore")
            if path.suffix == ".parquet":
                text = pl.read_parquet(path).write_csv()
            assert EG_MARKER not in text, path
    for path in (root / "judgments").rglob("*.parquet"):
        assert EG_MARKER not in pl.read_parquet(path).write_csv(), path
    print(f"deer demo end to end: {seconds:.1f}s")


def test_code_modes_run_too(deer_params: dict, tmp_path: Path) -> None:
    b = deer_params["benchmarks"]["deer"]
    b["judging"].update(
        {
            "eg_scope": "code",
            "backtrack": {"mode": "code", "backfill_def": True},
            "references": {"parser": "adapters", "inline_links": False},
        }
    )
    b["scoring"].update(
        {
            "source_support": "code",
            "information": "code",
            "diversity": "code",
            "zero_denominator": "nan",
            "recency": "drop",
            "reliable": "first",
        }
    )
    root, _ = _run(deer_params, tmp_path / "out")
    summary = json.loads((root / "metrics" / "systems.json").read_text())
    assert summary["careful_writer"]["metrics"]["deer_mean"]["n_failed"] == 0
    js = read_judgments(root / "judgments" / "careful_writer" / "main" / "rubric_format_style.parquet")
    assert len(js) == 3
    claims = pl.read_parquet(root / "judgments" / "careful_writer" / "main" / "derived" / "claims.parquet")
    ai = claims.filter(pl.col("report_id").str.contains("ai-1"))
    assert any("https://example.org/deer/window-experiments" in u for u in ai["urls"])  # [3-5] expanded
