"""arXiv (`arxiv`) and OpenAlex (`pyalex`) as search backends, both over our polite session (reportbench.net:
a timeout on every request, urllib3 retries on 429/5xx); pacing is the service's shared rate limiter."""

from __future__ import annotations

from typing import Any

from reportbench.agents.search.types import SearchHit


class ArxivBackend:
    name = "arxiv"
    endpoint = "https://export.arxiv.org/api/query"  # the `arxiv` client's
    offers_raw_content = False

    def __init__(self, *, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s

    def search(self, query: str, max_results: int) -> list[SearchHit]:
        import arxiv  # import cost: ~0.1 s (feedparser), only when this backend searches

        from reportbench.http_cache import make_arxiv_client  # lazy: +43 ms to import (python -X importtime)
        from reportbench.net import make_session  # lazy: +40 ms to import (python -X importtime)

        client = make_arxiv_client(make_session(timeout=self.timeout_s, retries=2), page_size=max_results)
        results = client.results(arxiv.Search(query=query, max_results=max_results))
        return [
            SearchHit(
                title=r.title,
                url=r.entry_id,
                content=(r.summary or "")[:4000],
                published=r.published.date().isoformat() if r.published else None,
            )
            for r in results
        ]


def _abstract(inverted: dict[str, list[int]] | None) -> str:
    """OpenAlex ships abstracts as an inverted index (word → positions)."""
    if not inverted:
        return ""
    pos = sorted((i, w) for w, idx in inverted.items() for i in idx)
    return " ".join(w for _, w in pos)


class OpenAlexBackend:
    name = "openalex"
    endpoint = "https://api.openalex.org"  # pyalex's
    offers_raw_content = False

    def __init__(self, api_key: str | None, *, timeout_s: float = 30.0) -> None:
        self.api_key = api_key
        self.timeout_s = timeout_s

    def search(self, query: str, max_results: int) -> list[SearchHit]:
        from pyalex import Works

        from reportbench.citations import pyalex_session  # lazy: +78 ms to import (python -X importtime)
        from reportbench.net import contact_email, make_session  # lazy: +40 ms to import (python -X importtime)

        session = make_session(timeout=self.timeout_s, retries=2)
        with pyalex_session(session, mailto=contact_email(), api_key=self.api_key):
            works: list[dict[str, Any]] = Works().search(query).get(per_page=max_results)
        out = []
        for w in works:
            url = (w.get("primary_location") or {}).get("landing_page_url") or w.get("doi") or w.get("id")
            if url:
                out.append(
                    SearchHit(
                        title=str(w.get("display_name") or w.get("title") or ""),
                        url=str(url),
                        content=_abstract(w.get("abstract_inverted_index"))[:4000],
                        published=w.get("publication_date"),
                    )
                )
        return out[:max_results]
