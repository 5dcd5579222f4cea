"""Isolated environments: `reportbench agents install <kind>` builds a venv apart from reportbench's and writes the
lock the kind's system stages depend on; `reportbench agents ls` shows it (offline: pip from the venv itself)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from reportbench.agents import envs
from reportbench.agents.protocol import lock_path
from reportbench.cli import main
from reportbench.plan import _env_lock

pytestmark = pytest.mark.integration


def _tiny_wheel(folder: Path) -> None:
    """A self-authored one-module wheel, so installs need no index (a wheel is a zip with its dist-info)."""
    folder.mkdir()
    files = {
        "tinyagent/__init__.py": "VERSION = '1.0'\n",
        "tinyagent-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinyagent\nVersion: 1.0\n",
        "tinyagent-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + "tinyagent-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(folder / "tinyagent-1.0-py3-none-any.whl", "w") as zf:
        for name, text in {**files, "tinyagent-1.0.dist-info/RECORD": record}.items():
            zf.writestr(name, text)


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_install_builds_a_separate_venv_and_a_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], installer: str
) -> None:
    if installer == "uv" and not (envs.find_uv() or shutil.which("uv")):
        pytest.skip("uv is not installed (`pip install uv`; .ci/run installs it)")
    monkeypatch.setenv(envs.INSTALLER_ENV, installer)
    monkeypatch.setenv("REPORTBENCH_AGENTS_HOME", str(tmp_path / "home"))
    _tiny_wheel(tmp_path / "wheels")
    req = tmp_path / "storm.txt"
    req.write_text("# self-authored stand-in, installed from a local folder\ntinyagent==1.0\n")
    monkeypatch.setattr(envs, "requirements_file", lambda kind: req)
    with pytest.raises(envs.AgentEnvError, match="reportbench agents install storm"):
        envs.python_for("storm")
    offline = ["--pip-arg=--no-index", f"--pip-arg=--find-links={tmp_path / 'wheels'}"]
    assert main(["agents", "install", "storm", *offline]) == 0
    py = envs.python_for("storm")
    assert py == tmp_path / "home" / "storm" / "venv" / "bin" / "python"
    prefix = subprocess.run([str(py), "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True).stdout
    assert Path(prefix.strip()) != Path(sys.prefix)  # never reportbench's own environment
    lock = envs.lock_file("storm").read_text()
    assert "tinyagent==1.0" in lock.splitlines() and "pip==" not in lock and envs.lock_hash("storm")
    assert installer in json.loads((tmp_path / "home" / "storm" / "build.json").read_text())["installer"]
    capsys.readouterr()
    assert main(["agents", "ls"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert " yes " in rows["storm"] and "tinyagent 1.0" in rows["storm"]
    assert " no " in rows["gpt_researcher"] and " yes " in rows["search_llm"]
    # current: a second install keeps the venv (one build per CI run); a changed pin rebuilds it
    mtime = py.parent.parent.joinpath("pyvenv.cfg").stat().st_mtime_ns
    assert main(["agents", "install", "storm", *offline]) == 0
    assert py.parent.parent.joinpath("pyvenv.cfg").stat().st_mtime_ns == mtime
    req.write_text("tinyagent==2.0\n")
    assert not envs.is_current("storm", offline)


def test_a_failed_build_fails_with_the_log_tail_and_is_not_retried_by_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("REPORTBENCH_AGENTS_HOME", str(tmp_path / "home"))  # uv when installed, else pip
    req = tmp_path / "gpt_researcher.txt"
    req.write_text("no-such-package-for-reportbench==1.0\n")
    monkeypatch.setattr(envs, "requirements_file", lambda kind: req)
    with pytest.raises(envs.AgentEnvError, match="no-such-package-for-reportbench") as first:
        envs.install("gpt_researcher", pip_args=["--no-index"], echo=False)
    assert "build.log ends" in str(first.value) and not envs.lock_file("gpt_researcher").exists()
    calls: list[object] = []
    monkeypatch.setattr(envs, "_build", lambda *a: calls.append(a))
    with pytest.raises(envs.AgentEnvError, match="retry with `reportbench agents install gpt_researcher`"):
        envs.install("gpt_researcher", pip_args=["--no-index"], echo=False, retry_failed=False)
    assert calls == []  # the tests report CI's failed build; they never build it again
    capsys.readouterr()
    assert main(["agents", "ls"]) == 0  # `agents ls` says why the kind is not installed and what fixes it
    out = capsys.readouterr().out
    assert "gpt_researcher: the last build failed (exit " in out and str(envs.build_log("gpt_researcher")) in out
    assert "not installed: " in out and "gpt_researcher" in out.split("not installed: ")[1].split(":")[0]
    assert "`reportbench agents install <kind>`" in out


def test_the_default_home_is_the_repository_roots_and_absolute_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without REPORTBENCH_AGENTS_HOME (the user's default): `.reportbench/agents` of the DVC repository holding the
    working directory, absolute, so an adapter started from a temporary folder still finds its venv (issue 32)."""
    monkeypatch.delenv("REPORTBENCH_AGENTS_HOME", raising=False)
    repo = tmp_path / "clone"
    (repo / ".dvc").mkdir(parents=True)
    (repo / "constraints.txt").write_text("pydantic==2.0\n")
    (repo / "conf" / "deer").mkdir(parents=True)
    home = repo / ".reportbench" / "agents"
    (home / "storm" / "venv" / "bin").mkdir(parents=True)
    (home / "storm" / "venv" / "bin" / "python").write_text("")
    (home / "storm" / "lock.txt").write_text("knowledge-storm==1.1.1\n")
    for cwd in (repo, repo / "conf" / "deer"):  # DVC runs stages from the root; a user may stand anywhere
        monkeypatch.chdir(cwd)
        assert envs.agents_home() == home and envs.agents_home().is_absolute()
        assert envs.python_for("storm") == home / "storm" / "venv" / "bin" / "python"
        assert envs.lock_hash("search_llm") == envs.lock_hash("provider_deep_research") != ""  # the root's file
    monkeypatch.chdir(tmp_path)  # outside any repository: the working directory, still absolute
    assert envs.agents_home() == tmp_path / ".reportbench" / "agents"


def test_uv_gets_pips_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    listed = ("global.find-links='/opt/wheels'\nglobal.extra-index-url='file:///a/simple file:///b/simple'\n"
              ":env:.find-links='/w'\nglobal.constraint='/etc/c.txt'\nglobal.cert='/etc/ssl/ca.crt'\n")
    monkeypatch.setattr(envs.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, listed, ""))
    assert envs.pip_sources() == [
        "--extra-index-url", "file:///a/simple", "--extra-index-url", "file:///b/simple", "--find-links", "/w",
        "--constraint", "/etc/c.txt", "--cert", "/etc/ssl/ca.crt", "--index-strategy", "unsafe-best-match",
    ]


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
