"""A finished stage exits without the interpreter's teardown (reportbench.stage_guard.exit_ok): ~1 s of CPU per
process that imported litellm, ~15 % of a judge-changing `dvc exp run` (bench/exp_run_cpu.py), while every exit
hook registered after `guard_stage()` still runs and logging is flushed; a failing stage exits as before."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.core

STAGE = textwrap.dedent(
    """
    import atexit, logging, logging.handlers, os, sys
    from reportbench.stage_guard import exit_ok, guard_stage

    out = sys.argv[1]

    class TornDown:  # a module global: freed by the interpreter's teardown, never by os._exit
        def __init__(self):
            self.fd = os.open(out + ".teardown", os.O_WRONLY | os.O_CREAT)
        def __del__(self):
            os.write(self.fd, b"torn down")

    guard_stage()
    kept = TornDown()
    atexit.register(lambda: open(out + ".hook", "w").write("hook ran"))  # e.g. a temp folder's cleanup
    log = logging.getLogger("stage")
    # flushed only by logging.shutdown() (or its capacity): proves logging's own exit flush ran
    log.addHandler(logging.handlers.MemoryHandler(1000, target=logging.FileHandler(out + ".log")))
    log.warning("a record written at exit")
    print("stdout line", end="")  # a pipe: block-buffered, flushed before the exit
    if sys.argv[2] == "ok":
        exit_ok()
    raise SystemExit(3)
    """
)


def run_stage(tmp_path: Path, how: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "stage"
    proc = subprocess.run([sys.executable, "-c", STAGE, str(out), how], capture_output=True, text=True, timeout=60)
    return proc, out


def read(path: Path) -> str:
    return path.read_text() if path.is_file() else ""


@pytest.mark.parametrize(
    ("how", "status", "teardown"),
    [
        ("ok", 0, ""),  # a finished stage: exit hooks run, the interpreter's teardown does not
        ("fail", 3, "torn down"),  # a failing stage: its status and the usual teardown
    ],
)
def test_a_stage_runs_its_exit_hooks_and_tears_down_only_when_it_failed(
    tmp_path: Path, how: str, status: int, teardown: str
) -> None:
    proc, out = run_stage(tmp_path, how)
    assert proc.returncode == status, proc.stderr
    assert proc.stdout == "stdout line"
    assert read(Path(f"{out}.hook")) == "hook ran"
    assert "a record written at exit" in read(Path(f"{out}.log"))
    assert read(Path(f"{out}.teardown")) == teardown
