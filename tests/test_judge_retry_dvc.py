"""Issue 15, defect 1 (failed judgments came back from DVC's run-cache), end to end with DVC and the stub judge.

A judge stage with unanswered calls exits 3 and DVC records nothing (no lock entry, no run-cache entry), its
records stay inspectable; once the provider recovers, the next `dvc repro` makes exactly the failed calls
(matched by request digest in the stub's log) and the metrics equal a fault-free run. A forced rerun pays
nothing (answers and unparseable answers come from the response cache); `reportbench retry --parse`
re-asks exactly the unparseable ones. Runs in a temp copy of the tree (about 60-90 s on a busy 2-CPU box).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dvc_helpers import copy_repo_state, subprocess_env
from judge_dvc_helpers import (
    JUDGMENTS,
    STAGE,
    TARGET,
    USAGE,
    compose,
    dvc,
    in_process_metrics,
    make_responder,
    metrics,
)
from reportbench.judges.runner import read_judgments
from reportbench.stub_server import stub_server_thread

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning"),
]


def _records(repo: Path) -> list:
    """Every deepscholar system's records: the one judge stage judges them all."""
    return [j for p in sorted((repo / JUDGMENTS.parent.parent).glob("*/main/*.parquet")) for j in read_judgments(p)]


def _retry(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reportbench.cli", "retry", *args],
        cwd=repo,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_failed_then_recovered_judge_stage_pays_exactly_the_failed_calls(
    judge_pipeline_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = copy_repo_state(judge_pipeline_template, tmp_path / "repo")  # release and system already run
    state = {"prose": True}
    with stub_server_thread(responder=make_responder(state), faults={"500": 0.3}, seed=4) as s:
        # the prose answers (about 1 in 12 support questions) are a result: keep them within the failure bound
        compose(repo, s.base_url, "judge.runtime.max_failure_rate=0.3")

        # 1. The provider fails 30 % of the calls (no retries): the stage is incomplete, DVC records nothing.
        first = dvc(repo, "repro", TARGET)
        out = first.stdout + first.stderr
        assert first.returncode != 0, out[-3000:]
        assert f"error: {STAGE} (careful_writer) is incomplete: step " in out and "got no answer" in out, out[-3000:]
        failed_calls = s.digests("500")
        assert failed_calls and len(failed_calls) == len(set(failed_calls))
        records = _records(repo)  # partial records stay inspectable
        unanswered = [j for j in records if (j.error or "").startswith("call: server")]
        assert len(unanswered) == len(failed_calls) and all(j.value is None for j in unanswered)
        usage = json.loads((repo / USAGE).read_text())
        assert usage["incomplete"] and "got no answer" in usage["incomplete"][0]
        lock = (repo / "dvc.lock").read_text() if (repo / "dvc.lock").exists() else ""
        assert STAGE not in lock and "score@deepscholar" not in lock
        assert not (repo / ".dvc" / "cache" / "runs").exists() or _run_cache_has_no(repo, STAGE)

        # 2. The provider recovers: the next plain `dvc repro` asks exactly the failed calls, once each.
        s.faults = {}
        s.reset_counts()
        second = dvc(repo, "repro", TARGET)
        assert second.returncode == 0, (second.stdout + second.stderr)[-3000:]
        assert sorted(s.digests()) == sorted(failed_calls)
        recovered = metrics(repo)

        # 3. A no-op repro costs no call; a forced rerun of the judge stage pays nothing either (answers and
        #    the unparseable answers of this deterministic judge come from the response cache).
        s.reset_counts()
        t0 = time.perf_counter()
        noop = dvc(repo, "repro", TARGET)
        noop_s = time.perf_counter() - t0
        assert noop.returncode == 0 and "up to date" in noop.stdout, noop.stdout + noop.stderr
        forced = dvc(repo, "repro", "--force", "--single-item", STAGE)
        assert forced.returncode == 0, forced.stderr[-3000:]
        assert s.counts["requests"] == 0, dict(s.counts)
        parse_failed = [j for j in _records(repo) if (j.error or "").startswith("parse: ")]
        assert parse_failed and all(j.cache_hit and j.raw_output for j in parse_failed)

        # 4. `reportbench retry` without --parse has nothing to re-ask; with --parse (after the "model" got
        #    better) it re-asks exactly the unparseable answers and updates the score.
        listed = _retry(repo, "--list")
        listed_failed = sum(int(n) for n in re.findall(rf"^{re.escape(STAGE)} \(\w+\): (\d+) of", listed.stdout, re.M))
        assert listed.returncode == 0 and listed_failed == len(parse_failed), listed.stdout
        assert "nothing to retry" in _retry(repo).stdout and s.counts["requests"] == 0
        state["prose"] = False
        retried = _retry(repo, "--parse")
        assert retried.returncode == 0, (retried.stdout + retried.stderr)[-3000:]
        assert s.counts["requests"] == len(parse_failed), dict(s.counts)
        assert not any(not j.ok for j in _records(repo))
        after_retry = metrics(repo)

        # Reference results: the same pipeline in-process, fault-free, without any cache.
        s.reset_counts()
        monkeypatch.chdir(repo)
        state["prose"] = True
        reference_with_prose = in_process_metrics(repo, s.base_url, tmp_path / "ref1")
        state["prose"] = False
        reference_clean = in_process_metrics(repo, s.base_url, tmp_path / "ref2")

    assert recovered == reference_with_prose
    assert after_retry == reference_clean != reference_with_prose
    print(f"no-op dvc repro (4 stages): {noop_s:.2f}s; failed calls re-paid after recovery: {len(failed_calls)}")


def _run_cache_has_no(repo: Path, stage: str) -> bool:
    """No run-cache entry records the judge stage's output (entries are keyed by hash; look at their outs)."""
    runs = repo / ".dvc" / "cache" / "runs"
    entries = [p.read_text() for p in runs.rglob("*") if p.is_file()]
    return not any("data/judgments/deepscholar/demo/careful_writer/main" in e for e in entries)
