"""LLM steps of the producing systems, and LOTUS-style semantic operators (filter / top-k / aggregate) over
polars frames, all through the judge layer's litellm client.

Why not lotus-ai itself: lotus-ai 1.2.4 pins numpy<2 (this environment has numpy 2.x) and pulls
sentence-transformers (torch) and faiss-cpu for features we do not use, and its LM wrapper would bypass our
response cache, retry policy, key scrubbing and cost accounting. The three operators we need are small:
- `sem_filter`: one yes/no call per row (chain-of-thought answer, like LOTUS `strategy="cot"`); a row whose
  call failed is dropped and counted, never kept by guess.
- `sem_topk`: one 0-10 relevance score per row, then a stable sort (score desc, then retrieval order).
  LOTUS ranks with pairwise comparisons; pointwise scoring needs n calls instead of O(n log n) and is
  order-independent, which makes cached reruns reproducible. Documented in docs/systems.md.
- `sem_agg`: one call over the numbered rows (the paper's Box 5 writer).

Every step is a `JudgeTask` run by `LLMJudge`, so it gets the cache (key = model, api_base, messages,
temperature, seed, max_tokens, answer schema, prompt-file hash), one retry layer with backoff, parse
retries, and a usage record per call. Failures come back as values (`Judgment.status == "failed"`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import polars as pl
from pydantic import Field, ValidationError

from reportbench.judges.base import JudgeInput, JudgeOutput, JudgeTask, Judgment, OfflineVerdict, ParseError
from reportbench.judges.cache import ResponseCache
from reportbench.judges.tasks._parsing import ExactInt, parse_json_output
from reportbench.systems.base import SystemError_

CLIENT_KEYS = (
    "model",
    "api_base",
    "api_key_env",
    "temperature",
    "seed",
    "max_tokens",
    "structured_output",
    "drop_params",
    "input_cost_per_token",
    "output_cost_per_token",
)
RUNTIME_DEFAULTS: dict[str, Any] = {
    "max_concurrency": 8,
    "timeout_s": 120.0,
    "max_retries": 4,
    "backoff_base_s": 1.0,
    "backoff_max_s": 30.0,
    "parse_retries": 2,
    "cache_path": ".reportbench/cache/systems.sqlite",
    "progress": False,
}


def client_config(name: str, cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The judge-client config for a system entry's own model settings (validated; errors name the key)."""
    from reportbench.judges.client import ClientConfig  # lazy: +359 ms to import (python -X importtime)

    if not cfg.get("model"):
        raise SystemError_(f"systems.{name}.model: required (any litellm model string, e.g. openai/gpt-4.1)")
    out = {k: cfg[k] for k in CLIENT_KEYS if k in cfg}
    out["runtime"] = {**RUNTIME_DEFAULTS, **dict(cfg.get("runtime") or {})}
    try:
        ClientConfig.model_validate(out)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise SystemError_(f"systems.{name}.{where}: {first['msg']}") from None
    return out


# ------------------------------------------------------------------------------------- typed steps


def _no_offline(inputs: Any, params: dict[str, Any]) -> OfflineVerdict:
    raise NotImplementedError("system steps have no offline rule; use kind offline_baseline for that")


class QueryInput(JudgeInput):
    topic: str
    background: str
    number_of_queries: int
    date: str


class RefQueries(JudgeOutput):
    queries: list[str]

    def value(self) -> float | None:
        return float(len(self.queries))


class SummaryInput(JudgeInput):
    topic: str
    results: str


class RefSummary(JudgeOutput):
    summary: str

    def value(self) -> float | None:
        return None


class SnippetInput(JudgeInput):
    user_query: str
    snippet: str


class RefFilter(JudgeOutput):
    reasoning: str
    relevant: bool

    def value(self) -> float:
        return 1.0 if self.relevant else 0.0


