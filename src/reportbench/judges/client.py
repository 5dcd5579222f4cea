"""The one raw LLM client: `litellm.acompletion` with our own retries, bounded concurrency and cost.

Why it looks like this (see shared/specs/stack.md §3):
- litellm is imported lazily, on the first real call: the import costs ~3.5 s, and a fully cached
  rerun (or the offline backend) should never pay it.
- Exactly ONE retry layer: litellm/openai get `max_retries=0` and we retry with tenacity
  (exponential backoff with jitter, capped, honouring Retry-After). Stacking layers multiplies calls.
- Only transient failures are retried (429, 408/409/425, 5xx, timeouts, connection errors); auth and
  bad-request errors fail at once. Fatal classes (`errors.fatal_kind`: auth, model_not_found, quota,
  context_length) are never retried, even when the provider dresses them as a 429 or a 500, and a
  credential preflight (`preflight_problem`, no network call) runs before the first call.
- API keys come only from the environment (`api_key_env` names the variable) and are scrubbed from
  every error message we surface; they never reach a record, a log line or the cache.
- Cost comes from litellm's cost map (`register_model` once for custom prices); unknown stays None.
- Failures are typed values for the caller: `CallFailed(kind, reason, attempts)`.
"""

from __future__ import annotations

import os

from reportbench.judges.ratelimit import provider_key, rough_tokens, shared_limiter
from reportbench.redaction import redact as _redact

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
os.environ.setdefault("LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS", "True")  # never fetch Anthropic's beta-header map
os.environ.setdefault("DVC_NO_ANALYTICS", "1")

import asyncio  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402
import weakref  # noqa: E402
from collections.abc import Mapping  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING, Any, Literal  # noqa: E402
from urllib.parse import urlparse  # noqa: E402

from pydantic import BaseModel, ConfigDict, Field  # noqa: E402
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt  # noqa: E402

from reportbench.judges.errors import FATAL_KINDS, FatalError, FatalJudgeError, fatal_error, fatal_kind  # noqa: E402
from reportbench.judges.litellm_loader import _litellm  # noqa: E402 - client._litellm stays importable
from reportbench.judges.plain import to_plain  # noqa: E402, F401 - client.to_plain stays importable
from reportbench.judges.ratelimit import SharedRateLimiter, SingleFlight  # noqa: E402

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

StructuredMode = Literal["auto", "json_schema", "json_object", "none"]

# keys of the `judge:` config group that belong to other layers and are fine to see here
# `prompts` is the documented prompt-pack choice (judge.prompts: ours | authors), read by the prompt layer
_NON_CLIENT_KEYS = {"backend", "prompts_dir", "description", "task", "params", "offline", "task_models", "prompts"}
_NON_CLIENT_KEYS |= {"output_budgets"}  # resolved per step by the judge (judges/budgets.py)
_NON_CLIENT_KEYS |= {"request"}  # ours | authors: the request kwargs, resolved per step by the judge (llm.py)
_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
_STUB_PLACEHOLDER_KEY = "reportbench-loopback-placeholder"  # only ever sent to a loopback api_base


# ------------------------------------------------------------------------------------------------
# Config
# ------------------------------------------------------------------------------------------------


