"""SearchAI outputs: `<prompt>.md` (report + "References" list) and `<prompt>.json` {latency, output, ctxs}.

The model numbers its references itself (1, 2, 3, 4, 5, 10, 14, ...), so `[n]` is resolved through the
markdown reference list. The DeepScholar-bench parser looked `n` up in the 0-based `ctxs` list instead
and cited the wrong papers (file 0: [4] became "Dynamic model of firms..." instead of "A new approach to the
theory of optimal income tax"). `ctxs` is used here only to add abstracts, matched by URL / arXiv id.
"""

from __future__ import annotations

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
from reportbench.reports.citations import normalize_url
from reportbench.reports.formats.markdown import split_markdown_report
from reportbench.types import Report, Source

SEARCHAI_KEYS = {"output", "ctxs", "latency", "query"}


def enrich_from_contexts(sources: dict[str, Source], ctxs: Any, *, system_label: str) -> list[str]:
    """Fill missing titles/abstracts from retrieved contexts matched by URL or arXiv id (never by position).

    Returns warnings for cited references the system never retrieved (a hint of invented references).
    """
    if not isinstance(ctxs, list):
        return []
    by_url: dict[str, dict[str, Any]] = {}
    by_arxiv: dict[str, dict[str, Any]] = {}
    for ctx in ctxs:
        if not isinstance(ctx, dict):
            continue
        for field in ("url", "id"):
            value = ctx.get(field)
            if isinstance(value, str) and value.startswith("http"):
                by_url.setdefault(normalize_url(value), ctx)
                arxiv_id = arxiv_id_from_url(value)
                if arxiv_id:
                    by_arxiv.setdefault(arxiv_id, ctx)
    missing: list[str] = []
    for key, src in sources.items():
        ctx = None
        if src.url:
            ctx = by_url.get(normalize_url(src.url))
        if ctx is None and src.arxiv_id:
            ctx = by_arxiv.get(src.arxiv_id)
        if ctx is None:
            if src.url or src.arxiv_id:
                missing.append(key)
            continue
        title = ctx.get("title")
        if not src.title and isinstance(title, str) and title.strip():
            src.title = title.strip()
        text = ctx.get("text") or ctx.get("abstract") or ctx.get("snippet")
        if not src.abstract and isinstance(text, str) and text.strip():
            src.abstract = text.strip()
    if missing:
        return [f"{len(missing)} reference(s) not among the {system_label} retrieved contexts: {missing}"]
    return []


class SearchAIAdapter(ReportAdapter):
    """SearchAI: markdown report + JSON with `ctxs`; citations resolve through the markdown reference list."""

    name = "searchai"

    def detect(self, path: Path) -> bool:
        _, js = peek_pair(path)
        if js is None:
            return False
        keys = peek_json_keys(js)
        return SEARCHAI_KEYS <= keys and "messages" not in keys and "id_mapping" not in keys

    def load(self, path: Path, task_id: str, system: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Report:
        text, where, data, read_warnings = read_pair_output(path, max_bytes)
        parts = split_markdown_report(text)
        parts.warnings.extend(read_warnings)
        parts.warnings.extend(enrich_from_contexts(parts.sources, data.get("ctxs"), system_label="SearchAI"))
        return parts.to_report(self.name, task_id, system, where)


register_adapter(SearchAIAdapter())
