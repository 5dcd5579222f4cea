"""`sandbox:` in a system entry and REPORTBENCH_SANDBOX (reportbench.systems.sandbox): the default is bubblewrap,
opting out is explicit and recorded, a bad value names the field, and a machine without the sandbox stops the
stage with one message naming the fix (unless the user opted out)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from reportbench.systems import SystemError_, run_system, sandbox
from reportbench.systems.sandbox import parse_sandbox
from reportbench.types import Task

pytestmark = pytest.mark.core


def test_the_default_is_bwrap_with_limits() -> None:
    cfg = parse_sandbox("s", None, environ={})
    assert cfg.backend == "bwrap" and cfg.opted_out_by is None
    rec = cfg.record(600)
    cpus = os.cpu_count() or 1
    assert rec["limits"]["cpu_s"] == 600 * cpus and rec["limits"]["memory_mb"] == 8192
    assert rec["limits"]["wall_s"] == 600


def test_opting_out_is_explicit_and_recorded() -> None:
    assert parse_sandbox("s", "none", environ={}).record(1) == {
        "backend": "none", "unsandboxed": True, "opted_out_by": "config"
    }  # fmt: skip
    every = parse_sandbox("s", {"memory_mb": 512}, environ={"REPORTBENCH_SANDBOX": "none"})
    assert every.backend == "none" and every.opted_out_by == "REPORTBENCH_SANDBOX"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"memroy_mb": 1}, r"systems\.s\.sandbox: unknown key\(s\) \['memroy_mb'\]"),
        ({"memory_mb": -1}, r"systems\.s\.sandbox\.memory_mb: expected a positive number"),
        ({"backend": "docker"}, r"systems\.s\.sandbox\.backend: 'docker' is not one of"),
        ({"allow_ports": ["8765"]}, r"systems\.s\.sandbox\.allow_ports"),
        (["bwrap"], r"systems\.s\.sandbox: expected 'bwrap', 'none' or a mapping"),
    ],
)
def test_a_bad_sandbox_entry_names_the_field(value: object, message: str) -> None:
    with pytest.raises(SystemError_, match=message):
        parse_sandbox("s", value, environ={})


def test_a_bad_global_value_is_refused() -> None:
    with pytest.raises(SystemError_, match="REPORTBENCH_SANDBOX='off'"):
        parse_sandbox("s", None, environ={"REPORTBENCH_SANDBOX": "off"})


def test_editable_installs_behind_a_finder_are_bound(tmp_path: Path) -> None:
    (tmp_path / "__editable___pkg_1_0_finder.py").write_text("MAPPING: dict[str, str] = {'pkg': '/src/a/pkg'}\n")
    assert sandbox._editable_finder_paths([str(tmp_path)]) == ["/src/a"]


@pytest.mark.integration
def test_without_bwrap_the_stage_stops_with_the_fix_unless_opted_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no bwrap on PATH
    monkeypatch.delenv("REPORTBENCH_SANDBOX", raising=False)
    sandbox.unavailable_reason.cache_clear()
    try:
        script = tmp_path / "w.py"
        script.write_text("import sys\nopen(sys.argv[2], 'w').write('## Work\\n\\nDone.\\n')\n")
        spec = {"kind": "command", "cmd": [sys.executable, str(script), "{task_json}", "{output}"]}
        task = Task(task_id="t1", title="t", task_prompt="q")
        with pytest.raises(SystemError_) as err:
            run_system("mine", spec, [task], tmp_path / "run")
        text = str(err.value)
        assert text.startswith("systems.mine: cannot sandbox this system: bubblewrap (bwrap) is not installed")
        assert "apt-get install bubblewrap" in text and "sandbox: none" in text and "REPORTBENCH_SANDBOX=none" in text
        assert not (tmp_path / "run" / "raw" / "t1.md").exists()  # stopped before any task
        outcomes = run_system("mine", {**spec, "sandbox": "none"}, [task], tmp_path / "run2")
        assert outcomes[0].status == "ok"
    finally:
        sandbox.unavailable_reason.cache_clear()


def test_systems_json_says_how_a_system_ran(tmp_path: Path) -> None:
    from reportbench.pipeline import _sandbox_of

    assert _sandbox_of(tmp_path) is None  # a kind that runs no code of its own (folder, endpoint, ...)
    (tmp_path / "sandbox.json").write_text('{"backend": "none", "unsandboxed": true}')
    assert _sandbox_of(tmp_path) == "unsandboxed"
    (tmp_path / "sandbox.json").write_text('{"backend": "bwrap"}')
    assert _sandbox_of(tmp_path) == "bwrap"


def _outside_tmp_base() -> Path:
    """A folder root can write in that the sandbox does not empty (not /tmp, /var/tmp, /run, /dev/shm or a home)."""
    for base in ("/srv", "/mnt", "/opt", "/var/lib"):
        if os.path.isdir(base) and os.access(base, os.W_OK):
            return Path(base)
    pytest.skip("no writable folder outside /tmp and the homes to build a 0700 project in")


@pytest.mark.integration
def test_a_project_below_a_closed_folder_runs_sandboxed_as_root() -> None:
    """As root the program runs as a uid of its own: a project under a 0700 folder (`mktemp -d`, a home) used to
    end "Permission denied" on the program's own files. The closed folder becomes an empty walkable tmpfs with the
    binds made again below it: the program reads its project and writes its output; the folder's other entries
    stay invisible."""
    if os.geteuid() != 0:
        pytest.skip("the uid switch happens only as root (unprivileged, the program keeps the user's uid)")
    if sandbox.unavailable_reason():
        pytest.fail(f"the sandbox is required here: {sandbox.unavailable_reason()}")  # CI installs bubblewrap
    import shutil
    import tempfile

    closed = Path(tempfile.mkdtemp(prefix="rb-closed-", dir=_outside_tmp_base()))  # mkdtemp: mode 0700
    try:
        assert closed.stat().st_mode & 0o777 == 0o700
        proj = closed / "proj"
        (proj / "out").mkdir(parents=True)
        (proj / "in.txt").write_text("project data\n", encoding="utf-8")
        (closed / "secret.txt").write_text("not for the system\n", encoding="utf-8")
        script = f"cat {proj}/in.txt && echo written > {proj}/out/y && ls {closed}"
        result = sandbox.run(["/bin/sh", "-c", script], parse_sandbox("s", None, environ={}),
                             env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"}, cwd=proj, wall_s=30,
                             rw=[(proj / "out", proj / "out")], project=proj)  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert result.stdout.decode().split() == ["project", "data", "proj"]  # secret.txt is not there
        assert (proj / "out" / "y").read_text() == "written\n"
        assert (proj / "out" / "y").stat().st_uid == 0  # given back to root afterwards
    finally:
        shutil.rmtree(closed, ignore_errors=True)