class BatchRuntime(BaseModel):
    """How batch mode submits and waits (operational: never part of a cache key)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    poll_interval_s: float = Field(30.0, gt=0)
    max_wait_s: float | None = Field(
        None,
        gt=0,
        description="stop waiting after this long (the stage ends incomplete, exit 3; the batch is kept and the next "
        "run collects it); None = wait until done",
    )
    completion_window: str = "24h"
    quiet_s: float = Field(0.5, gt=0, description="submit once no new request arrived for this long")
    max_lines: int = Field(50_000, ge=1, description="requests per batch (OpenAI: 50,000; Anthropic: 100,000)")
    state_path: str | None = Field(None, description="batch ids and results (default: next to the cache)")


class RuntimeConfig(BaseModel):
    """Operational knobs: they change how fast/robustly we get answers, never which answer (not cached on)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_concurrency: int = Field(64, ge=1)
    timeout_s: float = Field(60.0, gt=0)
    max_retries: int = Field(4, ge=0)
    backoff_base_s: float = Field(0.5, ge=0)
    backoff_max_s: float = Field(20.0, ge=0)
    parse_retries: int = Field(2, ge=0)
    cache_path: str | None = ".reportbench/cache/judge.sqlite"
    progress: bool = True
    fatal_after: int = Field(
        3, ge=0, description="stop the stage after this many identical fatal errors (0 = never; errors.py)"
    )
    # judge-stage failure policy (docs/reliability.md; pipeline.enforce_judge_bounds)
    max_failure_rate: float = Field(
        0.1, ge=0, le=1, description="a judge step with a larger share of failed items fails its stage"
    )
    max_call_failure_rate: float = Field(
        0.0, ge=0, le=1, description="share of unanswered calls (timeouts, 5xx after retries) a stage may keep"
    )
    reask_parse_failures: bool = Field(
        False, description="re-ask requests whose stored answers did not parse (a deterministic judge is not)"
    )
    # -- scale (docs/scale.md) -------------------------------------------------------------------
    mode: Literal["online", "batch"] = Field(
        "online", description="batch: every uncached call of a stage goes to the provider's batch API (batch.py)"
    )
    transport: Literal["litellm", "fast"] = Field(
        "litellm", description="fast: a lean aiohttp client for OpenAI-compatible `api_base` endpoints (fastpath.py)"
    )
    requests_per_minute: float | None = Field(None, gt=0, description="per provider, shared by every process")
    tokens_per_minute: float | None = Field(None, gt=0, description="per provider, shared by every process")
    rate_limit_path: str | None = Field(None, description="shared limiter state (default: next to the cache)")
    max_cost_usd: float | None = Field(
        None, ge=0, description="stop the stage once this much was spent in this process (cached answers kept)"
    )
    batch: BatchRuntime = Field(default_factory=lambda: BatchRuntime())


