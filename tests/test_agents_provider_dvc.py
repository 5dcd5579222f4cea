"""The three `provider_deep_research` backends (OpenAI, Perplexity, Gemini) through `dvc repro`: each replays its
provider's documented response shape (tests/provider_replay.py) on the DeepScholar demo through its real client,
the offline judge scores the reports and the three rows reach the leaderboard with their dollars.

Runs in a copy of the session's reproduced repository (conftest's `reproduced_template`): only the new system
stages and their scoring run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from dvc_helpers import Reproduced, copy_repo_state, run_ok
from provider_replay import ProviderReplay
from reportbench.agents.search.stub import serve_in_thread
from reportbench.config import compose_params

pytestmark = pytest.mark.integration

SYSTEMS = {
    "o3_deep_research": ("openai/o3-deep-research", "/v1"),
    "sonar_deep_research": ("perplexity/sonar-deep-research", ""),
    "gemini_deep_research": ("gemini/deep-research-pro-preview-12-2025", ""),
}


def _errors(outcomes: Path) -> list[str]:
    """A system's outcomes that are not ok, status and reason only: a truncated dump of the file hid why."""
    return [f"{o['status']}: {o['reason']}" for o in map(json.loads, outcomes.read_text().splitlines())
            if o["status"] != "ok"]


def test_each_provider_backend_replays_through_dvc_repro(reproduced_template: Reproduced, tmp_path: Path) -> None:
    repo = copy_repo_state(reproduced_template.path, tmp_path / "repo")
    with serve_in_thread(ProviderReplay()) as replay:
        entries = {
            name: {
                "kind": "provider_deep_research",
                "model": model,
                "api_base": replay.base_url + suffix,
                "budget": {"tokens": 600000, "usd": 5.0, "search_calls": 30, "wall_s": 120},
                "options": {"poll_s": 0.05},
            }
            for name, (model, suffix) in SYSTEMS.items()
        }
        conf = repo / "conf" / "deepscholar" / "systems" / "provider_replay.yaml"
        conf.write_text("# @package benchmarks.deepscholar.systems\n" + yaml.safe_dump(entries))
        compose_params(["deepscholar/systems=provider_replay"], out=repo / "params.yaml", conf_dir=repo / "conf")
        run_ok([sys.executable, "-m", "dvc", "repro", "score@deepscholar"], repo, timeout=900)
        runs = repo / "data" / "runs" / "deepscholar" / "demo"
        # each system's failed outcomes, short: a truncated dump hid why a Gemini task never reached the replay
        seen = {name: _errors(runs / name / "outcomes.jsonl") for name in SYSTEMS}
        assert {b: replay.counts[f"{b}_create"] for b in ("openai", "perplexity", "gemini")} == {
            "openai": 3,
            "perplexity": 3,
            "gemini": 3,
        }, (dict(replay.counts), seen)  # (once seen in CI: gemini 1 of 3 creates; the outcomes say how)
    for name in SYSTEMS:
        statuses = [json.loads(line)["status"] for line in (runs / name / "outcomes.jsonl").read_text().splitlines()]
        assert statuses == ["ok"] * 3, name
        usage = json.loads((runs / name / "agent_usage.json").read_text())["usage"]
        assert usage["usd"] > 0 and usage["search_calls"] > 0, name
    board = json.loads((repo / "metrics" / "deepscholar" / "demo" / "leaderboard.json").read_text())
    rows = {row["system"]: row for row in board["rows"]}
    assert set(SYSTEMS) <= set(rows)
    for name in SYSTEMS:
        assert rows[name]["n_tasks"] == 3 and rows[name]["n_missing_reports"] == 0, name
