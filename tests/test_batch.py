"""Batch mode against the stub's OpenAI files+batches and Anthropic message-batches endpoints.

Same answers and cache keys as the online path; a killed run resumes without resubmitting; expired batches and
failed lines become failure records that `reportbench batch retry` / a rerun turns into answers.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from reportbench.judges.batch import BatchState, anthropic_line, anthropic_params, openai_line
from reportbench.judges.cache import ResponseCache
from reportbench.judges.llm import LLMJudge
from reportbench.judges.runner import run_judgments_sync
from reportbench.stub_server import StubSupportInput, stub_server_thread, stub_support_task

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")


def _items(n: int = 24) -> list[tuple[str, StubSupportInput, dict[str, str]]]:
    return [
        (f"i{i}", StubSupportInput(claim=f"claim {i} about topic {i % 7}", evidence=f"evidence {i}"), {"task": f"t{i}"})
        for i in range(n)
    ]


def _cfg(base_url: str, tmp: Path, *, mode: str, model: str = "openai/stub-judge", **batch: Any) -> dict[str, Any]:
    return {
        "backend": "litellm",
        "model": model,
        "api_base": base_url,
        "structured_output": "json_schema",
        "runtime": {
            "max_concurrency": 16,
            "timeout_s": 10,
            "max_retries": 2,
            "backoff_base_s": 0.01,
            "backoff_max_s": 0.05,
            "progress": False,
            "cache_path": str(tmp / "cache" / "judge.sqlite"),
            "mode": mode,
            "batch": {"poll_interval_s": 0.05, "quiet_s": 0.05, **batch},
        },
    }


def _run(cfg: dict[str, Any], tmp: Path, items: list[Any] | None = None) -> list[Any]:
    task = stub_support_task(tmp / "prompts")
    judge = LLMJudge(task, cfg, prompts_dir=tmp / "prompts")
    try:
        return list(run_judgments_sync(judge, items or _items(), desc="t", progress=False))
    finally:
        judge.close()


def _view(run: list[Any]) -> list[tuple[Any, ...]]:
    return [(j.item_id, j.status, j.value, j.label, j.parsed) for j in run]


# ------------------------------------------------------------------------------------------------ core


@pytest.mark.core
def test_line_parsers_map_provider_shapes_to_results() -> None:
    ok = openai_line(
        "b1",
        {
            "custom_id": "c1",
            "response": {
                "status_code": 200,
                "body": {
                    "choices": [{"message": {"content": "hi"}}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
                },
            },
            "error": None,
        },
    )
    assert (ok.state, ok.text, ok.prompt_tokens) == ("ok", "hi", 3)
    expired = openai_line(
        "b1", {"custom_id": "c2", "response": None, "error": {"code": "batch_expired", "message": "x"}}
    )
    assert (expired.state, expired.error_kind) == ("failed", "batch_expired")
    failed = openai_line("b1", {"custom_id": "c3", "response": {"status_code": 500, "body": {"error": {"m": 1}}}})
    assert (failed.state, failed.error_kind) == ("failed", "batch_failed")
    tool = anthropic_line(
        "m1",
        {"custom_id": "c4", "result": {"type": "succeeded", "message": {
            "content": [{"type": "tool_use", "input": {"a": 1}}], "usage": {"input_tokens": 5, "output_tokens": 2}}}},
    )
    assert (tool.text, tool.completion_tokens) == ('{"a": 1}', 2)
    assert anthropic_line("m1", {"custom_id": "c5", "result": {"type": "expired"}}).error_kind == "batch_expired"
    params = anthropic_params(
        {"model": "claude", "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
         "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "object"}}}, "seed": 0}
    )
    assert params["system"] == "S" and params["messages"] == [{"role": "user", "content": "U"}]
    assert params["tool_choice"]["name"] == "json_tool_call" and "seed" not in params


# ------------------------------------------------------------------------------------------------ integration


@pytest.mark.integration
def test_batch_run_equals_online_and_fills_the_same_cache(tmp_path: Path) -> None:
    with stub_server_thread(batch_delay_s=0.2) as s:
        online = _run(_cfg(s.base_url, tmp_path / "online", mode="online"), tmp_path)
        assert s.counts["requests"] == len(online)
        s.reset_counts()
        batch = _run(_cfg(s.base_url, tmp_path / "batch", mode="batch"), tmp_path)
        assert s.counts["batches_created"] == 1 and s.counts["batch_lines"] == len(batch)
        assert s.counts["requests"] == 0  # no online call at all
        assert _view(batch) == _view(online)
        assert all(j.ok and j.prompt_tokens and j.attempts == 1 for j in batch)
        # the same cache keys: a later online run over the batch cache is free
        s.reset_counts()
        again = _run(_cfg(s.base_url, tmp_path / "batch", mode="online"), tmp_path)
        assert s.counts["requests"] == 0 and s.counts["batches_created"] == 0
        assert all(j.cache_hit for j in again) and _view(again) == _view(online)
    with ResponseCache(tmp_path / "online" / "cache" / "judge.sqlite") as a, ResponseCache(
        tmp_path / "batch" / "cache" / "judge.sqlite"
    ) as b:
        keys_a = {r[0] for r in a._db().execute("SELECT key FROM responses")}
        keys_b = {r[0] for r in b._db().execute("SELECT key FROM responses")}
    assert keys_a == keys_b and len(keys_a) == len(online)


@pytest.mark.integration
def test_expired_batch_and_failed_lines_are_failure_records_then_retried(tmp_path: Path) -> None:
    from reportbench.cli import main as cli_main

    with stub_server_thread(batch_delay_s=0.1) as s:
        online = _run(_cfg(s.base_url, tmp_path / "online", mode="online"), tmp_path)
    with stub_server_thread(batch_delay_s=0.1, batch_expire=1, batch_line_fault_rate=0.25, seed=3) as s:
        cfg = _cfg(s.base_url, tmp_path / "b", mode="batch")
        first = _run(cfg, tmp_path)
        errors = [j.error or "" for j in first if not j.ok]
        assert s.counts["batch_lines_expired"] == len(first) // 2
        assert any(e.startswith("call: batch_expired: ") for e in errors)
        assert any(e.startswith("call: batch_failed: ") for e in errors) and s.counts["batch_lines_failed"] > 0
        assert len(errors) == s.counts["batch_lines_expired"] + s.counts["batch_lines_failed"]
        assert all(j.value is None for j in first if not j.ok)  # failed, never a score
        ok_before = {j.item_id for j in first if j.ok}
        # the documented command: resubmit now, then rerun the stage (which only collects)
        state = str(tmp_path / "b" / "cache" / "batches.sqlite")
        assert cli_main(["batch", "status", "--state", state]) == 0
        assert cli_main(["batch", "retry", "--state", state]) == 0
        assert s.counts["batches_created"] == 2
        s.batch_line_fault_rate = 0.0
        second = _run(cfg, tmp_path)
        assert s.counts["batches_created"] == 2  # the rerun attached to the retry batch
        assert all(j.ok for j in second), [j.error for j in second if not j.ok]
        assert _view(second) == _view(online)
        assert all(j.cache_hit for j in second if j.item_id in ok_before)
        assert cli_main(["batch", "retry", "--state", state]) == 0  # nothing left: a no-op
        assert s.counts["batches_created"] == 2


@pytest.mark.integration
def test_anthropic_message_batches_round_trip(tmp_path: Path) -> None:
    with stub_server_thread(batch_delay_s=0.1, batch_expire=1) as s:
        cfg = _cfg(s.base_url, tmp_path, mode="batch", model="anthropic/claude-stub")
        first = _run(cfg, tmp_path)
        assert s.counts["batches_created"] == 1
        assert sum(1 for j in first if (j.error or "").startswith("call: batch_expired")) == len(first) // 2
        second = _run(cfg, tmp_path)  # a rerun resubmits exactly the expired half
        assert s.counts["batches_created"] == 2 and s.counts["batch_lines"] == len(first) + len(first) // 2
        assert all(j.ok for j in second)
        assert all(0.0 <= (j.value or 0) <= 1.0 and j.label in ("yes", "no") for j in second)


_CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from test_batch import _cfg, _run
    tmp = Path({tmp!r})
    run = _run(_cfg({base!r}, tmp, mode="batch", poll_interval_s=0.2), tmp)
    (tmp / "out.json").write_text(json.dumps([[j.item_id, j.status, j.value, j.parsed] for j in run]))
    """
)


