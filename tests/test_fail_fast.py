"""Fail fast on what retries cannot fix: auth, unknown model, exhausted quota, context too long.

Each fatal class is answered by the stub in the provider's real error JSON and goes through litellm's own
exception mapping; it is never retried, and after `fatal_after` identical ones the stage stops with one
line naming judge, model, kind and fix. Ordinary 429/500s are still retried and end as values.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from reportbench.judges.client import CallFailed, LLMClient, check_judge, classify, judge_roles, preflight_problem
from reportbench.judges.errors import (
    EXIT_CODE,
    FatalJudgeError,
    FatalSystemError,
    FatalTripwire,
    exit_on_fatal,
    fatal_kind,
    fatal_kind_of_error,
    run_stage,
)
from reportbench.judges.llm import LLMJudge
from reportbench.judges.runner import run_judgments_sync
from reportbench.stub_server import (
    FATAL_FAULT_KINDS,
    StubServer,
    StubSupportInput,
    stub_server_thread,
    stub_support_task,
)

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")

REPO = Path(__file__).resolve().parents[1]
MSGS = [{"role": "user", "content": "Claim: a\nEvidence: b"}]
KEY_ENV = "REPORTBENCH_TEST_FAILFAST_KEY"
FAKE_KEY = "fake-failfast-VALUE-0123456789"  # not key-shaped on purpose: only exact masking can hide it


def cfg_for(base_url: str | None, **runtime: Any) -> dict[str, Any]:
    rt = {
        "max_concurrency": 1,
        "timeout_s": 5,
        "max_retries": 3,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.02,
        "parse_retries": 0,
        "cache_path": None,
        "progress": False,
    }
    rt.update(runtime)
    return {
        "name": "failfast",
        "backend": "litellm",
        "model": "openai/stub-judge",
        "api_base": base_url,
        "structured_output": "json_schema",
        "runtime": rt,
    }


def items(n: int, evidence: str = "evidence") -> list[tuple[str, StubSupportInput, dict[str, str]]]:
    return [
        (f"i{i}", StubSupportInput(claim=f"claim {i}", evidence=f"{evidence} {i}"), {"c": str(i)}) for i in range(n)
    ]


# ------------------------------------------------------------------------------------------------ core


class _Exc(Exception):
    def __init__(self, message: str = "x", status_code: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body


class AuthenticationError(_Exc):
    pass


class PermissionDeniedError(_Exc):
    pass


class NotFoundError(_Exc):
    pass


class ContextWindowExceededError(_Exc):
    pass


class RateLimitError(_Exc):
    pass


@pytest.mark.core
@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (AuthenticationError("Incorrect API key provided", 401), "auth"),
        (PermissionDeniedError("not allowed", 403), "auth"),
        (_Exc("OpenAIException - Missing credentials. Please pass an `api_key`", 500), "auth"),
        (NotFoundError("The model `gpt-9` does not exist or you do not have access to it.", 404), "model_not_found"),
        (_Exc("litellm.BadRequestError: LLM Provider NOT provided. You passed model=x", 400), "model_not_found"),
        (_Exc("bad", 400, {"code": "model_not_found"}), "model_not_found"),
        (RateLimitError("You exceeded your current quota", 429, {"code": "insufficient_quota"}), "quota"),
        (_Exc("Your credit balance is too low to access the Anthropic API.", 400), "quota"),
        (_Exc("payment", 402), "quota"),
        (ContextWindowExceededError("too long", 400), "context_length"),
        (_Exc("This model's maximum context length is 8192 tokens", 400, {"code": "context_length_exceeded"}),
         "context_length"),
        # ordinary: stays retryable / a plain value
        (RateLimitError("Rate limit reached for requests", 429), None),
        (RateLimitError("Request too large for gpt-4 on tokens per min (TPM): Limit 10000", 429), None),
        (RateLimitError("You exceeded your current quota. Quota exceeded for metric: requests per minute", 429),
         None),
        (_Exc("upstream error", 500), None),
        (_Exc("bad request: temperature must be <= 2", 400), None),
        (TimeoutError(), None),
    ],
)
def test_fatal_classification(exc: BaseException, kind: str | None) -> None:
    assert fatal_kind(exc) == kind
    got_kind, retry = classify(exc)
    if kind is not None:
        assert (got_kind, retry) == (kind, False)
    elif isinstance(exc, RateLimitError) or getattr(exc, "status_code", None) == 500:
        assert retry, "ordinary rate limits and 5xx stay retryable"


@pytest.mark.core
def test_record_error_and_tripwire_rules() -> None:
    assert fatal_kind_of_error("call: quota: RateLimitError: ...") == "quota"
    assert fatal_kind_of_error("call: rate_limit: ...") is None and fatal_kind_of_error("parse: auth: x") is None
    wire = FatalTripwire(3)
    assert not wire.observe("auth") and not wire.observe("quota") and not wire.observe("auth")
    assert wire.observe("auth") and wire.tripped == "auth"
    # context_length: per item once anything got through ...
    wire = FatalTripwire(2)
    wire.observe(None, got_through=True)
    assert not any(wire.observe("context_length") for _ in range(10)) and wire.tripped is None
    # ... but fatal when the first calls all fail that way
    wire = FatalTripwire(2)
    assert not wire.observe("context_length") and wire.observe("context_length")
    assert not any(FatalTripwire(0).observe("auth") for _ in range(5))  # 0 = never stop


@pytest.mark.core
def test_preflight_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv(KEY_ENV, raising=False)
    assert preflight_problem({"model": "openai/gpt-4o"}) == (
        "auth",
        "OPENAI_API_KEY not set (litellm.validate_environment)",
    )
    assert preflight_problem({"model": "openai/x", "api_key_env": KEY_ENV})[0] == "auth"
    assert preflight_problem({"model": "no-provider-model"})[0] == "model_not_found"
    assert preflight_problem({"model": "openai/x", "api_base": "http://10.0.0.5:8000/v1"}) is None  # self-hosted
    assert preflight_problem({"model": "openai/stub-judge", "api_base": "http://127.0.0.1:8765/v1"}) is None
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    assert preflight_problem({"model": "openai/gpt-4o"}) is None
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    assert preflight_problem({"model": "openai/x", "api_key_env": KEY_ENV}) is None


@pytest.mark.core
def test_check_judge_covers_every_role(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    judge = {
        "name": "mixed",
        "backend": "litellm",
        "model": "openai/gpt-4o",
        "task_models": {"nugget_assign": "anthropic/claude-sonnet-4-5", "support": None},
    }
    assert [r for r, _ in judge_roles(judge)] == ["judge.model", "judge.task_models.nugget_assign"]
    problems = check_judge(judge)
    assert len(problems) == 2
    assert "OPENAI_API_KEY" in problems[0] and "'mixed'" in problems[0] and "openai/gpt-4o" in problems[0]
    assert problems[1].startswith("judge.task_models.nugget_assign:") and "ANTHROPIC_API_KEY" in problems[1]
    assert check_judge({"backend": "offline", "model": "offline-lexical-v1"}) == []


@pytest.mark.core
def test_judge_preflight_fails_before_any_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = {**cfg_for(None, max_concurrency=8), "model": "openai/gpt-4o", "name": "llm"}
    judge = LLMJudge(stub_support_task(tmp_path), cfg, prompts_dir=tmp_path)
    t0 = time.perf_counter()
    with pytest.raises(FatalJudgeError) as err:
        run_judgments_sync(judge, items(50))
    assert time.perf_counter() - t0 < 10  # litellm import included; the check itself takes microseconds
    msg = str(err.value)
    assert judge.client.http_calls == 0
    assert "judge 'llm'" in msg and "openai/gpt-4o" in msg and "auth" in msg
    assert "set OPENAI_API_KEY in the environment" in msg and "\n" not in msg


# ------------------------------------------------------------------------------------------------ stub


@pytest.mark.integration
@pytest.mark.parametrize(
    ("fault", "status", "code"),
    [("401", 401, "invalid_api_key"), ("404", 404, "model_not_found"), ("quota", 429, "insufficient_quota"),
     ("context_length", 400, "context_length_exceeded")],
)
def test_stub_fatal_faults_use_the_provider_error_shape(fault: str, status: int, code: str) -> None:
    async def main() -> None:
        async with StubServer(faults={fault: 1.0}) as s:
            async with aiohttp.ClientSession() as session:
                headers = {"Authorization": f"Bearer {FAKE_KEY}"}
                body = {"model": "stub-judge", "messages": MSGS}
                async with session.post(s.base_url + "/chat/completions", json=body, headers=headers) as resp:
                    assert resp.status == status
                    payload = await resp.json()
            err = payload["error"]
            assert err["code"] == code and set(err) == {"message", "type", "param", "code"}
            assert FAKE_KEY not in err["message"]  # partially echoed at most, as the provider does
            assert s.counts[fault] == 1

    asyncio.run(main())
    assert set(FATAL_FAULT_KINDS) == {"401", "404", "quota", "context_length"}


@pytest.mark.integration
@pytest.mark.parametrize(
    ("fault", "kind"),
    [("401", "auth"), ("404", "model_not_found"), ("quota", "quota"), ("context_length", "context_length")],
)
def test_each_fatal_class_is_not_retried(fault: str, kind: str) -> None:
    async def main() -> None:
        async with StubServer(faults={fault: 1.0}) as s:
            client = LLMClient(cfg_for(s.base_url, max_retries=4))
            with pytest.raises(CallFailed) as err:
                await client.complete(MSGS)
            assert err.value.kind == kind and err.value.fatal and err.value.attempts == 1
            assert s.counts["requests"] == 1 == client.http_calls

    asyncio.run(main())


@pytest.mark.integration
@pytest.mark.parametrize(("fault", "kind"), [("429", "rate_limit"), ("500", "server")])
def test_ordinary_faults_are_still_retried_and_end_as_values(fault: str, kind: str, tmp_path: Path) -> None:
    judge_cfg_items = 6
    with stub_server_thread(faults={fault: 1.0}) as s:
        judge = LLMJudge(stub_support_task(tmp_path), cfg_for(s.base_url, max_retries=2, max_concurrency=4),
                         prompts_dir=tmp_path)
        run = run_judgments_sync(judge, items(judge_cfg_items))
        assert s.counts["requests"] == 3 * judge_cfg_items  # every item retried, no stop
    assert len(run) == judge_cfg_items
    assert all(j.status == "failed" and j.error.startswith(f"call: {kind}:") and j.attempts == 3 for j in run)


@pytest.mark.integration
def test_stage_stops_after_n_identical_fatal_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    with stub_server_thread(faults={"401": 1.0}) as s:
        cfg = {**cfg_for(s.base_url), "api_key_env": KEY_ENV}
        judge = LLMJudge(stub_support_task(tmp_path), cfg, prompts_dir=tmp_path)
        with pytest.raises(FatalJudgeError) as err:
            run_judgments_sync(judge, items(40))
        assert s.counts["requests"] == 3  # fatal_after=3, one at a time: exactly 3 calls, 37 never sent
    e = err.value
    msg = str(e)
    assert (e.judge, e.model, e.kind, e.count) == ("failfast", "openai/stub-judge", "auth", 3)
    assert "judge 'failfast'" in msg and "model openai/stub-judge" in msg and KEY_ENV in msg
    assert "rejected the key" in msg and "\n" not in msg
    assert FAKE_KEY not in msg and FAKE_KEY[-4:] not in msg, "neither the key nor its echoed ends"


@pytest.mark.integration
def test_concurrent_stop_cancels_the_rest(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    with stub_server_thread(faults={"quota": 1.0}, latency_ms=20) as s:
        cfg = {**cfg_for(s.base_url, max_concurrency=4, fatal_after=5), "api_key_env": KEY_ENV}
        judge = LLMJudge(stub_support_task(tmp_path), cfg, prompts_dir=tmp_path)
        with pytest.raises(FatalJudgeError) as err:
            run_judgments_sync(judge, items(200))
        assert 5 <= s.counts["requests"] < 30
    assert err.value.kind == "quota" and err.value.count == 5
    assert f"the account behind {KEY_ENV} has no quota or credit left" in str(err.value)


@pytest.mark.integration
def test_fatal_after_zero_keeps_failures_as_values(tmp_path: Path) -> None:
    with stub_server_thread(faults={"404": 1.0}) as s:
        judge = LLMJudge(stub_support_task(tmp_path), cfg_for(s.base_url, fatal_after=0), prompts_dir=tmp_path)
        run = run_judgments_sync(judge, items(5))
        assert s.counts["requests"] == 5
    assert all(j.error.startswith("call: model_not_found:") for j in run)


@pytest.mark.integration
def test_context_length_is_per_item_unless_the_first_calls_all_fail(tmp_path: Path) -> None:
    task = stub_support_task(tmp_path)
    long = "word " * 400
    with stub_server_thread(context_window_chars=1000) as s:
        judge = LLMJudge(task, cfg_for(s.base_url), prompts_dir=tmp_path)
        # distinct requests: identical ones in flight together are sent once (single-flight, ratelimit.py)
        mixed = items(1) + [(f"long{i}", StubSupportInput(claim=f"c{i}", evidence=long), {}) for i in range(6)]
        run = run_judgments_sync(judge, mixed)
        assert run[0].ok and all(j.error.startswith("call: context_length:") for j in run[1:])
        assert all(j.attempts == 1 for j in run[1:])
        s.reset_counts()
        with pytest.raises(FatalJudgeError) as err:
            run_judgments_sync(judge, mixed[1:])
        assert s.counts["requests"] == 3
    assert err.value.kind == "context_length" and "longer context" in str(err.value)


@pytest.mark.integration
def test_endpoint_system_stops_on_fatal_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from reportbench.systems import run_system
    from reportbench.types import Task

    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    tasks = [
        Task(task_id=f"t{i}", title="T", abstract="A.", published_date="2025-03-18T10:04:00+00:00",
             task_prompt=f"Write a related works section {i}.", exemplar="x")
        for i in range(10)
    ]
    spec = {
        "kind": "endpoint",
        "model": "openai/stub-endpoint",
        "api_key_env": KEY_ENV,
        "runtime": {"cache_path": None, "max_concurrency": 1, "backoff_base_s": 0.01, "backoff_max_s": 0.02},
    }
    with stub_server_thread(faults={"401": 1.0}) as s:
        with pytest.raises(FatalSystemError) as err:
            run_system("my_agent", {**spec, "api_base": s.base_url}, tasks, tmp_path / "run")
        assert s.counts["requests"] == 3
    msg = str(err.value)
    assert "system 'my_agent'" in msg and "openai/stub-endpoint" in msg and KEY_ENV in msg and FAKE_KEY not in msg
    assert "systems.my_agent.api_key_env" in msg or "rejected the key" in msg


@pytest.mark.core
def test_exit_helpers_turn_fatal_errors_into_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    def boom() -> None:
        raise FatalJudgeError(judge="j", model="m", kind="auth", fix="set X")

    with pytest.raises(SystemExit) as ex:
        run_stage(boom)
    assert ex.value.code == EXIT_CODE == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: judge 'j' (model m) cannot run: auth")
    with exit_on_fatal():
        assert run_stage(lambda x: x + 1, 1) == 2  # no error: no effect


# ------------------------------------------------------------------------------------------------ processes


def _env_without_keys() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_MODE="PRODUCTION", DVC_NO_ANALYTICS="1")
    return env


@pytest.mark.integration
def test_check_judge_cli_without_key_exits_nonzero_fast() -> None:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "reportbench.cli", "check-judge", "judge=llm"],
        cwd=REPO,
        env=_env_without_keys(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.perf_counter() - t0
    assert proc.returncode == EXIT_CODE, proc.stderr
    assert "OPENAI_API_KEY" in proc.stderr and "judge 'llm'" in proc.stderr and "Traceback" not in proc.stderr
    # seconds, not a retry loop's minutes; a machine busier than its cores stretches any run by as much
    stretch = max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    assert elapsed < 30 * stretch, f"check-judge took {elapsed:.1f}s (load stretch {stretch:.1f})"


STAGE_SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from reportbench.judges.errors import exit_on_fatal
    from reportbench.judges.llm import LLMJudge
    from reportbench.judges.runner import run_judgments_sync
    from reportbench.stub_server import StubSupportInput, stub_server_thread, stub_support_task

    def stage(prompts: Path, base_url: str | None, model: str, progress: bool) -> None:
        cfg = {
            "name": "llm", "backend": "litellm", "model": model, "api_base": base_url,
            "api_key_env": "REPORTBENCH_TEST_FAILFAST_KEY" if base_url else None,
            "structured_output": "json_schema",
            "runtime": {"max_concurrency": 4, "max_retries": 5, "backoff_base_s": 0.01, "backoff_max_s": 0.02,
                        "cache_path": None, "progress": progress},
        }
        judge = LLMJudge(stub_support_task(prompts), cfg, prompts_dir=prompts)
        items = [(f"i{i}", StubSupportInput(claim=f"c{i}", evidence="e"), {}) for i in range(30)]
        run_judgments_sync(judge, items)

    prompts, mode = Path(sys.argv[1]), sys.argv[2]
    with exit_on_fatal():
        if mode == "nokey":
            stage(prompts, None, "openai/gpt-4o", True)  # the bar is cleared, the error line stays
        else:
            with stub_server_thread(faults={"401": 1.0}) as s:
                stage(prompts, s.base_url, "openai/stub-judge", False)
    print("not reached")
    """
)


