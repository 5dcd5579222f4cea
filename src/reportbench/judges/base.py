"""Judge abstractions: a judge task is typed in, typed out, with one strict parser and one offline rule.

Shape borrowed from inspect_ai (a factory returning an async callable; failures are values) and ragas
(typed prompt inputs/outputs; undefined is NaN, never 0).
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field


class ParseError(ValueError):
    """The judge's answer does not match the task's answer format. Never guessed around."""


class BelowBoundAnswer(ParseError):
    """A well-formed answer that the protocol itself defines as giving no value (e.g. DeepResearch Bench's cleaned
    article under the authors' 100-character bound, which they drop from scoring as "Failed to clean article").
    Re-asked like a parse error (the authors retry too); if the last answer is still this, the item is recorded as
    `too_short: <reason>` -- undefined with its reason (errors.failure_class), not a failure against
    `max_failure_rate`."""


class Judgment(BaseModel):
    """One judge decision (or one explicit failure). Every judged item ends as exactly one of these."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(description="judge task name, e.g. 'support'")
    item_id: str = Field(description="unique id of the judged item within its stage")
    input_ids: dict[str, str] = Field(default_factory=dict, description="ids of the inputs (task, report, ...)")
    judge_id: str = Field(description="backend + version, e.g. 'offline-lexical-v1' or 'litellm:openai/gpt-4.1'")
    member: str | None = Field(default=None, description="ensemble member, when a benchmark grades with several judges")
    model: str | None = None
    prompt_id: str | None = None
    prompt_hash: str | None = None
    status: Literal["ok", "failed"] = "ok"
    value: float | None = Field(default=None, description="the parsed score; None when failed")
    label: str | None = Field(default=None, description="the parsed categorical answer, if any")
    parsed: str | None = Field(default=None, description="the whole parsed output as JSON")
    explanation: str | None = None
    raw_output: str | None = None
    error: str | None = Field(default=None, description="why it failed (parse error, HTTP error after retries)")
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float = 0.0
    cache_hit: bool = False
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def score(self) -> float:
        """The value, or NaN for a failure (so an aggregation can never count it as 0)."""
        return float(self.value) if self.ok and self.value is not None else math.nan


class JudgeInput(BaseModel):
    """Base for a task's typed prompt inputs: field names are the prompt template's placeholders."""

    model_config = ConfigDict(extra="forbid")

    def prompt_values(self) -> dict[str, Any]:
        """Values for the prompt placeholders; override to render lists (e.g. numbered nuggets)."""
        return self.model_dump()


class JudgeOutput(BaseModel):
    """Base for a task's typed answer. `value` is what metrics aggregate."""

    model_config = ConfigDict(extra="forbid")

    def value(self) -> float | None:
        raise NotImplementedError

    def label(self) -> str | None:
        return None

    def explanation(self) -> str | None:
        return None


@dataclass(frozen=True)
class OfflineVerdict:
    """What the offline rule returns: a typed output plus the signals it used, for auditing."""

    output: JudgeOutput
    explanation: str
    signals: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgeTask:
    """Everything a backend needs to judge one kind of item.

    - `prompt_id`: path of the prompt file under the prompts dir, e.g. 'deepscholar/support.yaml'.
    - `parse(raw, inputs)`: strict parser from raw model text to `output_model`; raises ParseError, never
      guesses (it gets the inputs so it can check e.g. one label per nugget).
    - `offline`: deterministic rule used by the offline backend; gets the typed input and judge params.
    - `structured`: ask the provider for JSON-schema output when it supports it.
    - `authors_step`: the benchmark authors' step for `judge.prompts=authors`, as '<benchmark>/<key>'
      (e.g. 'deepscholar/support'); None = the step a prompt pack binds to this task name (see prompt_packs).
    - `authors_inputs` / `authors_output`: optional overrides of the pack's mapping from our typed input to
      the authors' inputs, and from (authors' parsed answer, our input) to a dict for `output_model`.
    """

    name: str
    prompt_id: str
    input_model: type[JudgeInput]
    output_model: type[JudgeOutput]
    parse: Callable[[str, Any], JudgeOutput]
    offline: Callable[[Any, dict[str, Any]], OfflineVerdict]
    structured: bool = True
    description: str = ""
    authors_step: str | None = None
    authors_inputs: Callable[[Any], Mapping[str, Any]] | None = None
    authors_output: Callable[[Any, Any], Mapping[str, Any]] | None = None


class Judge(Protocol):
    """An async callable: judge one item, always return a Judgment (never raise for a bad answer)."""

    judge_id: str

    def __call__(self, item_id: str, inputs: JudgeInput, input_ids: dict[str, str]) -> Awaitable[Judgment]: ...


def dump_parsed(output: JudgeOutput) -> str:
    return json.dumps(output.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
