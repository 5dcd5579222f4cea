"""Systems as DVC stages, offline: `dvc repro` with `agents=byo_examples` (a command and an endpoint
system against the loopback stub, defined once as agents) puts both on the leaderboard; then adding
DeepScholar-ref (stub LLM + recorded arXiv responses over loopback HTTP) reruns only its stages and the score.

Runs in a copy of the session's reproduced working tree (conftest.py `reproduced_template`: uncommitted files
included, the releases already built), so it never touches the repository.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from dvc_helpers import Reproduced, copy_repo_state, run_timed
from reportbench.config import compose_params
from reportbench.stub_server import stub_server_thread
from reportbench.systems.devservices import arxiv_replay_thread, scripted_responder

pytestmark = pytest.mark.integration

RUNNING = re.compile(r"Running stage '([^']+)'")
SKIP_TOP = {".venv", ".git", ".pytest_cache", ".ruff_cache", ".reportbench", "outputs", "multirun"}


def copy_tree(src: Path, dst: Path) -> Path:
    """The working tree without the venv, git, DVC cache and our caches (a `git clone` would miss
    uncommitted files)."""

    def ignore(folder: str, names: list[str]) -> list[str]:
        rel = Path(folder).relative_to(src)
        skip = [n for n in names if n == "__pycache__"]
        if rel == Path("."):
            skip += [n for n in names if n in SKIP_TOP]
        if rel == Path(".dvc"):
            skip += [n for n in names if n in ("cache", "tmp")]
        return skip

    shutil.copytree(src, dst, ignore=ignore)
    return dst


def _leaderboard_systems(repo: Path) -> set[str]:
    board = json.loads((repo / "metrics" / "deepscholar" / "demo" / "leaderboard.json").read_text())
    return {row["system"] for row in board["rows"]}


def _outcomes(repo: Path, system: str) -> list[str]:
    lines = (repo / "data" / "runs" / "deepscholar" / "demo" / system / "outcomes.jsonl").read_text().splitlines()
    return [json.loads(line)["status"] for line in lines]


def test_byo_systems_on_the_leaderboard_and_adding_one_reruns_only_its_stages(
    reproduced_template: Reproduced, fixtures_dir: Path, tmp_path: Path
) -> None:
    repo = copy_repo_state(reproduced_template.path, tmp_path / "repo")
    dvc = [sys.executable, "-m", "dvc"]
    with (
        stub_server_thread(responder=scripted_responder) as llm,
        arxiv_replay_thread(fixtures_dir / "systems" / "arxiv") as arxiv,
    ):
        endpoint = f"agents.byo_endpoint.api_base={llm.base_url}"
        systems = repo / "conf" / "deepscholar" / "systems"
        (systems / "none.yaml").write_text("# @package benchmarks.deepscholar.systems\n{}\n")
        # Agents (command / endpoint systems defined once) run on every enabled benchmark.
        # two benchmarks keep the test quick; researchqa adds a cross-system stage (battles) to the picture
        overrides = ["benchmarks=[deepscholar,researchqa]", "agents=byo_examples", endpoint, "deepscholar/systems=none"]
        compose_params(overrides, out=repo / "params.yaml", conf_dir=repo / "conf")
        out, first = run_timed([*dvc, "repro"], repo)
        ran = set(RUNNING.findall(out))
        assert {"system@deepscholar.byo_command", "system@deepscholar.byo_endpoint", "score@deepscholar"} <= ran
        # agents are defined once and run on every enabled benchmark
        assert {"system@researchqa.byo_command", "system@researchqa.byo_endpoint", "cross@researchqa"} <= ran
        assert _leaderboard_systems(repo) == {"byo_command", "byo_endpoint"}
        assert _outcomes(repo, "byo_command") == ["ok"] * 3
        assert _outcomes(repo, "byo_endpoint") == ["ok"] * 3
        assert llm.counts["ok"] >= 3

        # Add a system: DeepScholar-ref against the stub and the recorded arXiv responses.
        (systems / "ref_only.yaml").write_text(
            "# @package benchmarks.deepscholar.systems\n"
            "deepscholar_ref:\n"
            "  kind: deepscholar_ref\n"
            "  path: prompts/deepscholar_ref\n"
            "  model: openai/stub-ref\n"
            f"  api_base: {llm.base_url}\n"
            "  structured_output: json_schema\n"
            "  search:\n"
            f"    arxiv_url: {arxiv.url}\n"
        )
        overrides[-1] = "deepscholar/systems=ref_only"
        compose_params(overrides, out=repo / "params.yaml", conf_dir=repo / "conf")
        status, _ = run_timed([*dvc, "status"], repo)
        assert "byo_command" not in status and "byo_endpoint" not in status, status
        out, second = run_timed([*dvc, "repro"], repo)
        ran = set(RUNNING.findall(out))
        expected = {"system@deepscholar.deepscholar_ref", "judge@deepscholar", "score@deepscholar",
                    "site"}  # the site follows the leaderboard (agreement is opt-in)
        assert ran == expected, f"adding a system reran {sorted(ran - expected)} / missed {sorted(expected - ran)}"
        assert arxiv.replay.queries, "DeepScholar-ref searched through the recorded arXiv responses"

    assert _leaderboard_systems(repo) == {"byo_command", "byo_endpoint", "deepscholar_ref"}
    assert _outcomes(repo, "deepscholar_ref") == ["ok"] * 3
    raw = (repo / "data" / "runs" / "deepscholar" / "demo" / "deepscholar_ref" / "raw" / "demo-0002.md").read_text()
    assert "2513.00530" not in raw and "## References" in raw  # the post-cutoff recorded result never used
    print(f"byo_examples repro {first:.1f}s; adding deepscholar_ref {second:.1f}s")