@pytest.mark.integration
def test_kill_9_during_polling_then_rerun_resubmits_nothing(tmp_path: Path) -> None:
    with stub_server_thread(batch_delay_s=0.2) as s:
        online = _run(_cfg(s.base_url, tmp_path / "online", mode="online"), tmp_path)
    with stub_server_thread(batch_delay_s=6.0) as s:
        script = _CHILD.format(tests=str(Path(__file__).parent), tmp=str(tmp_path), base=s.base_url)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
        child = subprocess.Popen([sys.executable, "-c", script], env=env)
        deadline = time.time() + 60
        while s.counts["batch_polls"] < 2 and time.time() < deadline and child.poll() is None:
            time.sleep(0.05)
        assert s.counts["batch_polls"] >= 2, "the child never polled"
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        assert not (tmp_path / "out.json").exists()
        state = BatchState(tmp_path / "cache" / "batches.sqlite")
        rows = state.batches()
        state.close()
        assert len(rows) == 1 and rows[0]["collected"] == 0 and rows[0]["n_lines"] == len(online)
        rerun = subprocess.run([sys.executable, "-c", script], env=env, timeout=120)
        assert rerun.returncode == 0
        assert s.counts["batches_created"] == 1 and s.counts["files_uploaded"] == 1  # nothing resubmitted
        assert s.counts["requests"] == 0
    got = json.loads((tmp_path / "out.json").read_text())
    assert got == [[j.item_id, j.status, j.value, j.parsed] for j in online]


