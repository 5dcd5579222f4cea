"""`kind: command`: a program per task; success, non-zero exit, timeout (process group killed) and empty
output are recorded outcomes, and the run always goes on to the next task."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from reportbench.systems import SystemError_, read_outcomes, read_reports, run_system
from reportbench.systems.command import build_argv
from reportbench.types import Task

pytestmark = pytest.mark.integration  # spawns subprocesses

# One script, several behaviours chosen by the task id, so one run exercises every outcome.
SCRIPT = r"""
import json, os, sys, time
task = json.load(open(sys.argv[1], encoding="utf-8"))
out = sys.argv[2]
tid = task["task_id"]
assert "exemplar" not in task, "the exemplar must never reach a system"
if tid == "t-crash":
    print("boom: something broke", file=sys.stderr)
    sys.exit(3)
if tid == "t-slow":
    time.sleep(60)
if tid == "t-empty":
    open(out, "w").write("   \n")
    sys.exit(0)
if tid == "t-silent":
    sys.exit(0)
open(out, "w", encoding="utf-8").write(
    f"## Related Work\n\nPrior work on {task['title']} exists [1].\n\n## References\n\n"
    "[1] Depth-k Pooling Revisited. arXiv:2313.01042\n"
)
"""


def _task(task_id: str) -> Task:
    return Task(
        task_id=task_id,
        title=f"Title of {task_id}; rm -rf / $(whoami) `id`",  # shell syntax in data must stay inert
        abstract="An abstract.",
        published_date="2025-03-18T10:04:00+00:00",
        task_prompt="Write the related work.",
        exemplar="SECRET",
    )


@pytest.fixture()
def script(tmp_path: Path) -> Path:
    path = tmp_path / "system.py"
    path.write_text(SCRIPT)
    return path


def _running_with(marker: str) -> list[int]:
    """Processes (any namespace) whose command line holds `marker`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


@pytest.mark.parametrize("sandbox", [None, "none"])  # the default (bwrap) and the explicit opt-out
def test_success_exit_timeout_empty_are_recorded(script: Path, tmp_path: Path, sandbox: str | None) -> None:
    spec = {
        "kind": "command",
        "path": str(script),
        "cmd": [sys.executable, str(script), "{task_json}", "{output}"],
        "timeout_s": 1.5,
        **({"sandbox": sandbox} if sandbox else {}),
    }
    tasks = [_task(t) for t in ("t-ok", "t-crash", "t-slow", "t-empty", "t-silent", "t-ok2")]
    out = tmp_path / "run"
    t0 = time.perf_counter()
    outcomes = run_system("cmd_sys", spec, tasks, out)
    wall = time.perf_counter() - t0
    by_id = {o.task_id: o for o in outcomes}
    assert [o.task_id for o in outcomes] == [t.task_id for t in tasks]
    assert by_id["t-ok"].status == by_id["t-ok2"].status == "ok"
    assert by_id["t-crash"].status == "failed" and "exit code 3" in by_id["t-crash"].reason
    assert "boom" in by_id["t-crash"].reason
    assert by_id["t-slow"].status == "failed" and by_id["t-slow"].reason.startswith("timeout")
    assert by_id["t-empty"].status == "failed" and "empty output" in by_id["t-empty"].reason
    assert by_id["t-silent"].status == "failed" and "empty output" in by_id["t-silent"].reason
    assert wall < 60, f"the timeout did not stop the slow task ({wall:.1f}s)"  # it sleeps 60 s; timeout_s 1.5
    assert _running_with(str(script)) == []  # the timed-out process was killed, not left running
    reports = read_reports(out)
    assert [r.task_id for r in reports] == ["t-ok", "t-ok2"]
    assert reports[0].sources["1"].arxiv_id == "2313.01042"
    assert (out / "raw" / "t-ok.md").is_file()
    assert [o.status for o in read_outcomes(out)] == [o.status for o in outcomes]


def test_task_json_has_the_task_prompt_and_no_exemplar(tmp_path: Path) -> None:
    script = tmp_path / "dump.py"
    script.write_text(  # the sandbox lets it write only its output: the task JSON goes into the report
        "import json, sys\n"
        "seen = open(sys.argv[1]).read()\n"
        "open(sys.argv[2], 'w').write('## Related Work\\n\\nSeen: ' + json.dumps(json.loads(seen)) + '\\n')\n"
    )
    outcomes = run_system(
        "dump", {"kind": "command", "cmd": [sys.executable, str(script)]}, [_task("t-1")], tmp_path / "run"
    )
    assert outcomes[0].status == "ok"  # no placeholders: the two paths were appended
    body = read_reports(tmp_path / "run")[0].body
    seen = json.loads(body.split("Seen: ", 1)[1].strip())
    assert seen["task_prompt"] == "Write the related work." and "SECRET" not in body