class ClientConfig(BaseModel):
    """The `judge:` config group for the litellm backend (see factory.make_judge)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    name: str | None = Field(None, description="the judge config's name (for messages only; never cached on)")
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float | None = 0.0
    seed: int | None = 0
    max_tokens: int | None = 1024
    request_params: dict[str, Any] = Field(
        default_factory=dict,
        description="extra answer-determining request keys (e.g. the authors' reasoning_effort, top_p)",
    )
    structured_output: StructuredMode = "auto"
    drop_params: bool = Field(True, description="let litellm drop params a provider rejects (e.g. seed)")
    input_cost_per_token: float | None = Field(None, description="USD; registered with litellm once")
    output_cost_per_token: float | None = None
    runtime: RuntimeConfig = RuntimeConfig()

    @classmethod
    def from_mapping(cls, cfg: Mapping[str, Any] | ClientConfig) -> ClientConfig:
        """Build from a plain dict / OmegaConf node; warns (does not fail) on keys owned by no one."""
        if isinstance(cfg, ClientConfig):
            return cfg
        return cls.from_plain(to_plain(cfg))

    @classmethod
    def from_plain(cls, data: Mapping[str, Any]) -> ClientConfig:
        """`from_mapping` for data already plain (judges.settings.JudgeSettings parsed it once): no second walk."""
        unknown = set(data) - set(cls.model_fields) - _NON_CLIENT_KEYS
        if unknown:
            log.warning("judge config: ignoring unknown key(s) %s", sorted(unknown))
        return cls.model_validate({k: v for k, v in data.items() if k in cls.model_fields})




# ------------------------------------------------------------------------------------------------
# Results and failures
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer. `latency_s` is service time (sum of attempts), excluding queueing and backoff."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    latency_s: float
    cache_hit: bool
    attempts: int
    finish_reason: str | None = None  # "length" (or a provider's equivalent): the output budget ran out


FailureKind = Literal[
    "rate_limit",
    "server",
    "timeout",
    "connection",
    "auth",
    "bad_request",
    "other",
    # fatal classes (errors.FATAL_KINDS; "auth" is one too): never retried
    "model_not_found",
    "quota",
    "context_length",
    # batch mode (batch.py): a line the provider did not answer; rerunning the stage resubmits it
    "batch_expired",
    "batch_failed",
    "batch_pending",  # batch.max_wait_s passed: the batch stays open, the next run collects it
    # judge.runtime.max_cost_usd reached: nothing more is sent in this process
    "budget",
]


class CallFailed(Exception):
    """The call did not produce an answer after the allowed retries. `reason` is already key-scrubbed."""

    def __init__(self, kind: FailureKind, reason: str, *, attempts: int = 0, latency_s: float = 0.0) -> None:
        super().__init__(f"{kind}: {reason}")
        self.kind: FailureKind = kind
        self.reason = reason
        self.attempts = attempts
        self.latency_s = latency_s

    @property
    def fatal(self) -> bool:
        """A class no retry can fix (errors.FATAL_KINDS); the runner stops the stage on repeats."""
        return self.kind in FATAL_KINDS


def classify(exc: BaseException) -> tuple[FailureKind, bool]:
    """(kind, retryable) for an exception raised by litellm/openai/aiohttp/httpx or our timeout backstop.

    Fatal classes come first: a 429 `insufficient_quota` is `quota`, and the SDK's "Missing credentials"
    (which litellm reports as a 500) is `auth`; neither is retried."""
    fatal = fatal_kind(exc)
    if fatal is not None:
        return fatal, False
    name = type(exc).__name__
    code = getattr(exc, "status_code", None)
    if isinstance(exc, TimeoutError) or "Timeout" in name:
        return "timeout", True
    if "Connection" in name or isinstance(exc, ConnectionError):
        return "connection", True
    if isinstance(code, int):
        if code == 429:
            return "rate_limit", True
        if code in (408,):
            return "timeout", True
        if code in (409, 425) or code >= 500:
            return "server", True
        if code in (401, 403):
            return "auth", False
        if 400 <= code < 500:
            return "bad_request", False
    if "RateLimit" in name:
        return "rate_limit", True
    if any(s in name for s in ("InternalServer", "ServiceUnavailable", "BadGateway")):
        return "server", True
    if any(s in name for s in ("ClientPayloadError", "ServerDisconnected", "RemoteProtocol", "ReadError")):
        return "connection", True
    if "Authentication" in name or "PermissionDenied" in name:
        return "auth", False
    return "other", False


def _retry_after_s(exc: BaseException | None) -> float | None:
    if exc is None:
        return None
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
    ):
        if headers is None:
            continue
        try:
            value = headers.get("retry-after")
        except Exception:  # noqa: BLE001 - headers of unknown shape: ignore
            continue
        if value is not None:
            try:
                return max(0.0, float(value))
            except (TypeError, ValueError):
                return None
    return None


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Remove secret values (any >= 8-char fragment, reversed or encoded; see reportbench.redaction) and
    key-shaped tokens (providers echo keys, even partially masked)."""

    return _redact(text, secrets)


# ------------------------------------------------------------------------------------------------
# litellm, lazily
# ------------------------------------------------------------------------------------------------

_REGISTERED: dict[str, tuple[float, float]] = {}  # model -> the price litellm's (process-wide) map holds now


def register_cost(model: str, input_cost_per_token: float, output_cost_per_token: float) -> None:
    """Tell litellm a price for a model it does not know (costs nothing per call). Memoised per model on the
    price litellm holds now: a model priced A, then B, then A again is registered three times (litellm's map has
    one entry per model, so a memo of every price ever registered kept B for the second A)."""
    price = (float(input_cost_per_token), float(output_cost_per_token))
    if _REGISTERED.get(model) == price:
        return
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    litellm_log = logging.getLogger("LiteLLM")
    level = litellm_log.level
    litellm_log.setLevel(logging.ERROR)  # it warns about cache-token prices we do not use
    try:
        _litellm().register_model(
            {
                model: {
                    "input_cost_per_token": float(input_cost_per_token),
                    "output_cost_per_token": float(output_cost_per_token),
                    "litellm_provider": provider,
                    "mode": "chat",
                }
            }
        )
    finally:
        litellm_log.setLevel(level)
    _REGISTERED[model] = price


def _is_loopback(api_base: str | None) -> bool:
    if not api_base:
        return False
    host = urlparse(api_base).hostname or ""
    return host in _LOOPBACK_HOSTS


