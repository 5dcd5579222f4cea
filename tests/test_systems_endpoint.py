"""`kind: endpoint` against the loopback stub: the exact task prompt goes out, the answer is parsed as a
markdown report, injected faults and empty answers become failed outcomes, and reruns come from the cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reportbench.stub_server import stub_server_thread
from reportbench.systems import read_reports, run_system
from reportbench.types import Task

pytestmark = pytest.mark.integration

REPORT = (
    "## Related Works\n\nShallow pools undercount relevant documents [1]. Model assessors are lenient [2].\n\n"
    "## References\n\n[1] Depth-k Pooling Revisited. arXiv:2313.01042\n"
    "[2] Large Language Models as Relevance Assessors. arXiv:2413.01188\n"
)


def _tasks(n: int = 3) -> list[Task]:
    return [
        Task(
            task_id=f"t{i}",
            title=f"Paper {i}",
            abstract=f"Abstract {i}.",
            published_date="2025-03-18T10:04:00+00:00",
            task_prompt=f"Your task is to write a Related Works section ... Here is the paper abstract:\nAbstract {i}.",
            exemplar="SECRET exemplar",
        )
        for i in range(n)
    ]


def _spec(base_url: str, tmp_path: Path, **runtime: Any) -> dict[str, Any]:
    return {
        "kind": "endpoint",
        "path": "src/reportbench/systems/endpoint.py",
        "model": "openai/stub-endpoint",
        "api_base": base_url,
        "runtime": {
            "cache_path": str(tmp_path / "cache.sqlite"),
            "backoff_base_s": 0.01,
            "backoff_max_s": 0.05,
            **runtime,
        },
    }


def test_exact_task_prompt_in_report_out_and_cached_rerun(tmp_path: Path) -> None:
    seen: list[list[dict[str, Any]]] = []

    def responder(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
        seen.append(messages)
        return REPORT

    tasks = _tasks()
    with stub_server_thread(responder=responder) as stub:
        outcomes = run_system("ep", _spec(stub.base_url, tmp_path), tasks, tmp_path / "run")
        assert [o.status for o in outcomes] == ["ok"] * 3
        assert stub.counts["ok"] == 3
        assert sorted(m[0]["content"] for m in seen) == sorted(t.task_prompt for t in tasks)
        assert all(len(m) == 1 and m[0]["role"] == "user" for m in seen), "exactly the task prompt, nothing else"
        assert not any("SECRET" in m[0]["content"] for m in seen)

        first = (tmp_path / "run" / "reports.jsonl").read_text()
        run_system("ep", _spec(stub.base_url, tmp_path), tasks, tmp_path / "run")
        assert stub.counts["requests"] == 3, "the rerun was answered from the response cache"
        assert (tmp_path / "run" / "reports.jsonl").read_text() == first
    report = read_reports(tmp_path / "run")[0]
    assert report.format == "markdown" and report.sources["2"].arxiv_id == "2413.01188"
    assert (tmp_path / "run" / "raw" / "t0.md").read_text() == REPORT


def test_injected_faults_become_failed_outcomes_and_the_run_goes_on(tmp_path: Path) -> None:
    with stub_server_thread(faults={"500": 1.0}) as stub:
        outcomes = run_system("ep", _spec(stub.base_url, tmp_path, max_retries=1), _tasks(), tmp_path / "run")
        assert stub.counts["500"] == 6  # 3 tasks x (1 try + 1 retry)
    assert [o.status for o in outcomes] == ["failed"] * 3
    assert all("server" in (o.reason or "") and "2 attempt" in (o.reason or "") for o in outcomes)
    assert (tmp_path / "run" / "reports.jsonl").read_text() == ""


def test_timeouts_and_empty_answers_are_recorded_per_task(tmp_path: Path) -> None:
    def responder(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
        return "" if "Abstract 1." in messages[-1]["content"] else REPORT

    with stub_server_thread(responder=responder, faults={"timeout": 0.0}) as stub:
        ok_run = run_system("ep", _spec(stub.base_url, tmp_path), _tasks(), tmp_path / "run")
    assert [o.status for o in ok_run] == ["ok", "failed", "ok"]
    assert ok_run[1].reason and "empty output" in ok_run[1].reason

    with stub_server_thread(faults={"timeout": 1.0}, timeout_sleep_s=3.0) as stub:
        slow = run_system(
            "ep2", _spec(stub.base_url, tmp_path / "b", timeout_s=0.5, max_retries=0), _tasks(2), tmp_path / "b"
        )
    assert [o.status for o in slow] == ["failed", "failed"]
    assert all("timeout" in (o.reason or "") for o in slow)


def test_dropped_connections_fail_and_garbage_answers_are_kept_verbatim(tmp_path: Path) -> None:
    with stub_server_thread(faults={"truncated": 1.0}) as stub:
        cut = run_system("ep", _spec(stub.base_url, tmp_path / "a", max_retries=0), _tasks(1), tmp_path / "a")
    assert cut[0].status == "failed" and "attempt" in (cut[0].reason or "")
    # "malformed" sends '{"oops": ' as the message content: for an endpoint that is (bad) prose, which is
    # saved and scored as written, never repaired or dropped
    with stub_server_thread(faults={"malformed": 1.0}) as stub:
        bad = run_system("ep", _spec(stub.base_url, tmp_path / "b", max_retries=0), _tasks(1), tmp_path / "b")
    assert bad[0].status == "ok"
    assert (tmp_path / "b" / "raw" / "t0.md").read_text() == '{"oops": \n'
    assert "no reference list found" in read_reports(tmp_path / "b")[0].warnings
