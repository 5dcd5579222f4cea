"""An agent system through `dvc repro`: `search_llm` on the DeepScholar demo against the loopback stub LLM and stub
search servers, scored by the offline judge and on the leaderboard; its stage depends on its environment's lock.

Runs in a copy of the working tree with `git init` (tests/dvc_helpers.copy_tree), so it never touches the
repository."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from dvc_helpers import copy_tree, run_ok
from reportbench.agents.search.stub import stub_search_thread
from reportbench.config import compose_params
from reportbench.stub_server import stub_server_thread
from test_agents_runner import agent_responder

pytestmark = pytest.mark.integration


def test_search_llm_system_through_dvc_repro_lands_on_the_leaderboard(repo_root: Path, tmp_path: Path) -> None:
    repo = copy_tree(repo_root, tmp_path / "repo")
    run_ok(["git", "init", "-q"], repo)
    with stub_server_thread(responder=agent_responder) as llm, stub_search_thread() as search:
        entry = {
            "kind": "search_llm",
            "model": "openai/stub-model",
            "api_base": llm.base_url,
            "price": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
            "search": {"backend": "tavily", "api_base": search.tavily_url, "max_results": 3},
            "budget": {"llm_calls": 2, "search_calls": 2, "wall_s": 120},
        }
        conf = repo / "conf" / "deepscholar" / "systems" / "agents_stub.yaml"
        conf.write_text("# @package benchmarks.deepscholar.systems\n" + yaml.safe_dump({"stub_search_llm": entry}))
        overrides = ["benchmarks=[deepscholar]", "deepscholar/systems=agents_stub"]
        compose_params(overrides, out=repo / "params.yaml", conf_dir=repo / "conf")
        run_ok([sys.executable, "-m", "dvc", "repro", "score@deepscholar"], repo)
        assert llm.counts["ok"] == 3 and search.counts["tavily"] == 3
    run = repo / "data" / "runs" / "deepscholar" / "demo" / "stub_search_llm"
    statuses = [json.loads(line)["status"] for line in (run / "outcomes.jsonl").read_text().splitlines()]
    assert statuses == ["ok"] * 3
    assert len(list((run / "agent").glob("*.json"))) == 3
    board = json.loads((repo / "metrics" / "deepscholar" / "demo" / "leaderboard.json").read_text())
    assert [row["system"] for row in board["rows"]] == ["stub_search_llm"]
    row = board["rows"][0]
    assert row["n_tasks"] == 3 and row["n_missing_reports"] == 0 and row["n_failed_items"] == 0
    # scored by the offline judge: the stub answer copies its cited snippets, so its citations are precise
    assert row["metrics"]["citation_precision"] > 0 and row["metrics"]["claim_coverage"] > 0
    lock = yaml.safe_load((repo / "dvc.lock").read_text())
    deps = [d["path"] for d in lock["stages"]["system@deepscholar.stub_search_llm"]["deps"]]
    assert "constraints.txt" in deps and "src/reportbench/agents" in deps  # its environment and its code
