"""`dvc repro` / `dvc exp run` on a fresh clone: the Done-when checks of the spine, offline.

The full repro is the session's shared one (`reproduced_template` in conftest.py: the working tree as a fresh git
repository, `dvc repro` once); this module checks it and then mutates its own copy.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from dvc_helpers import Reproduced, copy_repo_state, run_ok, run_timed

pytestmark = pytest.mark.integration

RUNNING = re.compile(r"Running stage '([^']+)'")
DVC = [sys.executable, "-m", "dvc"]


def _stages(output: str) -> set[str]:
    return set(RUNNING.findall(output))


@pytest.fixture(scope="module")
def clone(reproduced_template: Reproduced, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_repo_state(reproduced_template.path, tmp_path_factory.mktemp("clone") / "repo")


def test_fresh_clone_repro_runs_every_benchmark_and_rewrites_no_tracked_file(
    reproduced_template: Reproduced, clone: Path
) -> None:
    ran = _stages(reproduced_template.output)
    # Everything is computed afresh; stages whose outputs come out byte-identical to the committed
    # dvc.lock (scores, leaderboard: git-tracked metrics) are then rightly skipped.
    plan = yaml.safe_load((clone / "params.yaml").read_text())["plan"]
    for b, entry in plan["benchmarks"].items():  # every enabled benchmark's demo release, end to end
        assert {f"release@{b}", *(f"system@{b}.{s}" for s in entry["systems"])} <= ran, (b, sorted(ran))
        assert f"judge@{b}" in ran, b
        board = json.loads((clone / "metrics" / b / entry["release"] / "leaderboard.json").read_text())
        assert {r["system"] for r in board["rows"]} == set(entry["systems"]), b
    ds = json.loads((clone / "metrics" / "deepscholar" / "demo" / "leaderboard.json").read_text())
    assert all(len(r["metrics"]) == 7 for r in ds["rows"])
    assert not [s for s in ran if s.startswith("agreement@")], "agreement is opt-in (no second judge configured)"

    out, second = run_timed([*DVC, "repro"], clone)
    assert _stages(out) == set(), f"second repro reran {_stages(out)}"
    # Exactly reproducible: rebuilding from scratch reproduces the committed dvc.lock and metrics byte for byte.
    dirty = run_timed(["git", "status", "--porcelain"], clone)[0].strip()
    assert dirty == "", f"a fresh-clone repro changed git-tracked files:\n{dirty}"
    print(f"fresh-clone repro {reproduced_template.seconds:.1f}s, no-op repro {second:.1f}s")


def test_judge_switch_then_prompt_edit_rerun_only_what_they_reach(clone: Path) -> None:
    plan = yaml.safe_load((clone / "params.yaml").read_text())["plan"]
    # A judge switch through DVC's Hydra composition reruns only judge stages and what follows them.
    run_ok(["git", "add", "-A"], clone)
    run_ok(["git", "commit", "-qm", "baseline", "--allow-empty"], clone)
    # DVC's own plan of the switch (`--dry`: DVC composes the -S override and runs its change detection, without
    # paying every judge stage again); a real `dvc exp run -S` runs in test_dvc_tidy (the failing system).
    out, _ = run_timed([*DVC, "exp", "run", "--dry", "--allow-missing", "-S", "judge=offline_strict"], clone)
    ran = _stages(out)
    assert ran, "judge switch reran nothing"
    assert all(s.startswith(("judge@", "cross@", "score@", "site")) for s in ran), ran
    assert {s.split("@")[1] for s in ran if s.startswith("judge@")} == set(plan["benchmarks"])
    assert run_timed(["git", "status", "--porcelain"], clone)[0].strip() == "", "a dry run changed the workspace"

    # Editing one prompt file reruns only the stages that declare it (and what follows).
    prompt = clone / "prompts" / "deepscholar" / "relevance.yaml"
    prompt.write_text(prompt.read_text() + "\n# edited\n")
    out, _ = run_timed([*DVC, "repro"], clone)
    ran = _stages(out)
    # One judge stage per benchmark runs every system's judge steps: the edited step re-asks, the others are
    # answered from the response cache; no other benchmark's stage reruns (the one site stage follows).
    assert ran and all(s in ("judge@deepscholar", "score@deepscholar", "site") for s in ran), ran
