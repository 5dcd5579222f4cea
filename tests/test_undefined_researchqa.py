"""ResearchQA (issue 21 §2, §4): the demo's battles are separable, so the unregularised Bradley–Terry fit the
authors' notebook uses has no maximum-likelihood rating there; the Elo cell is undefined (`not_identifiable`)
in every output instead of a number on a ray to infinity with intervals like [-4741, 976]. Task counts come
from the release (4 tasks), never from score rows (the system-level Elo row is not a task)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from reportbench.config import composed_params
from reportbench.protocols.researchqa.rating import bootstrap_bt, group_battles, identifiable
from spine_helpers import run_benchmark
from undefined_helpers import assert_undefined_everywhere

B = "researchqa"


@pytest.mark.core
def test_identifiability_is_strong_connectivity() -> None:
    # a beats b, b beats c, c beats a: strongly connected -> a finite MLE exists
    cyc = group_battles(["a", "b", "c"], ["b", "c", "a"], [1, 1, 1])
    assert identifiable(cyc)
    # a beats everyone: separable
    sep = group_battles(["a", "a", "b"], ["b", "c", "c"], [1, 1, 0.5])
    assert not identifiable(sep)
    # a tie counts both ways
    assert identifiable(group_battles(["a"], ["b"], [0.5]))
    assert not identifiable(group_battles(["a"], ["b"], [1.0]), np.ones(1))


@pytest.mark.core
def test_separable_ratings_are_not_identifiable_and_never_a_number() -> None:
    r = bootstrap_bt(["a", "a", "b"], ["b", "c", "c"], [1, 1, 1], rounds=50, seed=0)
    for row in r.table():
        assert row["rating"] is None and row["ci_low"] is None and str(row["reason"]).startswith("not_identifiable")
    # identifiable point, but resamples can drop the one loss of the leader: no interval, the point stays
    a, b, y = ["a", "a", "a", "b", "b", "c"], ["b", "b", "c", "c", "a", "a"], [1, 1, 1, 1, 1, 1]
    r = bootstrap_bt(a, b, y, rounds=200, seed=0)
    assert r.point_identifiable and r.n_rounds_separable > 0
    for row in r.table():
        assert isinstance(row["rating"], float) and row["ci_low"] is None
        assert str(row["ci_reason"]).startswith("not_identifiable")
    # many battles both ways: every resample identifiable, intervals in place and finite
    a2, b2 = ["a", "b"] * 50, ["b", "a"] * 50
    y2 = [1.0 if i % 3 else 0.0 for i in range(100)]
    r = bootstrap_bt(a2, b2, y2, rounds=100, seed=0)
    assert r.n_rounds_separable == 0
    assert all(isinstance(row["ci_low"], float) and abs(row["ci_low"]) < 3000 for row in r.table())


@pytest.fixture(scope="module")
def demo_run(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    params = composed_params([f"benchmarks=[deepscholar,{B}]"], conf_dir=repo_root / "conf")
    params["judge"]["runtime"]["progress"] = False
    return run_benchmark(params, B, tmp_path_factory.mktemp("rqa"))


@pytest.mark.integration
def test_demo_elo_not_identifiable_and_tasks_from_the_release(demo_run: Path) -> None:
    metrics = demo_run / "metrics"
    lb = json.loads((metrics / "leaderboard.json").read_text())
    for row in lb["rows"]:
        assert_undefined_everywhere(metrics, row["system"], "elo", "not_identifiable")
        assert row["n_tasks"] == 4  # the release's 4 tasks, not 5 (the "*" Elo row is no task)
        assert row["ci"]["elo"] is None
    missing = {r["system"]: r["n_missing_reports"] for r in lb["rows"]}
    assert missing == {"thorough_reviewer": 0, "brief_answerer": 0, "thinking_model": 1}
