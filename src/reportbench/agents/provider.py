"""`provider_deep_research`: the commercial deep-research APIs, run in reportbench's own process.

- OpenAI `o3-deep-research` / `o4-mini-deep-research` (any `openai/…` model): the Responses API with
  `background=True`, polled every `options.poll_s` seconds until it completes, cancelled at `budget.wall_s`. The
  response JSON is kept as is (`raw/<task>.json`), so the report adapter `openai_deep_research` reads its native
  `url_citation` annotations. `budget.search_calls` → `max_tool_calls`, `budget.tokens` → `max_output_tokens`.
- Perplexity `sonar-deep-research` (`perplexity/…`): chat completions at api.perplexity.ai; its `citations`
  list becomes the numbered reference list (the `<think>` block is dropped).
Both through the provider's official client `openai` (already a dependency). Usage comes from the provider's
answer (tokens; web-search calls and their queries), dollars from `price` or litellm's price map. The real key
is read from `api_key_env` (default OPENAI_API_KEY / PERPLEXITYAI_API_KEY) and never leaves this process.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from reportbench.agents.protocol import AgentResult, AgentSystemConfig, Reference, references_section
from reportbench.agents.proxy import TaskLedger, price_fn
from reportbench.systems.base import SystemError_
from reportbench.types import Task

PERPLEXITY_BASE = "https://api.perplexity.ai"
_THINK = re.compile(r"<think>.*?</think>\s*", re.S)


def provider_of(cfg: AgentSystemConfig) -> str:
    return "perplexity" if cfg.model.startswith("perplexity/") else "openai"


def key_env(cfg: AgentSystemConfig) -> str:
    return cfg.api_key_env or ("PERPLEXITYAI_API_KEY" if provider_of(cfg) == "perplexity" else "OPENAI_API_KEY")


def preflight(name: str, cfg: AgentSystemConfig) -> None:
    """No key for a hosted provider: one clear error before any task starts (no retry fixes it)."""
    if not cfg.api_base and not os.environ.get(key_env(cfg)):
        raise SystemError_(f"systems.{name}: set the environment variable {key_env(cfg)} ({cfg.model})")


def _client(cfg: AgentSystemConfig) -> Any:
    from openai import OpenAI

    base = cfg.api_base or (PERPLEXITY_BASE if provider_of(cfg) == "perplexity" else None)
    return OpenAI(api_key=os.environ.get(key_env(cfg)) or "unused", base_url=base, timeout=120.0, max_retries=2)


def _model_name(cfg: AgentSystemConfig) -> str:
    return cfg.model.split("/", 1)[1] if "/" in cfg.model else cfg.model


def run_provider_task(
    cfg: AgentSystemConfig, task: Task, ledger: TaskLedger, work: Path, key: str
) -> tuple[AgentResult | None, str, str | None, str | None]:
    """(result, raw file name, raw text or None, over-budget reason when the wall time ran out)."""
    refused = ledger.admit_llm()
    if refused is not None:
        return AgentResult(outcome="over_budget", reason=refused), f"{key}.response.json", None, None
    try:
        if provider_of(cfg) == "perplexity":
            return _perplexity(cfg, task, ledger, key)
        return _openai(cfg, task, ledger, key)
    except SystemError_:
        raise
    except Exception as exc:  # noqa: BLE001 - one failed task, recorded with the (redacted) reason
        from reportbench.redaction import redact  # lazy: +2 ms to import (python -X importtime)

        return AgentResult(outcome="failed", reason=redact(f"{type(exc).__name__}: {exc}")[:1000]), key, None, None


def _account(cfg: AgentSystemConfig, ledger: TaskLedger, prompt: int, completion: int) -> None:
    ledger.add_tokens(prompt, completion, price_fn(cfg)(prompt, completion))


def _openai(
    cfg: AgentSystemConfig, task: Task, ledger: TaskLedger, key: str
) -> tuple[Any, str, str | None, str | None]:
    client = _client(cfg)
    params: dict[str, Any] = {
        "model": _model_name(cfg),
        "input": task.task_prompt,
        "background": True,
        "tools": cfg.options.get("tools") or [{"type": "web_search_preview"}],
    }
    if cfg.budget.search_calls is not None:
        params["max_tool_calls"] = cfg.budget.search_calls
    if cfg.budget.tokens is not None:
        params["max_output_tokens"] = cfg.budget.tokens
    poll_s = float(cfg.options.get("poll_s", 10.0))
    deadline = time.monotonic() + cfg.budget.wall_s
    resp = client.responses.create(**params)
    killed = None
    while resp.status in ("queued", "in_progress"):
        if time.monotonic() > deadline:
            client.responses.cancel(resp.id)
            killed = f"wall_s: not completed after {cfg.budget.wall_s:g} s (cancelled)"
            break
        time.sleep(poll_s)
        resp = client.responses.retrieve(resp.id)
    data = resp.model_dump(mode="json")
    usage = data.get("usage") or {}
    _account(cfg, ledger, int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0))
    queries, pages = [], []
    for item in data.get("output") or []:
        if isinstance(item, dict) and item.get("type") == "web_search_call":
            ledger.usage.search_calls += 1
            action = item.get("action") or {}
            if action.get("query"):
                queries.append(str(action["query"]))
            if action.get("url"):
                pages.append(str(action["url"]))
    with ledger.lock:
        ledger.queries.extend(queries)
        ledger.models.add(str(data.get("model") or cfg.model))
    status = data.get("status")
    raw_name = f"{key}.response.json"
    base = {
        "agent_version": f"openai-responses {_model_name(cfg)}",
        "models": [str(data.get("model") or cfg.model)],
        "queries": queries,
        "pages_read": pages,
    }
    if killed:
        return AgentResult(outcome="over_budget", reason=killed, **base), f"{key}.response.json", None, killed
    if status == "completed":
        text = "".join(
            part.get("text") or ""
            for item in data.get("output") or []
            if isinstance(item, dict) and item.get("type") == "message"
            for part in item.get("content") or []
            if isinstance(part, dict)
        )
        result = AgentResult(
            report_markdown=text,
            outcome="ok" if text.strip() else "failed",
            reason=None if text.strip() else "completed with no text",
            **base,
        )
        return result, f"{key}.response.json", json.dumps(data, indent=1, ensure_ascii=False) + "\n", None
    detail = (data.get("incomplete_details") or {}).get("reason") or (data.get("error") or {}).get("message") or ""
    if status == "incomplete" and detail in ("max_output_tokens", "max_tool_calls"):
        return AgentResult(outcome="over_budget", reason=f"{detail} reached", **base), raw_name, None, None
    return AgentResult(outcome="failed", reason=f"status {status}: {detail}"[:1000], **base), raw_name, None, None


def _perplexity(
    cfg: AgentSystemConfig, task: Task, ledger: TaskLedger, key: str
) -> tuple[Any, str, str | None, str | None]:
    client = _client(cfg)
    resp = client.chat.completions.create(
        model=_model_name(cfg),
        messages=[{"role": "user", "content": task.task_prompt}],
        timeout=cfg.budget.wall_s,
    )
    data = resp.model_dump(mode="json")
    usage = data.get("usage") or {}
    _account(cfg, ledger, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
    n_search = usage.get("num_search_queries")
    if isinstance(n_search, int):
        ledger.usage.search_calls += n_search
    with ledger.lock:
        ledger.models.add(str(data.get("model") or cfg.model))
    text = _THINK.sub("", ((data.get("choices") or [{}])[0].get("message") or {}).get("content") or "")
    citations = [c for c in data.get("citations") or [] if isinstance(c, str)]
    titles = {r.get("url"): r.get("title") for r in data.get("search_results") or [] if isinstance(r, dict)}
    refs = [Reference(n=i, url=u, title=str(titles.get(u) or "")) for i, u in enumerate(citations, 1)]
    result = AgentResult(
        report_markdown=text,
        references=refs,
        agent_version=f"perplexity {_model_name(cfg)}",
        models=[str(data.get("model") or cfg.model)],
        pages_read=[],
        outcome="ok" if text.strip() else "failed",
        reason=None if text.strip() else "the model answered with no text",
    )
    raw = references_section(text, refs) if text.strip() else None
    return result, f"{key}.md", raw, None