def test_a_missing_program_is_a_failed_outcome(tmp_path: Path) -> None:
    spec = {"kind": "command", "cmd": [str(tmp_path / "no-such-program")]}
    outcomes = run_system("missing", spec, [_task("t-1"), _task("t-2")], tmp_path / "run")
    assert [o.status for o in outcomes] == ["failed", "failed"]
    assert "cannot start" in outcomes[0].reason


def test_parallel_runs_keep_task_order(script: Path, tmp_path: Path) -> None:
    spec = {"kind": "command", "cmd": [sys.executable, str(script), "{task_json}", "{output}"], "max_parallel": 3}
    tasks = [_task(f"t-ok{i}") for i in range(5)]
    outcomes = run_system("par", spec, tasks, tmp_path / "run")
    assert [o.task_id for o in outcomes] == [t.task_id for t in tasks]
    assert all(o.status == "ok" for o in outcomes)


def test_shell_strings_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemError_, match="argv list"):
        run_system("s", {"kind": "command", "cmd": "python x.py {task_json}"}, [_task("t")], tmp_path)


def test_a_folder_output_is_written_in_the_sandbox_and_kept(tmp_path: Path) -> None:
    """`output_suffix: ""`: `{output}` is a folder the (sandboxed) program writes into; the folder is kept."""
    script = tmp_path / "folder_writer.py"
    script.write_text(
        "import sys, pathlib\n"
        "out = pathlib.Path(sys.argv[2])\n"
        "(out / 'report.md').write_text('## Related Work\\n\\nA folder report.\\n')\n"
    )
    spec = {"kind": "command", "cmd": [sys.executable, str(script), "{task_json}", "{output}"], "output_suffix": "",
            "format": "auto"}  # fmt: skip
    outcomes = run_system("folder_out", spec, [_task("t-1")], tmp_path / "run")
    assert (tmp_path / "run" / "raw" / "t-1" / "report.md").is_file(), outcomes[0]
    assert json.loads((tmp_path / "run" / "sandbox.json").read_text())["backend"] == "bwrap"


def test_placeholders_are_replaced_inside_arguments() -> None:
    argv = build_argv(["prog", "--in={task_json}", "{output}", "id:{task_id}"], Path("/a.json"), Path("/o.md"), "t1")
    assert argv == ["prog", "--in=/a.json", "/o.md", "id:t1"]


def test_the_example_script_runs(repo_root: Path, tmp_path: Path) -> None:
    spec = {
        "kind": "command",
        "cmd": [
            sys.executable,
            str(repo_root / "examples" / "byo_command_system.py"),
            "--task",
            "{task_json}",
            "--out",
            "{output}",
        ],
    }
    outcomes = run_system("byo", spec, [_task("demo-x")], tmp_path / "run")
    assert outcomes[0].status == "ok", outcomes[0].reason
    assert read_reports(tmp_path / "run")[0].body.startswith("## Related Works")


def test_stderr_in_a_failure_reason_never_carries_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """outcomes.jsonl is DVC-tracked; a program that echoes its key in an auth error must not leak it there."""
    secret = "zz-not-a-real-key-but-secret-4242"
    monkeypatch.setenv("MY_PROVIDER_API_KEY", secret)
    leaky = tmp_path / "leaky.py"
    leaky.write_text(
        "import os, sys\n"
        "sys.stderr.write('auth failed for ' + os.environ['MY_PROVIDER_API_KEY'] + '\\n')\n"
        "sys.exit(3)\n"
    )
    spec = {"kind": "command", "cmd": [sys.executable, str(leaky)], "pass_env": ["MY_PROVIDER_API_KEY"]}
    outcomes = run_system("leaky", spec, [_task("t-1")], tmp_path / "run")
    assert outcomes[0].status == "failed" and "auth failed for" in (outcomes[0].reason or "")
    assert secret not in (tmp_path / "run" / "outcomes.jsonl").read_text()


def test_a_command_agent_gets_its_benchmarks_task_json() -> None:
    from reportbench.systems.command import payload_for
    from reportbench.systems.common import task_payload
    from reportbench.types import Task

    task = Task(task_id="q1", title="What is X?", task_prompt="Answer: what is X? (Date: 2025-01-01)",
                published_date="2025-01-01", categories=["Science"])  # fmt: skip
    assert payload_for({})(task) == task_payload(task)
    assert payload_for({"benchmark": "deepscholar"})(task) == task_payload(task)  # no custom payload
    rqa = payload_for({"benchmark": "researchqa"})(task)
    assert rqa["prompt"] == task.task_prompt and rqa["query"] == "What is X?"
