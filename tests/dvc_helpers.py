"""Running `dvc` / `git` in a temp copy of the repository from the integration tests (not a test module)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


def subprocess_env() -> dict[str, str]:
    """This interpreter's bin first on PATH, offline litellm/DVC settings, a fixed git identity for commits."""
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


def run_ok(cmd: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run `cmd` in `cwd`; fail the test with the output's tail when it exits non-zero."""
    proc = subprocess.run(cmd, cwd=cwd, env=subprocess_env(), capture_output=True, text=True, timeout=timeout)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{out[-4000:]}"
    return proc


def run_timed(cmd: list[str], cwd: Path) -> tuple[str, float]:
    """(stdout + stderr, seconds) of a successful run_ok."""
    t0 = time.perf_counter()
    proc = run_ok(cmd, cwd)
    return proc.stdout + proc.stderr, time.perf_counter() - t0
