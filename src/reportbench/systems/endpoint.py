"""`kind: endpoint` — bring your own system as a model behind an API: a litellm model string, or any
OpenAI-compatible `api_base`, asked once per task with the benchmark's exact task prompt.

    my_agent:
      kind: endpoint
      path: src/reportbench/systems/endpoint.py   # DVC dependency (the behaviour is this code + the params)
      model: openai/my-agent                       # litellm model string ("openai/<name>" for OpenAI-compatible)
      api_base: http://127.0.0.1:8000/v1           # omit for a hosted provider
      api_key_env: MY_AGENT_KEY                     # the variable holding the key (never the key itself)
      max_tokens: 4096
      runtime: {timeout_s: 600, max_retries: 2, max_concurrency: 4}

The request is exactly `[{"role": "user", "content": Task.task_prompt}]` (an optional `system_prompt` is
prepended only if you set one). The answer is saved as `<out>/raw/<task_id>.md` and parsed with the markdown
adapter (or `format:`), the same as any third-party report. It goes through the judge layer's client: one
retry layer with backoff, key scrubbing, cost from litellm's price map, and the response cache (only
non-empty answers are stored). Call failures after retries and empty answers are `failed` outcomes.

Fatal errors stop the stage instead (reportbench.judges.errors): after `runtime.fatal_after` (default 3)
identical auth / model_not_found / quota failures (or context_length before any answer came back), the
remaining tasks are cancelled and `FatalSystemError` names the system, model, kind and fix; stage scripts
turn it into one stderr line and exit code 2 with `exit_on_fatal()`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from reportbench.judges.errors import DEFAULT_FATAL_AFTER, FatalTripwire, fatal_error
from reportbench.systems.base import SystemError_, TaskOutcome, register_kind
from reportbench.systems.common import RunCollector, parse_output, raw_path, write_text
from reportbench.systems.semops import CLIENT_KEYS, client_config
from reportbench.types import Report, Task

DEFAULTS: dict[str, Any] = {
    "system_prompt": None,
    "format": "markdown",
    "temperature": 0.0,
    "seed": 0,
    "max_tokens": 4096,
    "structured_output": "none",  # the answer is a report, never JSON
    "runtime": {"timeout_s": 600.0, "max_retries": 3, "max_concurrency": 4},
}
_ALLOWED = set(DEFAULTS) | set(CLIENT_KEYS) | {"kind", "path", "runtime", "release_dir"}


def _config(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    unknown = set(spec) - _ALLOWED
    if unknown:
        raise SystemError_(f"systems.{name}: unknown key(s) {sorted(unknown)}; known: {sorted(_ALLOWED)}")
    cfg = {**DEFAULTS, **spec}
    cfg["runtime"] = {**DEFAULTS["runtime"], **dict(spec.get("runtime") or {})}
    if cfg["structured_output"] != "none":
        raise SystemError_(f"systems.{name}.structured_output: an endpoint answers in prose; use 'none'")
    return cfg


def task_messages(task: Task, system_prompt: str | None = None) -> list[dict[str, str]]:
    """The benchmark's exact task prompt as the only user message."""
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return [*messages, {"role": "user", "content": task.task_prompt}]


async def _ask_all(name: str, cfg: dict[str, Any], tasks: list[Task], out_dir: Path, run: RunCollector) -> None:
    from reportbench.judges.cache import ResponseCache, cache_key  # lazy: +103 ms to import (python -X importtime)
    from reportbench.judges.client import CallFailed, LLMClient  # lazy: +226 ms to import (python -X importtime)

    client_cfg = client_config(name, cfg)
    client = LLMClient(client_cfg)
    wire = FatalTripwire(int(client_cfg["runtime"].get("fatal_after", DEFAULT_FATAL_AFTER)))
    pending: list[asyncio.Task[None]] = []
    cache_path = client_cfg["runtime"].get("cache_path")
    cache = ResponseCache(cache_path) if cache_path else None
    usage = {"calls": 0, "failed": 0, "prompt_tokens": 0, "completion_tokens": 0}

    async def one(task: Task) -> None:
        try:
            await ask(task)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one broken task is a recorded failure, never a lost run
            run.fail(task.task_id, f"internal: {type(exc).__name__}: {exc}")

    async def ask(task: Task) -> None:
        messages = task_messages(task, cfg["system_prompt"])
        key = cache_key(
            **client.cache_parts(),
            messages=messages,
            response_format=None,
            prompt_hash=None,
            extra={"kind": "endpoint"},
        )
        hit = cache.get(key) if cache is not None else None
        if hit is not None:
            text, tokens = hit.text, (hit.prompt_tokens, hit.completion_tokens)
        else:
            usage["calls"] += 1
            try:
                comp = await client.complete(messages)
            except CallFailed as exc:
                usage["failed"] += 1
                run.fail(task.task_id, f"call failed after {exc.attempts} attempt(s): {exc.kind}: {exc.reason}")
                if wire.observe(exc.kind, exc.reason):
                    me = asyncio.current_task()
                    for t in pending:  # every other call would fail the same way
                        if t is not me:
                            t.cancel()
                return
            wire.observe(None, got_through=True)
            text, tokens = comp.text, (comp.prompt_tokens, comp.completion_tokens)
            if text.strip() and cache is not None:
                cache.put(
                    key,
                    text,
                    prompt_tokens=comp.prompt_tokens,
                    completion_tokens=comp.completion_tokens,
                    cost_usd=comp.cost_usd,
                    model=client.cfg.model,
                )
        usage["prompt_tokens"] += tokens[0] or 0
        usage["completion_tokens"] += tokens[1] or 0
        if not text.strip():
            run.fail(task.task_id, "empty output: the endpoint answered with no text")
            return
        path = write_text(raw_path(out_dir, task.task_id), text if text.endswith("\n") else text + "\n")
        run.add(*parse_output(path, system=name, task_id=task.task_id, fmt=str(cfg["format"])))

    try:
        pending.extend(asyncio.ensure_future(one(t)) for t in tasks)
        outcomes = await asyncio.gather(*pending, return_exceptions=True)
        if wire.tripped is None:
            for outcome in outcomes:
                if isinstance(outcome, BaseException):
                    raise outcome
    finally:
        for t in pending:
            t.cancel()
        if cache is not None:
            cache.close()
    if wire.tripped is not None:
        raise fatal_error(
            wire.tripped,
            name=name,
            cfg=client_cfg,
            reason=wire.first_reason.get(wire.tripped, ""),
            count=wire.counts[wire.tripped],
            system=True,
        )
    run_usage = {k: v for k, v in usage.items() if k in ("prompt_tokens", "completion_tokens")}
    write_text(out_dir / "usage.json", json.dumps({"llm": run_usage}, indent=2, sort_keys=True) + "\n")


@register_kind("endpoint")
def run_endpoint_system(
    name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path
) -> tuple[list[Report], list[TaskOutcome]]:
    """Ask the endpoint once per task (concurrently, bounded by runtime.max_concurrency)."""
    cfg = _config(name, spec)
    run = RunCollector([t.task_id for t in tasks])
    asyncio.run(_ask_all(name, cfg, tasks, out_dir, run))
    return run.result()
