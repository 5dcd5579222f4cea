"""Tie a stage process's life to the `dvc` that started it, so killing `dvc` at any moment leaves nothing running.

Why: DVC starts a stage as `$SHELL -c "<cmd>"` in its own process group and waits. When `dvc` itself is killed
(`kill -9`, a closed terminal, a CI timeout), nothing tells the stage: it is re-parented and keeps paying for
judge calls and writing outputs that no lock will ever describe, racing the next `dvc repro`. A guarded stage

- turns SIGTERM and SIGHUP into a clean exit (status 128 + signal): `finally` blocks run, temp files are
  removed, the response cache (sqlite, one transaction per answer) stays consistent, and no output is
  renamed into place half-written (every output is written to a temp name and renamed);
- asks the kernel for SIGTERM when its parent dies (Linux `PR_SET_PDEATHSIG`), and a watchdog thread polls
  the parent and, when the parent is a shell that did not `exec` the command, the process above it (`dvc`):
  when one is gone, the stage terminates itself;
- on its way out terminates its own child processes (and, after a grace period, kills them), runs the
  `finally` blocks, then exits without the interpreter's slow teardown (and at the latest after `grace_s`).

A stage that finished (`exit_ok()`, its last statement) also exits without that teardown, once every exit hook
registered since `guard_stage()` has run (temp folders, litellm's clients) and logging is flushed: freeing a
process that imported litellm costs ~1 s of CPU, ~15 % of a judge-changing `dvc exp run` (bench/exp_run_cpu.py).

Nothing here is specific to judges; any stage script can call `guard_stage()` first thing.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import select
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any, NoReturn

SHELLS = frozenset({"sh", "dash", "bash", "zsh", "ksh", "fish", "busybox"})
_PR_SET_PDEATHSIG = 1
_installed = False
_terminating = threading.Event()
_finished = False  # set by exit_ok(): the stage's work returned and its outputs are written


def _children() -> list[Any]:
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil ships with DVC
        return []
    try:
        return list(psutil.Process().children(recursive=True))
    except psutil.Error:
        return []


def terminate_children(grace_s: float = 3.0) -> None:
    """SIGTERM every descendant, then SIGKILL those still alive after `grace_s`."""
    kids = _children()
    if not kids:
        return
    import psutil

    for kid in kids:
        with contextlib.suppress(psutil.Error):
            kid.terminate()
    _, alive = psutil.wait_procs(kids, timeout=grace_s)
    for kid in alive:
        with contextlib.suppress(psutil.Error):
            kid.kill()


def _hard_exit_later(code: int, grace_s: float) -> None:
    def _later() -> None:
        time.sleep(grace_s)
        terminate_children(0.5)
        os._exit(code)

    threading.Thread(target=_later, name="reportbench-stage-deadline", daemon=True).start()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    code = 128 + signum
    if _terminating.is_set():
        return  # already on the way out
    _terminating.set()
    name = signal.Signals(signum).name
    print(f"reportbench: stage got {name}; stopping (nothing partial is recorded as done)", file=sys.stderr)
    _hard_exit_later(code, _grace_s)
    # Once `finally` blocks have run, skip the interpreter's teardown (seconds with litellm loaded, and other
    # libraries' atexit hooks may flush to the network): registered last, this atexit hook runs first.
    atexit.register(_exit_now, code)
    terminate_children()
    raise SystemExit(code)


def _exit_now(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def exit_ok() -> NoReturn:
    """The stage's last statement once its work returned: exit status 0, without the interpreter's teardown (see
    the module's docstring). Exit hooks registered after `guard_stage()` still run; so do `finally` blocks."""
    global _finished
    _finished = True
    raise SystemExit(0)


def _skip_teardown_when_finished() -> None:
    """Registered by guard_stage, so it runs after every exit hook registered later (LIFO) and before those
    registered earlier (logging's flush: run here; a compiled library's own hook, e.g. polars', skipped with the
    teardown: os._exit stops its threads)."""
    if _finished and not _terminating.is_set():
        logging.shutdown()
        _exit_now(0)


def _set_pdeathsig(sig: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watched_ancestors() -> list[Any]:
    """The parent, plus the grandparent when the parent is a shell (it outlives `dvc` while it waits on us)."""
    try:
        import psutil
    except ImportError:  # pragma: no cover
        return []
    try:
        parent = psutil.Process(os.getppid())
        out = [parent]
        if parent.name() in SHELLS:
            grand = parent.parent()
            if grand is not None and grand.pid > 1:
                out.append(grand)
        return out
    except psutil.Error:
        return []


def _pidfds(ancestors: list[Any]) -> list[int]:
    """Linux pidfds for the watched processes: poll() wakes the moment one exits (no polling delay)."""
    fds: list[int] = []
    if not hasattr(os, "pidfd_open"):
        return fds
    for p in ancestors:
        with contextlib.suppress(OSError):
            fds.append(os.pidfd_open(p.pid))
    return fds


def _watch(ancestors: list[Any], original_ppid: int, poll_s: float) -> None:
    """Wake as soon as a watched ancestor exits (pidfd) or, at the latest, every `poll_s`.

    Why not only poll: at `poll_s` = 0.5 s a stage with 4 calls in flight at 150 ms each sends ~13 more calls
    after `dvc` was killed; a pidfd makes that the in-flight calls alone.
    """
    fds = _pidfds(ancestors)
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    try:
        while not _terminating.is_set():
            gone = os.getppid() != original_ppid or any(not p.is_running() for p in ancestors)
            if gone:
                os.kill(os.getpid(), signal.SIGTERM)
                return
            if fds:
                poller.poll(poll_s * 1000)
            else:
                time.sleep(poll_s)
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


_grace_s = 10.0


def guard_stage(*, poll_s: float = 0.5, grace_s: float = 10.0) -> None:
    """Install the signal handlers, the parent-death signal and the watchdog (idempotent; main thread only)."""
    global _installed, _grace_s
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    _installed = True
    _grace_s = grace_s
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    atexit.register(_skip_teardown_when_finished)
    original_ppid = os.getppid()
    _set_pdeathsig(signal.SIGTERM)
    if os.getppid() != original_ppid:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)
    ancestors = _watched_ancestors()
    threading.Thread(
        target=_watch, args=(ancestors, original_ppid, poll_s), name="reportbench-stage-watchdog", daemon=True
    ).start()
