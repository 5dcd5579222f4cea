"""The project-owned judge response cache: key, storage, and how LLMJudge uses it against the stub."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from reportbench.judges.cache import CACHE_KEY_VERSION, ResponseCache, cache_key
from reportbench.judges.llm import REASK_ENV, LLMJudge
from reportbench.judges.runner import read_judgments, run_judgments_sync, usage_summary, write_judgments
from reportbench.stub_server import (
    STUB_PROMPT_YAML,
    StubSupportInput,
    StubSupportOutput,
    stub_server_thread,
    stub_support_task,
)

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")

BASE_KEY: dict[str, Any] = {
    "model": "openai/gpt-4.1",
    "api_base": None,
    "messages": [{"role": "user", "content": "hi"}],
    "temperature": 0.0,
    "seed": 0,
    "max_tokens": 1024,
    "response_format": {"mode": "json_schema", "schema": {"type": "object"}},
    "prompt_hash": "a" * 64,
}


# ------------------------------------------------------------------------------------------------ core


@pytest.mark.core
def test_key_is_stable_and_sensitive_to_every_answer_determining_part() -> None:
    k = cache_key(**BASE_KEY)
    assert k == cache_key(**dict(reversed(list(BASE_KEY.items()))))
    assert len(k) == 64 and CACHE_KEY_VERSION
    changes = {
        "model": "openai/gpt-4.1-mini",
        "api_base": "http://127.0.0.1:8765/v1",
        "messages": [{"role": "user", "content": "hi!"}],
        "temperature": 0.2,
        "seed": 1,
        "max_tokens": 512,
        "response_format": {"mode": "json_object", "schema": {"type": "object"}},
        "prompt_hash": "b" * 64,
    }
    keys = {k}
    for name, value in changes.items():
        keys.add(cache_key(**{**BASE_KEY, name: value}))
    assert len(keys) == len(changes) + 1
    assert cache_key(**{**BASE_KEY, "temperature": 0}) == k  # 0 and 0.0 are the same request
    assert cache_key(**{**BASE_KEY, "api_base": "http://h/v1/"}) == cache_key(
        **{**BASE_KEY, "api_base": "http://h/v1"}
    )


@pytest.mark.core
def test_put_get_persist_and_wal(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "judge.sqlite"
    with ResponseCache(path) as cache:
        assert cache.get("k") is None
        cache.put(
            "k", '{"a": 1}', prompt_tokens=5, completion_tokens=2, cost_usd=None, model="m", prompt_hash="h"
        )
        hit = cache.get("k")
        assert hit is not None and hit.text == '{"a": 1}' and hit.prompt_tokens == 5 and hit.cost_usd is None
        assert "k" in cache and len(cache) == 1 and (cache.hits, cache.misses, cache.writes) == (1, 1, 1)
    with ResponseCache(path) as again:
        assert again.get("k") is not None and again.get("k").created_at  # type: ignore[union-attr]
        again.delete("k")
        assert len(again) == 0
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.core
def test_concurrent_async_and_threaded_use(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")

    async def worker(i: int) -> str | None:
        await asyncio.sleep(0)
        cache.put(f"k{i}", f"v{i}")
        await asyncio.sleep(0)
        hit = cache.get(f"k{i}")
        return hit.text if hit else None

    async def main() -> list[str | None]:
        return await asyncio.gather(*(worker(i) for i in range(300)))

    threads = [threading.Thread(target=lambda j=j: cache.put(f"t{j}", "x")) for j in range(8)]
    for t in threads:
        t.start()
    assert asyncio.run(main()) == [f"v{i}" for i in range(300)]
    for t in threads:
        t.join()
    assert len(cache) == 308
    cache.close()
    with pytest.raises(RuntimeError, match="closed"):
        cache.get("k1")


# ---------------------------------------------------------------------------------------- with LLMJudge


def _cfg(base_url: str, cache_path: Path, **top: Any) -> dict[str, Any]:
    return {
        "backend": "litellm",
        "model": "openai/stub-judge",
        "api_base": base_url,
        "structured_output": "json_schema",
        "input_cost_per_token": 1e-6,
        "output_cost_per_token": 2e-6,
        **top,
        "runtime": {
            "max_concurrency": 16,
            "timeout_s": 5,
            "max_retries": 1,
            "backoff_base_s": 0.01,
            "backoff_max_s": 0.02,
            "parse_retries": 0,
            "cache_path": str(cache_path),
            "progress": False,
        },
    }


def _items(n: int) -> list[tuple[str, StubSupportInput, dict[str, str]]]:
    return [(f"i{i}", StubSupportInput(claim=f"claim {i}", evidence="some evidence"), {}) for i in range(n)]


@pytest.mark.integration
def test_second_run_makes_no_http_calls(tmp_path: Path) -> None:
    task = stub_support_task(tmp_path)
    with stub_server_thread() as s:
        judge = LLMJudge(task, _cfg(s.base_url, tmp_path / "c.sqlite"), prompts_dir=tmp_path)
        first = run_judgments_sync(judge, _items(40), "first")
        assert s.counts["requests"] == 40 and not any(j.cache_hit for j in first)
        s.reset_counts()
        second = run_judgments_sync(judge, _items(40), "second")
        assert s.counts["requests"] == 0
        # a fresh judge (new process in real life) reading the same file also hits
        judge.close()
        third = run_judgments_sync(
            LLMJudge(task, _cfg(s.base_url, tmp_path / "c.sqlite"), prompts_dir=tmp_path), _items(40), "third"
        )
        assert s.counts["requests"] == 0
    assert all(j.cache_hit and j.attempts == 0 and j.latency_s == 0.0 for j in second + third)
    assert [j.value for j in second] == [j.value for j in first] == [j.value for j in third]
    assert [j.cost_usd for j in second] == [j.cost_usd for j in first]  # what the answer cost when fetched
    summary = usage_summary(second)
    assert summary["cache_hits"] == 40 and summary["calls"] == 0 and summary["cost_usd"] == 0.0
    assert summary["cost_usd_cached"] == pytest.approx(usage_summary(first)["cost_usd"])


@pytest.mark.integration
def test_temperature_and_prompt_changes_miss(tmp_path: Path) -> None:
    task = stub_support_task(tmp_path)
    cache_path = tmp_path / "c.sqlite"
    with stub_server_thread() as s:
        run_judgments_sync(
            LLMJudge(task, _cfg(s.base_url, cache_path), prompts_dir=tmp_path), _items(10), "a"
        )
        s.reset_counts()
        hot = LLMJudge(task, _cfg(s.base_url, cache_path, temperature=0.7), prompts_dir=tmp_path)
        assert not any(j.cache_hit for j in run_judgments_sync(hot, _items(10), "temp"))
        assert s.counts["requests"] == 10
        # same rendered messages, different template bytes (a comment) -> different prompt hash -> miss
        s.reset_counts()
        other = tmp_path / "v2"
        edited = stub_support_task(other, prompt_yaml=STUB_PROMPT_YAML + "# clarified wording\n")
        judge2 = LLMJudge(edited, _cfg(s.base_url, cache_path), prompts_dir=other)
        assert (
            judge2.prompt.sha256
            != LLMJudge(task, _cfg(s.base_url, cache_path), prompts_dir=tmp_path).prompt.sha256
        )
        assert not any(j.cache_hit for j in run_judgments_sync(judge2, _items(10), "prompt"))
        assert s.counts["requests"] == 10
        # operational knobs are not part of the key
        s.reset_counts()
        cfg = _cfg(s.base_url, cache_path)
        cfg["runtime"] = {**cfg["runtime"], "max_concurrency": 3, "timeout_s": 9, "max_retries": 0}
        fast = LLMJudge(task, cfg, prompts_dir=tmp_path)
        assert all(j.cache_hit for j in run_judgments_sync(fast, _items(10), "ops"))
        assert s.counts["requests"] == 0


PROSE_RULES = [(r"claim [02468]\b", "I think it is supported.")]  # even items answer in prose


def _with_runtime(cfg: dict[str, Any], **runtime: Any) -> dict[str, Any]:
    return {**cfg, "runtime": {**cfg["runtime"], **runtime}}


@pytest.mark.integration
def test_parse_failures_are_kept_and_a_deterministic_judge_is_not_reasked(tmp_path: Path) -> None:
    """Issue 15: a forced rerun re-paid 3 calls per unparseable answer (1 + 2 parse retries) every time."""
    task = stub_support_task(tmp_path)
    cfg = _with_runtime(_cfg("", tmp_path / "c.sqlite"), parse_retries=2)
    with stub_server_thread(rules=PROSE_RULES) as s:
        cfg["api_base"] = s.base_url
        judge = LLMJudge(task, cfg, prompts_dir=tmp_path)
        first = run_judgments_sync(judge, _items(10), "a")
        assert [j.ok for j in first] == [i % 2 == 1 for i in range(10)]
        assert s.counts["requests"] == 5 + 5 * 3  # every failure used its parse retries
        assert len(judge.cache) == 5 and judge.cache.parse_failure_count() == 5  # type: ignore[union-attr]
        s.reset_counts()
        second = run_judgments_sync(LLMJudge(task, cfg, prompts_dir=tmp_path), _items(10), "b")
        assert s.counts["requests"] == 0  # nothing re-paid: same request, same (unparseable) answer
    assert all(j.cache_hit and j.attempts == 0 for j in second)
    bad = second[0]
    assert bad.status == "failed" and bad.value is None and bad.error.startswith("parse: ")
    assert bad.raw_output == "I think it is supported." and bad.error == first[0].error
    assert bad.prompt_tokens == first[0].prompt_tokens  # what the answers cost when fetched
    assert usage_summary(second)["calls"] == 0 and usage_summary(second)["failures"] == {"parse": 5}


@pytest.mark.integration
def test_a_fixed_parser_turns_stored_answers_into_judgments_for_free(tmp_path: Path) -> None:
    task = stub_support_task(tmp_path)
    cfg = _cfg("", tmp_path / "c.sqlite")
    with stub_server_thread(rules=PROSE_RULES) as s:
        cfg["api_base"] = s.base_url
        run_judgments_sync(LLMJudge(task, cfg, prompts_dir=tmp_path), _items(10), "a")
        s.reset_counts()

        def lenient(raw: str, inputs: Any) -> Any:
            if raw.startswith("I think it is supported"):
                return StubSupportOutput(supported="yes", score=1.0)
            return task.parse(raw, inputs)

        fixed = dataclasses.replace(task, parse=lenient)
        judge = LLMJudge(fixed, cfg, prompts_dir=tmp_path)
        again = run_judgments_sync(judge, _items(10), "fixed")
        assert s.counts["requests"] == 0
        assert all(j.ok for j in again) and [j.value for j in again[0::2]] == [1.0] * 5
        assert judge.cache.parse_failure_count() == 0 and len(judge.cache) == 10  # type: ignore[union-attr]


@pytest.mark.integration
@pytest.mark.parametrize("how", ["config", "env", "temperature"])
def test_reask_only_when_asked_or_not_deterministic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    task = stub_support_task(tmp_path)
    cfg = _cfg("", tmp_path / "c.sqlite", temperature=0.7 if how == "temperature" else 0.0)
    with stub_server_thread(rules=PROSE_RULES) as s:
        cfg["api_base"] = s.base_url
        run_judgments_sync(LLMJudge(task, cfg, prompts_dir=tmp_path), _items(10), "a")
        s.reset_counts()
        if how == "config":
            cfg = _with_runtime(cfg, reask_parse_failures=True)
        elif how == "env":
            monkeypatch.setenv(REASK_ENV, "1")
        second = run_judgments_sync(LLMJudge(task, cfg, prompts_dir=tmp_path), _items(10), "b")
        assert s.counts["requests"] == 5  # exactly the unparseable ones (parse_retries=0), never the answered
    assert [j.cache_hit for j in second] == [i % 2 == 1 for i in range(10)]
    assert all(j.error.startswith("parse: ") for j in second[0::2])


@pytest.mark.integration
def test_call_failures_are_never_stored(tmp_path: Path) -> None:
    task = stub_support_task(tmp_path)
    cfg = _with_runtime(_cfg("", tmp_path / "c.sqlite"), max_retries=0)
    with stub_server_thread(faults={"500": 1.0}) as s:
        cfg["api_base"] = s.base_url
        judge = LLMJudge(task, cfg, prompts_dir=tmp_path)
        down = run_judgments_sync(judge, _items(6), "down")
        assert all(j.error.startswith("call: server: ") for j in down)
        assert len(judge.cache) == 0 and judge.cache.parse_failure_count() == 0  # type: ignore[union-attr]
        s.faults = {}
        s.reset_counts()
        up = run_judgments_sync(judge, _items(6), "up")
        assert s.counts["requests"] == 6 and all(j.ok for j in up)


@pytest.mark.integration
def test_api_key_never_in_records_or_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "fake-test-SUPERSECRET-0123456789abcdef"
    wrong = "fake-test-WRONGSECRET-0123456789abcdef"
    task = stub_support_task(tmp_path)
    cache_path = tmp_path / "c.sqlite"
    with stub_server_thread(require_api_key=secret) as s:
        monkeypatch.setenv("RB_TEST_JUDGE_KEY", secret)
        cfg = _cfg(s.base_url, cache_path, api_key_env="RB_TEST_JUDGE_KEY")
        judge = LLMJudge(task, cfg, prompts_dir=tmp_path)
        good = run_judgments_sync(judge, _items(5), "good")
        assert all(j.ok for j in good)
        monkeypatch.setenv("RB_TEST_JUDGE_KEY", wrong)  # the stub echoes the wrong key in its 401 body
        bad = run_judgments_sync(judge, [("x", StubSupportInput(claim="new", evidence="e"), {})], "bad")
        judge.close()
    assert bad[0].status == "failed" and bad[0].error.startswith("call: auth: ") and bad[0].attempts == 1
    write_judgments(tmp_path / "j.parquet", [*good, *bad])
    blobs = [j.model_dump_json() for j in [*good, *bad, *read_judgments(tmp_path / "j.parquet")]]
    for f in tmp_path.glob("c.sqlite*"):
        blobs.append(f.read_bytes().decode("latin-1"))
    blobs.append((tmp_path / "j.parquet").read_bytes().decode("latin-1"))
    for blob in blobs:
        for key in (secret, wrong, "SUPERSECRET", "WRONGSECRET"):
            assert key not in blob
