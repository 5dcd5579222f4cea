"""The loopback OpenAI-compatible stub: deterministic answers, seeded faults, counters, three ways to run."""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import urllib.request
from collections import Counter

import aiohttp
import pytest

from reportbench.stub_server import (
    FAULT_KINDS,
    StubServer,
    StubSupportOutput,
    _HashStream,
    default_responder,
    parse_faults,
    register,
    request_digest,
    stub_server_thread,
    value_for_schema,
)

SCHEMA_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "StubSupportOutput", "schema": StubSupportOutput.model_json_schema()},
}
MSGS = [{"role": "system", "content": "be terse"}, {"role": "user", "content": "Claim: x\nEvidence: y"}]


# ------------------------------------------------------------------------------------------------ core


@pytest.mark.core
def test_default_responder_is_valid_for_schema_and_deterministic() -> None:
    a = default_responder(MSGS, SCHEMA_FORMAT)
    assert a == default_responder(MSGS, SCHEMA_FORMAT)
    StubSupportOutput.model_validate_json(a)
    other = [dict(MSGS[0]), {"role": "user", "content": "Claim: z\nEvidence: y"}]
    answers = {default_responder([{"role": "user", "content": f"q{i}"}], SCHEMA_FORMAT) for i in range(50)}
    assert len(answers) > 10  # derived from the request hash, so it varies across requests
    StubSupportOutput.model_validate_json(default_responder(other, SCHEMA_FORMAT))
    assert json.loads(default_responder(MSGS, {"type": "json_object"}))
    assert default_responder(MSGS, None).startswith("stub answer ")


@pytest.mark.core
def test_a_rewrite_request_gets_its_report_back() -> None:
    """DeepResearch Bench's clean step asks to rewrite the `<<<REPORT … REPORT>>>` material and rejects answers under
    100 characters; a 'stub answer <hex>' failed every item, so `judge=llm` against the stub could not pass."""
    report = "# Title\n\n" + "A sentence long enough to keep. " * 5
    msgs = [{"role": "system", "content": "tidy"},
            {"role": "user", "content": f"Rewrite the report below.\n\n<<<REPORT\n{report}\nREPORT>>>\n"}]
    assert default_responder(msgs, None) == report.strip()
    assert default_responder(MSGS, None).startswith("stub answer ")  # other plain-text requests as before


@pytest.mark.core
def test_value_for_schema_handles_refs_arrays_enums_and_bounds() -> None:
    schema = {
        "$defs": {
            "Item": {
                "type": "object",
                "properties": {
                    "k": {"enum": ["a", "b"]},
                    "n": {"type": "integer", "minimum": 0, "maximum": 2},
                },
            }
        },
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}, "minItems": 2, "maxItems": 2},
            "opt": {"anyOf": [{"type": "null"}, {"type": "number", "minimum": 5, "maximum": 6}]},
            "flag": {"type": "boolean"},
            "c": {"const": 7},
        },
    }
    v = value_for_schema(schema, _HashStream("seed"))
    assert len(v["items"]) == 2 and all(i["k"] in "ab" and 0 <= i["n"] <= 2 for i in v["items"])
    assert 5 <= v["opt"] <= 6 and isinstance(v["flag"], bool) and v["c"] == 7


@pytest.mark.core
def test_fault_draws_are_seeded_per_request_not_per_arrival_order() -> None:
    digests = [request_digest([{"role": "user", "content": str(i)}], None) for i in range(2000)]
    a = StubServer(fault_rate=0.2, seed=3)
    b = StubServer(fault_rate=0.2, seed=3)
    first = [a._draw_fault(d) for d in digests]
    second = [b._draw_fault(d) for d in reversed(digests)][::-1]
    assert first == second
    rate = sum(f is not None for f in first) / len(first)
    assert 0.16 < rate < 0.24
    assert set(Counter(f for f in first if f)) == set(FAULT_KINDS)
    # the n-th repeat of the same request gets a fresh draw (so a retry can succeed)
    repeats = [a._draw_fault(digests[0]) for _ in range(50)]
    assert len(set(repeats)) > 1


@pytest.mark.core
def test_fault_config_validation() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        StubServer(faults={"418": 0.1})
    with pytest.raises(ValueError, match="more than 1"):
        StubServer(faults={"429": 0.7, "500": 0.7})
    assert parse_faults("429=0.05, timeout=0.1") == {"429": 0.05, "timeout": 0.1}
    assert parse_faults(None) is None
    assert StubServer(fault_rate=0.5).faults == {k: 0.1 for k in FAULT_KINDS}


