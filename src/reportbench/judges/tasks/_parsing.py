"""Strict JSON answer parsing shared by every judge task.

A judge answer is accepted only when the whole text is one JSON object (optionally inside a single
``` or ```json fence) that matches the task's output model exactly: no prose around it, no duplicate or
unknown keys, no missing fields, no 'true' for 1 or '1' for 1. Anything else is a ParseError with a reason,
because a guessed answer is worse than a recorded failure (the LLM backend may retry; metrics see NaN).
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BeforeValidator, ConfigDict, ValidationError

from reportbench.judges.base import JudgeOutput, ParseError

OutputT = TypeVar("OutputT", bound=JudgeOutput)

_FENCE_RE = re.compile(r"^```(?:json|JSON)?[ \t]*\n(?P<body>.*?)\n?[ \t]*```$", re.DOTALL)


def _exact_int(value: Any) -> Any:
    """Reject bool and float before a Literal[int, ...] sees them (pydantic would coerce True/1.0)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected a JSON integer, got {type(value).__name__} {value!r}")
    return value


ExactInt = BeforeValidator(_exact_int)

# For outputs whose JSON has an "explanation" key: the attribute is `explanation_text` (JudgeOutput's
# `explanation()` accessor keeps its name), the JSON key stays "explanation" both ways, and only the
# JSON key is accepted when parsing.
EXPLAINED_OUTPUT_CONFIG = ConfigDict(extra="forbid", serialize_by_alias=True, validate_by_alias=True)


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise ParseError(f"duplicate key(s) {duplicates} in the JSON object")
    return dict(pairs)


def _reject_constant(name: str) -> Any:
    raise ParseError(f"non-standard JSON constant {name}")


def extract_json_object(raw: str) -> dict[str, Any]:
    """The single JSON object that is the entire answer (fences allowed), else ParseError."""
    if raw is None:
        raise ParseError("empty answer")
    text = raw.strip()
    if not text:
        raise ParseError("empty answer")
    fence = _FENCE_RE.match(text)
    if fence:
        text = fence.group("body").strip()
    elif text.startswith("```"):
        raise ParseError("malformed code fence (expected ```json ... ``` around the object and nothing else)")
    if not text.startswith("{"):
        raise ParseError("answer is not a bare JSON object (text before it, or not an object)")
    if not text.endswith("}"):
        raise ParseError("answer is not a bare JSON object (truncated, or text after it)")
    try:
        data = json.loads(text, object_pairs_hook=_reject_duplicate_keys, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON: {exc.msg} at char {exc.pos}") from exc
    if not isinstance(data, dict):  # pragma: no cover - guarded by the braces check
        raise ParseError("answer is not a JSON object")
    return data


def validate_output(data: dict[str, Any], model: type[OutputT]) -> OutputT:
    """Validate a decoded object against the output model in strict mode; explain the first problems."""
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:5]:
            where = ".".join(str(x) for x in err["loc"]) or "<object>"
            problems.append(f"{where}: {err['msg']}")
        raise ParseError(f"answer does not match {model.__name__}: " + "; ".join(problems)) from None


def parse_json_output(raw: str, model: type[OutputT]) -> OutputT:
    return validate_output(extract_json_object(raw), model)


def numbered(items: list[str]) -> str:
    """'1. first\\n2. second' — how lists are shown to an LLM so it can keep one answer per item."""
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, start=1))
