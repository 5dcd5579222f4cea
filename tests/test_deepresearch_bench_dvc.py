"""DeepResearch Bench through `dvc repro` as an installed plug-in (plugins/deepresearch_bench, `pip install -e`):
enabled by a config choice, its conf tree, code and prompts come from the package, its stages run to a
leaderboard; no file under src/reportbench/ names it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dvc_helpers import run_ok, subprocess_env

pytestmark = pytest.mark.integration

B = "deepresearch_bench"


@pytest.fixture()
def clone(repo_root: Path, tmp_path: Path) -> Path:
    if not (repo_root / ".git").exists():
        pytest.skip("not a git checkout")
    dest = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(repo_root), str(dest)], check=True, env=subprocess_env())
    return dest


def test_the_plugin_runs_through_dvc_repro(clone: Path, repo_root: Path) -> None:
    shared = [p for p in (repo_root / "src" / "reportbench").rglob("*.py") if "deepresearch_bench" in p.read_text()]
    assert not shared, f"shared code names the plug-in: {shared}"
    rb = [sys.executable, "-m", "reportbench.cli"]
    assert B in run_ok([*rb, "ls", "benchmarks"], clone).stdout
    run_ok([*rb, "compose", f"benchmarks=[{B}]"], clone)
    params = yaml.safe_load((clone / "params.yaml").read_text())
    entry = params["plan"]["benchmarks"][B]
    assert entry["code"].endswith("reportbench_deepresearch_bench") and entry["prompts"].endswith("prompts")
    assert set(params["benchmarks"][B]["systems"]) == {"strong", "weak"}

    run_ok([sys.executable, "-m", "dvc", "repro", f"score@{B}"], clone)
    board = json.loads((clone / "metrics" / B / "demo" / "leaderboard.json").read_text())
    assert [r["system"] for r in board["rows"]] == ["strong", "weak"]
    assert board["metrics"][:1] == ["race_overall"] and "citation_accuracy" in board["metrics"]
    extra = json.loads((clone / "metrics" / B / "demo" / "extra.json").read_text())
    assert extra["authors_results"]["strong"]["fact"]["valid_rate"] == 0.9
    status = run_ok([sys.executable, "-m", "dvc", "status", f"judge@{B}"], clone).stdout
    assert "changed" not in status, status
