"""`reportbench estimate` makes no network request, writes no cache, says first what it cannot know and still
estimates the rest (issue 32: an "offline" estimate fetched 2,914 pages for ten minutes, then crashed on the
authors' prompts).

The end-to-end test runs, exactly as printed, every `reportbench estimate` command that `reportbench reproduce
<entry>` prints, for every entry of `reportbench reproduce --list`, through the installed console script. The
network is cut (a new user and network namespace, `unshare -rn`, when the kernel allows it) and, either way, a
Python audit hook counts every socket connect and name lookup that reaches the interpreter: the bound is that
count (zero), not a time. `bench/estimate_offline.py` prints the wall time per entry (docs/scale.md)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from reportbench.cli import main

AUDIT_HOOK = """
import os, sys, tempfile
_log = os.environ.get("RB_NETWORK_AUDIT_LOG")
_NET = {"socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr",
        "socket.sendto", "socket.sendmsg"}
_TMP = os.path.realpath(tempfile.gettempdir())
_CWD = os.path.realpath(os.getcwd())  # the checkout: a write in it counts even when the checkout is under /tmp
_busy = []
def _outside_tmp(path):
    p = os.path.realpath(os.fsdecode(path)) if isinstance(path, (str, bytes, os.PathLike)) else ""
    ours = p.startswith(_TMP + os.sep) and not p.startswith(_CWD + os.sep)
    return p and not ours and "__pycache__" not in p and p != "/dev/null"
def _writes(event, args):
    if event == "open" and len(args) >= 3:
        mode, flags = args[1] or "", args[2] or 0
        return (any(c in str(mode) for c in "wax+") or flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)) and \\
            _outside_tmp(args[0])
    if event in ("os.mkdir", "os.rename", "os.remove", "shutil.rmtree"):
        dir_fd = args[-1] if event != "shutil.rmtree" else None  # relative to an open folder: rmtree of a temp dir
        return (dir_fd is None or dir_fd < 0) and _outside_tmp(args[0])
    if event == "sqlite3.connect":  # a cache opened for writing (a read-only open is a file: URI with mode=ro)
        db = os.fsdecode(args[0]) if args and args[0] is not None else ""
        return "mode=ro" not in db and db != ":memory:" and _outside_tmp(db.removeprefix("file:").split("?")[0])
    return False
def _hook(event, args):
    if not _log or _busy:
        return
    kind = "network" if event in _NET else "write" if _writes(event, args) else None
    if kind:
        _busy.append(1)
        try:
            with open(_log, "a", encoding="utf-8") as f:
                f.write(f"{kind} {event} {args!r:.200}\\n")
        finally:
            _busy.pop()
