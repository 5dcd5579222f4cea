"""The many-machines recipe of docs/scale.md, run for real: machine A judges (stub LLM) and pushes to a shared DVC
remote; machine B (a git clone) runs `dvc repro --pull` and gets every judgment without a single judge call;
the response cache travels as a file (`reportbench cache export/import`), so B's forced judge rerun is free too.

Runs in copies of the session's reproduced working tree (conftest.py `reproduced_template`; never touches the
repository), so the release and system stages are already done; ResearcherBench only, with the stub judge, whose
judge stages run afresh.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from dvc_helpers import Reproduced, copy_repo_state, run_ok
from reportbench.config import compose_params
from reportbench.stub_server import stub_server_thread
from test_researcherbench_stub import responder

pytestmark = [pytest.mark.integration]

RUNNING = re.compile(r"Running stage '([^']+)'")


def test_shared_remote_and_cache_file_mean_no_judge_call_is_paid_twice(
    reproduced_template: Reproduced, tmp_path: Path
) -> None:
    a = copy_repo_state(reproduced_template.path, tmp_path / "machine_a")
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
        run_ok([*dvc, "remote", "add", "-d", "shared", str(remote)], a)
        out = run_ok([*dvc, "repro"], a).stdout
        assert "judge@researcherbench" in RUNNING.findall(out)
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
        out = run_ok([*dvc, "repro", "--force", "--single-item", "judge@researcherbench"], b).stdout
        assert "judge@researcherbench" in RUNNING.findall(out)
        assert llm.counts["ok"] == paid


def _locked(repo: Path) -> dict[str, object]:
    """dvc.lock's stages (the copied tree starts with the lock of the default offline run)."""
    import yaml

    path = repo / "dvc.lock"
    return dict((yaml.safe_load(path.read_text()) or {}).get("stages") or {}) if path.exists() else {}


def test_max_cost_stops_the_dvc_stage_cleanly_and_the_rerun_pays_only_the_rest(
    reproduced_template: Reproduced, tmp_path: Path
) -> None:
    """`judge.runtime.max_cost_usd` through `dvc repro`: one `error:` line, a non-zero exit, nothing locked for the
    stopped stage; raising the limit and rerunning pays only for what was not yet paid (every answer once)."""
    import sqlite3
    import subprocess

    from dvc_helpers import subprocess_env

    repo = copy_repo_state(reproduced_template.path, tmp_path / "repo")
    dvc = [sys.executable, "-m", "dvc"]
    with stub_server_thread(responder=responder) as llm:
        base = [
            "benchmarks=[researcherbench]",
            "researcherbench/judges=single",
            "judge=stub",
            f"judge.api_base={llm.base_url}",
            "+judge.input_cost_per_token=0.0001",
            "+judge.output_cost_per_token=0.0001",
            "judge.runtime.max_concurrency=2",
        ]
        compose_params([*base, "judge.runtime.max_cost_usd=0.05"], out=repo / "params.yaml", conf_dir=repo / "conf")
        before = _locked(repo)
        proc = subprocess.run([*dvc, "repro"], cwd=repo, env=subprocess_env(), capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode != 0
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ") and "max_cost_usd" in line]
        assert len(errors) == 1 and "reached" in errors[0] and "rerun `dvc repro`" in errors[0], proc.stderr[-3000:]
        first = llm.counts["ok"]
        assert first > 0
        stopped = re.match(r"error: \w+@researcherbench\.(\w+)\.main: ", errors[0])
        assert stopped, errors[0]
        stage = "judge@researcherbench"  # every system's judging is one stage
        assert _locked(repo).get(stage) == before.get(stage)  # nothing recorded for the stopped judge stage
        # the stopped stage still wrote its usage: the usage files of this run (steps the stub answered; the
        # copy also holds the committed offline ones) count exactly the calls paid
        usage_dir = repo / "metrics" / "researcherbench" / "demo" / "usage"
        steps = [st for p in sorted(usage_dir.glob("*.json")) for st in json.loads(p.read_text())["steps"].values()]
        stopped_usage = json.loads((usage_dir / f"{stopped.group(1)}.main.json").read_text())
        assert any("max_cost_usd" in str(st.get("stopped")) for st in stopped_usage["steps"].values()), stopped_usage
        assert sum(st["calls"] for st in steps if st.get("model") == "openai/stub-judge") == first, steps

        compose_params(base, out=repo / "params.yaml", conf_dir=repo / "conf")
        run_ok([*dvc, "repro"], repo)
        assert _locked(repo).get(stage) not in (None, before.get(stage))
        paid = llm.counts["ok"]
    db = sqlite3.connect(repo / ".reportbench" / "cache" / "judge.sqlite")
    stored = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    db.close()
    assert paid == stored > first  # every answer paid exactly once across the stopped run and the rerun
    assert (repo / "metrics" / "researcherbench" / "demo" / "systems.json").is_file()
