"""ResearcherBench with nothing checkable (issue 21 §2): every cited page unfetched (offline, no snapshot), so
faithfulness and groundedness are undefined (`no_pages`), never 0.000 — while rubric coverage, which rests on
the judge's reading of the report alone, stays a number; `n_missing_reports` counts the release's tasks."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from reportbench.config import composed_params
from spine_helpers import run_benchmark
from undefined_helpers import assert_undefined_everywhere

B = "researcherbench"


@pytest.fixture(scope="module")
def unfetched_run(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    params = composed_params(
        [f"benchmarks=[deepscholar,{B}]", f"benchmarks.{B}.fetch_seeds=[]"], conf_dir=repo_root / "conf"
    )
    params["judge"]["runtime"]["progress"] = False
    return run_benchmark(params, B, tmp_path_factory.mktemp("rb_unfetched"))


@pytest.mark.integration
def test_groundedness_without_pages_is_no_pages(unfetched_run: Path) -> None:
    metrics = unfetched_run / "metrics"
    summaries = json.loads((metrics / "systems.json").read_text())
    for system in summaries:
        for metric in ("faithfulness", "groundedness"):
            assert_undefined_everywhere(metrics, system, metric, "no_pages")
        assert not math.isnan(summaries[system]["metrics"]["coverage"]["mean"])
        assert summaries[system]["n_tasks"] == 3  # the release's tasks
    # link_writer has no report for q3 (the demo): counted, not defaulted to 0
    assert {s: v["n_missing_reports"] for s, v in summaries.items()} == {"footnote_writer": 0, "link_writer": 1}