class RefRank(JudgeOutput):
    reasoning: str
    score: Annotated[int, ExactInt, Field(ge=0, le=10)]

    def value(self) -> float:
        return float(self.score)


class AggregateInput(JudgeInput):
    topic: str
    section_instructions: str
    existing_content: str
    context: str
    word_limit: str


class RefSection(JudgeOutput):
    text: str

    def value(self) -> float | None:
        return None


def _parse_text(raw: str, inputs: Any = None) -> RefSection:
    text = (raw or "").strip()
    if not text:
        raise ParseError("empty answer")
    return RefSection(text=text)


def _json_parser(model: type[JudgeOutput]) -> Any:
    def parse(raw: str, inputs: Any = None) -> JudgeOutput:
        return parse_json_output(raw, model)

    return parse


def _step(
    name: str,
    prompt: str,
    input_model: type[JudgeInput],
    output_model: type[JudgeOutput],
    description: str,
    *,
    parse: Any = None,
    structured: bool = True,
) -> JudgeTask:
    """A `deepscholar_ref.<name>` step on `prompts/deepscholar_ref/<prompt>.yaml`; JSON answers unless `parse`."""
    return JudgeTask(
        name=f"deepscholar_ref.{name}",
        prompt_id=f"deepscholar_ref/{prompt}.yaml",
        input_model=input_model,
        output_model=output_model,
        parse=parse or _json_parser(output_model),
        offline=_no_offline,
        structured=structured,
        description=description,
    )


STEPS: dict[str, JudgeTask] = {
    "queries": _step(
        "queries",
        "query_generation",
        QueryInput,
        RefQueries,
        "Q arXiv search queries from the topic and summaries of earlier rounds (paper Box 4)",
    ),
    "summary": _step(
        "summary",
        "summary",
        SummaryInput,
        RefSummary,
        "summary of one round's search results, the background for the next round's queries",
    ),
    "filter": _step(
        "filter",
        "filter",
        SnippetInput,
        RefFilter,
        "sem_filter: is the article relevant to the user's query (paper Figure 9)",
    ),
    "rank": _step(
        "rank",
        "rank",
        SnippetInput,
        RefRank,
        "sem_topk (pointwise): 0-10 relevance of the article to the user's query",
    ),
    "aggregate": _step(
        "aggregate",
        "aggregate",
        AggregateInput,
        RefSection,
        "sem_agg: write the section from the numbered sources with [n] citations (paper Box 5)",
        parse=_parse_text,
        structured=False,
    ),
}


# ------------------------------------------------------------------------------------------- usage


@dataclass
class StepUsage:
    """Calls of one step summed over a run. Deterministic fields only (no latency, no cache flags), so the
    DVC-tracked usage file does not change when a rerun is answered from the cache."""

    calls: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    errors: list[str] = field(default_factory=list)

    def add(self, j: Judgment) -> None:
        self.calls += 1
        if not j.ok:
            self.failed += 1
            self.errors.append(f"{j.item_id}: {j.error}"[:300])
        self.prompt_tokens += j.prompt_tokens or 0
        self.completion_tokens += j.completion_tokens or 0
        if j.cost_usd is not None:
            self.cost_usd += j.cost_usd
        elif j.ok:
            self.cost_known = False  # a model litellm has no price for: unknown, never 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "failed": self.failed,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 6) if self.cost_known and self.calls else None,
            "errors": sorted(self.errors)[:5],  # sorted: tasks finish in any order
        }


