"""`dvc repro` / `dvc exp run` on a fresh clone: the Done-when checks of the spine, offline.

Slow-ish (about a minute): it clones the committed repository into a temp dir and runs DVC there.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

RUNNING = re.compile(r"Running stage '([^']+)'")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_MODE="PRODUCTION",
        DVC_NO_ANALYTICS="1",
        GIT_AUTHOR_NAME="reportbench-test",
        GIT_AUTHOR_EMAIL="test@reportbench.invalid",
        GIT_COMMITTER_NAME="reportbench-test",
        GIT_COMMITTER_EMAIL="test@reportbench.invalid",
    )
    return env


def _run(cmd: list[str], cwd: Path) -> tuple[str, float]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{out[-4000:]}"
    return out, time.perf_counter() - t0


def _stages(output: str) -> set[str]:
    return set(RUNNING.findall(output))


@pytest.fixture(scope="module")
def clone(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (repo_root / ".git").exists():
        pytest.skip("not a git checkout")
    dest = tmp_path_factory.mktemp("clone") / "repo"
    subprocess.run(["git", "clone", "-q", str(repo_root), str(dest)], check=True, env=_env())
    return dest


def test_fresh_clone_repro_then_noop_then_judge_switch_then_prompt_edit(clone: Path) -> None:
    dvc = [sys.executable, "-m", "dvc"]
    out, first = _run([*dvc, "repro"], clone)
    ran = _stages(out)
    # Everything is computed afresh; stages whose outputs come out byte-identical to the committed
    # dvc.lock (scores, leaderboard: git-tracked metrics) are then rightly skipped.
    assert {"release", "system@careful_writer", "judge_support@careful_writer"} <= ran
    board = json.loads((clone / "metrics" / "deepscholar" / "leaderboard.json").read_text())
    systems = {r["system"] for r in board["rows"]}
    assert systems and all(len(r["metrics"]) == 7 for r in board["rows"])

    out, second = _run([*dvc, "repro"], clone)
    assert _stages(out) == set(), f"second repro reran {_stages(out)}"
    dirty = _run(["git", "status", "--porcelain", "metrics"], clone)[0].strip()
    assert dirty == "", f"a fresh-clone repro changed git-tracked metrics:\n{dirty}"
    print(f"fresh-clone repro {first:.1f}s, no-op repro {second:.1f}s")

    # A judge switch through DVC's Hydra composition reruns only judge stages and what follows them.
    _run(["git", "add", "-A"], clone)
    _run(["git", "commit", "-qm", "baseline", "--allow-empty"], clone)
    out, _ = _run([*dvc, "exp", "run", "-S", "judge=offline_strict"], clone)
    ran = _stages(out)
    assert ran, "judge switch reran nothing"
    assert all(s.startswith(("judge_", "score@")) or s == "leaderboard" for s in ran), ran
    assert any(s.startswith("judge_support@") for s in ran)
    params = (clone / "params.yaml").read_text()
    assert "name: offline_strict" in params

    # Editing one prompt file reruns only the stages that declare it (and what follows).
    prompt = clone / "prompts" / "deepscholar" / "relevance.yaml"
    prompt.write_text(prompt.read_text() + "\n# edited\n")
    out, _ = _run([*dvc, "repro"], clone)
    ran = _stages(out)
    assert ran and all(s.startswith(("judge_relevance@", "score@")) or s == "leaderboard" for s in ran), ran
