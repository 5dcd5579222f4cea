"""The litellm judge backend: render the prompt, ask through the cache, parse strictly, record everything.

Shape follows inspect_ai's model-graded scorers: an async callable that always returns a record, where a
failure is a value (`status="failed"`, `value=None`, `error="call: ..."|"parse: ..."`), never an exception
and never a guessed score. A parse failure re-asks (bypassing the cache) up to `parse_retries` times and
is stored apart (cache.py) with every raw answer: a rerun of a deterministic judge (temperature 0) re-parses
the stored answers instead of paying for the same unparseable answers again, unless the user asks to re-ask
(`runtime.reask_parse_failures`, or REPORTBENCH_REASK_PARSE_FAILURES=1 as `reportbench retry --parse` sets).
A call failure (timeout, 5xx after retries) is never stored, so a rerun asks exactly those again.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reportbench.judges.base import (
    BelowBoundAnswer,
    JudgeInput,
    JudgeOutput,
    JudgeTask,
    Judgment,
    ParseError,
    dump_parsed,
)
from reportbench.judges.batch import BatchClient
from reportbench.judges.budgets import is_cut, resolve_budget, truncation_error
from reportbench.judges.cache import CachedResponse, CacheWriteError, ResponseCache, StoredParseFailure, cache_key
from reportbench.judges.client import CallFailed, ClientConfig, Completion, LLMClient, to_plain
from reportbench.judges.fastpath import FastClient
from reportbench.judges.prompt_modes import authors_prompt, prompts_mode
from reportbench.judges.settings import JudgeSettings
from reportbench.prompts import DEFAULT_PROMPTS_DIR, PromptTemplate, load_prompt

CLAIM_POLL_S = 0.2  # how often a process waiting on another's claim looks for the answer

REASK_ENV = "REPORTBENCH_REASK_PARSE_FAILURES"


def reask_requested(runtime_flag: bool) -> bool:
    """The config flag, or the environment switch that `reportbench retry --parse` sets for one run."""
    return runtime_flag or os.environ.get(REASK_ENV, "").strip().lower() in ("1", "true", "yes")


def make_client(cfg: ClientConfig | Mapping[str, Any]) -> LLMClient:
    """The client the config asks for: batch mode (batch.py), the fast path (fastpath.py) or litellm. Here, not
    in client.py: both build on the client, so the client cannot import them back."""
    c = ClientConfig.from_mapping(cfg)
    if c.runtime.mode == "batch":
        return BatchClient(c)
    if c.runtime.transport == "fast":
        return FastClient(c)
    return LLMClient(c)



def parse_failure(exc: ParseError) -> str:
    """The record's error for an answer that did not parse: `too_short: ...` when the protocol's own validity
    bound refused it (undefined, errors.failure_class), else `parse: ...`."""
    return f"too_short: {exc}" if isinstance(exc, BelowBoundAnswer) else f"parse: {exc}"

class LLMJudge:
    """`Judge` over an LLM reached through litellm. One instance per (task, config); reuse it across items."""

    def __init__(
        self,
        task: JudgeTask,
        cfg: Mapping[str, Any] | ClientConfig,
        *,
        prompts_dir: str | Path | None = None,
        client: LLMClient | None = None,
        cache: ResponseCache | None | bool = True,
        sample: int = 0,
    ) -> None:
        """`cache=True` opens `runtime.cache_path` (None/'' there disables it); False/None disables;
        a ResponseCache instance is used as is (shared between judges).

        `sample` k > 0 is the k-th re-sample of the same request (self-consistency, docs/agreement.md): it is part
        of the cache key, so repeats are real calls and reruns are free; sample 0 keeps the plain key."""
        # parsed once at the stage boundary (judges/settings.py): its plain data is used as is, never walked again
        raw = (cfg.plain() if isinstance(cfg, JudgeSettings) else to_plain(cfg)) if isinstance(cfg, Mapping) else {}
        self.task = task
        self.prompts_mode = prompts_mode(raw)
        step_prompt = authors_prompt(task) if self.prompts_mode == "authors" else None
        # This step's output budget (judges/budgets.py) and, under the authors' prompts, their request kwargs.
        self.budget, self.budget_source = resolve_budget(task.name, raw)
        if raw:
            raw = _with_step_request(raw, task.name, self.budget, step_prompt)
            cap = raw["max_tokens"]  # None: exact authors' request without a cap (request: authors)
            self.budget = None if cap is None else int(cap)
            self.budget_source = raw.pop("_budget_source", self.budget_source)
        # `prompts` (ours | authors) is judge-level, not a client setting.
        self.cfg = ClientConfig.from_plain({k: v for k, v in raw.items() if k != "prompts"}) if raw else (
            ClientConfig.from_mapping(cfg)
        )
        if not raw and self.cfg.max_tokens is not None:
            self.budget, self.budget_source = int(self.cfg.max_tokens), "ClientConfig.max_tokens"
        self.client = client or make_client(self.cfg)
        self.judge_id = f"litellm:{self.cfg.model}"
        # the client decides how many items may wait on it at once (batch mode: all of them)
        self.max_concurrency = self.client.max_concurrency
        self.progress = self.cfg.runtime.progress
        self.parse_retries = self.cfg.runtime.parse_retries
        # Same request, same answer: only a temperature-0 judge's stored parse failures are final.
        self.deterministic = self.cfg.temperature is not None and float(self.cfg.temperature) == 0.0
        self.reask_parse_failures = reask_requested(self.cfg.runtime.reask_parse_failures)
        pdir = prompts_dir if prompts_dir is not None else raw.get("prompts_dir") or DEFAULT_PROMPTS_DIR
        self.prompt: PromptTemplate | Any  # Any: an authors' prompt (judges/prompt_modes.py)
        if step_prompt is not None:  # the benchmark authors' exact messages and parser (prompt_packs)
            self.prompt = step_prompt
            out_model, structured = self.prompt.response_model, self.prompt.response_model is not None
        else:
            self.prompt = load_prompt(task.prompt_id, pdir)
            out_model, structured = task.output_model, task.structured
        self._out_model, self._structured = out_model, structured
        if isinstance(cache, ResponseCache):
            self.cache: ResponseCache | None = cache
        elif cache is True and self.cfg.runtime.cache_path:
            self.cache = ResponseCache(self.cfg.runtime.cache_path)
        else:
            self.cache = None
        self.local_fatal: CacheWriteError | None = None  # set once the cache cannot store: the runner stops
        self._owns_cache = self.cache is not None and not isinstance(cache, ResponseCache)
        # Everything in the cache key that does not depend on the item, computed once.
        self._key_parts = self.client.cache_parts()
        self._format_key = self.client.format_key(out_model, structured)
        self._key_extra = {"prompts": self.prompt.prompt_id} if self.prompts_mode == "authors" else None
        if self.cfg.request_params:  # only when set: keys of requests made without them stay as they were
            self._key_extra = {**(self._key_extra or {}), "request_params": dict(self.cfg.request_params)}
        self.sample = int(sample)
        if self.sample:
            self._key_extra = {**(self._key_extra or {}), "sample": self.sample}

    # -- helpers ---------------------------------------------------------------------------------

    def key_for(self, messages: list[dict[str, Any]]) -> str:
        """Cache key of one rendered request."""
        return cache_key(
            **self._key_parts,
            messages=messages,
            response_format=self._format_key,
            prompt_hash=self.prompt.sha256,
            extra=self._key_extra,
        )

    def _record(self, item_id: str, input_ids: Mapping[str, str], **fields: Any) -> Judgment:
        return Judgment(
            task=self.task.name,
            item_id=item_id,
            input_ids=dict(input_ids),
            judge_id=self.judge_id,
            model=self.cfg.model,
            prompt_id=self.prompt.prompt_id,
            prompt_hash=self.prompt.sha256,
            **fields,
        )

    def _ok(
        self, item_id: str, input_ids: Mapping[str, str], out: JudgeOutput, raw: str, **usage: Any
    ) -> Judgment:
        value = out.value()
        return self._record(
            item_id,
            input_ids,
            status="ok",
            value=None if value is None else float(value),
            label=out.label(),
            parsed=dump_parsed(out),
            explanation=out.explanation(),
            raw_output=raw,
            **usage,
        )

    def _parse(self, raw: str, inputs: JudgeInput) -> JudgeOutput:
        """The task's strict parser; a stray ValueError (e.g. ValidationError) counts as a parse error."""
        try:
            if self.prompts_mode == "authors":
                return self.prompt.parse(raw, inputs)
            return self.task.parse(raw, inputs)
        except ParseError:
            raise
        except ValueError as exc:
            raise ParseError(f"{type(exc).__name__}: {exc}") from exc

    # -- the Judge protocol ----------------------------------------------------------------------

    async def __call__(self, item_id: str, inputs: JudgeInput, input_ids: dict[str, str]) -> Judgment:
        try:
            return await self._judge(item_id, inputs, input_ids)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - failures are values, even our own bugs
            return self._record(
                item_id, input_ids, status="failed", error=f"internal: {type(exc).__name__}: {exc}"[:1000]
            )

    async def _judge(self, item_id: str, inputs: JudgeInput, input_ids: dict[str, str]) -> Judgment:
        if self.prompts_mode == "authors":
            messages = self.prompt.messages(inputs)
        else:
            messages = self.prompt.render(**inputs.prompt_values())
        key = self.key_for(messages)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    out = self._parse(hit.text, inputs)
                except ParseError:
                    pass  # the parser got stricter since this was stored: ask again and overwrite
                else:
                    return self._ok(
                        item_id,
                        input_ids,
                        out,
                        hit.text,
                        prompt_tokens=hit.prompt_tokens,
                        completion_tokens=hit.completion_tokens,
                        cost_usd=hit.cost_usd,
                        latency_s=0.0,
                        cache_hit=True,
                        attempts=0,
                    )
            if self.deterministic and not self.reask_parse_failures:
                stored = self.cache.get_parse_failure(key)
                if stored is not None:
                    return self._from_stored_failure(key, item_id, inputs, input_ids, stored)
            waited = await self._claim(key)  # another process sharing the cache may be paying for it right now
            try:
                if isinstance(waited, StoredParseFailure):  # the other process's answers did not parse
                    return self._from_stored_failure(key, item_id, inputs, input_ids, waited)
                if waited is not None:
                    try:
                        out = self._parse(waited.text, inputs)
                    except ParseError:
                        pass
                    else:
                        return self._ok(
                            item_id, input_ids, out, waited.text, prompt_tokens=waited.prompt_tokens,
                            completion_tokens=waited.completion_tokens, cost_usd=waited.cost_usd, latency_s=0.0,
                            cache_hit=True, attempts=0,
                        )
                return await self._ask(key, item_id, inputs, input_ids, messages)
            finally:
                self.cache.release(key)
        return await self._ask(key, item_id, inputs, input_ids, messages)

    async def _claim(self, key: str) -> CachedResponse | StoredParseFailure | None:
        """Hold the cache's claim on `key` before paying for it; while another live process holds it, wait
        for its answer (returned, or its stored parse failure) or for its claim to go (it failed or was killed:
        then we ask)."""
        assert self.cache is not None
        while True:
            claimed = self.cache.claim(key)
            hit = self.cache.get(key)  # (also: stored between our miss and our claim)
            if hit is not None:
                return hit
            if self.deterministic and not self.reask_parse_failures:
                stored = self.cache.get_parse_failure(key)
                if stored is not None:
                    return stored
            if claimed:
                return None
            await asyncio.sleep(CLAIM_POLL_S)

    def _store(self, put: Any, *args: Any, **kwargs: Any) -> None:
        """Store an answer; a full or read-only cache stops the run (see `local_fatal`) but keeps this answer."""
        try:
            put(*args, **kwargs)
        except CacheWriteError as exc:
            if self.local_fatal is None:
                self.local_fatal = exc
                self.client.stop_reason = str(exc)

    async def _ask(
        self, key: str, item_id: str, inputs: JudgeInput, input_ids: dict[str, str], messages: Any
    ) -> Judgment:

        response_format = self.client.response_format(self._out_model, self._structured)
        spent = _Spent()
        last_raw: str | None = None
        last_error = "parse: no attempt made"
        answers: list[str] = []
        for _ in range(self.parse_retries + 1):
            if self.local_fatal is not None:  # the cache cannot store answers: pay for nothing more
                return self._record(
                    item_id, input_ids, status="failed", raw_output=last_raw,
                    error=f"call: not sent: {self.local_fatal}"[:1000], **spent.fields(),
                )
            try:
                comp = await self.client.complete(messages, response_format=response_format)
            except CallFailed as failure:
                spent.attempts += failure.attempts
                spent.latency_s += failure.latency_s
                return self._record(
                    item_id,
                    input_ids,
                    status="failed",
                    raw_output=last_raw,
                    error=f"call: {failure.kind}: {failure.reason}",
                    **spent.fields(),
                )
            spent.add(comp)
            try:
                out = self._parse(comp.text, inputs)
            except ParseError as exc:
                if is_cut(comp.finish_reason):
                    # The same budget cuts the same answer again: no re-ask; the fix is the budget, which is part of
                    # the cache key, so the cut answer is stored like an unparseable one (a rerun pays nothing)
                    # and a raised budget asks afresh.
                    error = truncation_error(self.task.name, self.budget, self.budget_source, comp.finish_reason)
                    if self.cache is not None:
                        fields = spent.fields()
                        self.cache.put_parse_failure(
                            key,
                            [comp.text],
                            error,
                            prompt_tokens=fields["prompt_tokens"],
                            completion_tokens=fields["completion_tokens"],
                            cost_usd=fields["cost_usd"],
                            attempts=spent.attempts,
                            model=self.cfg.model,
                            prompt_hash=self.prompt.sha256,
                        )
                    return self._record(
                        item_id, input_ids, status="failed", raw_output=comp.text, error=error, **spent.fields()
                    )
                last_raw, last_error = comp.text, parse_failure(exc)
                answers.append(comp.text)
                continue
            if self.cache is not None:
                self._store(
                    self.cache.put,
                    key,
                    comp.text,
                    prompt_tokens=comp.prompt_tokens,
                    completion_tokens=comp.completion_tokens,
                    cost_usd=comp.cost_usd,
                    model=self.cfg.model,
                    prompt_hash=self.prompt.sha256,
                )
            return self._ok(item_id, input_ids, out, comp.text, **spent.fields())
        error = last_error[:1000]
        if self.cache is not None and answers:
            fields = spent.fields()
            self._store(
                self.cache.put_parse_failure,
                key,
                answers,
                error,
                prompt_tokens=fields["prompt_tokens"],
                completion_tokens=fields["completion_tokens"],
                cost_usd=fields["cost_usd"],
                attempts=spent.attempts,
                model=self.cfg.model,
                prompt_hash=self.prompt.sha256,
            )
        return self._record(
            item_id,
            input_ids,
            status="failed",
            raw_output=last_raw,
            error=error,
            **spent.fields(),
        )

    def _from_stored_failure(
        self, key: str, item_id: str, inputs: JudgeInput, input_ids: dict[str, str], stored: StoredParseFailure
    ) -> Judgment:
        """Re-parse the stored answers (no call): a parser fixed since turns them into a judgment."""
        usage = {
            "prompt_tokens": stored.prompt_tokens,
            "completion_tokens": stored.completion_tokens,
            "cost_usd": stored.cost_usd,
            "latency_s": 0.0,
            "cache_hit": True,
            "attempts": 0,
        }
        error = stored.error
        for raw in stored.answers:
            try:
                out = self._parse(raw, inputs)
            except ParseError as exc:
                if not stored.error.startswith("truncated:"):  # a cut answer keeps its own failure kind
                    error = parse_failure(exc)[:1000]
                continue
            assert self.cache is not None
            self._store(
                self.cache.put,
                key,
                raw,
                prompt_tokens=stored.prompt_tokens,
                completion_tokens=stored.completion_tokens,
                cost_usd=stored.cost_usd,
                model=self.cfg.model,
                prompt_hash=self.prompt.sha256,
            )
            return self._ok(item_id, input_ids, out, raw, **usage)
        return self._record(
            item_id, input_ids, status="failed", raw_output=stored.answers[-1], error=error, **usage
        )

    def close(self) -> None:
        if self._owns_cache and self.cache is not None:
            self.cache.close()


