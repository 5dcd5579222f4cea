"""The agent stage runner with `search_llm` (a real subprocess adapter) against the loopback stub LLM and stub search
servers: per-task records, budget stop, search cache, resume after kill -9, key redaction (docs/agents.md)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from reportbench.agents.protocol import LLM_TOKEN_ENV, SEARCH_TOKEN_ENV, AgentSystemConfig, Budget, TaskRecord
from reportbench.agents.proxy import TaskLedger
from reportbench.agents.runner import adapter_env
from reportbench.agents.search.stub import stub_search_thread
from reportbench.stub_server import stub_server_thread
from reportbench.systems import SystemError_, run_system
from reportbench.types import Task

pytestmark = pytest.mark.integration

_SOURCE = re.compile(r"^\[(\d+)\] (.*?) \(https?://\S+\)\n(.*)$", re.M)


def agent_responder(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
    """A deterministic 'report': one sentence per source, reusing its snippet, cited [n] (self-authored)."""
    user = next((str(m.get("content", "")) for m in reversed(messages) if m.get("role") == "user"), "")
    lines = [f"{snippet.strip()[:200]} [{n}]" for n, _title, snippet in _SOURCE.findall(user)]
    return "## Related work\n\n" + ("\n\n".join(lines) or "No sources were found.") + "\n"


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory: pytest.TempPathFactory, repo_root: Path) -> Path:
    """The DeepScholar demo release (3 synthetic tasks), built once."""
    from reportbench import pipeline
    from reportbench.config import composed_params

    out = tmp_path_factory.mktemp("release") / "deepscholar"
    params = composed_params(["benchmarks=[deepscholar]"], conf_dir=repo_root / "conf")
    pipeline.build_release(params, "deepscholar", out)
    return out


@pytest.fixture()
def tasks(release_dir: Path) -> list[Task]:
    from reportbench.release.format import read_release

    return read_release(release_dir).tasks


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "agents-home"
    monkeypatch.setenv("REPORTBENCH_AGENTS_HOME", str(path))
    return path


def spec_for(llm: Any, search: Any, release_dir: Path, **over: Any) -> dict[str, Any]:
    spec = {
        "kind": "search_llm",
        "model": "openai/stub-model",
        "api_base": llm.base_url,
        "price": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
        "search": {"backend": "tavily", "api_base": search.tavily_url, "max_results": 3},
        "budget": {"llm_calls": 2, "search_calls": 2, "wall_s": 60},
        "concurrency": 2,
        "release_dir": str(release_dir),
    }
    spec.update(over)
    return spec


def records(out: Path) -> dict[str, TaskRecord]:
    return {p.stem: TaskRecord.model_validate_json(p.read_text()) for p in sorted((out / "agent").glob("*.json"))}


def test_search_llm_runs_every_task_and_records_what_it_used(
    release_dir: Path, tasks: list[Task], home: Path, tmp_path: Path
) -> None:
    with stub_server_thread(responder=agent_responder) as llm, stub_search_thread() as search:
        outcomes = run_system("sl", spec_for(llm, search, release_dir), tasks, tmp_path / "run")
        assert llm.counts["ok"] == 3 and search.counts["tavily"] == 3
    assert [o.status for o in outcomes] == ["ok"] * 3
    recs = records(tmp_path / "run")
    assert sorted(recs) == sorted(t.task_id for t in tasks)
    for task in tasks:
        rec = recs[task.task_id]
        assert rec.outcome == "ok" and rec.kind == "search_llm" and rec.search_backend == "tavily"
        assert rec.agent_version.startswith("reportbench-search_llm")
        assert rec.queries == [" ".join(task.title.split())]  # the title is the query
        u = rec.usage
        assert (u.llm_calls, u.search_calls, u.search_requests) == (1, 1, 1)
        assert u.prompt_tokens > 0 and u.completion_tokens > 0
        assert u.usd == pytest.approx((u.prompt_tokens * 1.0 + u.completion_tokens * 2.0) / 1e6)
        assert u.wall_s > 0
    # the report is parsed like any third-party report: [n] markers resolve through the appended list
    reports = [json.loads(line) for line in (tmp_path / "run" / "reports.jsonl").read_text().splitlines()]
    assert all(len(r["sources"]) == 3 for r in reports)
    assert all(s["url"].startswith("https://stub-search.example/") for r in reports for s in r["sources"].values())
    usage = json.loads((tmp_path / "run" / "agent_usage.json").read_text())
    assert usage["outcomes"] == {"ok": 3} and usage["usage"]["llm_calls"] == 3


def test_budget_stop_is_recorded_and_other_tasks_are_unaffected(
    release_dir: Path, tasks: list[Task], home: Path, tmp_path: Path
) -> None:
    """Task 2's answer overshoots the token budget (over_budget); with search_calls 0 every search is refused
    by the proxy before any LLM call (402), and the run still records every task."""
    target = tasks[1]
    # the stub search titles its hits "Notes on <the query's first words>": only task 2's prompt carries these
    rules = [
        (re.escape("Notes on " + " ".join(re.findall(r"[A-Za-z0-9][A-Za-z0-9-]*", target.title)[:3])), "x " * 3000)
    ]
    with stub_server_thread(responder=agent_responder, rules=rules) as llm, stub_search_thread() as search:
        spec = spec_for(llm, search, release_dir, budget={"tokens": 1400, "wall_s": 60})
        outcomes = {o.task_id: o for o in run_system("tok", spec, tasks, tmp_path / "tok")}
        recs = records(tmp_path / "tok")
        assert recs[target.task_id].outcome == "over_budget"
        assert outcomes[target.task_id].status == "failed"
        assert outcomes[target.task_id].reason.startswith("over_budget: tokens:")
        others = [t.task_id for t in tasks if t is not target]
        assert all(outcomes[t].status == "ok" and recs[t].outcome == "ok" for t in others)

        before = llm.counts["requests"]
        spec = spec_for(llm, search, release_dir, budget={"search_calls": 0, "wall_s": 60})
        outcomes = {o.task_id: o for o in run_system("nosearch", spec, tasks, tmp_path / "nosearch")}
        assert llm.counts["requests"] == before  # the adapter stopped at the refused search
    assert all(o.status == "failed" and "over_budget: search_calls: 0 of 0" in o.reason for o in outcomes.values())
    assert all(r.usage.search_refused == 1 for r in records(tmp_path / "nosearch").values())


def test_search_cache_second_run_makes_no_search_request(
    release_dir: Path, tasks: list[Task], home: Path, tmp_path: Path
) -> None:
    import shutil

    with stub_server_thread(responder=agent_responder) as llm, stub_search_thread() as search:
        run_system("c", spec_for(llm, search, release_dir), tasks, tmp_path / "first")
        assert search.counts["tavily"] == 3
        shutil.rmtree(home / "runs")  # forget the finished tasks, keep the search cache: the agents run again
        run_system("c", spec_for(llm, search, release_dir), tasks, tmp_path / "second")
        assert search.counts["tavily"] == 3  # 0 new requests
        assert llm.counts["ok"] == 6
    second = records(tmp_path / "second")
    assert all(r.usage.search_calls == 1 and r.usage.search_requests == 0 for r in second.values())


_CHILD = """
import json, sys
from pathlib import Path
from reportbench.release.format import read_release
from reportbench.systems import SystemError_, run_system
spec, out = json.loads(sys.argv[1]), Path(sys.argv[2])
run_system("resume", spec, read_release(spec["release_dir"]).tasks, out)
"""


def test_resume_after_kill_reruns_only_unfinished_tasks(
    release_dir: Path, tasks: list[Task], home: Path, tmp_path: Path
) -> None:
    with stub_server_thread(responder=agent_responder, latency_ms=1500) as llm, stub_search_thread() as search:
        spec = spec_for(llm, search, release_dir, concurrency=1)
        proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, json.dumps(spec), str(tmp_path / "killed")],
            env={**os.environ},
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 90
        done: list[Path] = []
        while time.monotonic() < deadline and not done:
            done = list((home / "runs").glob("*/*.json")) if (home / "runs").is_dir() else []
            time.sleep(0.05)
        assert done, "no task finished before the deadline"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        finished = {p: p.read_bytes() for p in (home / "runs").glob("*/*.json")}
        paid_before = llm.counts["requests"]
        assert 1 <= len(finished) < len(tasks)
        outcomes = run_system("resume", spec, tasks, tmp_path / "resumed")
        paid_total = llm.counts["requests"]
    assert [o.status for o in outcomes] == ["ok"] * 3
    assert all(p.read_bytes() == data for p, data in finished.items())  # finished tasks were not rerun
    # every task paid once, plus at most the calls that were in flight when the run was killed (concurrency 1)
    assert paid_before - len(finished) <= 1
    assert paid_total <= len(tasks) + 1


def test_keys_never_reach_the_adapter_or_its_logs(
    release_dir: Path, tasks: list[Task], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-" + "rbtest" + "9" * 12 + "Zq4"  # built at run time: no key-shaped literal in the repository
    judge_key = "sk-" + "judge" + "7" * 14 + "Xw2"
    monkeypatch.setenv("AGENT_PROVIDER_KEY", secret)
    monkeypatch.setenv("OPENAI_API_KEY", judge_key)
    cfg = AgentSystemConfig(kind="search_llm", model="m", api_key_env="AGENT_PROVIDER_KEY")
    env = adapter_env(cfg, "tok")
    assert secret not in env.values() and judge_key not in env.values()
    assert env[LLM_TOKEN_ENV] == env[SEARCH_TOKEN_ENV] == "tok"
    with (
        stub_server_thread(responder=agent_responder, require_api_key="another-key") as llm,
        stub_search_thread() as search,
    ):
        spec = spec_for(llm, search, release_dir, api_key_env="AGENT_PROVIDER_KEY")
        with pytest.raises(SystemError_, match="HTTP 401"):  # a refused key stops the run: no retry fixes it
            run_system("leaky", spec, tasks, tmp_path / "leaky")
        assert 1 <= llm.counts["401"] <= 2  # the stub echoed our key in each 401 body; task 3 never started
    logs = list(home.rglob("*.log"))
    assert logs and all("Incorrect API key provided" in p.read_text() for p in logs)
    for root in (tmp_path / "leaky", home):
        for path in root.rglob("*"):
            if path.is_file() and path.suffix != ".sqlite":
                text = path.read_text(errors="replace")
                assert secret[4:20] not in text and judge_key[4:20] not in text, path


# A stand-in for an installed venv's python (the default home's layout): it answers every task with one report.
_FAKE_VENV_PYTHON = """#!/bin/sh
cat > /dev/null
echo '{"report_markdown": "Agents verify citations [1].", "references": [{"n": 1, "url": "https://example.org/a"}]}'
"""


def _user_clone(root: Path, monkeypatch: pytest.MonkeyPatch, *, executable: bool = True) -> Path:
    """A DVC repository as a user has it after `reportbench agents install storm`: no REPORTBENCH_AGENTS_HOME, the
    venv in <repo>/.reportbench/agents/storm, the working directory the repository root (as DVC runs a stage)."""
    monkeypatch.delenv("REPORTBENCH_AGENTS_HOME", raising=False)
    (root / ".dvc").mkdir(parents=True)
    kind_home = root / ".reportbench" / "agents" / "storm"
    python = kind_home / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(_FAKE_VENV_PYTHON)
    python.chmod(0o755 if executable else 0o644)
    (kind_home / "lock.txt").write_text("knowledge-storm==1.1.1\n")
    monkeypatch.chdir(root)
    return kind_home


def test_a_venv_kind_runs_from_the_default_home(
    release_dir: Path, tasks: list[Task], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32: with the default (relative) home every task of a venv kind failed with FileNotFoundError, the
    adapter being started from a temporary folder."""
    kind_home = _user_clone(tmp_path / "clone", monkeypatch)
    spec = {"kind": "storm", "model": "openai/m", "api_base": "http://127.0.0.1:9/v1", "release_dir": str(release_dir)}
    outcomes = run_system("my_storm", spec, tasks, tmp_path / "run")
    assert [(o.status, o.reason) for o in outcomes] == [("ok", None)] * len(tasks)
    assert all(r.outcome == "ok" for r in records(tmp_path / "run").values())
    assert len(list((kind_home.parent / "runs").glob("*/*.json"))) == len(tasks)  # resumable, in the same home


