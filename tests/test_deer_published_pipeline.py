"""Issue 22's done-when: the DEER `published` preset gives MEAN 6.16 on the authors' csai/1 through the normal
pipeline (release -> system -> judge stage -> score stage), their recorded gpt-5.2 answers served by the loopback
stub, their recorded fact metrics as the fact side (their files map no claim to a URL). Skips without ../shared."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")

REPO = Path(__file__).resolve().parents[1]


def _folder(shared_dir: Path) -> Path:
    folder = shared_dir / "data" / "deer" / "csai" / "gpt5.2_fast"
    if not (folder / "others" / "0001.json").is_file():
        pytest.skip("../shared/data/deer (the authors' csai/1 judgments) is not present")
    return folder


@pytest.mark.integration
def test_published_preset_gives_mean_616_through_the_pipeline(shared_dir: Path, tmp_path: Path) -> None:
    from reportbench.reproduce import deer_recorded_pipeline

    folder = _folder(shared_dir)
    summary = deer_recorded_pipeline(folder, tmp_path, REPO / "conf")
    final = json.loads((folder / "final" / "0001.json").read_text())["score_avgs"]
    metrics = summary["metrics"]
    for dim, expected in final.items():
        assert metrics[dim]["mean"] == pytest.approx(expected, abs=0.005), dim
        assert metrics[dim]["n_failed"] == 0 and metrics[dim]["n_defined"] == 1
    assert metrics["deer_mean"]["mean"] == pytest.approx(6.16, abs=0.005)
    assert summary["modes"]["scoring"]["diversity"] == "code"  # the published preset's scoring
    assert summary["modes"]["fact_side"].startswith("recorded: ")
    # the rubric side came from judge records (the stub's answers, parsed), not from the authors' files directly
    jdir = tmp_path / "judgments" / folder.name / "main"
    for call in ("request_fulfillment", "analytical_soundness", "structural_coherence", "format_style",
                 "information_ethics"):
        rec = pl.read_parquet(jdir / f"rubric_{call}.parquet")
        assert rec.height == 1 and rec["status"][0] == "ok", call
        assert rec["model"][0] == "openai/gpt-5.2"  # the preset's judge
    fact = pl.read_parquet(jdir / "derived" / "fact_recorded.parquet")
    assert fact.height == 1 and fact["error"][0] == ""


@pytest.mark.core
def test_a_report_without_a_recorded_fact_file_fails_its_fact_side(tmp_path: Path) -> None:
    """Self-authored: a recorded folder without the task's fact file gives an error row, never numbers."""
    from reportbench.protocols.deer.recorded import recorded_fact, recorded_fact_rows

    folder = tmp_path / "csai" / "my_system"
    (folder / "fact").mkdir(parents=True)
    (folder / "fact" / "0002.json").write_text(json.dumps({"raw": {}}))
    rows = recorded_fact_rows(folder, [("s:ai-1", "ai-1"), ("s:ai-2", "ai-2")])
    assert rows[0]["raw"] is None and "no recorded fact record for ai-1" in rows[0]["error"]
    assert rows[1]["raw"] is None and "missing field raw.integrity" in rows[1]["error"]
    table = pl.DataFrame(rows)
    assert recorded_fact("s:ai-1", table)["raw"] is None
    assert recorded_fact("s:other", table) is None