# The authors' request kwargs that change an answer and that we send as they do (others are only recorded:
# the model comes from the judge config or a preset, the response format from the step's response model).
_APPLIED_KWARGS = ("reasoning_effort", "top_p")
_THINKING_BUDGET = re.compile(r"thinking_budget\s*=\s*(\d+)")
REQUEST_MODES = ("ours", "authors")


def _is_gemini(model: str) -> bool:
    return model.split("/")[0] in ("gemini", "vertex_ai")


def authors_request_params(kwargs: Mapping[str, Any], model: str) -> dict[str, Any]:
    """The answer-changing request keys of the authors' call, in litellm's spelling: `reasoning_effort`,
    `top_p` as they are; google-genai's `ThinkingConfig(thinking_budget=N)` as litellm's `thinking` parameter
    (`{"type": "enabled", "budget_tokens": N}`, which litellm sends as `generationConfig.thinkingConfig.
    thinkingBudget` for Gemini 2.5; litellm adds `includeThoughts: true`, which only returns thought summaries).
    The thinking budget is a Gemini client's setting: another provider's judge does not get it."""
    params = {k: kwargs[k] for k in _APPLIED_KWARGS if isinstance(kwargs.get(k), str | int | float)}
    m = _THINKING_BUDGET.search(str(kwargs.get("config") or ""))
    if m and _is_gemini(model):
        params["thinking"] = {"type": "enabled", "budget_tokens": int(m.group(1))}
    return params


