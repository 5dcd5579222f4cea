"""`provider_deep_research`: the commercial deep-research APIs, run in reportbench's own process (docs/agents.md,
"Commercial deep-research APIs"). Three backends, chosen by the model's prefix:

- `openai/…` (o3-deep-research, o4-mini-deep-research): the Responses API with `background=True`; the raw response
  JSON is kept (`raw/<task>.json`) for the `openai_deep_research` report adapter (native `url_citation`s).
- `perplexity/…` (sonar-deep-research): Perplexity's async API (`POST /async/chat/completions`, then polls), so
  no request is held open past the wall time and none is resent; `citations` become the numbered references.
- `gemini/…` (deep-research-pro-preview-12-2025): the Interactions API through `google-genai`
  (`agent=…, background=True`), polled with backoff; `url_citation` annotations become numbered references.

Rules that keep paid work and money safe:
- a request that may have been billed is never sent again: the create call runs with the client's retries off; a
  timeout or dropped connection there is recorded `failed: timeout after billing possible`; the provider's id is
  saved (`<work>/<task>.pending.json`) the moment it is known, and a killed run resumes by polling that id;
- output caps within the model's limit (litellm's model map) and within what the budget has left, computed before
  the call; a call that could not fit is refused before it is sent (nothing spent);
- a report that was paid for is always kept (`over_budget` when it crossed a limit; scored only with
  `options.score_over_budget: true`);
- dollars include every fee the provider bills, from `provider_prices.yaml` (`price` overrides the token rates).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from reportbench.agents.protocol import AgentResult, AgentSystemConfig, Reference, references_section
from reportbench.agents.provider_prices import ProviderPrice, lookup
from reportbench.agents.proxy import TaskLedger, model_output_ceiling
from reportbench.systems.base import SystemError_
from reportbench.types import Task

try:  # the variant hook (agents/variant.py, issue 35's variant labels); absent on branches without it
    from reportbench.agents.variant import declare_variant
except ImportError:  # pragma: no cover - only before that module is merged
    declare_variant = None

PERPLEXITY_BASE = "https://api.perplexity.ai"
BACKENDS = ("openai", "perplexity", "gemini")
BILLING_POSSIBLE = "timeout after billing possible"
DEFAULT_MIN_OUTPUT = 1000  # a deep-research report shorter than this is not worth paying for
_THINK = re.compile(r"<think>.*?</think>\s*", re.S)
Outcome = tuple[AgentResult | None, str, str | None, str | None]


def backend_of(cfg: AgentSystemConfig) -> str:
    prefix = cfg.model.split("/", 1)[0] if "/" in cfg.model else ""
    return prefix if prefix in ("perplexity", "gemini") else "openai"


def key_envs(cfg: AgentSystemConfig) -> tuple[str, ...]:
    """The variables the key may come from (the first set one is used)."""
    if cfg.api_key_env:
        return (cfg.api_key_env,)
    return {
        "perplexity": ("PERPLEXITYAI_API_KEY",),
        "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    }.get(backend_of(cfg), ("OPENAI_API_KEY",))


def _key(cfg: AgentSystemConfig) -> str:
    return next((os.environ[n] for n in key_envs(cfg) if os.environ.get(n)), "") or "unused"


def preflight(name: str, cfg: AgentSystemConfig) -> None:
    """What no retry fixes, before any task starts: no key, no client library, no price for a dollar budget."""
    if not cfg.api_base and not any(os.environ.get(n) for n in key_envs(cfg)):
        raise SystemError_(f"systems.{name}: set the environment variable {' or '.join(key_envs(cfg))} ({cfg.model})")
    if backend_of(cfg) == "gemini":
        try:
            import google.genai  # noqa: F401  (import cost ~1 s; only for a Gemini system)
        except ImportError:
            raise SystemError_(
                f"systems.{name}: {cfg.model} needs the google-genai client: pip install 'reportbench[gemini]'"
            ) from None
    if cfg.budget.usd is not None and cfg.price is None and lookup(cfg.model) is None:
        raise SystemError_(
            f"systems.{name}.price: budget.usd is set but {cfg.model} is not in "
            "src/reportbench/agents/provider_prices.yaml; add its row (with source and date) or set `price`"
        )


def _model_name(cfg: AgentSystemConfig) -> str:
    return cfg.model.split("/", 1)[1] if "/" in cfg.model else cfg.model


def prices(cfg: AgentSystemConfig) -> ProviderPrice | None:
    """The model's row; `price` replaces its two token rates (fees stay)."""
    row = lookup(cfg.model)
    if cfg.price is None:
        return row
    base = row or ProviderPrice(model=_model_name(cfg), input_per_mtok=0.0, output_per_mtok=0.0, source="config")
    return ProviderPrice(
        **{
            **base.__dict__,
            "input_per_mtok": cfg.price.input_per_mtok,
            "output_per_mtok": cfg.price.output_per_mtok,
            "source": f"config `price` (fees: {base.source or 'none'})",
        }
    )