@pytest.mark.integration
@pytest.mark.parametrize("mode", ["nokey", "401"])
def test_stage_through_exit_helper_exits_2_with_one_line(mode: str, tmp_path: Path) -> None:
    env = _env_without_keys()
    env[KEY_ENV] = FAKE_KEY
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", STAGE_SCRIPT, str(tmp_path), mode],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 2, proc.stderr
    assert "not reached" not in proc.stdout and "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]  # splits tqdm's \r updates too
    errors = [ln for ln in lines if "error" in ln.lower()]
    assert len(errors) == 1 and lines[-1] == errors[0] and errors[0].startswith("error: judge 'llm'"), proc.stderr
    if mode == "401":  # no progress bar: the whole stderr is the one line
        assert len(lines) == 1, proc.stderr
    assert FAKE_KEY not in proc.stderr and FAKE_KEY[-4:] not in proc.stderr
    if mode == "nokey":
        assert "set OPENAI_API_KEY in the environment" in errors[0] and "model openai/gpt-4o" in errors[0]
        assert elapsed < 20, f"no-key stage took {elapsed:.1f}s"
    else:
        assert KEY_ENV in errors[0] and "auth" in errors[0]
    print(json.dumps({"mode": mode, "elapsed_s": round(elapsed, 2)}))
