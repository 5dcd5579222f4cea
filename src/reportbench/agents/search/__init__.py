"""Pluggable search: one interface (`SearchBackend.search(query, max_results) -> list[SearchHit]`), backends
Tavily, Exa (their HTTP APIs), arXiv (`arxiv`), OpenAlex (`pyalex`) and offline BM25 over the release's corpus
(the default), a per-day sqlite cache and the shared rate limiter (`SearchService`), and a loopback stub search
server speaking the Tavily and Exa APIs (`stub`)."""

from reportbench.agents.search.base import (
    SearchBackend,
    SearchError,
    SearchHit,
    SearchService,
    make_backend,
)

__all__ = ["SearchBackend", "SearchError", "SearchHit", "SearchService", "make_backend"]