def output_cap(cfg: AgentSystemConfig, ledger: TaskLedger, prompt: str) -> tuple[int | None, str | None]:
    """(max output tokens to send, refusal reason). The cap is the least of the model's output limit (litellm's
    model map), the tokens left after the prompt, and the tokens the dollars left buy after the prompt and the
    reserved tool fees (`budget.search_calls` x the search fee). Below `options.min_output_tokens` the call could
    not fit: refused before it is sent."""
    b = cfg.budget
    estimate = len(prompt.encode("utf-8")) // 3 + 16  # tokens, from above (a token is >= ~3 bytes of text)
    ceiling = model_output_ceiling(_model_name(cfg)) if backend_of(cfg) == "openai" else None
    if backend_of(cfg) == "perplexity":
        ceiling = model_output_ceiling(cfg.model)
    cap: float = float(ceiling) if ceiling else float("inf")
    why = f"the model's output limit {ceiling}" if ceiling else ""
    with ledger.lock:
        used = ledger.usage.prompt_tokens + ledger.usage.completion_tokens
        spent = ledger.usage.usd
    if b.tokens is not None:
        room = b.tokens - used - estimate
        if room < cap:
            cap, why = room, f"tokens: {used} used of {b.tokens}; the prompt is ~{estimate}"
    price = prices(cfg)
    if b.usd is not None and price is not None and spent is not None:
        fees = (b.search_calls or 0) * price.search_per_1k / 1000
        left = b.usd - spent - estimate * price.input_per_mtok / 1e6 - fees
        room_usd = left / (price.output_per_mtok / 1e6) if price.output_per_mtok > 0 else float("inf")
        if room_usd < cap:
            cap = room_usd
            why = f"usd: {spent:.4f} spent of {b.usd}; prompt ~{estimate} tokens; ${fees:.4f} reserved for tool calls"
    least = int(cfg.options.get("min_output_tokens", DEFAULT_MIN_OUTPUT))
    if cap < least:
        return (
            None,
            f"refused before the call (nothing spent): room for {max(0, int(cap))} output tokens < {least} ({why})",
        )
    return (None if cap == float("inf") else int(cap)), None


# ------------------------------------------------------------------------------------------ resume by id
def _pending(work: Path, key: str) -> Path:
    return work / f"{key}.pending.json"