def test_an_adapter_that_cannot_start_is_a_recorded_failure(
    release_dir: Path, tasks: list[Task], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _user_clone(tmp_path / "clone", monkeypatch, executable=False)
    spec = {"kind": "storm", "model": "openai/m", "api_base": "http://127.0.0.1:9/v1", "release_dir": str(release_dir)}
    outcomes = run_system("my_storm", spec, tasks, tmp_path / "run")
    assert [o.status for o in outcomes] == ["failed"] * len(tasks)
    recs = records(tmp_path / "run")
    assert sorted(recs) == sorted(t.task_id for t in tasks)  # a record per task, with the reason
    for o in outcomes:
        assert o.reason is not None and o.reason.startswith("the adapter did not start: PermissionError"), o.reason
        assert "venv/bin/python" in o.reason and recs[o.task_id].reason == o.reason


def test_ledger_refuses_at_each_limit() -> None:
    ledger = TaskLedger("t", Budget(llm_calls=2, tokens=100, search_calls=1))
    assert ledger.admit_llm() is None
    ledger.add_tokens(60, 50, 0.01)
    assert ledger.admit_llm() == "tokens: 110 of 100 used" and ledger.over_budget == "tokens: 110 of 100 used"
    assert ledger.admit_search() is None and ledger.admit_search() == "search_calls: 1 of 1 used"
    assert (ledger.usage.llm_refused, ledger.usage.search_refused) == (1, 1)
    unknown = TaskLedger("u", Budget(usd=1.0))
    unknown.add_tokens(1, 1, None)
    assert unknown.usage.usd is None  # an unknown price is undefined, never 0
