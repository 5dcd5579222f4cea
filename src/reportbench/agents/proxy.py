"""The loopback budget proxy every agent's LLM and search calls go through (docs/agents.md §4).

Why outside the agent: budgets and fairness cannot depend on each agent's own accounting (some have none, some
count differently). One aiohttp server on 127.0.0.1 per system run speaks
- OpenAI chat completions (`POST /v1/chat/completions`, streaming answered as one SSE chunk) and forwards to the
  configured endpoint (`api_base`: raw HTTP, key from `api_key_env`) or to any provider through litellm;
- Tavily search (`POST /tavily/search`) and Exa search (`POST /exa/search`), answered by the `SearchService`
  (per-day cache, shared rate limit).
Each task gets its own token (the "API key" its adapter sees); the token selects the task's ledger, which counts
LLM calls, tokens, dollars and search calls, records the queries, and refuses (HTTP 402, `budget_exceeded`) once a
limit is reached. Upstream error bodies are redacted before they are relayed (providers echo keys).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import ClientSession, ClientTimeout, web

from reportbench.agents.protocol import AgentSystemConfig, Budget, Usage
from reportbench.agents.search.base import SearchError, SearchService

PriceFn = Callable[[int, int], float | None]


@dataclass
class TaskLedger:
    """One task's usage and the first limit it hit (None while within budget)."""

    task_id: str
    budget: Budget
    usage: Usage = field(default_factory=Usage)
    queries: list[str] = field(default_factory=list)
    models: set[str] = field(default_factory=set)
    over_budget: str | None = None
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _refuse(self, reason: str, what: str) -> str:
        if self.over_budget is None:
            self.over_budget = reason
        if what == "llm":
            self.usage.llm_refused += 1
        else:
            self.usage.search_refused += 1
        return reason

    def _admit(self, what: str, counter: str, cap: int | None, spends: bool) -> str | None:
        """None when one more call is allowed (its counter is bumped); else the refusal's reason (counted).
        `cap` limits `counter` itself; `spends`: the call uses tokens and dollars, which must be left."""
        u = self.usage
        with self.lock:
            if self.closed:
                return self._refuse("task already finished", what)
            used = getattr(u, counter)
            if cap is not None and used >= cap:
                return self._refuse(f"{counter}: {used} of {cap} used", what)
            spent = self._spent(strict=False) if spends else None
            if spent is not None:
                return self._refuse(spent, "llm")
            setattr(u, counter, used + 1)
            return None

    def admit_llm(self) -> str | None:
        """None when one more LLM call is allowed; else the reason (and the refusal is counted)."""
        return self._admit("llm", "llm_calls", self.budget.llm_calls, spends=True)

    def admit_embedding(self) -> str | None:
        """Embeddings do not use up `llm_calls` (an agent may embed many chunks) but their tokens count."""
        return self._admit("llm", "embedding_calls", None, spends=True)

    def admit_search(self) -> str | None:
        return self._admit("search", "search_calls", self.budget.search_calls, spends=False)

    def _spent(self, *, strict: bool) -> str | None:
        """The task's tokens or dollars used up (`strict`: beyond the limit, where a call that started under it
        may end)."""
        b, u = self.budget, self.usage
        tokens = u.prompt_tokens + u.completion_tokens
        if b.tokens is not None and (tokens > b.tokens if strict else tokens >= b.tokens):
            return f"tokens: {tokens} of {b.tokens} used"
        if b.usd is not None and u.usd is not None and (u.usd > b.usd if strict else u.usd >= b.usd):
            return f"usd: {u.usd:.4f} of {b.usd} spent"
        return None

    def add_tokens(self, prompt: int, completion: int, usd: float | None) -> None:
        with self.lock:
            self.usage.prompt_tokens += prompt
            self.usage.completion_tokens += completion
            self.usage.usd = None if (usd is None or self.usage.usd is None) else self.usage.usd + usd

    def exceeded_at_end(self) -> str | None:
        """A limit the last admitted call overshot (a call that starts under a limit may end over it)."""
        return self._spent(strict=True)


def price_fn(cfg: AgentSystemConfig) -> PriceFn:
    """Dollars of one call: the config's `price`, else litellm's price map for a hosted model; None otherwise."""
    if cfg.price is not None:
        p = cfg.price
        return lambda i, o: (i * p.input_per_mtok + o * p.output_per_mtok) / 1e6
    if cfg.api_base:  # a self-hosted or proxied endpoint: a provider's list price would be a guess
        return lambda i, o: None

    def from_litellm(i: int, o: int) -> float | None:
        import litellm  # import cost: ~3.5 s, only for a hosted model without a configured price

        try:
            a, b = litellm.cost_per_token(model=cfg.model, prompt_tokens=i, completion_tokens=o)
        except Exception:  # noqa: BLE001 - unknown to the price map: the dollars are undefined, not 0
            return None
        return float(a) + float(b)

    return from_litellm