@pytest.mark.core
def test_cli_registration() -> None:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["stub-server", "--port", "9999", "--latency-ms", "5", "--fault-rate", "0.1"])
    assert (args.port, args.latency_ms, args.fault_rate) == (9999, 5.0, 0.1)
    assert callable(args.func)


# ------------------------------------------------------------------------------------------------ HTTP


async def _post(session: aiohttp.ClientSession, url: str, body: dict, **kw: object) -> tuple[int, str]:
    async with session.post(url + "/chat/completions", json=body, **kw) as resp:
        return resp.status, await resp.text()


@pytest.mark.integration
def test_chat_models_rules_and_usage() -> None:
    async def main() -> None:
        async with StubServer(rules=[(r"magic", '{"supported": "no", "score": 0.0}')]) as s:
            async with aiohttp.ClientSession() as session:
                async with session.get(s.base_url + "/models") as resp:
                    assert (await resp.json())["data"][0]["id"] == "stub-judge"
                body = {"model": "stub-judge", "messages": MSGS, "response_format": SCHEMA_FORMAT}
                status, text = await _post(session, s.base_url, body)
                assert status == 200
                payload = json.loads(text)
                content = payload["choices"][0]["message"]["content"]
                assert content == default_responder(MSGS, SCHEMA_FORMAT)
                assert payload["usage"]["prompt_tokens"] > 0 and payload["usage"]["completion_tokens"] > 0
                body["messages"] = [{"role": "user", "content": "the magic word"}]
                _, text = await _post(session, s.base_url, body)
                assert (
                    json.loads(text)["choices"][0]["message"]["content"]
                    == '{"supported": "no", "score": 0.0}'
                )
            assert s.counts["requests"] == 2 and s.counts["ok"] == 2

    asyncio.run(main())


@pytest.mark.integration
@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_fault_kind(kind: str) -> None:
    async def main() -> None:
        async with StubServer(faults={kind: 1.0}, timeout_sleep_s=2.0) as s:
            body = {"model": "stub-judge", "messages": MSGS}
            async with aiohttp.ClientSession() as session:
                if kind == "timeout":
                    with pytest.raises(asyncio.TimeoutError):
                        await _post(session, s.base_url, body, timeout=aiohttp.ClientTimeout(total=0.2))
                elif kind == "truncated":
                    with pytest.raises(aiohttp.ClientError):
                        await _post(session, s.base_url, body)
                else:
                    status, text = await _post(session, s.base_url, body)
                    if kind == "malformed":
                        assert status == 200
                        with pytest.raises(json.JSONDecodeError):
                            json.loads(json.loads(text)["choices"][0]["message"]["content"])
                    else:
                        assert status == int(kind)
            assert s.counts[kind] == 1 and s.counts["requests"] == 1

    asyncio.run(main())


@pytest.mark.integration
def test_require_api_key_echoes_wrong_key() -> None:
    async def main() -> None:
        async with StubServer(require_api_key="sk-right-000000") as s:
            async with aiohttp.ClientSession() as session:
                body = {"model": "stub-judge", "messages": MSGS}
                status, text = await _post(
                    session, s.base_url, body, headers={"Authorization": "Bearer sk-wrong"}
                )
                assert status == 401 and "sk-wrong" in text
                ok, _ = await _post(
                    session, s.base_url, body, headers={"Authorization": "Bearer sk-right-000000"}
                )
                assert ok == 200

    asyncio.run(main())


@pytest.mark.integration
def test_thread_context_manager_for_sync_code() -> None:
    with stub_server_thread(latency_ms=1) as s:
        req = urllib.request.Request(
            s.base_url + "/chat/completions",
            data=json.dumps({"model": "m", "messages": MSGS}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert json.loads(resp.read())["object"] == "chat.completion"
        with urllib.request.urlopen(s.base_url.removesuffix("/v1") + "/stats", timeout=5) as resp:
            assert json.loads(resp.read()) == {"requests": 1, "ok": 1}


@pytest.mark.integration
def test_runs_as_a_process() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "reportbench.stub_server",
            "--port",
            "0",
            "--latency-ms",
            "0",
            "--max-seconds",
            "30",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("listening on http://127.0.0.1:")
        base = line.removeprefix("listening on ")
        with urllib.request.urlopen(base + "/models", timeout=5) as resp:
            assert resp.status == 200
    finally:
        proc.terminate()
        proc.wait(10)
