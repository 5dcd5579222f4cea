"""Smaller hostile-input defects of issue 26 (§8): environment, hard links, IPv6 URLs, late NUL bytes, FIFOs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from reportbench.reports.base import ReportParseError, confined_to, load_report
from reportbench.systems.command import command_env

pytestmark = pytest.mark.core


def test_command_system_gets_only_the_environment_its_config_names() -> None:
    environ = {"PATH": "/usr/bin", "HOME": "/root", "OPENAI_API_KEY": "sk-judge", "MY_AGENT_KEY": "a", "OTHER": "x"}
    env = command_env({"pass_env": ["MY_AGENT_KEY"], "env": {"MODE": "eval"}}, environ)
    assert env == {"PATH": "/usr/bin", "HOME": "/root", "MY_AGENT_KEY": "a", "MODE": "eval"}
    assert "OPENAI_API_KEY" not in command_env({}, environ)


@pytest.mark.integration
def test_command_system_process_does_not_see_the_judges_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reportbench.systems.command import run_command_system
    from reportbench.types import Task

    script = tmp_path / "agent.py"
    script.write_text(
        "import os, sys\n"
        "open(sys.argv[2], 'w').write('## Work\\n\\nKey seen: ' + str('OPENAI_API_KEY' in os.environ) + '.\\n')\n"
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge-secret")
    spec = {"kind": "command", "cmd": [sys.executable, str(script), "{task_json}", "{output}"]}
    task = Task(task_id="t1", title="t", task_prompt="q")
    reports, outcomes = run_command_system("agent", spec, [task], tmp_path / "o")
    assert [o.status for o in outcomes] == ["ok"], outcomes
    assert "Key seen: False." in reports[0].body


def test_hard_link_to_a_file_outside_the_systems_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("## Secret\n\nThe private notes of another user.\n")
    folder = tmp_path / "systems"
    folder.mkdir()
    try:
        os.link(outside, folder / "t1.md")
    except OSError:
        pytest.skip("hard links not supported here")
    with confined_to(folder), pytest.raises(ReportParseError, match="hard link"):
        load_report(folder / "t1.md", task_id="t1", system="s")


def test_ipv6_literal_reference_url_is_kept() -> None:
    from reportbench.reports.references import sources_from_section

    sources, warnings = sources_from_section("[1] A page on a v6 host. http://[2001:db8::1]:8080/paper.html\n")
    assert sources["1"].url == "http://[2001:db8::1]:8080/paper.html", (sources, warnings)


def test_nul_bytes_after_the_first_8_kb_are_detected(tmp_path: Path) -> None:
    path = tmp_path / "t1.md"
    path.write_bytes(b"## Work\n\n" + b"Plain text. " * 1_000 + b"\x00\x00binary\x00" + b"More text.\n")
    with pytest.raises(ReportParseError, match="NUL"):
        load_report(path, task_id="t1", system="s")


def test_fifo_is_reported_as_a_fifo(tmp_path: Path) -> None:
    from reportbench.systems.folder import run_folder_system
    from reportbench.types import Task

    folder = tmp_path / "systems"
    folder.mkdir()
    try:
        os.mkfifo(folder / "t1.md")
    except (AttributeError, OSError):
        pytest.skip("no FIFOs here")
    task = Task(task_id="t1", title="t", task_prompt="q")
    _, outcomes = run_folder_system("s", {"path": str(folder)}, [task], tmp_path / "o")
    assert outcomes[0].status != "ok"
    assert "FIFO" in (outcomes[0].reason or ""), outcomes


def _judgment() -> object:
    from reportbench.judges.base import Judgment

    return Judgment(task="support", item_id="i1", input_ids={}, judge_id="offline", model="offline", status="ok",
                    value=1.0)


def test_full_disk_while_writing_judgments_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    import polars as pl

    from reportbench.judges.errors import FatalError
    from reportbench.judges.runner import write_judgments

    def full_disk(self: pl.DataFrame, file: object, *args: object, **kwargs: object) -> None:
        Path(str(file)).write_bytes(b"PAR1\x15\x04")  # what a full disk leaves: a head, no footer
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", full_disk)
    target = tmp_path / "j" / "support.parquet"
    with pytest.raises(FatalError, match=r"cannot write .*support\.parquet: No space left on device"):
        write_judgments(target, [_judgment()])  # type: ignore[list-item]
    assert not target.exists() and not list(target.parent.iterdir())


def test_truncated_judgments_file_is_named_not_a_thrift_traceback(tmp_path: Path) -> None:
    from reportbench.judges.errors import FatalError
    from reportbench.judges.runner import read_judgments, write_judgments

    path = write_judgments(tmp_path / "support.parquet", [_judgment()])  # type: ignore[list-item]
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(FatalError, match=r"support\.parquet is damaged or truncated \(was the disk full"):
        read_judgments(path)


@pytest.mark.parametrize("n", [1, 7, 10])
def test_stub_server_answers_nugget_assignment_with_the_asked_label_count(n: int) -> None:
    """`reportbench stub-server` can serve a DeepScholar run: nugget_assign answers parse (one label a nugget)."""
    from reportbench.judges.tasks.nugget_assign import NuggetAssignInput, NuggetAssignOutput, parse
    from reportbench.prompts import load_prompt
    from reportbench.stub_server import default_responder

    inputs = NuggetAssignInput(query="q", passage="p", nuggets=[f"nugget {i}" for i in range(n)])
    messages = load_prompt("deepscholar/nugget_assign.yaml", "prompts").render(**inputs.prompt_values())
    fmt = {"type": "json_schema", "json_schema": {"name": "o", "schema": NuggetAssignOutput.model_json_schema()}}
    assert len(parse(default_responder(messages, fmt), inputs).labels) == n
