"""Typed models of the JSON that report adapters read, and error messages that say where and what is wrong.

Why pydantic here: adapters used to walk raw dicts with `isinstance` checks, and every check that was
forgotten became a crash (`"content": 5` raised TypeError and took a whole folder system down). Validating
once, up front, turns any shape problem into one ReportParseError such as
`line 3: output[1].content: expected a list, got int (5)`. Models allow extra fields: real outputs carry
many we do not read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from reportbench.reports.errors import ReportParseError

M = TypeVar("M", bound=BaseModel)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


# ------------------------------------------------------------------ OpenAI Responses API result


class ContentPart(_Open):
    type: str
    text: str
    annotations: list[dict[str, Any]] = []


class MessageItem(_Open):
    type: str
    content: list[dict[str, Any]] | None = None


class ResponsesResult(_Open):
    """`{"object": "response", "status": ..., "output": [..., {"type": "message", "content": [...]}]}`."""

    status: str | None = None
    output: list[dict[str, Any]]


# ------------------------------------------------------------------ markdown + JSON pairs (OpenScholar, ...)


class PairJson(_Open):
    """The JSON twin of a markdown report: a string `output` and lists of retrieved contexts (objects)."""

    output: str | None = None
    ctxs: list[dict[str, Any]] | None = None
    original_ctxs: list[dict[str, Any]] | None = None


# ------------------------------------------------------------------ STORM url_to_info.json


class StormInfo(_Open):
    url_to_unified_index: dict[str, int | str]
    url_to_info: dict[str, dict[str, Any]] | None = None


# ------------------------------------------------------------------ messages


def describe_json(value: Any) -> str:
    """'array', 'object', 'string', ... as a JSON user would say it."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "null"


def json_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def json_line_of(text: str, loc: tuple[int | str, ...]) -> int | None:
    """1-based line where the value at `loc` starts in `text` (None when it cannot be located).

    Walks the text with the standard decoder's raw_decode to skip sibling values, so positions are exact.
    """
    decoder = json.JSONDecoder()
    i = _skip_ws(text, 0)
    try:
        for part in loc:
            if i >= len(text):
                return None
            if text[i] == "{" and isinstance(part, str):
                i = _skip_ws(text, i + 1)
                while text[i] != "}":
                    key, i = decoder.raw_decode(text, i)
                    i = _skip_ws(text, i)
                    i = _skip_ws(text, i + 1)  # ':'
                    if key == part:
                        break
                    _, i = decoder.raw_decode(text, i)
                    i = _skip_ws(text, i)
                    if text[i] == ",":
                        i = _skip_ws(text, i + 1)
                else:
                    return None
            elif text[i] == "[" and isinstance(part, int):
                i = _skip_ws(text, i + 1)
                for _ in range(part):
                    _, i = decoder.raw_decode(text, i)
                    i = _skip_ws(text, i)
                    if text[i] != ",":
                        return None
                    i = _skip_ws(text, i + 1)
            else:
                return None
    except (ValueError, IndexError, RecursionError):
        return None
    return text.count("\n", 0, i) + 1


def validation_message(
    exc: ValidationError, text: str | None, expected: str, prefix: tuple[int | str, ...] = ()
) -> str:
    """The first validation error as `line N: a.b[2]: expected ..., got <type> (<value>)`."""
    err = exc.errors(include_url=False)[0]
    loc = tuple(p for p in (*prefix, *err["loc"]) if not (isinstance(p, str) and p in ("list", "dict", "str", "int")))
    # pydantic names union members in the loc (e.g. 'UrlAnnotation'); keep only the data path
    loc = tuple(p for p in loc if not (isinstance(p, str) and p[:1].isupper()))
    got = err.get("input")
    shown = repr(got) if not isinstance(got, dict | list) else describe_json(got)
    detail = f"{err['msg'].removeprefix('Input should be ').lower()}"
    where = json_line_of(text, loc) if text else None
    line = f"line {where}: " if where else ""
    if err["type"] == "missing":
        return f"{line}{json_path(loc[:-1])}: no '{loc[-1]}' ({expected})"
    return f"{line}{json_path(loc)}: expected {detail}, got {describe_json(got)} ({shown[:60]}) ({expected})"


def validate_json(
    path: Path | str,
    data: Any,
    model: type[M],
    text: str | None,
    expected: str,
    prefix: tuple[int | str, ...] = (),
) -> M:
    """`data` as `model`, or ReportParseError with the line and JSON path of the first problem."""

    if not isinstance(data, dict):
        line = f"line {json_line_of(text, prefix) or 1}: " if text else ""
        raise ReportParseError(path, f"{line}JSON {describe_json(data)} where {expected} was expected")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ReportParseError(path, validation_message(exc, text, expected, prefix)) from exc
