"""Isolated environments: `reportbench agents install <kind>` builds a venv apart from reportbench's and writes the
lock the kind's system stages depend on; `reportbench agents ls` shows it (offline: pip from the venv itself)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reportbench.agents import envs
from reportbench.agents.protocol import lock_path
from reportbench.cli import main
from reportbench.plan import _env_lock

pytestmark = pytest.mark.integration


def test_install_builds_a_separate_venv_and_a_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REPORTBENCH_AGENTS_HOME", str(tmp_path / "home"))
    req = tmp_path / "storm.txt"
    req.write_text("# self-authored stand-in: pip is already in every new venv, so no index is needed\npip\n")
    monkeypatch.setattr(envs, "requirements_file", lambda kind: req)
    with pytest.raises(envs.AgentEnvError, match="reportbench agents install storm"):
        envs.python_for("storm")
    assert main(["agents", "install", "storm", "--pip-arg=--no-index"]) == 0
    py = envs.python_for("storm")
    assert py == tmp_path / "home" / "storm" / "venv" / "bin" / "python"
    prefix = subprocess.run([str(py), "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True).stdout
    assert Path(prefix.strip()) != Path(sys.prefix)  # never reportbench's own environment
    lock = envs.lock_file("storm").read_text()
    assert "pip==" in lock and envs.lock_hash("storm")
    capsys.readouterr()
    assert main(["agents", "ls"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert " yes " in rows["storm"] and "pip " in rows["storm"]
    assert " no " in rows["gpt_researcher"] and " yes " in rows["search_llm"]


def test_each_kind_stage_depends_on_its_environment() -> None:
    assert _env_lock({"kind": "storm"}) == lock_path("storm") == ".reportbench/agents/storm/lock.txt"
    assert _env_lock({"kind": "search_llm"}) == "constraints.txt"
    assert _env_lock({"kind": "folder"}) == "src/reportbench/systems/base.py"


def test_estimate_lists_each_agent_worst_case_from_its_budget() -> None:
    from reportbench.agents.budget_estimate import budget_row, format_rows

    spec = {
        "kind": "storm",
        "model": "openai/gpt-4.1",
        "budget": {"llm_calls": 10, "usd": 0.5, "wall_s": 100},
        "concurrency": 2,
    }
    row = budget_row("system@deer.storm", spec, 4)
    assert (row["max_llm_calls"], row["max_usd"], row["max_wall_s"]) == (40, 2.0, 200.0)
    assert row["max_tokens"] is None and row["max_search_calls"] is None  # unbounded, never 0
    table = format_rows([row])
    assert "system@deer.storm" in table and "—" in table
