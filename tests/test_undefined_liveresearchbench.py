"""LiveResearchBench with nothing checkable (issue 21 §2): no cited page was fetched, so the citation error
counts E1/E2/E3/total and the blocked count are undefined (`not_checked`) — not 0.000, the best possible score
on a lower-is-better metric — while what WAS measured (URLs cited, URLs not checked) stays a number. A depth
aggregation with no game is `no_games`, and a missing report is counted in `n_missing_reports`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from reportbench.config import composed_params
from reportbench.protocols.liveresearchbench import rules as R
from spine_helpers import run_benchmark
from undefined_helpers import assert_undefined_everywhere

B = "liveresearchbench"


@pytest.fixture(scope="module")
def unfetched_run(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    # no recorded pages: offline, every cited URL stays not_fetched
    params = composed_params(
        [f"benchmarks=[deepscholar,{B}]", f"benchmarks.{B}.fetch_seeds=[]"], conf_dir=repo_root / "conf"
    )
    params["judge"]["runtime"]["progress"] = False
    return run_benchmark(params, B, tmp_path_factory.mktemp("lrb_unfetched"))


@pytest.mark.integration
def test_citation_errors_without_fetched_pages_are_not_checked(unfetched_run: Path) -> None:
    metrics = unfetched_run / "metrics"
    summaries = json.loads((metrics / "systems.json").read_text())
    for system in ("careful_analyst", "open_deep_research", "thin_summariser"):
        assert summaries[system]["metrics"]["cit_n_urls"]["mean"] > 0  # URLs were cited ...
        for metric in ("cit_e1", "cit_e2", "cit_e3", "cit_total", "cit_blocked"):
            assert_undefined_everywhere(metrics, system, metric, "not_checked")  # ... and none was checked
        assert summaries[system]["metrics"]["cit_not_checked"]["mean"] > 0  # measured: shown as a number
    # what the protocol itself scores stays a number (the judge graded the report text)
    assert not math.isnan(summaries["careful_analyst"]["metrics"]["presentation"]["mean"])


@pytest.mark.integration
def test_n_missing_reports_comes_from_the_release(unfetched_run: Path) -> None:
    lb = json.loads((unfetched_run / "metrics" / "leaderboard.json").read_text())
    missing = {r["system"]: r["n_missing_reports"] for r in lb["rows"]}
    assert missing == {"careful_analyst": 0, "open_deep_research": 0, "thin_summariser": 1}
    assert {r["n_tasks"] for r in lb["rows"]} == {3}


@pytest.mark.core
def test_depth_code_aggregation_without_games_is_no_games() -> None:
    out = R.code_win_rates({"gpt5": [], "gemini": []})
    assert out["win_rate"] is None and out["reason"] == "no_games"
    assert out["by_judge"]["gpt5"]["win_rate"] is None
    # ties only (issue 34): games were played but none decisive -> no value, saying so; the authors' 0 kept beside
    ties = R.code_win_rates({"gpt5": ["tie", "tie"]})
    assert ties["win_rate"] is None and ties["reason"].startswith("no_games: ties only")
    assert ties["authors_win_rate"] == 0.0 and ties["by_judge"]["gpt5"]["win_rate"] is None


@pytest.mark.core
def test_citation_counts_record_what_was_checked() -> None:
    pairs = [("c1", "u1"), ("c2", "u2")]
    none = R.count_errors(pairs, {}, {}, {})
    assert (none.n_fetched, none.n_checked, none.not_checked, none.total) == (0, 0, 2, 0)
    some = R.count_errors(pairs, {"u1": "ok", "u2": "invalid"}, {"u1": True}, {("c1", "u1"): True})
    assert (some.n_fetched, some.n_checked, some.e1) == (2, 2, 1)
