"""Refusals and plans are not answers: one detector for every benchmark.

A system sometimes returns a report that does not answer: a refusal ("I cannot satisfy your requirements"),
a plan of what it would do ("Evidence-Backed Analysis Plan", "I will first search…"), a not-found note ("No
primary-source materials were provided … Sources: None provided"), or text without any reference list where
every benchmark here asks for cited sources. A lexical judge can score such text well (the LRB offline judge
gave one Coverage 75); the benchmark authors' prompts score it 0 (LRB's coverage prompt: "a method or plan
instead of data → 0; information not found → 0").

`detect` returns flags with the evidence that triggered them; the system stage writes them into each ok
outcome's `flags`, `reportbench check` lists them, the site shows them, and each protocol decides what a flagged
report scores (`BenchmarkSpec.flagged_reports`; docs/mapping.md). Patterns, not understanding: the opening of
the report is read for refusals, plans and not-found notes (a real report that says "no effect was found" in
its eighth paragraph is not flagged), the whole text for an explicit "Sources: None" line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

REFUSAL = "refusal"
PLAN = "plan_not_answer"
NOT_FOUND = "not_found"
NO_REFERENCES = "no_references"
NON_ANSWER_FLAGS = (REFUSAL, PLAN, NOT_FOUND)  # the report does not answer the task
ALL_FLAGS = (*NON_ANSWER_FLAGS, NO_REFERENCES)

OPENING_CHARS = 1200  # refusals, plans and not-found notes are said up front
MAX_SCAN_CHARS = 400_000  # bounded input: the whole-text pattern never runs on more than this

_REFUSAL_RE = re.compile(
    r"\b(?:i|we)\s+(?:cannot|can\s*not|can't|can’t|am\s+unable\s+to|are\s+unable\s+to|'m\s+unable\s+to|’m\s+unable\s+to"
    r"|am\s+not\s+able\s+to|won't|will\s+not)\s+(?:\w+\s+){0,3}?"
    r"(?:satisfy|fulfil|fulfill|complete|provide|produce|write|answer|help|comply|assist|generate|meet)\b"
    r"|\b(?:i'm|i\s+am|i’m)\s+sorry,?\s+but\b"
    # "As an AI language model, I …" / "As an AI, I cannot": never "acting as an AI layer", "as an AI disruptor"
    r"|\bas\s+an\s+ai(?:\s+(?:language\s+model|assistant|model))?\s*,\s*(?:i|we)\b"
    r"|\bunable\s+to\s+(?:satisfy|fulfil|fulfill|comply\s+with)\s+(?:your|the|this)\s+(?:request|requirements?)\b",
    re.I,
)
# matched against the title and heading lines of the opening, one line at a time (no multi-line scan)
_PLAN_TITLE_RE = re.compile(
    r"\b(?:analysis|research|investigation|work|search|action)[ \t]+plan\b"
    r"|\bevidence[- ]backed\b[^\n]{0,24}?\bplan\b"
    r"|^(?:plan|proposed[ \t]+approach|research[ \t]+proposal|next[ \t]+steps)[ \t]*:?$",
    re.I,
)
_PLAN_SENTENCE_RE = re.compile(
    r"\b(?:here\s+is|here's|below\s+is)\s+(?:my|a|the|an)\s+(?:\w+\s+){0,2}?plan\b"
    r"|\b(?:i|we)\s*(?:will|'ll|’ll|plan\s+to|intend\s+to|am\s+going\s+to)\s+(?:first\s+|now\s+|then\s+|next\s+)?"
    r"(?:search|research|look\s+(?:up|for|into)|gather|collect|investigate|compile|review|check|find|identify)\b",
    re.I,
)
_NOT_FOUND_RE = re.compile(
    r"\bno\s+(?:primary[- ]source\s+|relevant\s+|reliable\s+|verifiable\s+|credible\s+)?"
    r"(?:materials?|sources?|documents?|data|information|evidence|results?|records?)\s+(?:\w+\s+){0,2}?"
    r"(?:were|was|have\s+been|has\s+been|could\s+be|are|is)\s+(?:provided|found|available|located|identified)\b"
    r"|\bnone\s+(?:were\s+)?found\b"
    r"|\b(?:information|data)\s+(?:is\s+|was\s+)?(?:not\s+available|unavailable|not\s+found)\b"
    r"|\b(?:i|we)\s+(?:could\s+not|couldn't|couldn’t|was\s+unable\s+to|were\s+unable\s+to)\s+"
    r"(?:find|locate|identify|retrieve|access)\b",
    re.I,
)
# one line only ([ \t], never \s, which would let each line start scan every blank line below it: quadratic)
_NONE_SOURCES_RE = re.compile(
    r"^[#*_ \t]*(?:sources?|references?|citations?|bibliography)[*_ \t]*[:\-–—]?[*_ \t]*"
    r"(?:none(?:[ \t]+(?:provided|available|found|cited))?|n/?a|not[ \t]+applicable)\.?[*_ \t]*$",
    re.I | re.M,
)


@dataclass(frozen=True)
class NonAnswer:
    """One flag and the text that triggered it (shown by `reportbench check` and the site)."""

    flag: str
    evidence: str


def _snippet(text: str, m: re.Match[str]) -> str:
    start = max(0, m.start() - 30)
    return " ".join(text[start : m.end() + 30].split())[:160]


def _title_lines(opening: str) -> list[str]:
    """The first non-empty line and every markdown heading of the opening, without '#', '*' and spaces."""
    lines = [ln for ln in opening.splitlines() if ln.strip()]
    picked = lines[:1] + [ln for ln in lines[1:] if ln.lstrip().startswith("#")]
    return [ln.strip().strip("#*_ \t") for ln in picked]


def detect(body: str, n_sources: int, references_text: str = "") -> list[NonAnswer]:
    """Refusal / plan / not-found / no-reference flags of one report (body without its reference list)."""
    text = body[:MAX_SCAN_CHARS]
    opening = text[:OPENING_CHARS]
    found: list[NonAnswer] = []
    # A report that cites sources has answered something: an opening refusal is a disclaimer ("I cannot give
    # medical advice, but the literature says … [1]"), a plan title names what was asked for ("Action plan for
    # reducing churn"), "I will review …" introduces the answer, "None found: after reviewing the 19 filings …" is
    # a reasoned finding. The opening patterns flag only an unsourced text (tuned on the `tune` split of
    # bench/data/detector_labelled.jsonl; docs/mapping.md §5 gives the held-out figures).
    unsourced = n_sources == 0
    m = _REFUSAL_RE.search(opening) if unsourced else None
    if m:
        found.append(NonAnswer(REFUSAL, _snippet(m.string, m)))
    titles = _title_lines(opening) if unsourced else []
    m = next((hit for line in titles if (hit := _PLAN_TITLE_RE.search(line))), None)
    if m is None and unsourced:
        hits = list(_PLAN_SENTENCE_RE.finditer(opening))
        m = hits[0] if hits and (len(hits) >= 2 or len(text) < 2 * OPENING_CHARS) else None
    if m:
        found.append(NonAnswer(PLAN, _snippet(m.string, m)))
    refs = references_text[:MAX_SCAN_CHARS]
    m = _NOT_FOUND_RE.search(opening) if unsourced else None
    m = m or _NONE_SOURCES_RE.search(text) or _NONE_SOURCES_RE.search(refs)
    if m:
        found.append(NonAnswer(NOT_FOUND, _snippet(m.string, m)))
    if n_sources == 0 and text.strip():
        found.append(NonAnswer(NO_REFERENCES, "the report cites no source (no reference list, no links)"))
    return found


def detect_report(report: Any) -> list[NonAnswer]:
    """`detect` on a parsed `Report` (its body, its sources' raw entries)."""
    sources = getattr(report, "sources", {}) or {}
    refs = "\n".join(str(getattr(s, "raw", "") or "") for s in sources.values())
    return detect(str(getattr(report, "body", "") or ""), len(sources), refs)


def flags_of(report: Any) -> list[str]:
    """The flag names of one report, in a stable order."""
    got = {f.flag for f in detect_report(report)}
    return [f for f in ALL_FLAGS if f in got]


def non_answer_hit(report: Any) -> NonAnswer | None:
    """The first non-answer flag (refusal, plan, not found) of a report with the span that triggered it."""
    got = {f.flag: f for f in detect_report(report)}
    return next((got[f] for f in NON_ANSWER_FLAGS if f in got), None)


def non_answer(report: Any) -> str | None:
    """The first non-answer flag (refusal, plan, not found) of a report, or None. A flag, not a score: a
    protocol changes a score on it only where its authors' protocol says so (`BenchmarkSpec.flagged_reports`)."""
    hit = non_answer_hit(report)
    return hit.flag if hit else None
