"""The loopback budget proxy every agent's LLM and search calls go through (docs/agents.md §4).

Why outside the agent: budgets and fairness cannot depend on each agent's own accounting (some have none, some
count differently). One aiohttp server on 127.0.0.1 per system run speaks
- OpenAI chat completions (`POST /v1/chat/completions`, streaming answered as one SSE chunk) and forwards to the
  configured endpoint (`api_base`: raw HTTP, key from `api_key_env`) or to any provider through litellm;
- Tavily search (`POST /tavily/search`) and Exa search (`POST /exa/search`), answered by the `SearchService`
  (per-day cache, shared rate limit); a request for page text (Tavily `include_raw_content`, Exa `contents.text`)
  is answered with each page's main text, from the backend where it offers it, else through the spine's fetch path
  (`search.pages.PageReader`: recorded pages, page cache, SSRF-guarded fetcher), and recorded with the task.
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
from reportbench.agents.search.base import SearchError, SearchHit, SearchService
from reportbench.agents.search.pages import PageReader, PageText

PriceFn = Callable[[int, int], float | None]
# completion tokens reserved for a call that sets no max_tokens when the model's own ceiling is unknown (a
# self-hosted endpoint); `options.max_output_tokens` overrides it
DEFAULT_OUTPUT_CEILING = 16384
# tokens counted per message on top of its text (role, separators), as OpenAI's chat format adds about 3-4
PER_MESSAGE_TOKENS = 4


@dataclass
class Reservation:
    """One admitted LLM call's worst case, held against the task's budget until the answer settles it."""

    tokens: int = 0
    usd: float = 0.0
    capped: str | None = None  # what the proxy lowered to fit the budget ("max_tokens 4000 -> 1200"), if anything


@dataclass
class Rates:
    """Dollars per prompt and per completion token (None: the price is unknown, dollars cannot be reserved) and the
    model's own output ceiling from the price map (None: unknown)."""

    prompt: float | None = None
    completion: float | None = None
    max_output: int | None = None


