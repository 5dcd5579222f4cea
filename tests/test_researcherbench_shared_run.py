"""The shared ResearcherBench release with the shared systems' response files, offline: the run completes,
and every claim whose page is not in the snapshots ends as fetch_error / not_fetched (skips without ../shared)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from reportbench.config import composed_params
from spine_helpers import run_benchmark

pytestmark = pytest.mark.integration


def test_shared_release_and_systems_run_offline(
    shared_dir: Path, repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = shared_dir / "data" / "researcherbench"
    if not (data / "user_data" / "OpenAI.json").is_file():
        pytest.skip("../shared/data/researcherbench is not present")
    monkeypatch.chdir(repo_root)
    params = composed_params(
        [
            "benchmarks=[deepscholar,researcherbench]",
            "researcherbench/release=researcherbench",
            "researcherbench/systems=shared",
        ],
        conf_dir=repo_root / "conf",
    )
    bench = params["benchmarks"]["researcherbench"]
    bench["release"].update({"source": str(data), "max_tasks": 12})  # ids 1-12: includes mojibake ids 8 and 11
    for name in ("OpenAI", "Perplexity"):
        bench["systems"][name]["path"] = str(data / "user_data" / f"{name}.json")
    params["judge"]["runtime"]["progress"] = False
    root = run_benchmark(params, "researcherbench", tmp_path / "out")
    summary = json.loads((root / "metrics" / "systems.json").read_text())
    for system in ("OpenAI", "Perplexity"):
        s = summary[system]
        assert s["report_outcomes"] == {"ok": 12}
        assert s["metrics"]["coverage"]["n_defined"] == 12
        results = pl.read_parquet(root / "judgments" / system / "main" / "derived" / "claim_results.parquet")
        cited = results.filter(pl.col("result") != "no_url")
        assert cited.height > 0
        assert set(cited["result"]) == {"fetch_error"} and set(cited["page_status"]) == {"not_fetched"}
        assert s["claims"]["fetch_error"] == cited.height
        # paper mode: a fetch error is an unknown (excluded), so faithfulness is undefined, never 0
        assert s["metrics"]["faithfulness"]["n_defined"] == 0 and s["metrics"]["faithfulness"]["n_failed"] == 0
        # groundedness too: with every cited page unfetched it is "— (no_pages)", not 0.000 (issue 21)
        assert s["metrics"]["groundedness"]["mean"] is None and s["metrics"]["groundedness"]["reason"] == "no_pages"
