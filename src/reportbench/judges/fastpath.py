"""The fast path: a lean aiohttp client for OpenAI-compatible `api_base` endpoints (vLLM, SGLang, llama.cpp).

Why: against a loopback server litellm's own client CPU (5-7 ms per call) is the ceiling (~100-250 calls/s per
process); a self-hosted judge answers faster than that. This client sends the same request body litellm sends
for an OpenAI-compatible endpoint (`response_format` built the way litellm builds it, so answers and cache keys
are the same), and keeps everything above the wire identical: the cache, the one retry layer with
Retry-After, classification into typed failures, fatal-error detection, the shared rate limiter, single-flight
and `max_cost_usd` all live in `client.LLMClient`, which this subclasses by replacing only `_send`.

Chosen by `judge.runtime.transport: fast` (needs `judge.api_base`). It does not import litellm (3.5 s): prices
come from litellm's cost map read as JSON (`pricing.py`).
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import AsyncIterator, Mapping
from typing import Any

from pydantic import BaseModel

from reportbench.judges.client import CallFailed, ClientConfig, LLMClient, SendResult
from reportbench.judges.errors import FatalError
from reportbench.judges.pricing import Price, price_for

try:  # orjson is ~5x faster than json on these bodies; the stdlib is the fallback
    import orjson

    def _dumps(obj: Any) -> bytes:
        return orjson.dumps(obj)

    _loads = orjson.loads
except ImportError:  # pragma: no cover - orjson ships with litellm's dependencies
    import json

    def _dumps(obj: Any) -> bytes:
        return json.dumps(obj).encode("utf-8")

    _loads = json.loads


class HTTPStatusError(Exception):
    """A non-2xx answer; `status_code` and the body text drive `client.classify` / `errors.fatal_kind`."""

    def __init__(self, status_code: int, body: str, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status_code}: {body[:400]}")
        self.status_code = status_code
        self.body = body
        self.litellm_response_headers = {k.lower(): v for k, v in headers.items()}  # read by _retry_after_s


class MalformedResponse(Exception):
    """A 200 whose body is not a chat completion: retried like a server error."""

    status_code = 502


def strict_response_format(output_model: type[BaseModel]) -> dict[str, Any]:
    """`response_format` for a pydantic model exactly as litellm's `type_to_response_format_param` builds it."""
    from openai.lib._pydantic import to_strict_json_schema

    return {
        "type": "json_schema",
        "json_schema": {
            "schema": to_strict_json_schema(output_model),
            "name": output_model.__name__,
            "strict": True,
        },
    }


def response_format_for(mode: str, output_model: type[BaseModel] | None) -> dict[str, Any] | None:
    """The `response_format` for a structured-output mode without asking litellm what the model supports:
    `auto` means a strict JSON schema for a typed answer (OpenAI-compatible servers and the batch APIs take it)."""
    if mode in ("auto", "json_schema") and output_model is not None:
        return strict_response_format(output_model)
    if mode in ("auto", "json_object", "json_schema"):
        return {"type": "json_object"}
    return None


class WithoutLitellm(LLMClient):
    """What the clients that reach a provider without litellm (the fast path, the batch collector) share: the
    price from the local cost map, and the `response_format` built from the structured-output mode."""

    _price: Price | None

    def _prepare(self) -> None:
        if self._prepared:
            return
        c = self.cfg
        self._price = price_for(
            c.model, input_cost_per_token=c.input_cost_per_token, output_cost_per_token=c.output_cost_per_token
        )
        self._prepared = True

    def response_format(
        self, output_model: type[BaseModel] | None, structured: bool = True
    ) -> dict[str, Any] | None:
        """json_schema for a typed answer (OpenAI-compatible servers and the batch APIs take it), else a
        JSON-object hint."""
        memo_key = (output_model, structured)
        if memo_key not in self._formats:
            self._formats[memo_key] = response_format_for(self._mode(structured), output_model)
        return self._formats[memo_key]


class FastClient(WithoutLitellm):
    """`LLMClient` with litellm replaced by one aiohttp session per event loop."""

    def __init__(self, cfg: ClientConfig | Mapping[str, Any]) -> None:
        super().__init__(cfg)
        if not self.cfg.api_base:
            raise FatalError(
                f"judge.runtime.transport=fast needs judge.api_base (an OpenAI-compatible endpoint); "
                f"model {self.cfg.model!r} has none: set judge.api_base or judge.runtime.transport=litellm"
            )
        self.url = self.cfg.api_base.rstrip("/") + "/chat/completions"
        self._sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
        self._lifetimes: list[AsyncIterator[None]] = []
        self._price: Price | None = None

    # -- no litellm anywhere -----------------------------------------------------------------------

    def preflight(self) -> CallFailed | None:
        done, failure = self._preflight
        if not done:
            failure = None
            if self.cfg.api_key_env and not os.environ.get(self.cfg.api_key_env):
                failure = CallFailed("auth", f"environment variable {self.cfg.api_key_env} is not set")
            self._preflight = (True, failure)
        return failure

    # -- the wire --------------------------------------------------------------------------------

    async def _session(self) -> Any:
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            import aiohttp

            connector = aiohttp.TCPConnector(limit=self.max_concurrency, ttl_dns_cache=300)
            session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=self.cfg.runtime.timeout_s),
                json_serialize=lambda o: _dumps(o).decode("utf-8"),
            )
            self._sessions[loop] = session
            # Close it when its loop shuts down (asyncio.run finalises async generators), so a stage never
            # leaks sockets or prints "Unclosed client session".
            lifetime = _close_at_loop_end(session)
            await lifetime.__anext__()
            self._lifetimes.append(lifetime)
        return session

    async def _ready(self) -> None:
        await self._session()

    async def _send(self, body: dict[str, Any], api_key: str | None) -> SendResult:
        session = await self._session()
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        payload = dict(body)
        model = payload["model"]
        if "/" in model:  # litellm strips its provider prefix before sending
            payload["model"] = model.split("/", 1)[1]
        async with session.post(self.url, data=_dumps(payload), headers=headers) as resp:
            raw = await resp.read()
            if resp.status >= 400:
                raise HTTPStatusError(resp.status, raw.decode("utf-8", "replace"), resp.headers)
        try:
            data = _loads(raw)
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise MalformedResponse(f"not a chat completion: {raw[:200]!r}") from exc
        text = message.get("content") or ""
        usage = data.get("usage") or {}
        pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
        cost = self._price.cost(pt, ct) if self._price is not None and pt is not None else None
        finish = data["choices"][0].get("finish_reason")
        return text, pt, ct, cost, None if finish is None else str(finish)


async def _close_at_loop_end(session: Any) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await session.close()


__all__ = ["FastClient", "HTTPStatusError", "strict_response_format"]
