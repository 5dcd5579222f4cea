"""OpenScholar outputs: `<title>.md` + `<title>.json` {output, ctxs, id_mapping, ranked_results, ...}.

OpenScholar cites 0-based (`[0]`) and ends with a "References" list whose entries are the first words of the
cited passage (a pes2o snippet) or a paper title. Citations resolve through that list only; the JSON `ctxs`
are used to recover titles, URLs and full passages by matching the entry text, never by position (the list
number and the ctxs position disagree, e.g. file 0's [18] is ctxs[19]). Entries that are snippets keep
`title=None` and the snippet as `abstract`; no arXiv id is read out of snippet text, because a passage that
mentions an arXiv URL is not that paper.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from reportbench.reports.arxiv_ids import arxiv_id_from_url
from reportbench.reports.base import (
    DEFAULT_MAX_BYTES,
    ReportAdapter,
    peek_json_keys,
    peek_pair,
    read_pair_output,
    register_adapter,
)
from reportbench.reports.formats.markdown import split_markdown_report
from reportbench.reports.references import parse_reference_entries
from reportbench.types import Report, Source

OPENSCHOLAR_KEYS = {"id_mapping", "ranked_results", "final_passages", "initial_result"}
SEMANTIC_SCHOLAR_CORPUS_URL = "https://api.semanticscholar.org/CorpusID:{}"
MAX_TITLE_WORDS = 25


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _match_context(entry: str, ctxs: list[tuple[dict[str, Any], str]]) -> tuple[dict[str, Any] | None, int]:
    """The ctx whose title equals the entry or whose text contains it; also where in the text it starts.

    `ctxs` pairs each context with its normalised text (computed once per report).
    """
    needle = _norm(entry)
    if not needle:
        return None, -1
    for ctx, _ in ctxs:
        title = ctx.get("title")
        if isinstance(title, str) and title.strip() and _norm(title) == needle:
            return ctx, -1
    probe = needle[:200]
    for ctx, norm_text in ctxs:
        pos = norm_text.find(probe)
        if pos >= 0:
            return ctx, pos
    return None, -1


def normalised_contexts(ctxs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    """Contexts paired with their whitespace-normalised, lower-cased text, for repeated substring lookups."""
    return [(c, _norm(c["text"]) if isinstance(c.get("text"), str) else "") for c in ctxs]


def _looks_like_title(entry: str, ctx_text: str | None, pos: int) -> bool:
    """A short capitalised phrase, without a final period, that the passage follows with a new sentence.

    pes2o passages start with the paper title run into its abstract ("One Queue Is All You Need: ... Serving
    $ $Large language models ..."), so a title is an entry at position 0 followed by a capital or '$'.
    """
    words = entry.split()
    if not words or len(words) > MAX_TITLE_WORDS or entry.rstrip().endswith(".") or not entry[:1].isupper():
        return False
    if ctx_text is None:
        return True
    if pos != 0:
        return False
    rest = _norm(ctx_text)[len(_norm(entry)) :].lstrip()
    original_rest = re.sub(r"\s+", " ", ctx_text).strip()[len(re.sub(r"\s+", " ", entry).strip()) :].lstrip()
    return not rest or original_rest[:1].isupper() or original_rest[:1] in "$("


def source_from_snippet_entry(key: str, entry: str, ctxs: list[tuple[dict[str, Any], str]]) -> Source:
    """Source for one OpenScholar reference entry, enriched from the ctx whose content matches it."""
    ctx, pos = _match_context(entry, ctxs)
    ctx_text = ctx.get("text") if ctx and isinstance(ctx.get("text"), str) else None
    ctx_title = (
        ctx.get("title") if ctx and isinstance(ctx.get("title"), str) and ctx["title"].strip() else None
    )
    url = (
        ctx.get("url") if ctx and isinstance(ctx.get("url"), str) and ctx["url"].startswith("http") else None
    )
    if (
        ctx
        and url is None
        and str(ctx.get("source", "")).startswith("pes2o")
        and str(ctx.get("id", "")).isdigit()
    ):
        url = SEMANTIC_SCHOLAR_CORPUS_URL.format(ctx["id"])  # pes2o ids are Semantic Scholar corpus ids
    if ctx_title:
        title: str | None = ctx_title.strip()
    elif _looks_like_title(entry, ctx_text, pos):
        title = entry.strip()
    else:
        title = None
    abstract = None
    if ctx:
        candidate = (
            ctx.get("abstract") if isinstance(ctx.get("abstract"), str) and ctx["abstract"] else ctx_text
        )
        abstract = candidate.strip() if candidate else None
    if abstract is None and title is None:
        abstract = entry.strip()
    return Source(
        key=key, title=title, url=url, arxiv_id=arxiv_id_from_url(url), abstract=abstract, raw=entry
    )


class OpenScholarAdapter(ReportAdapter):
    """OpenScholar markdown + JSON pair (or either file alone)."""

    name = "openscholar"

    def detect(self, path: Path) -> bool:
        _, js = peek_pair(path)
        keys = peek_json_keys(js) if js else frozenset()
        return {"ctxs", "output"} <= keys and bool(keys & OPENSCHOLAR_KEYS)

    def load(self, path: Path, task_id: str, system: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Report:
        text, where, data, read_warnings = read_pair_output(path, max_bytes)
        parts = split_markdown_report(text)
        parts.warnings.extend(read_warnings)
        # `original_ctxs` holds passages that reranking dropped but the model may still have seen
        ctxs = [
            c
            for field in ("ctxs", "original_ctxs")
            if isinstance(data.get(field), list)
            for c in data[field]
            if isinstance(c, dict)
        ]
        indexed = normalised_contexts(ctxs)
        entries, entry_warnings = parse_reference_entries(parts.reference_section or "")
        parts.warnings.extend(entry_warnings)
        sources: dict[str, Source] = {}
        for entry in entries:
            if entry.label is None:
                parts.warnings.append(f"unnumbered reference entry ignored: {entry.text[:60]!r}")
                continue
            if entry.label in sources:
                parts.warnings.append(f"duplicate reference key {entry.label!r}; kept the first entry")
                continue
            sources[entry.label] = source_from_snippet_entry(entry.label, entry.text, indexed)
        unmatched = [k for k, s in sources.items() if s.url is None and s.abstract == s.raw]
        if ctxs and unmatched:
            parts.warnings.append(f"{len(unmatched)} reference(s) match no retrieved passage: {unmatched}")
        return parts.to_report(self.name, task_id, system, where, sources=sources)


register_adapter(OpenScholarAdapter())
