"""Regression tests for issue 15 defects 2 and 3: one malformed report never sinks a system stage, and garbage
is never scored as a report. (The full bad-input corpus is tests/test_bad_inputs.py; these are the issue's
exact reproductions, each named after what it guards.)"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from reportbench.systems import (
    SYSTEM_KINDS,
    SystemError_,
    TaskOutcome,
    read_outcomes,
    read_reports,
    register_kind,
    run_system,
)
from reportbench.types import Report, Task

pytestmark = pytest.mark.core

TASKS = [Task(task_id=f"t{i}", title=f"T{i}", task_prompt="p") for i in (1, 2, 3)]
LATEX = "\\section{Related Work}\nA~\\cite{a}. B~\\citep{b}.\n\\subsection{X}\n"
GOOD = "## Related Work\n\nDense retrieval beats BM25 [1].\n\n## References\n\n[1] DPR. arXiv:2004.04906\n"


def _folder(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    folder = tmp_path / "reports"
    folder.mkdir()
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return folder


def _run(folder: Path, out: Path) -> dict[str, TaskOutcome]:
    run_system("sys", {"kind": "folder", "path": str(folder), "allow_missing": True}, TASKS, out)
    return {o.task_id or Path(o.path or "").name: o for o in read_outcomes(out)}


def test_responses_json_with_int_content_is_one_parse_error(tmp_path: Path) -> None:
    """Defect 2: `"content": 5` raised TypeError and the folder stage lost every good report."""
    folder = _folder(
        tmp_path,
        {
            "t1.md": GOOD,
            "t2.json": '{"object": "response", "output": [{"type": "message", "content": 5}]}',
            "t3.md": GOOD,
        },
    )
    outcomes = _run(folder, tmp_path / "out")
    assert [outcomes[t].status for t in ("t1", "t2", "t3")] == ["ok", "parse_error", "ok"]
    assert "t2.json: line 1: output[0].content: expected a valid list, got number (5)" in outcomes["t2"].reason
    assert [r.task_id for r in read_reports(tmp_path / "out")] == ["t1", "t3"]


def test_json_nested_100000_levels_is_one_parse_error(tmp_path: Path) -> None:
    """Defect 2: JSON nested 100,000 levels deep raised RecursionError."""
    folder = _folder(tmp_path, {"t1.md": GOOD, "t2.json": "[" * 100_000 + "]" * 100_000})
    outcomes = _run(folder, tmp_path / "out")
    assert outcomes["t1"].status == "ok" and outcomes["t2"].status == "parse_error"
    assert "nested deeper than 64 levels" in outcomes["t2"].reason


def test_a_kind_that_raises_is_rerun_task_by_task(tmp_path: Path) -> None:
    """Every system kind gets isolation: a kind that crashes on one task loses only that task."""

    @register_kind("crashy_test_kind")
    def crashy(name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path) -> tuple[list[Report], list]:
        reports, outcomes = [], []
        for t in tasks:
            if t.task_id == "t2":
                raise TypeError("'int' object is not iterable")
            report = Report(report_id=f"{name}/{t.task_id}", task_id=t.task_id, system=name, format="x", body="A.")
            reports.append(report)
            outcomes.append(TaskOutcome(task_id=t.task_id, status="ok", report_id=report.report_id))
        return reports, outcomes

    try:
        outcomes = run_system("sys", {"kind": "crashy_test_kind"}, TASKS, tmp_path / "out")
    finally:
        SYSTEM_KINDS.pop("crashy_test_kind")
    assert [o.status for o in outcomes] == ["ok", "parse_error", "ok"]
    assert outcomes[1].reason == "internal: TypeError: 'int' object is not iterable"


@pytest.mark.parametrize(
    ("files", "status", "message"),
    [
        ({"t1.md": bytes(range(256)) * 8}, "parse_error", "binary data"),
        ({"t1.md": LATEX}, "parse_error", "LaTeX source"),
        ({"t1.md": "<!DOCTYPE html><html><body><p>x</p></body></html>"}, "parse_error", "an HTML document"),
        ({"t1.json": "[1, 2]"}, "parse_error", "JSON array where an object with 'output' was expected"),
        ({"t1.json": '{"output": "x",'}, "parse_error", "invalid JSON"),
        ({"t1/.keep": ""}, "missing", "the folder is empty"),
        ({"t1.md": ""}, "missing", "empty report"),
        ({"t1/intro.md": GOOD, "t1/paper.csv": b"\x00\x01\x02" * 100}, "parse_error", "paper.csv: binary data"),
        ({"t1/intro.md": GOOD, "t1/paper.csv": "a,b\n1,2\n"}, "parse_error", "paper.csv: line 1: columns"),
    ],
    ids=["random-bytes", "latex", "html", "json-array", "invalid-json", "empty-folder", "empty-file",
         "binary-paper-csv", "wrong-column-paper-csv"],
)
def test_garbage_is_never_an_ok_report(
    files: dict[str, str | bytes], status: str, message: str, tmp_path: Path
) -> None:
    """Defect 3: each kind of garbage gets its own diagnosis, and none is scored as a report."""
    outcomes = _run(_folder(tmp_path, files), tmp_path / "out")
    assert outcomes["t1"].status == status and message in (outcomes["t1"].reason or ""), outcomes["t1"]
    assert read_reports(tmp_path / "out") == []


def test_symlink_out_of_the_folder_is_refused_and_listed(tmp_path: Path) -> None:
    """Defect 3: a symlink to /etc/passwd was followed and scored as an ok report."""
    folder = _folder(tmp_path, {"t2.md": GOOD})
    os.symlink("/etc/passwd", folder / "t1.md")
    outcomes = _run(folder, tmp_path / "out")
    assert outcomes["t1"].status == "missing" and outcomes["t2"].status == "ok"
    assert outcomes["t1.md"].status == "unmapped" and "(the folder being read): refused" in outcomes["t1.md"].reason
    assert all("root:" not in r.body for r in read_reports(tmp_path / "out"))


def test_every_unmapped_file_is_listed_in_the_outcomes(tmp_path: Path) -> None:
    """Defect 3: a stray notes.txt was dropped without a message. With every task present the unmapped files
    are outcomes rows; next to a missing task they stop the run (issue 21: reports land on the right task)."""
    files = {"t1.md": GOOD, "t2.md": GOOD, "t3.md": GOOD, "notes.txt": "todo", "9.md": GOOD}
    outcomes = _run(_folder(tmp_path, files), tmp_path / "out")
    unmapped = {k: o.reason for k, o in outcomes.items() if o.status == "unmapped"}
    assert set(unmapped) == {"9.md", "notes.txt"}
    assert "a bare number is not a task id here" in unmapped["9.md"]
    (tmp_path / "b").mkdir()
    partial = _folder(tmp_path / "b", {"t1.md": GOOD, "t2.md": GOOD, "notes.txt": "todo", "9.md": GOOD})
    with pytest.raises(SystemError_, match=r"9\.md .*notes\.txt .*1 task\(s\) have no report: t3"):
        _run(partial, tmp_path / "o2")


def test_a_protocol_kind_gets_isolation_too(tmp_path: Path) -> None:
    """ResearcherBench's response-file kind parses responses without its own try: an empty response raised
    and lost the file's other responses; now it is that task's `missing`, the others stay ok."""
    import json

    from reportbench.protocols.researcherbench import responses  # noqa: F401  (registers the kind)

    tasks = [Task(task_id=f"q{i}", title=f"Q{i}", task_prompt="p") for i in (1, 2, 3)]
    path = tmp_path / "System.json"
    path.write_text(
        json.dumps(
            [
                {"id": 1, "question": "a", "response": GOOD},
                {"id": 2, "question": "b", "response": "## References\n\n[1] Only a list. https://example.org/x\n"},
                {"id": 3, "question": "c", "response": GOOD},
            ]
        ),
        encoding="utf-8",
    )
    outcomes = run_system("sys", {"kind": "researcherbench_responses", "path": str(path)}, tasks, tmp_path / "out")
    assert [o.status for o in outcomes] == ["ok", "missing", "ok"]
    assert "empty report: no body text" in (outcomes[1].reason or "")


def test_a_command_output_linking_out_of_the_run_is_refused(tmp_path: Path) -> None:
    """A produced output is confined too: a command that writes a symlink to /etc/passwd gets a parse_error."""
    import sys

    script = tmp_path / "agent.py"
    script.write_text("import os, sys\nos.symlink('/etc/passwd', sys.argv[2])\n", encoding="utf-8")
    spec = {"kind": "command", "cmd": [sys.executable, str(script), "{task_json}", "{output}"]}
    outcomes = run_system("sys", spec, TASKS[:1], tmp_path / "out")
    assert outcomes[0].status == "parse_error" and "(the folder being read): refused" in (outcomes[0].reason or "")
    assert read_reports(tmp_path / "out") == []
