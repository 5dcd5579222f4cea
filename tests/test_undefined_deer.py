"""DEER with nothing checkable (issue 21 §2): no cited page was fetched (offline, no snapshot), so the
fact-side dimensions (Information Integrity, Information Sufficiency) and the DEER MEAN are undefined
(`no_pages`) instead of scores built from "every source unreachable" — while the rubric dimensions the judge
graded from the report text stay numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from reportbench.config import composed_params
from spine_helpers import run_benchmark
from undefined_helpers import assert_undefined_everywhere

B = "deer"


@pytest.fixture(scope="module")
def unfetched_run(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    params = composed_params(
        [f"benchmarks=[deepscholar,{B}]", f"benchmarks.{B}.fetch_seeds=[]"], conf_dir=repo_root / "conf"
    )
    params["judge"]["runtime"]["progress"] = False
    return run_benchmark(params, B, tmp_path_factory.mktemp("deer_unfetched"))


@pytest.mark.integration
def test_fact_side_without_pages_is_no_pages(unfetched_run: Path) -> None:
    metrics = unfetched_run / "metrics"
    summaries = json.loads((metrics / "systems.json").read_text())
    for system in summaries:
        for metric in ("information_integrity", "information_sufficiency", "deer_mean"):
            assert_undefined_everywhere(metrics, system, metric, "no_pages")
        assert not math.isnan(summaries[system]["metrics"]["request_fulfillment"]["mean"])
        assert summaries[system]["n_missing_reports"] == 0
    lb = json.loads((metrics / "leaderboard.json").read_text())
    # no overall score -> no rank, and the row says why
    assert all(r["rank"] is None and r["unranked_reason"].startswith("overall score undefined (") for r in lb["rows"])
