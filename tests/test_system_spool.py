"""A system stage holds no system's parsed reports at once (issue 36: 1.4 GB at 5,000 tasks): each report is
spooled to the run folder as the kind reads it (reportbench.systems.spool), and reports.jsonl is exactly what
`write_run` writes for the parsed reports. Bounded by counts (live Report objects), not by timings; the peak RSS
figures are bench/scale.py's."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path
from typing import Any

import pytest

from reportbench.systems import SystemError_, run_system, write_run
from reportbench.types import Task

pytestmark = pytest.mark.core

N = 12
_SYLLABLES = ("ka", "lo", "mi", "ru", "ze", "ta", "vo", "ni", "pe", "su", "da", "fi")


def _topic(i: int) -> str:
    """A made-up word of task i's own (so each report matches its own question and no other)."""
    return "".join(_SYLLABLES[(i * 7 + k * 5) % len(_SYLLABLES)] for k in range(4)) + f"x{i}"


def _tasks() -> list[Task]:
    return [Task(task_id=f"t{i}", title=f"The {_topic(i)} effect",
                 task_prompt=f"How does {_topic(i)} change {_topic(i)}-driven growth?") for i in range(N)]


def _folder(root: Path, shift: int = 0, extra: str = "") -> Path:
    folder = root / "reports"
    folder.mkdir()
    for i in range(N):
        j = (i - shift) % N
        body = (f"# Answer\n\nThe {_topic(j)} effect: {_topic(j)} changes {_topic(j)}-driven growth [1].{extra}\n\n"
                f"## References\n\n[1] Author. On {_topic(j)}. https://example.org/{j}\n")
        if i == 3:
            body = "I'm sorry, but I can't help with that request.\n"  # a refusal: flagged on its outcome
        (folder / f"t{i}.md").write_text(body, encoding="utf-8")
    return folder


def _parsed_reports(folder: Path) -> list[Any]:
    """The reports as the folder kind parses them, loaded on their own (not through a stage)."""
    from reportbench.reports.base import confined_to
    from reportbench.systems.common import isolated_load

    with confined_to(folder):
        return [isolated_load(folder / f"t{i}.md", fmt="auto", task_id=f"t{i}", system="s")[0] for i in range(N)]


def test_the_stage_check_runs_with_no_parsed_report_alive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reportbench.systems import check, folder

    alive: list[weakref.ref[Any]] = []  # a Report is unhashable: no WeakSet
    real_load = folder.isolated_load

    def tracked(*args: Any, **kwargs: Any) -> Any:
        report, outcome = real_load(*args, **kwargs)
        if report is not None:
            alive.append(weakref.ref(report))
        return report, outcome

    at_check: list[int] = []
    real_content_checks = check.content_checks

    def counting(*args: Any, **kwargs: Any) -> Any:
        gc.collect()
        at_check.append(sum(r() is not None for r in alive))
        return real_content_checks(*args, **kwargs)

    monkeypatch.setattr(folder, "isolated_load", tracked)
    monkeypatch.setattr(check, "content_checks", counting)
    src = _folder(tmp_path)
    out = tmp_path / "out"
    outcomes = run_system("s", {"kind": "folder", "path": str(src)}, _tasks(), out)
    assert len(alive) == N and at_check == [0]  # none of the N reports read is held by the check (before: all N)
    assert [o.status for o in outcomes] == ["ok"] * N
    assert "refusal" in outcomes[3].flags and not outcomes[0].flags
    summary = json.loads((out / "check.json").read_text(encoding="utf-8"))
    assert summary["reports"] == N and not summary["errors"] and summary["shift"]["checked"] == N - 1
    assert summary["flagged"].get("refusal") == ["t3"]
    # reports.jsonl: the bytes write_run writes for the parsed reports; no spool left in the run folder
    again = tmp_path / "again"
    again.mkdir()
    write_run(again, _parsed_reports(src), [])
    assert (out / "reports.jsonl").read_bytes() == (again / "reports.jsonl").read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["check.json", "mapping.jsonl", "outcomes.jsonl", "reports.jsonl"]


def test_a_shifted_run_stops_with_no_reports_file_and_no_spool(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(SystemError_, match="shifted mapping"):
        run_system("s", {"kind": "folder", "path": str(_folder(tmp_path, shift=1))}, _tasks(), out)
    assert sorted(p.name for p in out.iterdir()) == ["check.json", "mapping.jsonl"]


def test_a_spooled_report_holding_a_secret_is_written_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-spooltest-" + "Q7x" * 12
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    src = _folder(tmp_path, extra=f" The key was {secret}.")
    out = tmp_path / "out"
    run_system("s", {"kind": "folder", "path": str(src)}, _tasks(), out)
    written = (out / "reports.jsonl").read_bytes()
    assert secret.encode() not in written and b"spooltest" not in written
    again = tmp_path / "again"
    again.mkdir()
    write_run(again, _parsed_reports(src), [])
    assert written == (again / "reports.jsonl").read_bytes()


def test_a_kind_collecting_on_threads_holds_no_parsed_report_at_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command, endpoint and agent kinds collect through `RunCollector`, from worker threads: each report
    is spooled as it is added, so the kind never holds all N parsed reports (before: it returned them all, and
    they were spooled only after)."""
    from concurrent.futures import ThreadPoolExecutor

    from reportbench.systems import SYSTEM_KINDS
    from reportbench.systems.common import RunCollector
    from reportbench.systems.folder import isolated_load

    src = _folder(tmp_path)
    alive: list[weakref.ref[Any]] = []

    def threaded_kind(name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path) -> Any:
        run = RunCollector([t.task_id for t in tasks])

        def job(task: Task) -> None:
            report, outcome = isolated_load(src / f"{task.task_id}.md", fmt="auto", task_id=task.task_id, system=name)
            if report is not None:
                alive.append(weakref.ref(report))
            run.add(report, outcome)

        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(job, reversed(tasks)))  # finished out of task order
        result = run.result()
        gc.collect()
        at_return.append(sum(r() is not None for r in alive))
        return result

    at_return: list[int] = []
    monkeypatch.setitem(SYSTEM_KINDS, "threaded_test_kind", threaded_kind)
    out = tmp_path / "out"
    from reportbench.reports.base import confined_to

    with confined_to(src):
        outcomes = run_system("s", {"kind": "threaded_test_kind"}, _tasks(), out)
    assert len(alive) == N and at_return == [0]  # none held when the kind returns (before: all N)
    assert [o.task_id for o in outcomes] == [f"t{i}" for i in range(N)]
    again = tmp_path / "again"
    again.mkdir()
    write_run(again, _parsed_reports(src), [])
    assert (out / "reports.jsonl").read_bytes() == (again / "reports.jsonl").read_bytes()  # task order kept
