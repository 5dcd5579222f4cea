"""A benchmark installed as a distribution of its own (tests/plugins/reportbench_toy) appears in `reportbench ls
benchmarks`, in `compose`, in the plan and on the site, and runs through `dvc repro`, with no file of reportbench
changed: it is pip-installed into a scratch target (PYTHONPATH of the subprocesses only, never the shared venv)
inside a clone of the repository. docs/plugins.md."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dvc_helpers import run_ok, subprocess_env
from reportbench.plan import judge_units

pytestmark = pytest.mark.integration

TOY = Path(__file__).resolve().parent / "plugins" / "reportbench_toy"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip install --no-deps --target` of the toy distribution (built offline with this venv's setuptools)."""
    scratch = tmp_path_factory.mktemp("plugin")
    site, source = scratch / "site", scratch / "source"
    shutil.copytree(TOY, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))  # builds there
    env = subprocess_env() | {"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(site),
         str(source)],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (site / "reportbench_toy" / "conf" / "benchmarks" / "toy.yaml").is_file()
    return site


@pytest.fixture()
def clone(repo_root: Path, tmp_path: Path, installed: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if not (repo_root / ".git").exists():
        pytest.skip("not a git checkout")
    dest = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(repo_root), str(dest)], check=True, env=subprocess_env())
    monkeypatch.setenv("PYTHONPATH", str(installed))  # subprocess_env() copies os.environ
    return dest


def test_an_installed_plugin_runs_through_dvc_repro(clone: Path, installed: Path) -> None:
    rb = [sys.executable, "-m", "reportbench.cli"]
    listed = run_ok([*rb, "ls", "benchmarks"], clone).stdout
    assert "toy " in listed and "deepscholar" in listed, listed
    assert "-S toy/release=default" in run_ok([*rb, "ls", "releases"], clone).stdout

    run_ok([*rb, "compose", "benchmarks=[toy]"], clone)  # enabled by a config choice, its conf from the package
    params = yaml.safe_load((clone / "params.yaml").read_text())
    assert set(params["benchmarks"]) == {"toy"} and set(params["benchmarks"]["toy"]["systems"]) == {"terse", "thorough"}
    entry = params["plan"]["benchmarks"]["toy"]
    assert entry["code"] == (installed / "reportbench_toy").resolve().as_posix()
    assert entry["prompts"] == (installed / "reportbench_toy" / "prompts").resolve().as_posix()
    assert {"toy.thorough.gpt", "toy.terse.gemini"} <= set(judge_units(params["plan"]))

    dvc = [sys.executable, "-m", "dvc"]
    run_ok([*dvc, "repro", "site"], clone)
    board = json.loads((clone / "metrics" / "toy" / "toy-r1" / "leaderboard.json").read_text())
    assert [r["system"] for r in board["rows"]] == ["thorough", "terse"]
    assert board["metrics"] == ["coverage", "claim_support", "win_rate"]
    summary = json.loads((clone / "metrics" / "toy" / "toy-r1" / "systems.json").read_text())
    assert summary["thorough"]["metrics"]["coverage"]["mean"] == 1.0
    assert (clone / "site" / "benchmarks" / "toy" / "toy-r1" / "index.html").is_file()

    # the plug-in's prompts are a dependency of its judge stages, wherever the distribution is installed
    prompt = installed / "reportbench_toy" / "prompts" / "check.yaml"
    original = prompt.read_text()
    try:
        prompt.write_text(original + "\n# edited\n")
        status = run_ok([*dvc, "status", "judge@toy"], clone).stdout
        assert "changed deps" in status and "reportbench_toy/prompts" in status, status
    finally:
        prompt.write_text(original)
