"""Resource bounds on untrusted input (docs/reliability.md, "Resource bounds").

A report, a page or a judge input is untrusted: one hostile file must never hang a stage, exhaust memory or
get a different outcome under load. So every bound here is a SIZE (bytes, lines, characters, counts), checked
before the expensive work, never a wall-clock timer; a violation is an outcome whose reason names the limit,
the measured size and the config key that raises it.

Report limits are per system (`systems.<name>.limits.<limit>`); the system stage sets them for the reports
it reads with `report_limits(...)`, and `reports.base.build_report` checks them.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any


class InputTooLargeError(ValueError):
    """An input is over a documented size bound: `limit` names it and `key` is the setting that raises it."""

    def __init__(self, what: str, size: int, limit: str, bound: int, key: str, *, at_least: bool = False) -> None:
        self.limit, self.size, self.bound, self.key = limit, size, bound, key
        shown = f"{size:,}{' or more: counting stopped there' if at_least else ''}"
        super().__init__(f"too large: {what} ({shown}) is over the {limit} limit of {bound:,} (raise {key})")


@dataclass(frozen=True)
class ReportLimits:
    """Per-report bounds; the defaults are far above any real report we have seen (docs/reliability.md)."""

    max_bytes: int = 5 * 1024 * 1024  # a file read beyond this is refused (reports.base.DEFAULT_MAX_BYTES)
    max_lines: int = 20_000
    max_line_chars: int = 20_000  # one line (a table row, a paragraph on one line); real reports: < 3,500
    max_paragraph_chars: int = 1_000_000  # one block handed to the sentence splitter (Punkt: ~0.5 s per MB, linear)
    max_indent: int = 256  # leading whitespace of a non-blank line: list nesting depth x indent width
    max_sentences: int = 5_000
    max_citations: int = 5_000  # inline citation markers

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None, system: str) -> ReportLimits:
        """`systems.<name>.limits` read into limits (unknown or non-positive values are a config error)."""
        raw = (spec or {}).get("limits") or {}
        if not isinstance(raw, Mapping):
            raise ValueError(f"systems.{system}.limits: expected a mapping of limit -> integer, got {raw!r}")
        known = {f.name for f in fields(cls)}
        extra = sorted(set(raw) - known)
        if extra:
            raise ValueError(f"systems.{system}.limits: unknown limit(s) {extra} (known: {sorted(known)})")
        for key, value in raw.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"systems.{system}.limits.{key}: {value!r} must be a positive integer")
        return replace(cls(), **dict(raw))


_LIMITS: contextvars.ContextVar[tuple[ReportLimits, str] | None] = contextvars.ContextVar(
    "reportbench_report_limits", default=None
)


@contextlib.contextmanager
def report_limits(limits: ReportLimits, system: str) -> Iterator[None]:
    """Reports built inside this block are checked against `limits` (their key names `system`)."""
    token = _LIMITS.set((limits, system))
    try:
        yield
    finally:
        _LIMITS.reset(token)


def current_limits() -> tuple[ReportLimits, str]:
    """The limits in force and the key prefix that raises them (defaults: `systems.<name>.limits`)."""
    active = _LIMITS.get()
    return active if active is not None else (ReportLimits(), "<name>")


def _too_large(what: str, size: int, limit: str, *, at_least: bool = False) -> InputTooLargeError:
    limits, system = current_limits()
    key = f"systems.{system}.limits.{limit}"
    return InputTooLargeError(what, size, limit, getattr(limits, limit), key, at_least=at_least)


def too_many(what: str, limit: str) -> InputTooLargeError:
    """A count that stopped one past its bound (`limit`: max_sentences / max_citations): the work to count the
    rest is never done, so memory and time stay bounded by the limit, not by the input."""
    limits, _ = current_limits()
    return _too_large(what, getattr(limits, limit) + 1, limit, at_least=True)


def _starts_block(stripped: str) -> bool:
    """A line that starts its own block for the sentence splitter: list item, heading, table row, quote."""
    if stripped[:1] in ("-", "*", "+", "#", "|", ">", "•"):
        return True
    digits = len(stripped) - len(stripped.lstrip("0123456789"))
    return 0 < digits <= 4 and stripped[digits : digits + 1] in (".", ")")


def check_body(body: str, *, paragraphs: bool = True) -> None:
    """Refuse a body whose size would make parsing slow or memory-hungry: one linear pass, no regex.

    `paragraphs=False` skips the paragraph bound (for a whole file whose reference list is never split into
    sentences)."""
    limits, _ = current_limits()
    lines = body.split("\n")
    if len(lines) > limits.max_lines:
        raise _too_large("line count", len(lines), "max_lines")
    if (
        max(map(len, lines)) <= limits.max_line_chars
        and (not paragraphs or len(body) + 1 <= limits.max_paragraph_chars)  # a paragraph holds at most all lines
        and not any(line[:1].isspace() for line in lines)  # every indentation is 0
    ):
        return  # no line can break a bound: the pass below would find nothing
    paragraph = 0
    for number, line in enumerate(lines, 1):
        if len(line) > limits.max_line_chars:
            raise _too_large(f"line {number}", len(line), "max_line_chars")
        stripped = line.lstrip()
        if not stripped:
            paragraph = 0
            continue
        indent = len(line) - len(stripped)
        if indent > limits.max_indent:
            raise _too_large(f"indentation (nesting) of line {number}", indent, "max_indent")
        if _starts_block(stripped):
            paragraph = 0
        paragraph += len(line) + 1
        if paragraphs and paragraph > limits.max_paragraph_chars:
            raise _too_large(f"paragraph ending at line {number}", paragraph, "max_paragraph_chars")


def check_counts(sentences: int, citations: int) -> None:
    """Refuse a report with more sentences or citation markers than any judge step should be handed."""
    limits, _ = current_limits()
    if sentences > limits.max_sentences:
        raise _too_large("sentence count", sentences, "max_sentences")
    if citations > limits.max_citations:
        raise _too_large("citation marker count", citations, "max_citations")