def upstream_model(cfg: AgentSystemConfig) -> str:
    """The model name an OpenAI-compatible `api_base` expects (litellm's `openai/` prefix removed)."""
    return cfg.model.split("/", 1)[1] if cfg.api_base and cfg.model.startswith("openai/") else cfg.model


def _redacted(text: str, keys: tuple[str, ...]) -> str:
    from reportbench.redaction import redact  # lazy: +2 ms to import (python -X importtime)

    return redact(text, keys)


def _error(status: int, message: str, kind: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": kind, "code": kind}}, status=status)


def _sse(completion: dict[str, Any]) -> bytes:
    """A complete chat completion as a stream: one delta chunk with everything, a final chunk with usage."""
    choice = (completion.get("choices") or [{}])[0]
    msg = choice.get("message") or {}
    delta: dict[str, Any] = {"role": "assistant", "content": msg.get("content")}
    if msg.get("tool_calls"):
        delta["tool_calls"] = [{**tc, "index": i} for i, tc in enumerate(msg["tool_calls"])]
    base = {k: completion.get(k) for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {
            **base,
            "choices": [{"index": 0, "delta": {}, "finish_reason": choice.get("finish_reason") or "stop"}],
            "usage": completion.get("usage"),
        },
    ]
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


class AgentProxy:
    """The server; `register(task_id, budget)` gives the token a task's adapter uses as its API keys."""

    def __init__(self, cfg: AgentSystemConfig, search: SearchService, *, host: str = "127.0.0.1") -> None:
        self.cfg = cfg
        self.search = search
        self.host = host
        self.port = 0
        self.price = price_fn(cfg)
        self.ledgers: dict[str, TaskLedger] = {}
        self.upstream_statuses: list[int] = []  # HTTP status of every failed upstream LLM call
        # an upstream answer no retry fixes (bad key, unknown model, exhausted quota): the run stops starting tasks
        self.fatal: str | None = None
        env = cfg.api_key_env
        self._key = os.environ.get(env) if env else None
        self._secrets = tuple(v for v in (self._key,) if v)
        self._runner: web.AppRunner | None = None
        self._http: ClientSession | None = None

    @property
    def llm_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def tavily_url(self) -> str:
        return f"http://{self.host}:{self.port}/tavily"

    @property
    def exa_url(self) -> str:
        return f"http://{self.host}:{self.port}/exa"

    def register(self, task_id: str, budget: Budget) -> str:
        token = "rbtask-" + secrets.token_hex(16)
        self.ledgers[token] = TaskLedger(task_id, budget)
        return token

    # -- lifecycle
    def make_app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024**2)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_post("/embeddings", self._embeddings)
        app.router.add_post("/tavily/search", self._tavily)
        app.router.add_post("/exa/search", self._exa)
        return app

    async def start(self) -> AgentProxy:
        self._http = ClientSession(timeout=ClientTimeout(total=float(self.cfg.budget.wall_s)))
        self._runner = web.AppRunner(self.make_app(), access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._http is not None:
            await self._http.close()

    # -- helpers
    def _ledger(self, request: web.Request, body: dict[str, Any]) -> TaskLedger | None:
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip() or request.headers.get("x-api-key") or body.get("api_key")
        return self.ledgers.get(str(token or ""))

    async def _json(self, request: web.Request) -> dict[str, Any] | None:
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError):
            return None
        return body if isinstance(body, dict) else None

    # -- LLM
    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self._json(request)
        if body is None:
            return _error(400, "the body is not a JSON object", "invalid_request_error")
        ledger = self._ledger(request, body)
        if ledger is None:
            return _error(401, "unknown proxy token", "invalid_api_key")
        refused = ledger.admit_llm()
        if refused is not None:
            return _error(402, f"budget exceeded: {refused}", "budget_exceeded")
        stream = bool(body.pop("stream", False))
        body.pop("stream_options", None)
        try:
            status, completion = await self._forward(body)
        except Exception as exc:  # noqa: BLE001 - relayed as a 502 with the reason (redacted)
            self.upstream_statuses.append(502)
            return _error(502, _redacted(f"upstream: {type(exc).__name__}: {exc}", self._secrets), "upstream_error")
        if status >= 400:
            self.upstream_statuses.append(status)
            text = _redacted(json.dumps(completion), self._secrets)
            if self.fatal is None and (status in (401, 403, 404) or "insufficient_quota" in text):
                self.fatal = f"the LLM provider answered HTTP {status}: {text[:300]}"
            return web.Response(status=status, text=text, content_type="application/json")
        usage = completion.get("usage") or {}
        prompt, comp = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        ledger.add_tokens(prompt, comp, self.price(prompt, comp))
        ledger.models.add(str(completion.get("model") or self.cfg.model))
        if stream:
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            await resp.write(_sse(completion))
            await resp.write_eof()
            return resp
        return web.json_response(completion)

    async def _forward(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.cfg.api_base:
            assert self._http is not None
            headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
            url = self.cfg.api_base.rstrip("/") + "/chat/completions"
            async with self._http.post(url, json={**body, "model": upstream_model(self.cfg)}, headers=headers) as r:
                try:
                    data = await r.json(content_type=None)
                except (ValueError, UnicodeDecodeError):
                    data = {"error": {"message": f"upstream answered HTTP {r.status} without JSON"}}
                return r.status, data if isinstance(data, dict) else {"error": {"message": "not an object"}}
        import litellm  # import cost: ~3.5 s, only for hosted providers

        params = {k: v for k, v in body.items() if k != "model"}
        resp = await litellm.acompletion(model=self.cfg.model, api_key=self._key, **params)
        return 200, resp.model_dump()

    async def _embeddings(self, request: web.Request) -> web.Response:
        """Embeddings for agents that rank chunks with them (gpt-researcher): forwarded like chat, counted apart."""
        body = await self._json(request)
        if body is None:
            return _error(400, "the body is not a JSON object", "invalid_request_error")
        ledger = self._ledger(request, body)
        if ledger is None:
            return _error(401, "unknown proxy token", "invalid_api_key")
        refused = ledger.admit_embedding()
        if refused is not None:
            return _error(402, f"budget exceeded: {refused}", "budget_exceeded")
        model = str(self.cfg.options.get("embedding_model") or body.get("model") or "text-embedding-3-small")
        try:
            if self.cfg.api_base:
                assert self._http is not None
                headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
                url = self.cfg.api_base.rstrip("/") + "/embeddings"
                async with self._http.post(url, json={**body, "model": model}, headers=headers) as r:
                    status, data = r.status, await r.json(content_type=None)
            else:
                import litellm  # import cost: ~3.5 s, only for hosted providers

                params = {k: v for k, v in body.items() if k not in ("model", "input")}
                resp = await litellm.aembedding(model=model, input=body.get("input"), api_key=self._key, **params)
                status, data = 200, resp.model_dump()
        except Exception as exc:  # noqa: BLE001 - relayed as a 502 with the reason (redacted)
            return _error(502, _redacted(f"upstream: {type(exc).__name__}: {exc}", self._secrets), "upstream_error")
        if status >= 400 or not isinstance(data, dict):
            return web.Response(
                status=status if status >= 400 else 502,
                content_type="application/json",
                text=_redacted(json.dumps(data), self._secrets),
            )
        prompt = int((data.get("usage") or {}).get("prompt_tokens") or 0)
        ledger.add_tokens(prompt, 0, self.price(prompt, 0))
        return web.json_response(data)

    # -- search
    async def _search(self, request: web.Request, api: str) -> web.Response:
        body = await self._json(request)
        if body is None:
            return _error(400, "the body is not a JSON object", "invalid_request_error")
        ledger = self._ledger(request, body)
        if ledger is None:
            return _error(401, "unknown proxy token", "invalid_api_key")
        query = str(body.get("query") or "").strip()
        if not query:
            return _error(400, "query is empty", "invalid_request_error")
        refused = ledger.admit_search()
        if refused is not None:
            return _error(402, f"budget exceeded: {refused}", "budget_exceeded")
        n = body.get("max_results") if api == "tavily" else body.get("numResults")
        n = int(n) if isinstance(n, int) and 0 < n <= 50 else self.cfg.search.max_results
        with ledger.lock:
            ledger.queries.append(query)
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        try:
            hits, cached = await loop.run_in_executor(None, self.search.search, query, n)
        except SearchError as exc:
            return _error(502, _redacted(str(exc), self._secrets), "search_error")
        if not cached:
            with ledger.lock:
                ledger.usage.search_requests += 1
        if api == "tavily":
            results = [
                {
                    "title": h.title,
                    "url": h.url,
                    "content": h.content,
                    "score": h.score,
                    "raw_content": h.content if body.get("include_raw_content") else None,
                    "published_date": h.published,
                }
                for h in hits
            ]
            return web.json_response(
                {"query": query, "results": results, "images": [], "response_time": time.monotonic() - started}
            )
        results = [
            {
                "id": h.url,
                "url": h.url,
                "title": h.title,
                "text": h.content,
                "score": h.score,
                "publishedDate": h.published,
            }
            for h in hits
        ]
        return web.json_response({"requestId": "reportbench-proxy", "results": results})

    async def _tavily(self, request: web.Request) -> web.Response:
        return await self._search(request, "tavily")

    async def _exa(self, request: web.Request) -> web.Response:
        return await self._search(request, "exa")