sys.addaudithook(_hook)
"""
REPORTBENCH = str(Path(sys.executable).parent / "reportbench")


def _unshare_works() -> bool:
    try:
        return subprocess.run(["unshare", "-rn", "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _estimate_commands(cwd: Path) -> list[tuple[str, list[str]]]:
    """(entry, argv) of every `reportbench estimate` line that a non-offline entry prints."""
    def run(*args: str) -> str:
        return subprocess.run([REPORTBENCH, *args], cwd=cwd, capture_output=True, text=True).stdout

    rows = [ln.split() for ln in run("reproduce", "--list").splitlines()[1:] if ln.strip()]
    # not offline-runnable: needs data (`no`) or needs data the authors never released (`unreleased`, whose printed
    # estimate still runs for a user who has it)
    entries = [r[0] for r in rows if "/" in r[0] and r[1] in ("no", "unreleased")]
    assert len(entries) >= 10, rows
    out = []
    for entry in entries:
        shown = run("reproduce", entry).splitlines()
        lines = [ln.strip() for ln in shown if ln.strip().startswith("reportbench estimate")]
        # every entry that cannot run here says what it needs; none prints a placeholder to fill in
        assert any(ln.startswith("not run here: needs ") for ln in shown), (entry, shown)
        out += [(entry, shlex.split(ln)) for ln in lines if shlex.split(ln) not in [argv for _, argv in out]]
        assert not any("<" in ln for ln in lines), lines  # `<checkout>` would be a shell redirection
    return out


@pytest.mark.integration
def test_every_reproduce_entrys_estimate_makes_no_network_request(repo_root: Path, tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(AUDIT_HOOK)
    log = tmp_path / "audit.log"
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "RB_NETWORK_AUDIT_LOG": str(log)}
    env.pop("REPORTBENCH_AUTHORS_OFFLINE", None)  # the user's default: downloads allowed; estimate must not
    prefix = ["unshare", "-rn"] if _unshare_works() else []
    commands = _estimate_commands(repo_root)
    assert len(commands) >= 7, commands  # 8 distinct with the DeepResearch Bench plug-in installed
    seen_pages_unknown = False
    for entry, argv in commands:
        log.unlink(missing_ok=True)
        proc = subprocess.run([*prefix, REPORTBENCH, *argv[1:], "--json"], cwd=repo_root, env=env,
                              capture_output=True, text=True, timeout=1800)
        err = proc.stderr.splitlines()
        events = log.read_text().splitlines() if log.is_file() else []
        requests = [e for e in events if e.startswith("network ")]
        writes = [e for e in events if e.startswith("write ")]
        assert requests == [], (entry, requests[:5])
        assert writes == [], (entry, writes[:5])  # no cache or file written outside its temp dir
        assert err and err[0].startswith("estimate: offline: no network request; reads only caches"), (entry, err[:3])
        said = [i for i, ln in enumerate(err) if ln.startswith("estimate: cannot know here: ")]
        other = [i for i, ln in enumerate(err) if not ln.startswith("estimate: ")]
        assert not said or not other or max(said) < min(other), (entry, err[:10])  # said before any work
        assert "Traceback" not in proc.stderr and "AuthorsSource" not in proc.stderr, (entry, proc.stderr[-2000:])
        if proc.returncode == 0:
            out = json.loads(proc.stdout)
            assert out["network_requests_refused"] == 0, (entry, out["network_refused_first"])
            assert out["unknowns"] == [ln.removeprefix("estimate: cannot know here: ") for ln in
                                       (err[i] for i in said)]
            seen_pages_unknown |= out["pages_not_cached"] > 0 and any(r["unknown_page_items"] for r in out["rows"])
        else:  # nothing of it can be estimated here (its data is not on this machine): one line says what
            assert proc.returncode == 2, (entry, proc.returncode, proc.stderr[-2000:])
            assert err[-1].startswith("error: ") and len(err[-1]) < 4000, (entry, err[-3:])
    if (repo_root.parent / "shared" / "data" / "researcherbench").is_dir():
        assert seen_pages_unknown  # researcherbench/table2: its 2,914 cited pages are counted as unknown


@pytest.mark.integration
def test_estimate_without_the_authors_prompts_says_so_and_estimates_with_ours(
    repo_root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(repo_root)
    monkeypatch.delenv("REPORTBENCH_AUTHORS_MIRROR", raising=False)
    monkeypatch.delenv("REPORTBENCH_AUTHORS_OFFLINE", raising=False)
    monkeypatch.setenv("REPORTBENCH_AUTHORS_CACHE", str(tmp_path / "empty"))  # nothing cached: a fresh clone
    argv = ["estimate", "-b", "researcherbench", "-S", "judge=llm", "-S", "judge.prompts=authors", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert any("researcherbench: the authors' prompts are not in the mirror" in u for u in out["unknowns"])
    assert out["totals"]["calls"] > 0 and out["network_requests_refused"] == 0
    assert "cannot know here: researcherbench: the authors' prompts" in captured.err
    assert not (tmp_path / "empty").exists()  # nothing downloaded into the cache


@pytest.mark.integration
def test_estimate_never_runs_a_system_that_calls_a_model_or_a_program(
    repo_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(repo_root)
    argv = ["estimate", "-b", "deepscholar", "-S", "judge=llm", "-S", "agents=byo_examples", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    note = next(n for n in out["notes"] if "not run yet (their kind calls a model or runs a program" in n)
    assert "byo_command" in note and "byo_endpoint" in note  # neither was started (the stub is not running)
    assert out["network_requests_refused"] == 0 and out["totals"]["calls"] > 0