def _step_kwargs(step_prompt: Any, model: str) -> dict[str, Any]:
    """The authors' request kwargs of a step; a step whose provider path is chosen per ensemble member holds
    them `per_provider`, and the judge takes those of its own provider (`gemini` for a Gemini model)."""
    try:
        kwargs = dict(step_prompt.step.request_kwargs)
    except Exception:  # noqa: BLE001 - kwargs read from sources that are present (authors_prompt read them)
        return {}
    per_provider = kwargs.pop("per_provider", None)
    if isinstance(per_provider, Mapping):
        path = "gemini" if _is_gemini(model) else "openai"
        kwargs.update(per_provider.get(path) or {})
    return kwargs


def _with_step_request(
    raw: dict[str, Any], task: str, budget: int, step_prompt: Any | None
) -> dict[str, Any]:
    """The judge config for one step: `max_tokens` = the step's budget, plus (authors' prompts) the authors'
    `max_completion_tokens` as the budget unless the user set one for the step, and their `reasoning_effort`
    / `top_p` / Gemini thinking budget as request params. `judge.request_params` set by the user win.

    `request: authors` (the `published` presets) sends the authors' request exactly: their temperature, seed and
    output cap where they set one and none of ours where they do not; a cap the user sets for cost
    (`judge.max_tokens` or `judge.output_budgets.<task>`) is sent as a visible override (the budget source)."""
    mode = str(raw.get("request") or "ours")
    if mode not in REQUEST_MODES:
        raise ValueError(f"judge.request must be one of {'|'.join(REQUEST_MODES)}, got {mode!r}")
    out = {k: v for k, v in raw.items() if k not in ("output_budgets", "request")}
    out["max_tokens"] = budget
    if step_prompt is None:
        return out
    kwargs = _step_kwargs(step_prompt, str(raw.get("model") or ""))
    user_cap = (raw.get("output_budgets") or {}).get(task)
    if user_cap is None:
        user_cap = raw.get("max_tokens")
    authors_cap = kwargs.get("max_completion_tokens", kwargs.get("max_tokens"))
    if isinstance(authors_cap, int) and user_cap is None:
        out["max_tokens"] = authors_cap
        out["_budget_source"] = f"authors' max_completion_tokens ({step_prompt.prompt_id})"
    if mode == "authors" and str(getattr(step_prompt, "prompt_id", "")).endswith("_no_authors_prompt"):
        mode = "ours"  # the authors released no call for this step (our prompt stands in): nothing to copy
    if mode == "authors":
        temperature = kwargs.get("temperature")
        out["temperature"] = float(temperature) if isinstance(temperature, int | float) else None
        out["seed"] = kwargs.get("seed") if isinstance(kwargs.get("seed"), int) else None
        if user_cap is not None:
            out["max_tokens"] = int(user_cap)
            out["_budget_source"] = f"override: the user's cap for {task} (the authors send none)" if not isinstance(
                authors_cap, int) else f"override: the user's cap for {task} (the authors send {authors_cap})"
        elif not isinstance(authors_cap, int):
            out["max_tokens"] = None
            out["_budget_source"] = f"none: the authors send no output cap ({step_prompt.prompt_id})"
    out["request_params"] = {**authors_request_params(kwargs, str(raw.get("model") or "")),
                             **(raw.get("request_params") or {})}
    return out


class _Spent:
    """Usage summed over every call made for one item (parse retries included); unknown cost stays unknown."""

    __slots__ = ("attempts", "latency_s", "prompt_tokens", "completion_tokens", "cost_usd", "_cost_known")

    def __init__(self) -> None:
        self.attempts = 0
        self.latency_s = 0.0
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.cost_usd = 0.0
        self._cost_known: bool | None = None

    def add(self, c: Completion) -> None:
        self.attempts += c.attempts
        self.latency_s += c.latency_s
        if c.prompt_tokens is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + c.prompt_tokens
        if c.completion_tokens is not None:
            self.completion_tokens = (self.completion_tokens or 0) + c.completion_tokens
        if c.cost_usd is None:
            self._cost_known = False
        else:
            self.cost_usd += c.cost_usd
            self._cost_known = self._cost_known is not False

    def fields(self) -> dict[str, Any]:
        return {
            "attempts": self.attempts,
            "latency_s": self.latency_s,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_hit": False,
            "cost_usd": self.cost_usd if self._cost_known else None,
        }