def preflight_problem(cfg: ClientConfig | Mapping[str, Any]) -> tuple[FailureKind, str] | None:
    """(kind, reason) if the config cannot work, found without a network call; None if it looks fine.

    - `api_key_env` set: that variable must be set (nothing else about keys is checked).
    - litellm must be able to tell the provider of `model` (else `model_not_found`).
    - With an `api_base` and no `api_key_env` (self-hosted endpoint, the loopback stub) no key is
      required, so none is checked; otherwise `litellm.validate_environment(model)` must report no
      missing key (e.g. OPENAI_API_KEY for openai/...).
    """
    c = ClientConfig.from_mapping(cfg)
    if c.api_key_env and not os.environ.get(c.api_key_env):
        return "auth", f"environment variable {c.api_key_env} is not set"
    litellm = _litellm()
    try:
        litellm.get_llm_provider(c.model, api_base=c.api_base)
    except Exception as exc:  # noqa: BLE001 - litellm's BadRequestError "LLM Provider NOT provided"
        first = str(exc).replace("\n", " ").split(" Pass model as")[0]
        return "model_not_found", f"litellm cannot tell the provider of model {c.model!r} ({first[:200]})"
    if c.api_key_env or c.api_base:
        return None
    try:
        env = litellm.validate_environment(model=c.model)
    except Exception:  # noqa: BLE001 - a provider litellm cannot check: let the first call tell
        return None
    missing = [str(k) for k in env.get("missing_keys") or []]
    if missing:
        return "auth", f"{' and '.join(missing)} not set (litellm.validate_environment)"
    return None


# ------------------------------------------------------------------------------------------------
# The client
# ------------------------------------------------------------------------------------------------


