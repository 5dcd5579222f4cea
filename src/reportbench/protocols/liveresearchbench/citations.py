"""Claim–URL extraction for citation accuracy (our reconstruction: the authors describe it but released no code).

A claim is a body sentence carrying citations: numbered markers resolved through the report's reference list
(`[n]`, `[n, m]`, `[n–m]`) and inline/bare links. One claim citing several sources yields one (claim, URL) pair
per distinct normalised URL, so E3 is counted per (claim, source) as in the paper.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reportbench.fetch.urls import find_bare_links, normalise_url, report_urls
from reportbench.reports.references import split_reference_section

MARKER_RE = re.compile(r"\[(\d+(?:\s*(?:[,;]|[-–—])\s*\d+)*)\]")
PLAIN_URL_RE = re.compile(r"https?://[^\s<>\"'\]\[]+")

# fetch error classes -> citation-accuracy status (E1 = invalid link; access denied flagged apart)
URL_STATUS = {
    "ok": "ok",
    "dns": "invalid",
    "timeout": "invalid",
    "connection": "invalid",
    "http_error": "invalid",
    "empty": "invalid",
    "access_denied": "blocked",
}


def expand_marker(body: str) -> list[str]:
    """'1, 3–5' -> ['1', '3', '4', '5'] (a reversed or huge range is kept as its two ends)."""
    keys: list[str] = []
    for part in re.split(r"\s*[,;]\s*", body.strip()):
        m = re.match(r"^(\d+)\s*[-–—]\s*(\d+)$", part)
        if m:
            a, b = int(m.group(1)), int(m.group(2))
            keys.extend(str(i) for i in (range(a, b + 1) if a <= b and b - a <= 50 else (a, b)))
        elif part.isdigit():
            keys.append(part)
    return list(dict.fromkeys(keys))


def body_without_references(text: str) -> str:
    body, _section = split_reference_section(text)
    return body


def numbered_citations(text: str) -> list[str]:
    """Every numbered citation key used in the body (before the reference list), in first-use order."""
    keys: list[str] = []
    for m in MARKER_RE.finditer(body_without_references(text)):
        keys.extend(expand_marker(m.group(1)))
    return list(dict.fromkeys(keys))


def plain_regex_urls(text: str) -> set[str]:
    """What a plain regex finds anywhere in the text, normalised (the parse test's yardstick)."""
    out = set()
    for raw in PLAIN_URL_RE.findall(text):
        raw = raw.rstrip(".,;:!?*_`'\"")
        while raw.endswith(")") and raw.count(")") > raw.count("("):
            raw = raw[:-1].rstrip(".,;:!?*_`'\"")
        key = normalise_url(raw)
        if key:
            out.add(key)
    return out


def all_urls(report: Any) -> set[str]:
    """Every normalised URL the report points to (reference list + links in the body)."""
    return {k for k in (normalise_url(u) for u in report_urls(report)) if k}


@dataclass(frozen=True)
class Claim:
    claim_id: str
    text: str
    urls: tuple[str, ...]  # normalised, distinct, in citation order
    unresolved: tuple[str, ...]  # numbered keys with no reference entry (or an entry without URL)


def extract_claims(report: Any) -> list[Claim]:
    """Cited sentences of a report with their resolved URLs."""
    sources: Mapping[str, Any] = report.sources
    claims = []
    # a stored report's sentences are read, not kept on it (reports/stored.py: StoredReport.read_sentences)
    read_sentences = getattr(report, "read_sentences", None)
    for s in read_sentences() if read_sentences is not None else report.sentences:
        urls: list[str] = []
        unresolved: list[str] = []
        for key in s.citation_keys:
            src = sources.get(key)
            if src is not None and src.url:
                urls.append(normalise_url(src.url))
            elif key.startswith("http"):
                urls.append(normalise_url(key))
            else:
                unresolved.append(key)
        urls.extend(normalise_url(u) for u in find_bare_links(s.text))
        urls = [u for u in dict.fromkeys(urls) if u]
        if urls or unresolved:
            claims.append(Claim(f"{report.report_id}:s{s.index}", s.claim or s.text, tuple(urls), tuple(unresolved)))
    return claims
