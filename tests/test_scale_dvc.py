"""The many-machines recipe of docs/scale.md, run for real: machine A judges (stub LLM) and pushes to a shared DVC
remote; machine B (a git clone) runs `dvc repro --pull` and gets every judgment without a single judge call;
the response cache travels as a file (`reportbench cache export/import`), so B's forced judge rerun is free too.

Runs in copies of the working tree with `git init` (never touches the repository); ResearcherBench only, with
the stub judge: ~40-70 s on a busy 2-CPU box.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from dvc_helpers import run_ok
from reportbench.config import compose_params
from reportbench.stub_server import stub_server_thread
from test_researcherbench_stub import responder
from test_systems_dvc import copy_tree

pytestmark = [pytest.mark.integration]

RUNNING = re.compile(r"Running stage '([^']+)'")


def test_shared_remote_and_cache_file_mean_no_judge_call_is_paid_twice(repo_root: Path, tmp_path: Path) -> None:
    a = copy_tree(repo_root, tmp_path / "machine_a")
    dvc = [sys.executable, "-m", "dvc"]
    rb = [sys.executable, "-m", "reportbench.cli"]
    remote = tmp_path / "shared-remote"
    with stub_server_thread(responder=responder) as llm:
        overrides = [
            "benchmarks=[researcherbench]",
            "researcherbench/judges=single",
            "judge=stub",
            f"judge.api_base={llm.base_url}",
        ]
        compose_params(overrides, out=a / "params.yaml", conf_dir=a / "conf")
        run_ok(["git", "init", "-q"], a)
        run_ok([*dvc, "remote", "add", "-d", "shared", str(remote)], a)
        out = run_ok([*dvc, "repro"], a).stdout
        assert any(s.startswith("judge@researcherbench.") for s in RUNNING.findall(out))
        paid = llm.counts["ok"]
        assert paid > 10
        run_ok([*dvc, "push"], a)
        run_ok(["git", "add", "-A"], a)
        run_ok(["git", "commit", "-qm", "machine A's run"], a)

        b = tmp_path / "machine_b"
        run_ok(["git", "clone", "-q", str(a), str(b)], tmp_path)
        out = run_ok([*dvc, "repro", "--pull"], b).stdout
        ran = RUNNING.findall(out)
        assert not [s for s in ran if s.startswith(("judge@", "system@", "release@"))], ran
        assert llm.counts["ok"] == paid  # B paid for nothing
        metrics = Path("metrics/researcherbench/demo/systems.json")
        assert json.loads((b / metrics).read_text()) == json.loads((a / metrics).read_text())

        # the response cache as a file: B imports A's answers, and a forced judge rerun on B costs nothing
        shared = tmp_path / "judge-cache.jsonl.gz"
        exported = run_ok([*rb, "cache", "export", str(shared)], a).stdout
        assert f"exported {paid} answers" in exported
        imported = run_ok([*rb, "cache", "import", str(shared)], b).stdout
        assert f"imported {paid} answers" in imported
        out = run_ok([*dvc, "repro", "--force", "--single-item", "judge@researcherbench.footnote_writer"], b).stdout
        assert "judge@researcherbench.footnote_writer" in RUNNING.findall(out)
        assert llm.counts["ok"] == paid