class LLMClient:
    """Async chat client over litellm with one retry layer and a per-event-loop concurrency bound."""

    def __init__(self, cfg: ClientConfig | Mapping[str, Any]) -> None:
        self.cfg = ClientConfig.from_mapping(cfg)
        rt = self.cfg.runtime
        self.max_concurrency = rt.max_concurrency
        self._sems: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._formats: dict[Any, dict[str, Any] | None] = {}
        self._prepared = False
        self._preflight: tuple[bool, CallFailed | None] = (False, None)
        self.http_calls = 0  # attempts actually sent (for tests and usage reports)
        self.stop_reason: str | None = None  # set by the judge on a local fatal error: queued calls are not sent
        self._limiter: SharedRateLimiter | None = None
        self._flight = SingleFlight()
        self._warmed = False
        self._warm_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    # -- request shape ---------------------------------------------------------------------------

    @property
    def judge_id(self) -> str:
        return f"litellm:{self.cfg.model}"

    def cache_parts(self) -> dict[str, Any]:
        """The config part of the cache key (the judge adds messages, schema and prompt hash)."""
        c = self.cfg
        return {
            "model": c.model,
            "api_base": c.api_base,
            "temperature": c.temperature,
            "seed": c.seed,
            "max_tokens": c.max_tokens,
        }

    def format_key(
        self, output_model: type[BaseModel] | None, structured: bool = True
    ) -> dict[str, Any] | None:
        """What we *ask for* (mode + schema), used in the cache key. Needs no litellm import, so a
        fully cached rerun never pays for it; the concrete format is resolved at call time."""
        mode = self._mode(structured)
        if mode == "none":
            return None
        schema = output_model.model_json_schema() if output_model is not None else None
        return {"mode": mode, "schema": schema}

    def _mode(self, structured: bool) -> StructuredMode:
        return self.cfg.structured_output if structured else "none"

    def response_format(
        self, output_model: type[BaseModel] | None, structured: bool = True
    ) -> dict[str, Any] | None:
        """The `response_format` sent: JSON schema if supported (or forced), else a JSON-object hint."""
        memo_key = (output_model, structured)
        if memo_key in self._formats:
            return self._formats[memo_key]
        mode = self._mode(structured)
        fmt: dict[str, Any] | None = None
        if mode != "none":
            litellm = _litellm()
            if mode == "auto":
                if output_model is not None and litellm.supports_response_schema(self.cfg.model):
                    mode = "json_schema"
                else:
                    try:
                        params = litellm.get_supported_openai_params(model=self.cfg.model) or []
                    except Exception:  # noqa: BLE001 - unknown provider: send no hint
                        params = []
                    mode = "json_object" if "response_format" in params else "none"
            if mode == "json_schema" and output_model is not None:
                from litellm.llms.base_llm.base_utils import type_to_response_format_param

                fmt = type_to_response_format_param(output_model)
            elif mode in ("json_object", "json_schema"):
                fmt = {"type": "json_object"}
        self._formats[memo_key] = fmt
        return fmt

    # -- calling ---------------------------------------------------------------------------------

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._sems.get(loop)
        if sem is None:
            sem = self._sems[loop] = asyncio.Semaphore(self.max_concurrency)
        return sem

    def _api_key(self) -> str | None:
        name = self.cfg.api_key_env
        if name:
            value = os.environ.get(name)
            if not value:
                raise CallFailed("auth", f"environment variable {name} is not set")
            return value
        if _is_loopback(self.cfg.api_base):
            return _STUB_PLACEHOLDER_KEY
        return None  # litellm's provider defaults (OPENAI_API_KEY, ...)

    def preflight(self) -> CallFailed | None:
        """The preflight failure (see `preflight_problem`), computed once; None when the config looks fine."""
        done, failure = self._preflight
        if not done:
            problem = preflight_problem(self.cfg)
            failure = None if problem is None else CallFailed(problem[0], problem[1], attempts=0)
            self._preflight = (True, failure)
        return failure

    def _prepare(self) -> None:
        if self._prepared:
            return
        c = self.cfg
        _litellm()
        if c.input_cost_per_token is not None and c.output_cost_per_token is not None:
            register_cost(c.model, c.input_cost_per_token, c.output_cost_per_token)
        self._prepared = True

    def _wait(self, state: RetryCallState) -> float:
        """Exponential backoff with full jitter on top, capped; a Retry-After header raises the floor."""
        rt = self.cfg.runtime
        n = state.attempt_number
        delay = min(
            rt.backoff_max_s, rt.backoff_base_s * (2 ** (n - 1)) + random.uniform(0, rt.backoff_base_s)
        )
        exc = state.outcome.exception() if state.outcome is not None else None
        ra = _retry_after_s(exc)
        if ra is not None:
            delay = max(delay, min(ra, rt.backoff_max_s))
            limiter = self.limiter()
            if limiter is not None:  # every process sharing this provider waits too
                limiter.block(min(ra, rt.backoff_max_s))
        return delay

    def _state_path(self, explicit: str | None, name: str) -> Path:
        """A state file next to the response cache (or under .reportbench/cache without one)."""
        if explicit:
            return Path(explicit)
        cache = self.cfg.runtime.cache_path
        return (Path(cache).parent if cache else Path(".reportbench/cache")) / name

    def limiter(self) -> SharedRateLimiter | None:
        """The machine-wide limiter for this provider (None without limits configured)."""
        if self._limiter is None:
            rt = self.cfg.runtime
            if rt.requests_per_minute or rt.tokens_per_minute:
                self._limiter = shared_limiter(
                    self._state_path(rt.rate_limit_path, "ratelimit.sqlite"),
                    provider_key(self.cfg.model, self.cfg.api_base),
                    rt.requests_per_minute,
                    rt.tokens_per_minute,
                )
        return self._limiter

    def request_kwargs(
        self, messages: list[dict[str, Any]], response_format: dict[str, Any] | None
    ) -> dict[str, Any]:
        """The answer-determining request body (no key, no transport options)."""
        c = self.cfg
        kwargs: dict[str, Any] = {"model": c.model, "messages": messages}
        for k in ("temperature", "seed", "max_tokens"):
            value = getattr(c, k)
            if value is not None:
                kwargs[k] = value
        for k, value in c.request_params.items():
            if value is not None:
                kwargs[k] = value
        if response_format is not None:
            kwargs["response_format"] = response_format
        return kwargs

    async def complete(
        self, messages: list[dict[str, Any]], *, response_format: dict[str, Any] | None = None
    ) -> Completion:
        """One chat completion with retries; raises CallFailed (never a provider exception).

        Identical requests in flight at the same moment are sent once (SingleFlight); a configured
        `max_cost_usd` stops sending once this process spent it."""
        api_key = self._api_key()
        failure = self.preflight()
        if failure is not None:
            raise failure
        BUDGET.check(self.cfg.runtime.max_cost_usd)
        self._prepare()
        body = self.request_kwargs(messages, response_format)
        flight_key = canonical_digest(body)
        comp = await self._flight.run(flight_key, lambda: self._complete(body, api_key))
        return comp

    async def _ready(self) -> None:
        """Transport set-up a rate-limited send should not wait on after its slot (fast path: the session)."""

    async def _send(self, body: dict[str, Any], api_key: str | None) -> SendResult:
        """One HTTP attempt through litellm: (text, prompt_tokens, completion_tokens, cost)."""
        litellm = _litellm()  # loaded by the preflight already: returns the cached module
        rt = self.cfg.runtime
        kwargs = {**body, "timeout": rt.timeout_s, "max_retries": 0, "drop_params": self.cfg.drop_params}
        if self.cfg.api_base:
            kwargs["api_base"] = self.cfg.api_base
        if api_key:
            kwargs["api_key"] = api_key
        resp = await litellm.acompletion(**kwargs)
        choice = resp.choices[0] if resp.choices else None
        text = (choice.message.content if choice is not None else None) or ""
        usage = getattr(resp, "usage", None)
        cost = (getattr(resp, "_hidden_params", None) or {}).get("response_cost")
        pt, ct = getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)
        c = self.cfg
        priced = c.input_cost_per_token is not None and c.output_cost_per_token is not None
        if priced and pt is not None and ct is not None:
            # the judge's own configured price, per client (as the fast path prices): litellm's cost map is
            # process-wide, so another client's price for the same model name must never price this one's calls
            cost = pt * float(c.input_cost_per_token) + ct * float(c.output_cost_per_token)
        finish = getattr(choice, "finish_reason", None) if choice is not None else None
        return (
            text,
            pt,
            ct,
            float(cost) if isinstance(cost, int | float) else None,
            None if finish is None else str(finish),
        )

    async def _complete(self, body: dict[str, Any], api_key: str | None) -> Completion:
        """Under a rate limit the first call goes alone: litellm's lazy set-up on its first call can hold a
        request for seconds after its slot, and the slots reserved meanwhile would all arrive together."""
        if self._warmed or self.limiter() is None:
            return await self._complete_once(body, api_key)
        loop = asyncio.get_running_loop()
        lock = self._warm_locks.get(loop)
        if lock is None:
            lock = self._warm_locks[loop] = asyncio.Lock()
        async with lock:
            if not self._warmed:
                try:
                    return await self._complete_once(body, api_key)
                finally:
                    self._warmed = True
        return await self._complete_once(body, api_key)

    async def _complete_once(self, body: dict[str, Any], api_key: str | None) -> Completion:
        rt = self.cfg.runtime
        secrets = (api_key,) if api_key else ()
        sem = self._semaphore()
        limiter = self.limiter()
        tokens = 0
        if limiter is not None:
            tokens = rough_tokens(body["messages"], self.cfg.max_tokens)
        service_s = 0.0
        attempts = 0
        hard_timeout = rt.timeout_s + 5.0  # backstop if a transport ignores `timeout`
        retrying = AsyncRetrying(
            stop=stop_after_attempt(rt.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(lambda e: classify(e)[1]),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    async with sem:
                        BUDGET.check(rt.max_cost_usd)  # again: calls queued on the semaphore must not all go
                        if self.stop_reason is not None:  # a local fatal error (the cache disk is full)
                            raise CallFailed("other", f"not sent: {self.stop_reason}")
                        if limiter is not None:
                            await self._ready()  # set-up first, so the slot is used when it is due
                            await limiter.acquire(tokens)
                        t0 = time.perf_counter()
                        self.http_calls += 1
                        try:
                            async with asyncio.timeout(hard_timeout):
                                sent = await self._send(body, api_key)
                        finally:
                            service_s += time.perf_counter() - t0
        except CallFailed as exc:  # the budget, refused before sending
            exc.attempts, exc.latency_s = attempts - 1, service_s
            raise
        except Exception as exc:  # noqa: BLE001 - every provider error becomes a typed failure value
            kind, _ = classify(exc)
            msg = f"{type(exc).__name__}: {exc}".replace("\n", " ")
            raise CallFailed(
                kind, redact(msg, secrets)[:500], attempts=attempts, latency_s=service_s
            ) from None
        text, pt, ct, cost = sent[:4]
        BUDGET.spend(cost, rt.max_cost_usd)
        return Completion(
            finish_reason=sent[4] if len(sent) > 4 else None,  # type: ignore[misc]
            text=text,
            prompt_tokens=pt,
            completion_tokens=ct,
            cost_usd=cost,
            latency_s=service_s,
            cache_hit=False,
            attempts=attempts,
        )


SendResult = tuple[str, int | None, int | None, float | None] | tuple[str, int | None, int | None, float | None, str | None]  # noqa: E501
"""(text, prompt_tokens, completion_tokens, cost_usd[, finish_reason]) of one successful attempt."""


def canonical_digest(obj: Any) -> str:
    """sha256 of canonical JSON: equal request bodies, equal digests."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class SpendLedger:
    """Dollars spent by this process's judge calls, for `judge.runtime.max_cost_usd`.

    Per process (one DVC judge stage): a stage stops cleanly once its calls cost the limit; answers already
    fetched stay in the response cache, so raising the limit and rerunning pays only for the rest. Calls
    already in flight when the limit is reached still land (at most `max_concurrency` calls over)."""

    def __init__(self) -> None:
        self.spent_usd = 0.0
        self.unpriced = 0
        self.refused = 0

    def check(self, limit: float | None) -> None:
        if limit is not None and self.spent_usd >= limit:
            self.refused += 1
            raise CallFailed(
                "budget",
                f"judge.runtime.max_cost_usd={limit:g} reached (${self.spent_usd:.4f} spent by this stage)",
            )

    def spend(self, cost: float | None, limit: float | None) -> None:
        if cost is None:
            self.unpriced += 1
            if limit is not None and self.unpriced == 1:
                log.warning("max_cost_usd cannot count a call without a price (set judge.input_cost_per_token)")
            return
        self.spent_usd += cost

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


BUDGET = SpendLedger()


class BudgetExceeded(FatalError):
    """`judge.runtime.max_cost_usd` was reached: the stage stops (exit 2) before writing this step's records."""


def raise_if_over_budget(judgments: list[Any], where: str, limit: float | None) -> None:
    """Stop the stage once calls were refused for the budget: answers already paid for are in the response
    cache, DVC records nothing for the stage, and a rerun with a higher limit pays only for the rest."""
    refused = sum(1 for j in judgments if (getattr(j, "error", None) or "").startswith("call: budget:"))
    if not refused:
        return
    answered = sum(1 for j in judgments if getattr(j, "ok", False))
    raise BudgetExceeded(
        f"{where}: judge.runtime.max_cost_usd={limit:g} reached (${BUDGET.spent_usd:.4f} spent by this stage, "
        "more would exceed it); "
        f"{answered} items answered and kept in the response cache, {refused} not asked. Raise or unset "
        "judge.runtime.max_cost_usd and rerun `dvc repro`: answers already paid for are free"
    )


# ------------------------------------------------------------------------------------------------
# Preflight (`reportbench check-judge`: reportbench.check_judge)
# ------------------------------------------------------------------------------------------------


def judge_roles(judge_cfg: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(role, client config) for judge.model and every judge.task_models entry (distinct models)."""
    base = dict(judge_cfg)
    roles = [("judge.model", base)]
    for task, model in sorted((base.get("task_models") or {}).items()):
        if model:
            roles.append((f"judge.task_models.{task}", {**base, "model": model}))
    return roles


def preflight(cfg: Mapping[str, Any], *, name: str | None = None) -> None:
    """Check one litellm judge config without a network call; raises FatalJudgeError on a problem."""
    problem = preflight_problem(cfg)
    if problem is not None:
        kind, reason = problem
        raise fatal_error(kind, name=name, cfg=cfg, reason=reason)


def check_judge(judge_cfg: Mapping[str, Any]) -> list[str]:
    """Preflight every role of a `judge:` group; returns one problem line per failing role."""
    if str(judge_cfg.get("backend", "offline")) != "litellm":
        return []
    problems: list[str] = []
    seen: set[str] = set()
    for role, cfg in judge_roles(judge_cfg):
        if cfg.get("model") in seen:
            continue
        seen.add(str(cfg.get("model")))
        try:
            preflight(cfg, name=judge_cfg.get("name"))
        except FatalJudgeError as exc:
            problems.append(f"{role}: {exc}")
    return problems