def _saved_id(work: Path, key: str, backend: str) -> str | None:
    try:
        data = json.loads(_pending(work, key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return str(data["id"]) if isinstance(data, dict) and data.get("backend") == backend and data.get("id") else None


def _save_id(work: Path, key: str, backend: str, rid: str) -> None:
    """Written before the first poll: a run killed from here on resumes by polling, never by creating again."""
    path = _pending(work, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"backend": backend, "id": rid, "saved": time.time()}) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _done(work: Path, key: str) -> None:
    _pending(work, key).unlink(missing_ok=True)


class _Poll:
    """Polling with backoff (`options.poll_s`, x1.5 per poll up to `options.poll_max_s`) inside the wall time."""

    def __init__(self, cfg: AgentSystemConfig) -> None:
        self.delay = float(cfg.options.get("poll_s", 10.0))
        self.most = float(cfg.options.get("poll_max_s", 60.0))
        self.deadline = time.monotonic() + cfg.budget.wall_s
        self.polls = 0

    def wait(self) -> bool:
        """Sleep before the next poll; False when the wall time is up."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(self.delay, left))
        self.delay = min(self.delay * 1.5, self.most)
        self.polls += 1
        return True


def _failed(reason: str, raw_name: str, **base: Any) -> Outcome:
    return AgentResult(outcome="failed", reason=reason[:1000], **base), raw_name, None, None


def _billing_possible(exc: BaseException) -> bool:
    """A create call that may have reached the provider: timeouts, dropped connections, 5xx."""
    import httpx

    name = type(exc).__name__
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
    return (
        isinstance(exc, (httpx.TimeoutException, httpx.TransportError, TimeoutError, ConnectionError))
        or name in ("APITimeoutError", "APIConnectionError")
        or (isinstance(status, int) and status >= 500)
    )


def run_provider_task(cfg: AgentSystemConfig, task: Task, ledger: TaskLedger, work: Path, key: str) -> Outcome:
    """(result, raw file name, raw text or None, over-budget reason when the wall time ran out)."""
    backend = backend_of(cfg)
    resumed = _saved_id(work, key, backend)
    refused = ledger.admit_llm()
    if refused is not None:
        return AgentResult(outcome="over_budget", reason=refused), f"{key}.md", None, None
    cap = None
    if resumed is None:
        cap, refusal = output_cap(cfg, ledger, task.task_prompt)
        if refusal is not None:
            return AgentResult(outcome="over_budget", reason=refusal), f"{key}.md", None, None
    run = {"openai": _openai, "perplexity": _perplexity, "gemini": _gemini}[backend]
    try:
        return run(cfg, task, ledger, work, key, cap, resumed)
    except SystemError_:
        raise
    except Exception as exc:  # noqa: BLE001 - one failed task, recorded with the (redacted) reason
        from reportbench.redaction import redact  # lazy: +2 ms to import (python -X importtime)

        return _failed(redact(f"{type(exc).__name__}: {exc}"), key)


def _account(
    cfg: AgentSystemConfig,
    ledger: TaskLedger,
    *,
    input: int,
    output: int,
    reasoning: int = 0,
    citation: int = 0,
    searches: int = 0,
    queries: list[str] | None = None,
    model: str = "",
) -> None:
    """Tokens into the budget (prompt = input + citation, completion = output + reasoning), every fee into dollars."""
    price = prices(cfg)
    usd = (
        None
        if price is None
        else price.usd(input=input, output=output, reasoning=reasoning, citation=citation, searches=searches)
    )
    ledger.add_tokens(input + citation, output + reasoning, usd)
    with ledger.lock:
        ledger.usage.search_calls += searches
        ledger.queries.extend(queries or [])
        ledger.models.add(model or cfg.model)


# ---------------------------------------------------------------------------------------------- OpenAI
def _openai(
    cfg: AgentSystemConfig, task: Task, ledger: TaskLedger, work: Path, key: str, cap: int | None, resumed: str | None
) -> Outcome:
    from openai import OpenAI

    raw_name = f"{key}.response.json"
    client = OpenAI(api_key=_key(cfg), base_url=cfg.api_base, timeout=120.0, max_retries=2)  # polls may retry
    poll = _Poll(cfg)
    if resumed is None:
        params: dict[str, Any] = {
            "model": _model_name(cfg),
            "input": task.task_prompt,
            "background": True,
            "tools": cfg.options.get("tools") or [{"type": "web_search_preview"}],
        }
        if cfg.budget.search_calls is not None:
            params["max_tool_calls"] = cfg.budget.search_calls
        if cap is not None:
            params["max_output_tokens"] = cap
        try:  # the one call that bills: never resent
            resp = client.with_options(max_retries=0).responses.create(**params)
        except Exception as exc:  # noqa: BLE001
            if _billing_possible(exc):
                return _failed(f"{BILLING_POSSIBLE}: {type(exc).__name__}: {exc} (not retried)", raw_name)
            raise
        _save_id(work, key, "openai", resp.id)
    else:
        resp = client.responses.retrieve(resumed)
    killed = None
    while resp.status in ("queued", "in_progress"):
        if not poll.wait():
            client.responses.cancel(resp.id)
            killed = f"wall_s: not completed after {cfg.budget.wall_s:g} s (cancelled)"
            break
        resp = client.responses.retrieve(resp.id)
    _done(work, key)
    data = resp.model_dump(mode="json")
    usage = data.get("usage") or {}
    queries, pages, calls = [], [], 0
    for item in data.get("output") or []:
        if isinstance(item, dict) and item.get("type") == "web_search_call":
            calls += 1  # every web_search_call item counts as a billed call (an upper bound: open_page too)
            action = item.get("action") or {}
            if action.get("query"):
                queries.append(str(action["query"]))
            if action.get("url"):
                pages.append(str(action["url"]))
    model = str(data.get("model") or cfg.model)
    _account(
        cfg,
        ledger,
        input=int(usage.get("input_tokens") or 0),
        output=int(usage.get("output_tokens") or 0),
        searches=calls,
        queries=queries,
        model=model,
    )
    base = {"agent_version": f"openai-responses {_model_name(cfg)}", "models": [model], "pages_read": pages}
    text = "".join(
        part.get("text") or ""
        for item in data.get("output") or []
        if isinstance(item, dict) and item.get("type") == "message"
        for part in item.get("content") or []
        if isinstance(part, dict)
    )
    raw = json.dumps(data, indent=1, ensure_ascii=False) + "\n" if text.strip() else None  # paid for: kept
    status = data.get("status")
    if killed:
        return AgentResult(outcome="over_budget", reason=killed, **base), raw_name, raw, killed
    if status == "completed":
        ok = bool(text.strip())
        result = AgentResult(
            report_markdown=text,
            outcome="ok" if ok else "failed",
            reason=None if ok else "completed with no text",
            **base,
        )
        return result, raw_name, raw, None
    detail = (data.get("incomplete_details") or {}).get("reason") or (data.get("error") or {}).get("message") or ""
    if status == "incomplete" and detail in ("max_output_tokens", "max_tool_calls"):
        return AgentResult(outcome="over_budget", reason=f"{detail} reached", **base), raw_name, raw, None
    return AgentResult(outcome="failed", reason=f"status {status}: {detail}"[:1000], **base), raw_name, None, None


# ------------------------------------------------------------------------------------------ Perplexity
def _perplexity(
    cfg: AgentSystemConfig, task: Task, ledger: TaskLedger, work: Path, key: str, cap: int | None, resumed: str | None
) -> Outcome:
    """Perplexity's async API: the request is submitted once, then polled; it has no cancel, so at the wall time
    the request is left running (and may still be billed), which the reason says."""
    import httpx

    raw_name = f"{key}.md"
    base_url = (cfg.api_base or PERPLEXITY_BASE).rstrip("/")
    headers = {"Authorization": f"Bearer {_key(cfg)}"}
    poll = _Poll(cfg)
    with httpx.Client(base_url=base_url, headers=headers, timeout=60.0) as http:
        rid = resumed
        if rid is None:
            body: dict[str, Any] = {
                "model": _model_name(cfg),
                "messages": [{"role": "user", "content": task.task_prompt}],
            }
            if cap is not None:
                body["max_tokens"] = cap
            try:  # httpx sends once: no retry layer
                r = http.post("/async/chat/completions", json={"request": body})
            except httpx.HTTPError as exc:
                if _billing_possible(exc):
                    return _failed(f"{BILLING_POSSIBLE}: {type(exc).__name__}: {exc} (not retried)", raw_name)
                raise
            if r.status_code >= 500:
                return _failed(f"{BILLING_POSSIBLE}: HTTP {r.status_code} on submit (not retried)", raw_name)
            if r.status_code >= 400:
                return _failed(f"HTTP {r.status_code} on submit: {r.text[:300]}", raw_name)
            rid = str(r.json()["id"])
            _save_id(work, key, "perplexity", rid)
        while True:
            r = http.get(f"/async/chat/completions/{rid}")
            r.raise_for_status()
            job = r.json()
            status = str(job.get("status") or "").upper()
            if status in ("COMPLETED", "FAILED"):
                break
            if not poll.wait():
                killed = (
                    f"wall_s: not completed after {cfg.budget.wall_s:g} s (Perplexity's async API has no cancel: "
                    f"request {rid} may still complete and be billed)"
                )
                _done(work, key)
                return AgentResult(outcome="over_budget", reason=killed), raw_name, None, killed
    _done(work, key)
    if status == "FAILED":
        return _failed(f"status FAILED: {job.get('error_message') or ''}", raw_name)
    data = job.get("response") or {}
    usage = data.get("usage") or {}
    model = str(data.get("model") or cfg.model)
    _account(
        cfg,
        ledger,
        input=int(usage.get("prompt_tokens") or 0),
        output=int(usage.get("completion_tokens") or 0),
        reasoning=int(usage.get("reasoning_tokens") or 0),
        citation=int(usage.get("citation_tokens") or 0),
        searches=int(usage.get("num_search_queries") or 0),
        model=model,
    )
    text = _THINK.sub("", ((data.get("choices") or [{}])[0].get("message") or {}).get("content") or "")
    citations = [c for c in data.get("citations") or [] if isinstance(c, str)]
    results = [r for r in data.get("search_results") or [] if isinstance(r, dict)]
    if not citations:  # newer answers carry only `search_results`, in citation order
        citations = [str(r["url"]) for r in results if r.get("url")]
    titles = {r.get("url"): r.get("title") for r in results}
    refs = [Reference(n=i, url=u, title=str(titles.get(u) or "")) for i, u in enumerate(citations, 1)]
    ok = bool(text.strip())
    result = AgentResult(
        report_markdown=text,
        references=refs,
        agent_version=f"perplexity-async {_model_name(cfg)}",
        models=[model],
        pages_read=[],
        outcome="ok" if ok else "failed",
        reason=None if ok else "the model answered with no text",
    )
    return result, raw_name, references_section(text, refs) if ok else None, None


# ---------------------------------------------------------------------------------------------- Gemini
def import_client(cfg: AgentSystemConfig) -> None:
    """Import the backend's client in the calling thread, before the system's worker threads start: each task
    builds its client in its own thread, and a package imported for the first time by several threads at once can
    fail in all but one (google-genai loads its modules lazily; once seen in CI: 1 of 3 Gemini tasks reached the
    provider). The runner's report adapters are imported first for the same reason."""
    import httpx  # noqa: F401  (every backend's transport; _billing_possible reads its exceptions)

    backend = backend_of(cfg)
    if backend == "openai":
        import openai  # noqa: F401
    elif backend == "gemini":
        from google import genai  # noqa: F401
        from google.genai import types  # noqa: F401
        from google.genai._gaos.utils.retries import RetryConfig  # noqa: F401


def _gemini_client(cfg: AgentSystemConfig) -> Any:
    """google-genai's client with every retry off: `HttpRetryOptions(attempts=0)` still leaves one retry in
    google-genai 2.34.0's Interactions client (seen against the replay: two creates for one call), so the
    resource's retry strategy is replaced by "none" (one request per call). Polls retry in `_poll_get`."""
    from google import genai
    from google.genai import types

    options = types.HttpOptions(base_url=cfg.api_base, retry_options=types.HttpRetryOptions(attempts=0))
    client = genai.Client(api_key=_key(cfg), http_options=options)
    from google.genai._gaos.utils.retries import RetryConfig  # the generated client's own config type

    client.interactions.sdk_configuration.retry_config = RetryConfig("none", None, False)
    return client


def _poll_get(get: Any, rid: str, poll: _Poll) -> Any:
    """A poll (free to repeat): a transient failure is retried at the next poll, up to 5 in a row."""
    for attempt in range(5):
        try:
            return get(rid)
        except Exception:  # noqa: BLE001 - re-raised after the fifth
            if attempt == 4 or not poll.wait():
                raise
    raise AssertionError("unreachable")


def cite_annotations(text: str, annotations: list[dict[str, Any]]) -> tuple[str, list[Reference]]:
    """`url_citation` spans → `[n]` markers at each span's end, numbered by first appearance of the URL."""
    numbers: dict[str, int] = {}
    titles: dict[str, str] = {}
    marks: dict[int, list[int]] = {}
    for a in annotations:
        if a.get("type") != "url_citation" or not a.get("url"):
            continue
        url = str(a["url"])
        n = numbers.setdefault(url, len(numbers) + 1)
        titles.setdefault(url, str(a.get("title") or ""))
        end = a.get("end_index")
        pos = min(int(end), len(text)) if isinstance(end, int) and end >= 0 else len(text)
        if n not in marks.setdefault(pos, []):
            marks[pos].append(n)
    for pos in sorted(marks, reverse=True):
        text = text[:pos] + "".join(f" [{n}]" for n in marks[pos]) + text[pos:]
    return text, [Reference(n=n, url=u, title=titles[u]) for u, n in numbers.items()]


def _gemini(
    cfg: AgentSystemConfig, task: Task, ledger: TaskLedger, work: Path, key: str, cap: int | None, resumed: str | None
) -> Outcome:
    """The Deep Research agent takes no output cap (`generation_config` is refused with `agent`): its usage is
    checked after the run, and its report kept whatever it cost."""
    raw_name = f"{key}.md"
    client = _gemini_client(cfg)
    poll = _Poll(cfg)
    if resumed is None:
        try:
            inter = client.interactions.create(agent=_model_name(cfg), input=task.task_prompt, background=True)
        except Exception as exc:  # noqa: BLE001
            if _billing_possible(exc) or type(exc).__name__ in ("ServerError", "APIConnectionError", "APITimeoutError"):
                return _failed(f"{BILLING_POSSIBLE}: {type(exc).__name__}: {exc} (not retried)", raw_name)
            raise
        _save_id(work, key, "gemini", str(inter.id))
    else:
        inter = _poll_get(client.interactions.get, resumed, poll)
    killed = None
    while inter.status in ("queued", "in_progress"):
        if not poll.wait():
            client.interactions.cancel(inter.id)
            killed = f"wall_s: not completed after {cfg.budget.wall_s:g} s (cancelled)"
            break
        inter = _poll_get(client.interactions.get, inter.id, poll)
    _done(work, key)
    data = inter.model_dump(mode="json", exclude_none=True)
    usage = data.get("usage") or {}
    queries: list[str] = []
    pages: list[str] = []
    text, annotations = "", []
    for step in data.get("steps") or []:
        kind = step.get("type")
        if kind == "google_search_call":
            queries.extend(str(q) for q in (step.get("arguments") or {}).get("queries") or [])
        elif kind == "url_context_call":
            pages.extend(str(u) for u in (step.get("arguments") or {}).get("urls") or [])
        elif kind == "model_output":
            for part in step.get("content") or []:
                if part.get("type") == "text":
                    offset = len(text)
                    text += part.get("text") or ""
                    for a in part.get("annotations") or []:
                        a = dict(a)
                        for f in ("start_index", "end_index"):
                            if isinstance(a.get(f), int):
                                a[f] += offset
                        annotations.append(a)
    searches = sum(
        int(g.get("count") or 0) for g in usage.get("grounding_tool_count") or [] if g.get("type") == "google_search"
    )
    model = f"gemini/{data.get('agent') or _model_name(cfg)}"
    _account(
        cfg,
        ledger,
        input=int(usage.get("total_input_tokens") or 0) + int(usage.get("total_tool_use_tokens") or 0),
        output=int(usage.get("total_output_tokens") or 0),
        reasoning=int(usage.get("total_thought_tokens") or 0),
        searches=searches or len(queries),
        queries=queries,
        model=model,
    )
    body, refs = cite_annotations(text, annotations)
    raw = references_section(body, refs) if body.strip() else None  # paid for: kept
    base = {"agent_version": f"google-genai interactions {_model_name(cfg)}", "models": [model], "pages_read": pages}
    if killed:
        return AgentResult(outcome="over_budget", reason=killed, **base), raw_name, raw, killed
    if data.get("status") == "completed" and body.strip():
        return AgentResult(report_markdown=body, references=refs, **base), raw_name, raw, None
    errors = "; ".join(str(e.get("message") or e) for e in data.get("errors") or [])
    return (
        AgentResult(outcome="failed", reason=f"status {data.get('status')}: {errors}"[:1000], **base),
        raw_name,
        None,
        None,
    )


def backend_rows() -> list[dict[str, str]]:
    """`reportbench agents ls`: one row per provider backend, with its client library's version."""
    from importlib.metadata import PackageNotFoundError, version

    rows = []
    for backend, (dist, models) in {
        "openai": ("openai", "openai/o3-deep-research, openai/o4-mini-deep-research"),
        "perplexity": ("httpx", "perplexity/sonar-deep-research"),
        "gemini": ("google-genai", "gemini/deep-research-pro-preview-12-2025"),
    }.items():
        try:
            ver = f"{dist} {version(dist)}"
            installed = "yes"
        except PackageNotFoundError:
            hint = "pip install 'reportbench[gemini]'" if backend == "gemini" else f"pip install {dist}"
            ver, installed = hint, "no"
        rows.append({"backend": backend, "installed": installed, "client": ver, "models": models})
    return rows


def provider_variant(cfg: AgentSystemConfig) -> list[tuple[str, str]]:
    """How a provider system departs from the provider's service as published: only through tools of ours
    (`options.tools` other than OpenAI's default web search). Caps, polling and the price table change what is
    spent and recorded, not the system; every backend (openai, perplexity, gemini) as configured by default has
    no tag."""
    tools = cfg.options.get("tools")
    if backend_of(cfg) == "openai" and tools and tools != [{"type": "web_search_preview"}]:
        return [("tools", ", ".join(sorted(str(t.get("type", t)) if isinstance(t, dict) else str(t) for t in tools)))]
    return []


if declare_variant is not None:
    declare_variant("provider_deep_research")(provider_variant)
