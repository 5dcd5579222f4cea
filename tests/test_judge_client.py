"""LLMClient (retries, classification, structured output, cost), LLMJudge records, runner, parquet, factory.

Integration tests drive the real litellm stack against the loopback stub; core tests are pure.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import polars as pl
import pytest

from reportbench.judges.base import Judgment
from reportbench.judges.client import (
    CallFailed,
    ClientConfig,
    LLMClient,
    classify,
    redact,
)
from reportbench.judges.factory import JudgeConfigError, make_judge
from reportbench.judges.llm import LLMJudge
from reportbench.judges.runner import (
    JUDGMENT_SCHEMA,
    format_usage,
    judgments_frame,
    read_judgments,
    reason_class,
    run_judgments,
    run_judgments_sync,
    usage_summary,
    write_judgments,
)
from reportbench.stub_server import (
    StubServer,
    StubSupportInput,
    StubSupportOutput,
    default_responder,
    stub_server_thread,
    stub_support_task,
)

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")

MSGS = [{"role": "user", "content": "Claim: a\nEvidence: b"}]


def cfg_for(base_url: str | None, **runtime: Any) -> dict[str, Any]:
    rt = {
        "max_concurrency": 16,
        "timeout_s": 5,
        "max_retries": 2,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
        "parse_retries": 1,
        "cache_path": None,
        "progress": False,
    }
    rt.update(runtime)
    return {
        "backend": "litellm",
        "model": "openai/stub-judge",
        "api_base": base_url,
        "structured_output": "json_schema",
        "runtime": rt,
    }


def items(n: int) -> list[tuple[str, StubSupportInput, dict[str, str]]]:
    return [
        (f"i{i}", StubSupportInput(claim=f"claim {i}", evidence=f"evidence {i % 7}"), {"claim": f"c{i}"})
        for i in range(n)
    ]


# ------------------------------------------------------------------------------------------------ core


class _Exc(Exception):
    def __init__(self, status_code: int | None = None) -> None:
        super().__init__("x")
        self.status_code = status_code


class APITimeoutError(Exception):
    pass


class APIConnectionError(Exception):
    pass


@pytest.mark.core
@pytest.mark.parametrize(
    ("exc", "kind", "retry"),
    [
        (_Exc(429), "rate_limit", True),
        (_Exc(500), "server", True),
        (_Exc(503), "server", True),
        (_Exc(408), "timeout", True),
        (_Exc(401), "auth", False),
        (_Exc(403), "auth", False),
        (_Exc(400), "bad_request", False),
        (_Exc(404), "bad_request", False),
        (TimeoutError(), "timeout", True),
        (APITimeoutError(), "timeout", True),
        (APIConnectionError(), "connection", True),
        (ConnectionResetError(), "connection", True),
        (ValueError("bug"), "other", False),
    ],
)
def test_classify(exc: BaseException, kind: str, retry: bool) -> None:
    assert classify(exc) == (kind, retry)


@pytest.mark.core
def test_redact_removes_secret_and_key_shapes() -> None:
    secret = "abcdef-SECRET-123456"
    text = f"Incorrect API key provided: {secret}; also sk-proj-AbCdEf123456 and sk-abc***wxyz; Bearer tok.en"
    out = redact(text, (secret,))
    assert secret not in out and "AbCdEf123456" not in out and "abc***wxyz" not in out and "tok.en" not in out


@pytest.mark.core
def test_config_parsing(caplog: pytest.LogCaptureFixture) -> None:
    cfg = ClientConfig.from_mapping({"backend": "litellm", "model": "openai/x", "runtime": {"timeout_s": 3}})
    assert cfg.runtime.timeout_s == 3 and cfg.runtime.max_retries == 4 and cfg.temperature == 0.0
    with caplog.at_level(logging.WARNING):
        ClientConfig.from_mapping({"model": "openai/x", "temprature": 0.3})
    assert "temprature" in caplog.text
    with pytest.raises(ValueError):
        ClientConfig.from_mapping({"model": "openai/x", "runtime": {"max_concurency": 3}})


@pytest.mark.core
def test_missing_key_env_is_a_typed_failure() -> None:
    client = LLMClient({"model": "openai/x", "api_key_env": "REPORTBENCH_TEST_NOT_SET_KEY"})
    with pytest.raises(CallFailed) as err:
        asyncio.run(client.complete(MSGS))
    assert err.value.kind == "auth" and err.value.attempts == 0


@pytest.mark.core
def test_parquet_roundtrip_fixed_schema(tmp_path: Path) -> None:
    js = [
        Judgment(
            task="t",
            item_id="a",
            input_ids={"x": "1", "y": "é"},
            judge_id="j",
            value=0.5,
            label="yes",
            parsed='{"score": 0.5}',
            prompt_tokens=3,
            completion_tokens=4,
            cost_usd=1e-5,
            latency_s=0.1,
            attempts=1,
        ),
        Judgment(task="t", item_id="b", judge_id="j", status="failed", error="call: timeout: x", attempts=3),
    ]
    path = write_judgments(tmp_path / "out" / "j.parquet", js)
    assert read_judgments(path) == js
    df = pl.read_parquet(path)
    assert dict(df.schema) == JUDGMENT_SCHEMA
    empty = write_judgments(tmp_path / "empty.parquet", [])
    assert read_judgments(empty) == [] and dict(pl.read_parquet(empty).schema) == JUDGMENT_SCHEMA
    assert judgments_frame(js)["input_ids"][0] == '{"x": "1", "y": "é"}'


def _judgment(item_id: str, **fields: Any) -> Judgment:
    return Judgment(task="t", item_id=item_id, judge_id="j", **fields)


@pytest.mark.core
def test_usage_summary_and_reason_classes() -> None:
    js = [
        _judgment("1", value=1, prompt_tokens=10, completion_tokens=2, cost_usd=0.001, attempts=2),
        _judgment("2", value=1, prompt_tokens=10, completion_tokens=2, cost_usd=0.004, cache_hit=True),
        _judgment("3", value=0, prompt_tokens=10, completion_tokens=2, attempts=1),
        _judgment("4", status="failed", error="call: rate_limit: 429", attempts=5),
        _judgment(
            "5",
            status="failed",
            error="parse: bad",
            raw_output="{",
            attempts=3,
            prompt_tokens=30,
            completion_tokens=3,
            cost_usd=0.002,
        ),
        _judgment("6", status="failed", error="internal: KeyError: 'x'"),
    ]
    s = usage_summary(js, wall_s=2.0)
    assert s["items"] == 6 and s["ok"] == 3 and s["failed"] == 3 and s["cache_hits"] == 1
    assert s["failures"] == {"call/rate_limit": 1, "internal/KeyError": 1, "parse": 1}
    assert s["calls"] == 11 and s["prompt_tokens"] == 50 and s["completion_tokens"] == 7
    assert math.isclose(s["cost_usd"], 0.003) and math.isclose(s["cost_usd_cached"], 0.004)
    assert s["calls_unknown_cost"] == 1
    line = format_usage(s)
    assert line.startswith("6 items: 3 ok, 3 failed (call/rate_limit=1") and "(+1 unpriced)" in line
    assert reason_class(None) == "unknown" and reason_class("parse: x: y") == "parse"


class _FlakyJudge:
    judge_id = "fake"
    task = "fake_task"
    max_concurrency = 4

    async def __call__(self, item_id: str, inputs: Any, input_ids: dict[str, str]) -> Judgment:
        n = int(item_id[1:])
        await asyncio.sleep(0.001 * ((n * 7) % 5))  # finish out of order
        if n % 10 == 3:
            raise RuntimeError(f"boom {n}")
        return Judgment(
            task="fake_task", item_id=item_id, input_ids=input_ids, judge_id="fake", value=float(n)
        )


@pytest.mark.core
def test_runner_keeps_order_and_turns_exceptions_into_failures() -> None:
    its = items(50)
    run = asyncio.run(run_judgments(_FlakyJudge(), its, "t", progress=False))
    assert [j.item_id for j in run] == [i[0] for i in its]
    failed = [j for j in run if not j.ok]
    assert len(failed) == 5 and all(j.error.startswith("internal: RuntimeError: boom") for j in failed)
    assert all(j.value is None and math.isnan(j.score) for j in failed)
    assert failed[0].task == "fake_task" and failed[0].input_ids == {"claim": "c3"}
    assert run.wall_s is not None and usage_summary(run)["wall_s"] == run.wall_s
    assert asyncio.run(run_judgments(_FlakyJudge(), [], "t", progress=False)) == []


@pytest.mark.core
def test_sync_wrapper_works_inside_a_running_loop() -> None:
    async def inside() -> int:
        return len(run_judgments_sync(_FlakyJudge(), items(5), "t", progress=False))

    assert asyncio.run(inside()) == 5
    assert len(run_judgments_sync(_FlakyJudge(), iter(items(7)), "t", progress=False)) == 7


@pytest.mark.core
def test_factory_dispatch(tmp_path: Path) -> None:
    task = stub_support_task(tmp_path)
    judge = make_judge(task, {**cfg_for("http://127.0.0.1:9/v1"), "prompts_dir": str(tmp_path)})
    assert isinstance(judge, LLMJudge) and judge.judge_id == "litellm:openai/stub-judge"
    with pytest.raises(JudgeConfigError, match="unknown judge.backend"):
        make_judge(task, {"backend": "gpt"})
    with pytest.raises(JudgeConfigError, match="needs judge.model"):
        make_judge(task, {"backend": "litellm"})
    offline = pytest.importorskip("reportbench.judges.offline")
    assert isinstance(
        make_judge(task, {"backend": "offline", "prompts_dir": str(tmp_path)}), offline.OfflineJudge
    )


# ------------------------------------------------------------------------------------------------ stub


@pytest.mark.integration
def test_response_format_selection() -> None:
    client = LLMClient({"model": "openai/stub-judge", "structured_output": "auto"})
    assert client.response_format(StubSupportOutput) == {"type": "json_object"}  # unknown model: JSON hint
    forced = LLMClient({"model": "openai/stub-judge", "structured_output": "json_schema"})
    fmt = forced.response_format(StubSupportOutput)
    assert fmt is not None and fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "StubSupportOutput" and fmt["json_schema"]["strict"] is True
    assert LLMClient({"model": "openai/gpt-4.1"}).response_format(StubSupportOutput)["type"] == "json_schema"
    assert (
        LLMClient({"model": "openai/x", "structured_output": "none"}).response_format(StubSupportOutput)
        is None
    )
    assert forced.response_format(StubSupportOutput, structured=False) is None
    assert forced.format_key(StubSupportOutput)["mode"] == "json_schema"


@pytest.mark.integration
def test_completion_fields_and_registered_cost() -> None:
    async def main() -> None:
        async with StubServer() as s:
            # a model name no other test prices: litellm's cost map is process-wide
            cfg = {**cfg_for(s.base_url), "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}
            cfg["model"] = "openai/stub-judge-priced-here"
            client = LLMClient(cfg)
            fmt = client.response_format(StubSupportOutput)
            c = await client.complete(MSGS, response_format=fmt)
            assert c.text == default_responder(MSGS, fmt) and not c.cache_hit and c.attempts == 1
            assert c.prompt_tokens and c.completion_tokens and c.latency_s > 0
            assert c.cost_usd == pytest.approx(1e-6 * c.prompt_tokens + 2e-6 * c.completion_tokens)
            unpriced = LLMClient({**cfg_for(s.base_url), "model": "openai/stub-unpriced"})
            assert (await unpriced.complete(MSGS)).cost_usd is None  # unknown stays unknown

    asyncio.run(main())


@pytest.mark.integration
@pytest.mark.parametrize(
    ("fault", "kind"),
    [("429", "rate_limit"), ("500", "server"), ("timeout", "timeout"), ("truncated", "server")],
)
def test_retries_are_one_layer(fault: str, kind: str) -> None:
    async def main() -> None:
        async with StubServer(faults={fault: 1.0}, timeout_sleep_s=2.0) as s:
            client = LLMClient(cfg_for(s.base_url, max_retries=2, timeout_s=0.3))
            with pytest.raises(CallFailed) as err:
                await client.complete(MSGS)
            assert err.value.kind == kind and err.value.attempts == 3
            assert s.counts["requests"] == 3 == client.http_calls  # not 3 x the SDK's own retries

    asyncio.run(main())


@pytest.mark.integration
def test_auth_error_not_retried_and_key_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = "fake-wrong-VALUE-abcdef987654"
    monkeypatch.setenv("REPORTBENCH_TEST_KEY", wrong)

    async def main() -> None:
        async with StubServer(require_api_key="sk-right-1234567890") as s:
            client = LLMClient({**cfg_for(s.base_url, max_retries=3), "api_key_env": "REPORTBENCH_TEST_KEY"})
            with pytest.raises(CallFailed) as err:
                await client.complete(MSGS)
            assert err.value.kind == "auth" and err.value.attempts == 1 and s.counts["requests"] == 1
            assert wrong not in str(err.value) and "VALUE-abcdef987654" not in str(err.value)

    asyncio.run(main())


@pytest.mark.integration
def test_llm_judge_record_is_complete(tmp_path: Path) -> None:
    task = stub_support_task(tmp_path)
    with stub_server_thread() as s:
        cfg = {**cfg_for(s.base_url), "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}
        judge = LLMJudge(task, cfg, prompts_dir=tmp_path)
        run = run_judgments_sync(judge, items(3), "t")
    j = run[0]
    assert j.ok and j.task == "stub_support" and j.item_id == "i0" and j.input_ids == {"claim": "c0"}
    assert j.judge_id == "litellm:openai/stub-judge" and j.model == "openai/stub-judge"
    assert j.prompt_id == "stub-support" and j.prompt_hash == judge.prompt.sha256 and len(j.prompt_hash) == 64
    out = StubSupportOutput.model_validate_json(j.raw_output or "")
    assert j.value == out.score and j.label == out.supported and j.parsed is not None
    assert j.prompt_tokens and j.completion_tokens and j.cost_usd and j.latency_s > 0
    assert j.attempts == 1 and j.cache_hit is False and j.error is None


@pytest.mark.integration
def test_parse_retry_then_success_and_then_failure(tmp_path: Path) -> None:
    task = stub_support_task(tmp_path)
    seen: dict[str, int] = {}

    def flaky(messages: list[dict[str, Any]], fmt: dict[str, Any] | None) -> str:
        user = messages[-1]["content"]
        seen[user] = seen.get(user, 0) + 1
        if "always-bad" in user or seen[user] == 1:
            return "Sure! The claim is supported."
        return '{"supported": "yes", "score": 0.75}'

    with stub_server_thread(responder=flaky) as s:
        judge = LLMJudge(task, cfg_for(s.base_url, parse_retries=2), prompts_dir=tmp_path)
        good, bad = run_judgments_sync(
            judge,
            [
                ("ok", StubSupportInput(claim="c", evidence="e"), {}),
                ("bad", StubSupportInput(claim="always-bad", evidence="e"), {}),
            ],
            "t",
        )
    assert good.ok and good.value == 0.75 and good.attempts == 2
    assert not bad.ok and bad.value is None and bad.error.startswith("parse: ") and bad.attempts == 3
    assert bad.raw_output == "Sure! The claim is supported." and bad.prompt_tokens is not None


@pytest.mark.integration
def test_fully_cached_rerun_never_imports_litellm(tmp_path: Path) -> None:
    """A cached rerun (or any resumed stage) must not pay litellm's ~3.5 s import."""
    task = stub_support_task(tmp_path / "prompts")
    cache_path = tmp_path / "c.sqlite"
    with stub_server_thread() as s:
        cfg = cfg_for(s.base_url, cache_path=str(cache_path))
        judge = LLMJudge(task, cfg, prompts_dir=tmp_path / "prompts")
        first = run_judgments_sync(judge, items(4), "t")
        judge.close()
        script = textwrap.dedent(f"""
            import sys
            from reportbench.judges.llm import LLMJudge
            from reportbench.judges.runner import run_judgments_sync
            from reportbench.stub_server import StubSupportInput, stub_support_task
            task = stub_support_task({str(tmp_path / "prompts")!r})
            judge = LLMJudge(task, {cfg!r}, prompts_dir={str(tmp_path / "prompts")!r})
            its = [(f"i{{i}}", StubSupportInput(claim=f"claim {{i}}", evidence=f"evidence {{i % 7}}"),
                    {{"claim": f"c{{i}}"}}) for i in range(4)]
            run = run_judgments_sync(judge, its, "t")
            assert all(j.cache_hit for j in run), run
            print(",".join(str(j.value) for j in run))
            print("litellm" in sys.modules)
        """)
        res = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
    assert res.returncode == 0, res.stderr
    values, imported = res.stdout.strip().splitlines()
    assert values == ",".join(str(j.value) for j in first)
    assert imported == "False"


