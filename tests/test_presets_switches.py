"""Preset switches beyond a benchmark's own subtree and aggregation (issue 22 gaps): a preset sets the shared page
fetcher (`fetch.backend`, the root group), an explicit `-S` still wins; LiveResearchBench's depth aggregation is a
switch (`scoring.depth.aggregation: paper | code`) and the published preset selects the authors' count."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

from reportbench.config import composed_params


@pytest.mark.core
def test_a_preset_sets_the_fetch_group_and_an_explicit_override_wins(repo_root: Path, monkeypatch) -> None:
    monkeypatch.chdir(repo_root)
    base = composed_params([])
    assert base["fetch"]["backend"] == "direct"
    for b in ("deer", "researcherbench"):
        pub = composed_params([f"{b}/preset=published"])
        assert pub["fetch"]["backend"] == "reader", b
        assert {k: v for k, v in pub["fetch"].items() if k != "backend"} == {
            k: v for k, v in base["fetch"].items() if k != "backend"
        }
        assert composed_params([f"{b}/preset=published", "fetch.backend=direct"])["fetch"]["backend"] == "direct"
        assert composed_params([f"{b}/preset=paper"])["fetch"] == base["fetch"]


@pytest.mark.core
def test_lrb_published_preset_selects_the_code_depth_aggregation(repo_root: Path, monkeypatch) -> None:
    monkeypatch.chdir(repo_root)
    lrb = composed_params(["liveresearchbench/preset=published"])["benchmarks"]["liveresearchbench"]
    assert lrb["scoring"]["depth"]["aggregation"] == "code"
    base = composed_params([])["benchmarks"]["liveresearchbench"]
    assert base["scoring"]["depth"]["aggregation"] == "paper"


@pytest.mark.core
def test_code_depth_means_count_each_calls_winner() -> None:
    """Two judges, two calls per task: judge a wins 3 of 4 decisive calls (75), judge b 1 of 2 (50, two ties) ->
    62.5; the paper's per-task mean is kept as paper_mean; no game at all is NaN, never 0."""
    from reportbench.protocols.liveresearchbench import rules as R
    from reportbench.protocols.liveresearchbench.benchmark import _code_depth_means

    code = R.code_win_rates({"a": ["eval", "eval", "eval", "ref"], "b": ["eval", "tie", "tie", "ref"]})
    code["nondegenerate"] = R.code_win_rates({"a": [], "b": []})
    summary = {"metrics": {"depth_win_rate": {"mean": 100.0}, "depth_win_rate_nondegenerate": {"mean": 50.0}}}
    _code_depth_means(summary, code)
    m = summary["metrics"]
    assert m["depth_win_rate"]["mean"] == pytest.approx(62.5) and m["depth_win_rate"]["paper_mean"] == 100.0
    assert math.isnan(m["depth_win_rate_nondegenerate"]["mean"])
    assert m["depth_win_rate_nondegenerate"]["depth_aggregation"] == "code: no_games"


@pytest.mark.integration
def test_lrb_demo_under_code_depth_aggregation(repo_root: Path, tmp_path: Path) -> None:
    from spine_helpers import run_benchmark

    b = "liveresearchbench"
    params = composed_params([f"benchmarks=[deepscholar,{b}]", f"benchmarks.{b}.scoring.depth.aggregation=code"],
                             conf_dir=repo_root / "conf")
    root = run_benchmark(params, b, tmp_path)
    systems = json.loads((root / "metrics" / "systems.json").read_text())
    extra = json.loads((root / "metrics" / "extra.json").read_text())
    assert extra["modes"]["depth_aggregation"].startswith("code")
    for s in ("careful_analyst", "thin_summariser"):
        m = systems[s]["metrics"]["depth_win_rate"]
        assert m["mean"] == pytest.approx(extra["depth_code_aggregation"][s]["win_rate"])
        rows = pl.read_parquet(root / "scores" / f"{s}.parquet").filter(
            (pl.col("metric") == "depth_win_rate") & (pl.col("status") == "ok")
        )
        assert m["paper_mean"] == pytest.approx(rows["value"].mean())  # the per-task rows stay the paper's
    ref = systems["open_deep_research"]["metrics"]["depth_win_rate"]["mean"]
    assert ref is None or math.isnan(ref)  # the reference is never compared with itself (JSON null)
