"""Issue 15: killing `dvc` (kill -9) or the stage (SIGTERM) in the middle of a judge stage leaves no process
running and no state a later repro mistakes for complete; the next `dvc repro` re-pays at most the calls that
were in flight (the answers already received are in the response cache) and the metrics equal a clean run.

The stub answers slowly (150 ms, 4 calls in flight) so the kill lands mid-stage; every call is matched by its
request digest in the stub's log. About 30-40 s per case on a busy 2-CPU box.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from dvc_helpers import copy_repo_state, subprocess_env
from judge_dvc_helpers import DVC, STAGE, TARGET, compose, dvc, in_process_metrics, make_responder, metrics
from reportbench.stub_server import stub_server_thread

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning"),
]

IN_FLIGHT = 4


def _wait_for(predicate: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def _judge_stage_process(root: psutil.Process) -> psutil.Process | None:
    for p in root.children(recursive=True):
        try:
            if "stages/judge.py" in " ".join(p.cmdline()):
                return p
        except psutil.Error:
            continue
    return None


@pytest.mark.parametrize("kill", ["dvc-sigkill", "stage-sigterm"])
def test_kill_mid_judge_stage_leaves_nothing_running_and_repays_at_most_the_in_flight_calls(
    judge_pipeline_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kill: str
) -> None:
    repo = copy_repo_state(judge_pipeline_template, tmp_path / "repo")  # release and system already run
    state = {"prose": False}
    with stub_server_thread(responder=make_responder(state), latency_ms=150) as s:
        compose(repo, s.base_url, f"judge.runtime.max_concurrency={IN_FLIGHT}")
        assert dvc(repo, "repro", "system@deepscholar.careful_writer").returncode == 0
        s.reset_counts()
        proc = subprocess.Popen(
            [*DVC, "repro", TARGET],
            cwd=repo,
            env=subprocess_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # our own kill below must never reach pytest
        )
        descendants: list[psutil.Process] = []
        try:
            dvc_proc = psutil.Process(proc.pid)
            assert _wait_for(lambda: len(s.digests("ok")) >= 30, 120), "the judge stage never got going"
            stage = _judge_stage_process(dvc_proc)
            assert stage is not None
            descendants = dvc_proc.children(recursive=True)
            asked_at_kill = len(s.chat_log)
            if kill == "dvc-sigkill":
                os.kill(proc.pid, signal.SIGKILL)
            else:
                stage.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
            # nothing keeps running: the stage (and any shell between dvc and it) is gone, and it stopped asking
            # at once -- an orphan would go on paying for the ~110 calls it had left and write outputs no
            # lock describes. (Seconds, not milliseconds, under load: a starved process takes a while to exit.)
            _, alive = psutil.wait_procs(descendants, timeout=15)
            assert not alive, f"orphans after {kill}: {[p.pid for p in alive]}"
            asked_after_kill = len(s.chat_log) - asked_at_kill
            assert asked_after_kill <= 2 * IN_FLIGHT, f"{asked_after_kill} calls arrived after the kill"
        finally:
            if proc.poll() is None:
                proc.kill()
            for leftover in descendants:
                if leftover.is_running():  # a failing run must not leave its orphans behind either
                    leftover.kill()
        output = proc.stdout.read().decode() if proc.stdout else ""
        answered_before = set(s.digests("ok"))
        total_items_hint = len(answered_before)
        assert STAGE not in (repo / "dvc.lock").read_text(), "a killed stage was recorded as done"
        if kill == "stage-sigterm":
            assert proc.returncode != 0 and "got SIGTERM" in output, output[-2000:]

        s.reset_counts()
        s.latency_s = 0.0
        again = dvc(repo, "repro", TARGET)
        assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
        asked_after = s.digests()
        repaid = answered_before & set(asked_after)
        assert len(repaid) <= IN_FLIGHT, f"re-paid {len(repaid)} answered calls (in flight: {IN_FLIGHT})"
        assert len(asked_after) == len(set(asked_after))  # every remaining item asked once
        after_kill = metrics(repo)

        monkeypatch.chdir(repo)
        reference = in_process_metrics(repo, s.base_url, tmp_path / "ref")
    assert after_kill == reference
    print(
        f"{kill}: {total_items_hint} answered before the kill, {len(asked_after)} asked after, "
        f"{len(repaid)} re-paid (bound {IN_FLIGHT})"
    )