class LLMSteps:
    """One litellm client + one response cache shared by every step of a system run."""

    def __init__(self, client_cfg: Mapping[str, Any], prompts_dir: str | Path = "prompts") -> None:
        from reportbench.judges.client import LLMClient  # lazy: +359 ms to import (python -X importtime)
        from reportbench.judges.llm import LLMJudge  # lazy: +335 ms to import (python -X importtime)

        self.client = LLMClient(client_cfg)
        cache_path = (client_cfg.get("runtime") or {}).get("cache_path")
        self.cache = ResponseCache(cache_path) if cache_path else None
        self.judges = {
            step: LLMJudge(
                task,
                client_cfg,
                prompts_dir=prompts_dir,
                client=self.client,
                cache=self.cache if self.cache is not None else False,  # an empty cache is falsy (len 0)
            )
            for step, task in STEPS.items()
        }
        self.usage: dict[str, StepUsage] = {step: StepUsage() for step in STEPS}

    async def ask(self, step: str, item_id: str, inputs: JudgeInput) -> tuple[dict[str, Any] | None, Judgment]:
        """(parsed answer as a dict, or None when the call failed; the judgment record)."""
        judgment = await self.judges[step](item_id, inputs, {})
        self.usage[step].add(judgment)
        if not judgment.ok or judgment.parsed is None:
            return None, judgment
        return json.loads(judgment.parsed), judgment

    def usage_dict(self) -> dict[str, Any]:
        return {step: u.as_dict() for step, u in self.usage.items()}

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


# ------------------------------------------------------------------------------- semantic operators


async def _judge_rows(
    df: pl.DataFrame, steps: LLMSteps, step: str, user_query: str, item_prefix: str, answer_key: str, dtype: Any
) -> pl.DataFrame:
    """`df` plus the `<answer_key>` column (null where the call failed) and the `<step>_error` column: one
    `step` call per row, on its snippet."""
    answers = await asyncio.gather(
        *(
            steps.ask(step, f"{item_prefix}/{step}/{doc_id}", SnippetInput(user_query=user_query, snippet=snip))
            for doc_id, snip in zip(df["doc_id"], df["snippet"], strict=True)
        )
    )
    return df.with_columns(
        pl.Series(answer_key, [a[answer_key] if a else None for a, _ in answers], dtype=dtype),
        pl.Series(f"{step}_error", [None if a else j.error for a, j in answers], dtype=pl.String),
    )


async def sem_filter(
    df: pl.DataFrame, steps: LLMSteps, user_query: str, item_prefix: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows the LLM judged relevant, all rows with `relevant` / `filter_error` columns)."""
    judged = await _judge_rows(df, steps, "filter", user_query, item_prefix, "relevant", pl.Boolean)
    return judged.filter(pl.col("relevant").fill_null(False)), judged


async def sem_topk(
    df: pl.DataFrame, steps: LLMSteps, user_query: str, k: int, item_prefix: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(top-k rows by LLM score, then retrieval order; all rows with `score` / `rank_error` columns).
    A row whose scoring failed sorts after every scored row (it is not dropped)."""
    scored = await _judge_rows(df, steps, "rank", user_query, item_prefix, "score", pl.Int64)
    ordered = scored.sort(["score", "order"], descending=[True, False], nulls_last=True)
    return ordered.head(k), scored


def numbered_context(df: pl.DataFrame, max_chars: int = 1500) -> str:
    """'[n] Title: ...\\nAbstract: ...' per row, numbered from 1 in frame order (the citation numbers)."""
    blocks = []
    for i, snip in enumerate(df["snippet"].to_list(), start=1):
        text = snip if len(snip) <= max_chars else snip[: max_chars - 3] + "..."
        blocks.append(f"[{i}] {text}")
    return "\n\n".join(blocks)


async def sem_agg(
    df: pl.DataFrame,
    steps: LLMSteps,
    *,
    topic: str,
    section_instructions: str,
    word_limit: str,
    item_prefix: str,
) -> tuple[str | None, Judgment]:
    """The section written over the numbered rows (None when the call failed)."""
    inputs = AggregateInput(
        topic=topic,
        section_instructions=section_instructions,
        existing_content="",
        context=numbered_context(df),
        word_limit=word_limit,
    )
    answer, judgment = await steps.ask("aggregate", f"{item_prefix}/aggregate", inputs)
    return (answer["text"] if answer else None), judgment