@pytest.mark.integration
def test_max_cost_in_batch_mode_submits_only_what_fits(tmp_path: Path) -> None:
    from reportbench.judges.client import BUDGET, BudgetExceeded, raise_if_over_budget

    with stub_server_thread(batch_delay_s=0.1) as s:
        cfg = _cfg(s.base_url, tmp_path, mode="batch")
        cfg.update({"input_cost_per_token": 1e-4, "output_cost_per_token": 1e-4, "max_tokens": 100})
        cfg["runtime"]["max_cost_usd"] = 0.1  # worst case per line ~ (25 prompt + 100) tokens * 1e-4 = $0.0125
        BUDGET.reset()
        first = _run(cfg, tmp_path)
        fitted = s.counts["batch_lines"]
        assert 0 < fitted < len(first) and s.counts["batches_created"] == 1
        refused = [j for j in first if (j.error or "").startswith("call: budget: ")]
        assert len(refused) == len(first) - fitted and all(j.ok for j in first if j not in refused)
        assert BUDGET.spent_usd <= 0.1
        with pytest.raises(BudgetExceeded, match="max_cost_usd=0.1 reached"):
            raise_if_over_budget(first, "t@stub", 0.1)
        cfg["runtime"]["max_cost_usd"] = None
        BUDGET.reset()
        second = _run(cfg, tmp_path)  # the rest, and only the rest
        assert s.counts["batch_lines"] == len(first) and all(j.ok for j in second)


def test_a_quick_batch_is_collected_without_waiting_a_poll_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default `poll_interval_s` (30 s) bounds the wait between checks, but the first check is at once and
    the next after 0.25 s (doubling): a batch that ends in 0.3 s (the stub's default) costs at most 0.25 + 0.5 s
    of waiting (the check after 0.75 s sees it done however loaded the machine), not 30 s or a 1 s first wait."""
    from reportbench.judges import batch as batch_mod

    waits: list[float] = []
    real_sleep = batch_mod.poll_sleep

    async def counted(seconds: float) -> None:
        waits.append(seconds)
        await real_sleep(seconds)

    monkeypatch.setattr(batch_mod, "poll_sleep", counted)
    with stub_server_thread() as s:
        cfg = _cfg(s.base_url, tmp_path, mode="batch", model="anthropic/claude-stub")
        cfg["runtime"]["batch"].pop("poll_interval_s")  # the default
        run = _run(cfg, tmp_path, _items(4))
    assert all(j.ok for j in run)
    assert waits in ([0.25], [0.25, 0.5]), waits
    assert list(itertools.islice(batch_mod.poll_waits(30.0), 9)) == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


@pytest.mark.integration
def test_max_wait_leaves_the_batch_open_and_the_rerun_collects_it(tmp_path: Path) -> None:
    """`batch.max_wait_s` (docs/scale.md): past it, the items are `call: batch_pending` failure records and the
    batch stays open; the next run collects it without resubmitting. How a judge stage with many units submits
    every unit's batch before any of them is done, instead of waiting for each in turn."""
    with stub_server_thread(batch_delay_s=1.0) as s:
        first = _run(_cfg(s.base_url, tmp_path, mode="batch", max_wait_s=0.1), tmp_path)
        assert first and all(not j.ok and (j.error or "").startswith("call: batch_pending: ") for j in first), [
            j.error for j in first
        ]
        assert s.counts["batches_created"] == 1
        time.sleep(1.0)  # the stub's batch is done now
        second = _run(_cfg(s.base_url, tmp_path, mode="batch"), tmp_path)
        assert len(second) == len(first) and all(j.ok for j in second)
        assert s.counts["batches_created"] == 1  # collected, not resubmitted