@dataclass
class TaskLedger:
    """One task's usage, what its calls in flight have reserved, and the first limit it hit (None while within
    budget). Every call reserves its worst case before it is forwarded, so concurrent calls cannot together spend
    past the budget: the sum of reservations and settled usage never exceeds it (docs/agents.md §4)."""

    task_id: str
    budget: Budget
    usage: Usage = field(default_factory=Usage)
    queries: list[str] = field(default_factory=list)
    pages: list[PageText] = field(default_factory=list)  # result pages whose text was asked for, as answered
    models: set[str] = field(default_factory=set)
    over_budget: str | None = None
    closed: bool = False
    reserved_tokens: int = 0
    reserved_usd: float = 0.0
    in_flight: int = 0
    deadline: float | None = None  # time.monotonic() past which no call is admitted (the task's wall_s)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _refuse(self, reason: str, what: str) -> str:
        if self.over_budget is None:
            self.over_budget = reason
        if what == "llm":
            self.usage.llm_refused += 1
        else:
            self.usage.search_refused += 1
        return reason

    def start_clock(self, wall_s: float | None = None) -> None:
        """Calls are admitted for `wall_s` (default: the budget's) from now; later ones are refused."""
        self.deadline = time.monotonic() + float(wall_s if wall_s is not None else self.budget.wall_s)

    def seconds_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def _gate(self, what: str, counter: str, cap: int | None) -> str | None:
        """The refusal every call shares (finished task, wall time out, call count used up); caller holds the lock."""
        if self.closed:
            return self._refuse("task already finished", what)
        left = self.seconds_left()
        if left is not None and left <= 0:
            return self._refuse(f"wall_s: {self.budget.wall_s:g} s used", what)
        used = getattr(self.usage, counter)
        if cap is not None and used >= cap:
            return self._refuse(f"{counter}: {used} of {cap} used", what)
        return None

    def _admit(self, what: str, counter: str, cap: int | None, spends: bool) -> str | None:
        """None when one more call is allowed (its counter is bumped); else the refusal's reason (counted).
        `cap` limits `counter` itself; `spends`: the call uses tokens and dollars, which must be left."""
        with self.lock:
            refused = self._gate(what, counter, cap)
            if refused is not None:
                return refused
            spent = self._spent(strict=False) if spends else None
            if spent is not None:
                return self._refuse(spent, "llm")
            setattr(self.usage, counter, getattr(self.usage, counter) + 1)
            return None

    def admit_llm(self) -> str | None:
        """None when one more LLM call is allowed; else the reason (and the refusal is counted). Without a
        reservation: for callers that cannot cap the call (a provider's own deep-research API)."""
        return self._admit("llm", "llm_calls", self.budget.llm_calls, spends=True)

    def admit_embedding(self) -> str | None:
        """Embeddings do not use up `llm_calls` (an agent may embed many chunks) but their tokens count."""
        return self._admit("llm", "embedding_calls", None, spends=True)

    def admit_search(self) -> str | None:
        """Search calls are counted before they are forwarded (the count is the reservation): concurrent searches
        never pass `search_calls`."""
        return self._admit("search", "search_calls", self.budget.search_calls, spends=False)

    def reserve_llm(
        self, prompt_tokens: int, max_tokens: int | None, n: int, rates: Rates
    ) -> tuple[Reservation | None, str | None, dict[str, int]]:
        """Admit one chat call by reserving its worst case: `prompt_tokens` (an estimate from above) plus
        `max_tokens` x `n` completion tokens, priced at `rates`. What is left of the task's tokens and dollars
        (after settled usage and the other calls' reservations) caps `n` first, then `max_tokens`; with less than
        one completion token left the call is refused. Returns (reservation, refusal reason, the capped request
        fields to send instead of the agent's)."""
        b = self.budget
        with self.lock:
            refused = self._gate("llm", "llm_calls", b.llm_calls)
            if refused is not None:
                return None, refused, {}
            room: float = float("inf")  # completion tokens the call may still produce in total
            why = ""
            if b.tokens is not None:
                used = self.usage.prompt_tokens + self.usage.completion_tokens
                room = b.tokens - used - self.reserved_tokens - prompt_tokens
                why = (
                    f"tokens: {used} used + {self.reserved_tokens} reserved of {b.tokens}; "
                    f"this call's prompt is ~{prompt_tokens}"
                )
            if b.usd is not None and self.usage.usd is not None and rates.completion is not None:
                left = b.usd - self.usage.usd - self.reserved_usd - prompt_tokens * (rates.prompt or 0.0)
                by_usd = left / rates.completion if rates.completion > 0 else (float("inf") if left >= 0 else -1.0)
                if by_usd < room:
                    room = by_usd
                    why = (
                        f"usd: {self.usage.usd:.4f} spent + {self.reserved_usd:.4f} reserved of {b.usd}; "
                        f"this call's prompt costs ~{prompt_tokens * (rates.prompt or 0.0):.4f}"
                    )
            if room < 1:
                return None, self._refuse(why, "llm"), {}
            asked = max_tokens if max_tokens is not None else (rates.max_output or DEFAULT_OUTPUT_CEILING)
            changes: dict[str, int] = {}
            out = asked or 0  # no token or dollar limit: nothing to hold back (an unknown ceiling counts 0)
            if room != float("inf"):
                whole = int(room)
                per = asked if asked is not None else whole
                new_n = max(1, min(n, whole // max(1, per)))
                out = max(1, min(per, whole // new_n))
                if new_n != n:
                    changes["n"] = new_n
                if out != max_tokens:
                    changes["max_tokens"] = out
            res = Reservation(
                tokens=prompt_tokens + out * changes.get("n", n),
                usd=prompt_tokens * (rates.prompt or 0.0) + out * changes.get("n", n) * (rates.completion or 0.0),
            )
            if changes:
                limit, _, detail = why.partition(": ")
                res.capped = (
                    f"{limit}: max_tokens {max_tokens if max_tokens is not None else 'unset'} x n {n} capped to "
                    f"{out} x {changes.get('n', n)} ({detail})"
                )
            self.reserved_tokens += res.tokens
            self.reserved_usd += res.usd
            self.in_flight += 1
            self.usage.llm_calls += 1
            if changes:
                self.usage.llm_capped += 1
            return res, None, changes

    def reserve_embedding(self, prompt_tokens: int, rates: Rates) -> tuple[Reservation | None, str | None]:
        """Admit one embeddings call by reserving its input tokens (embeddings produce no completion tokens)."""
        b = self.budget
        with self.lock:
            refused = self._gate("llm", "embedding_calls", None)
            if refused is not None:
                return None, refused
            used = self.usage.prompt_tokens + self.usage.completion_tokens
            if b.tokens is not None and used + self.reserved_tokens + prompt_tokens > b.tokens:
                why = f"tokens: {used} used + {self.reserved_tokens} reserved of {b.tokens}; needs ~{prompt_tokens}"
                return None, self._refuse(why, "llm")
            usd = prompt_tokens * (rates.prompt or 0.0)
            if b.usd is not None and self.usage.usd is not None and self.usage.usd + self.reserved_usd + usd > b.usd:
                why = f"usd: {self.usage.usd:.4f} spent + {self.reserved_usd:.4f} reserved of {b.usd}"
                return None, self._refuse(why, "llm")
            res = Reservation(tokens=prompt_tokens, usd=usd)
            self.reserved_tokens += res.tokens
            self.reserved_usd += res.usd
            self.in_flight += 1
            self.usage.embedding_calls += 1
            return res, None

    def settle(self, res: Reservation, prompt: int, completion: int, usd: float | None, *, cut: bool = False) -> None:
        """Replace the call's reservation by what it really used. `cut`: the answer stopped at a cap the proxy set
        (the budget shaped it: the task is recorded over budget)."""
        with self.lock:
            self._release(res)
            self._add(prompt, completion, usd)
            if cut and res.capped and self.over_budget is None:
                self.over_budget = f"{res.capped}; the answer was cut there"

    def release(self, res: Reservation) -> None:
        """A call that failed upstream: its reservation is given back (nothing was used)."""
        with self.lock:
            self._release(res)

    def _release(self, res: Reservation) -> None:
        self.reserved_tokens -= res.tokens
        self.reserved_usd -= res.usd
        self.in_flight -= 1

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

    def _add(self, prompt: int, completion: int, usd: float | None) -> None:
        self.usage.prompt_tokens += prompt
        self.usage.completion_tokens += completion
        self.usage.usd = None if (usd is None or self.usage.usd is None) else self.usage.usd + usd

    def add_tokens(self, prompt: int, completion: int, usd: float | None) -> None:
        with self.lock:
            self._add(prompt, completion, usd)

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


def model_output_ceiling(model: str) -> int | None:
    """The model's most completion tokens per call from litellm's local price map (None when unknown)."""
    import litellm  # import cost: ~3.5 s, only for a hosted model (its calls go through litellm anyway)

    try:
        info = litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - unknown to the map: the default ceiling applies
        return None
    value = info.get("max_output_tokens") or info.get("max_tokens")
    return int(value) if value else None


def _output_request(body: dict[str, Any]) -> tuple[int, str, int | None]:
    """(n, the field that carries the completion limit, its value) of a chat request; ValueError when malformed."""
    n = body.get("n", 1)
    if n is None:
        n = 1
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError("n must be a positive integer")
    field_name = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    value = body.get(field_name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{field_name} must be a positive integer")
    return n, field_name, value


def _texts(value: Any) -> list[str]:
    """Every string inside a message's content (plain text or a list of parts)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return []


def prompt_tokens_upper(body: dict[str, Any]) -> int:
    """A generous count of the prompt's tokens before the call (the reservation; the answer's usage settles it):
    o200k tokens of every string in the messages, tools and response format, plus a few per message. With no
    tokenizer, one token per 2 characters (BPE tokens average ~4)."""
    parts = [*_texts(body.get("messages")), *_texts(body.get("tools")), *_texts(body.get("functions"))]
    parts += _texts(body.get("response_format"))
    messages = body.get("messages")
    return text_tokens_upper(parts) + PER_MESSAGE_TOKENS * (len(messages) if isinstance(messages, list) else 1) + 3


def text_tokens_upper(texts: list[str]) -> int:
    """o200k tokens of the texts (one per 2 characters without the tokenizer)."""
    from reportbench.judges.pricing import o200k_tokenizer  # lazy: +60 ms to import (python -X importtime)

    enc = o200k_tokenizer()
    return sum(len(enc.encode(t, disallowed_special=())) if enc else len(t) // 2 + 1 for t in texts)


def upstream_model(cfg: AgentSystemConfig) -> str:
    """The model name an OpenAI-compatible `api_base` expects (litellm's `openai/` prefix removed)."""
    return cfg.model.split("/", 1)[1] if cfg.api_base and cfg.model.startswith("openai/") else cfg.model


def _page_request(api: str, body: dict[str, Any]) -> tuple[bool, int | None]:
    """(does the request ask for each result's page text, at most how many characters). Tavily:
    `include_raw_content` (true, "markdown" or "text"); Exa: `contents.text` (true or {maxCharacters}) or the
    older top-level `text`."""
    if api == "tavily":
        return bool(body.get("include_raw_content")), None
    contents = body.get("contents")
    text = contents.get("text") if isinstance(contents, dict) else body.get("text")
    if not text:
        return False, None
    chars = text.get("maxCharacters") if isinstance(text, dict) else None
    return True, int(chars) if isinstance(chars, int) and not isinstance(chars, bool) and chars > 0 else None


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

    def __init__(
        self, cfg: AgentSystemConfig, search: SearchService, *, pages: PageReader | None = None, host: str = "127.0.0.1"
    ) -> None:
        self.cfg = cfg
        self.search = search
        self.pages = pages  # None: no page text beyond what the backend returns itself
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
        self._rates: Rates | None = None

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
        ledger = TaskLedger(task_id, budget)
        ledger.start_clock()
        self.ledgers[token] = ledger
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
    def rates(self) -> Rates:
        """The model's price per token and output ceiling (litellm's local price map, or the config's `price`)."""
        if self._rates is None:
            million = 1_000_000
            per_in, per_out = self.price(million, 0), self.price(0, million)
            ceiling = self.cfg.options.get("max_output_tokens")
            if ceiling is None and not self.cfg.api_base:
                ceiling = model_output_ceiling(self.cfg.model)
            self._rates = Rates(
                prompt=None if per_in is None else per_in / million,
                completion=None if per_out is None else per_out / million,
                max_output=int(ceiling) if ceiling else None,
            )
        return self._rates

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self._json(request)
        if body is None:
            return _error(400, "the body is not a JSON object", "invalid_request_error")
        ledger = self._ledger(request, body)
        if ledger is None:
            return _error(401, "unknown proxy token", "invalid_api_key")
        try:
            n, max_field, max_tokens = _output_request(body)
        except ValueError as exc:
            return _error(400, str(exc), "invalid_request_error")
        loop = asyncio.get_running_loop()
        prompt_est = await loop.run_in_executor(None, prompt_tokens_upper, body)
        res, refused, changes = ledger.reserve_llm(prompt_est, max_tokens, n, self.rates())
        if res is None:
            return _error(402, f"budget exceeded: {refused}", "budget_exceeded")
        if "n" in changes:
            body["n"] = changes["n"]
        if "max_tokens" in changes:
            body[max_field] = changes["max_tokens"]
        stream = bool(body.pop("stream", False))
        body.pop("stream_options", None)
        left = ledger.seconds_left()
        try:
            status, completion = await asyncio.wait_for(self._forward(body), timeout=left)
        except Exception as exc:  # noqa: BLE001 - relayed as a 502 with the reason (redacted)
            ledger.release(res)
            self.upstream_statuses.append(502)
            if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) and left is not None:
                reason = f"wall_s: {ledger.budget.wall_s:g} s used (a call in flight was cut)"
                with ledger.lock:
                    ledger.over_budget = ledger.over_budget or reason
                return _error(402, f"budget exceeded: {reason}", "budget_exceeded")
            return _error(502, _redacted(f"upstream: {type(exc).__name__}: {exc}", self._secrets), "upstream_error")
        if status >= 400:
            ledger.release(res)
            self.upstream_statuses.append(status)
            text = _redacted(json.dumps(completion), self._secrets)
            if self.fatal is None and (status in (401, 403, 404) or "insufficient_quota" in text):
                self.fatal = f"the LLM provider answered HTTP {status}: {text[:300]}"
            return web.Response(status=status, text=text, content_type="application/json")
        usage = completion.get("usage") or {}
        prompt, comp = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        cut = any((c or {}).get("finish_reason") == "length" for c in completion.get("choices") or [])
        ledger.settle(res, prompt, comp, self.price(prompt, comp), cut=cut)
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
        loop = asyncio.get_running_loop()
        estimate = await loop.run_in_executor(None, text_tokens_upper, _texts(body.get("input")))
        res, refused = ledger.reserve_embedding(estimate, self.rates())
        if res is None:
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
            ledger.release(res)
            return _error(502, _redacted(f"upstream: {type(exc).__name__}: {exc}", self._secrets), "upstream_error")
        if status >= 400 or not isinstance(data, dict):
            ledger.release(res)
            return web.Response(
                status=status if status >= 400 else 502,
                content_type="application/json",
                text=_redacted(json.dumps(data), self._secrets),
            )
        prompt = int((data.get("usage") or {}).get("prompt_tokens") or 0)
        ledger.settle(res, prompt, 0, self.price(prompt, 0))
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
        want_pages, page_chars = _page_request(api, body)
        with ledger.lock:
            ledger.queries.append(query)
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        try:
            hits, cached = await loop.run_in_executor(
                None, lambda: self.search.search(query, n, raw_content=want_pages)
            )
        except SearchError as exc:
            return _error(502, _redacted(str(exc), self._secrets), "search_error")
        if not cached:
            with ledger.lock:
                ledger.usage.search_requests += 1
        texts: list[str | None] = [None] * len(hits)
        if want_pages:
            pages = await loop.run_in_executor(None, self._page_texts, hits)
            with ledger.lock:
                ledger.pages.extend(pages)
                ledger.usage.pages_fetched += sum(1 for p in pages if p.text is not None)
                ledger.usage.pages_unread += sum(1 for p in pages if p.text is None)
            texts = [p.text[:page_chars] if p.text is not None and page_chars else p.text for p in pages]
        if api == "tavily":
            results = [
                {
                    "title": h.title,
                    "url": h.url,
                    "content": h.content,
                    "score": h.score,
                    # the page's main text, or null when it could not be read (as Tavily answers): never the snippet
                    "raw_content": text,
                    "published_date": h.published,
                }
                for h, text in zip(hits, texts, strict=True)
            ]
            return web.json_response(
                {"query": query, "results": results, "images": [], "response_time": time.monotonic() - started}
            )
        results = [
            {
                "id": h.url,
                "url": h.url,
                "title": h.title,
                # Exa's `text` is the page's text; a page that could not be read keeps the hit's own text (snippet
                # or abstract), which is not counted as a page read
                "text": text if text is not None else h.content,
                "score": h.score,
                "publishedDate": h.published,
            }
            for h, text in zip(hits, texts, strict=True)
        ]
        return web.json_response({"requestId": "reportbench-proxy", "results": results})

    def _page_texts(self, hits: list[SearchHit]) -> list[PageText]:
        """Each hit's page text: the backend's own where it returned one, else the spine's fetch path."""
        out: list[PageText | None] = [
            PageText(url=h.url, source="provider", text=h.raw_content) if h.raw_content else None for h in hits
        ]
        todo = [i for i, p in enumerate(out) if p is None]
        if todo:
            if self.pages is None:
                read = [PageText(url=hits[i].url, source="none", text=None, why="no page reader") for i in todo]
            else:
                read = self.pages.read([hits[i].url for i in todo])
            for i, page in zip(todo, read, strict=True):
                out[i] = page
        return [p for p in out if p is not None]

    async def _tavily(self, request: web.Request) -> web.Response:
        return await self._search(request, "tavily")

    async def _exa(self, request: web.Request) -> web.Response:
        return await self._search(request, "exa")
