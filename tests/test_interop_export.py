"""`reportbench export`: self-authored score tables (the score stage's per-task format) written in the authors'
result formats and read back with the authors'-format readers; undefined and failed tasks are never written as 0."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from reportbench.interop import deepscholar as ds
from reportbench.interop import liveresearchbench as lrb
from reportbench.interop import researcherbench as rb
from reportbench.interop.export import export
from reportbench.metrics.aggregate import metric_row, rows_frame

pytestmark = pytest.mark.core


def _scores(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    by_system: dict[str, list[dict]] = {}
    for r in rows:
        by_system.setdefault(r["system"], []).append(r)
    for system, rs in by_system.items():
        rows_frame(rs).write_parquet(folder / f"{system}.parquet")
    return folder


def test_researcherbench_export(tmp_path: Path) -> None:
    scores = _scores(tmp_path / "scores", [
        metric_row("sys-a", "1", "coverage", 0.5),
        metric_row("sys-a", "2", "coverage", 0.25),
        metric_row("sys-a", "3", "coverage", math.nan, "failed", "rubric call failed", n_failed=1),
        metric_row("sys-a", "1", "faithfulness", 1.0),
    ])
    (path,) = export("researcherbench", scores, tmp_path / "out")
    assert rb.read_evaluation_results(path) == ("sys-a", 0.375)  # the failed question is out, not a 0


def test_deepscholar_export(tmp_path: Path) -> None:
    scores = _scores(tmp_path / "scores", [
        metric_row("sys-a", "t1", "organization", 0.4),
        metric_row("sys-a", "t2", "organization", 0.6),
        metric_row("sys-a", "t1", "reference_coverage", math.nan, "undefined", "no importance labels"),
        metric_row("sys-b", "t1", "organization", 0.5),
    ])
    (path,) = export("deepscholar", scores, tmp_path / "out")
    assert ds.read_results_csv(path) == {
        "sys-a": {"organization": 0.5, "reference_coverage": None},
        "sys-b": {"organization": 0.5, "reference_coverage": None},
    }


def test_liveresearchbench_export(tmp_path: Path) -> None:
    scores = _scores(tmp_path / "scores", [
        metric_row("sys-a", "q1", "presentation", 80.0),
        metric_row("sys-a", "q2", "presentation", 70.0),
        metric_row("sys-a", "q1", "coverage", math.nan, "failed", "judge failed", n_failed=1),
    ])
    (path,) = export("liveresearchbench", scores, tmp_path / "out")
    assert lrb.read_summary(path) == {"sys-a": {"presentation": (75.0, 2)}}


def test_deer_export(tmp_path: Path) -> None:
    scores = _scores(tmp_path / "scores", [
        metric_row("sys-a", "csai/1", "request_fulfillment", 5.43),
        metric_row("sys-a", "csai/1", "format_style", math.nan, "undefined", "all N/A"),
        metric_row("sys-a", "csai/1", "deer_mean", 6.16),
    ])
    (path,) = export("deer", scores, tmp_path / "out")
    rec = json.loads(path.read_text())
    assert path.name == "csai_1.json" and rec["score_avgs"]["request_fulfillment"] == 5.43
    assert rec["score_avgs"]["format_style"] == "N/A" and rec["score_avgs"]["ethics_compliance"] == "N/A"


def test_export_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no <system>.parquet"):
        export("deer", tmp_path, tmp_path / "out")
    with pytest.raises(ValueError, match="no exporter"):
        export("nope", _scores(tmp_path / "s", [metric_row("a", "t", "m", 1.0)]), tmp_path / "out")
