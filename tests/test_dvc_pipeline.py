"""`dvc repro` / `dvc exp run` on a fresh clone: the Done-when checks of the spine, offline.

Slow-ish (about a minute): it clones the committed repository into a temp dir and runs DVC there.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dvc_helpers import run_ok, run_timed, subprocess_env

pytestmark = pytest.mark.integration

RUNNING = re.compile(r"Running stage '([^']+)'")


def _stages(output: str) -> set[str]:
    return set(RUNNING.findall(output))


@pytest.fixture(scope="module")
def clone(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (repo_root / ".git").exists():
        pytest.skip("not a git checkout")
    dest = tmp_path_factory.mktemp("clone") / "repo"
    subprocess.run(["git", "clone", "-q", str(repo_root), str(dest)], check=True, env=subprocess_env())
    return dest


def test_fresh_clone_repro_then_noop_then_judge_switch_then_prompt_edit(clone: Path) -> None:
    dvc = [sys.executable, "-m", "dvc"]
    out, first = run_timed([*dvc, "repro"], clone)
    ran = _stages(out)
    # Everything is computed afresh; stages whose outputs come out byte-identical to the committed
    # dvc.lock (scores, leaderboard: git-tracked metrics) are then rightly skipped.
    plan = yaml.safe_load((clone / "params.yaml").read_text())["plan"]
    for b, entry in plan["benchmarks"].items():  # every enabled benchmark's demo release, end to end
        assert {f"release@{b}", *(f"system@{b}.{s}" for s in entry["systems"])} <= ran, (b, sorted(ran))
        assert {f"judge@{k}" for k, j in plan["judges"].items() if j["benchmark"] == b} <= ran, b
        board = json.loads((clone / "metrics" / b / entry["release"] / "leaderboard.json").read_text())
        assert {r["system"] for r in board["rows"]} == set(entry["systems"]), b
    ds = json.loads((clone / "metrics" / "deepscholar" / "demo" / "leaderboard.json").read_text())
    assert all(len(r["metrics"]) == 7 for r in ds["rows"])

    out, second = run_timed([*dvc, "repro"], clone)
    assert _stages(out) == set(), f"second repro reran {_stages(out)}"
    # Exactly reproducible: rebuilding from scratch reproduces the committed dvc.lock and metrics byte for byte.
    dirty = run_timed(["git", "status", "--porcelain"], clone)[0].strip()
    assert dirty == "", f"a fresh-clone repro changed git-tracked files:\n{dirty}"
    print(f"fresh-clone repro {first:.1f}s, no-op repro {second:.1f}s")

    # A judge switch through DVC's Hydra composition reruns only judge stages and what follows them.
    run_ok(["git", "add", "-A"], clone)
    run_ok(["git", "commit", "-qm", "baseline", "--allow-empty"], clone)
    out, _ = run_timed([*dvc, "exp", "run", "-S", "judge=offline_strict"], clone)
    ran = _stages(out)
    assert ran, "judge switch reran nothing"
    assert all(s.startswith(("judge@", "cross@", "score@", "agreement@", "site@", "site_index")) for s in ran), ran
    assert {s.split("@")[1].split(".")[0] for s in ran if s.startswith("judge@")} == set(plan["benchmarks"])
    params = (clone / "params.yaml").read_text()
    assert "name: offline_strict" in params

    # Editing one prompt file reruns only the stages that declare it (and what follows).
    prompt = clone / "prompts" / "deepscholar" / "relevance.yaml"
    prompt.write_text(prompt.read_text() + "\n# edited\n")
    out, _ = run_timed([*dvc, "repro"], clone)
    ran = _stages(out)
    # One judge stage per (system, member) runs all the benchmark's judge steps: the edited step re-asks, the
    # others are answered from the response cache; no other benchmark's stage reruns.
    allowed = ("judge@deepscholar.", "score@deepscholar", "agreement@deepscholar", "site@deepscholar", "site_index")
    assert ran and all(s.startswith(allowed) for s in ran), ran