def test_an_anthropic_judge_runs_against_the_stub_messages_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """README's `-S judge.model=anthropic/claude-sonnet-4-5` offline (docs/judges.md): litellm posts Anthropic's
    Messages API under the documented api_base (…/v1 + /v1/messages); the stub answers in Anthropic's shape."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy")
    task = stub_support_task(tmp_path)
    with stub_server_thread() as s:
        cfg = {**cfg_for(s.base_url), "model": "anthropic/claude-sonnet-4-5", "structured_output": "auto"}
        run = run_judgments_sync(LLMJudge(task, cfg, prompts_dir=tmp_path), items(3), "t")
        paths = {path for _, method, path in s.request_log if method == "POST"}
        text = httpx.post(  # a text answer over max_tokens: cut, with Anthropic's stop_reason
            f"{s.base_url}/messages",
            json={"model": "m", "max_tokens": 1, "system": "s", "messages": [{"role": "user", "content": "hi"}]},
        ).json()
    assert [j.error for j in run] == [None] * 3 and all(j.ok for j in run)
    assert all(j.prompt_tokens and j.completion_tokens for j in run)  # usage from input_tokens/output_tokens
    assert all(StubSupportOutput.model_validate_json(j.raw_output or "") for j in run)
    assert paths == {"/v1/v1/messages"}
    assert text["type"] == "message" and text["content"][0]["type"] == "text"
    assert text["stop_reason"] == "max_tokens" and set(text["usage"]) == {"input_tokens", "output_tokens"}
