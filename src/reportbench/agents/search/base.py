"""The search interface, the backends' registry and `SearchService` (cache + rate limit around a backend).

Why a service around the backends: every agent in a comparison must see the same search, pay for a query once
a day (same query, same backend at the same endpoint URL, same parameters (`max_results`, page text or not), same
UTC day → the cached answer, no second request), and
respect one per-backend rate limit across every process on the machine (the judges' sqlite token bucket).
Keys come from the environment only (`api_key_env` or the backend's usual variable) and never reach a cache row.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reportbench.agents.search.cache import SearchCache, params_key
from reportbench.agents.search.types import (  # noqa: F401  (re-exported)
    DEFAULT_RPM,
    KEY_ENV,
    Doc,
    SearchBackend,
    SearchError,
    SearchHit,
    backend_key,
)


def make_backend(cfg: Any, docs: Sequence[Doc] = ()) -> SearchBackend:
    """A backend from a `SearchConfig` (agents.protocol); `docs` feed the offline BM25 backend."""
    name = cfg.backend
    timeout = float(cfg.timeout_s)
    if name == "bm25":
        from reportbench.agents.search.bm25 import BM25Backend  # lazy: +1 ms to import (python -X importtime)

        return BM25Backend(docs)
    if name == "tavily":
        from reportbench.agents.search.web import TavilyBackend  # lazy: +1 ms to import (python -X importtime)

        key = backend_key("tavily", cfg.api_key_env, required=cfg.api_base is None)
        return TavilyBackend(key, api_base=cfg.api_base, timeout_s=timeout)
    if name == "exa":
        from reportbench.agents.search.web import ExaBackend  # lazy: +1 ms to import (python -X importtime)

        key = backend_key("exa", cfg.api_key_env, required=cfg.api_base is None)
        return ExaBackend(key, api_base=cfg.api_base, timeout_s=timeout)
    if name == "arxiv":
        from reportbench.agents.search.scholarly import ArxivBackend  # lazy: +1 ms to import (python -X importtime)

        return ArxivBackend(timeout_s=timeout)
    if name == "openalex":
        from reportbench.agents.search.scholarly import OpenAlexBackend  # lazy: +1 ms to import (python -X importtime)

        return OpenAlexBackend(backend_key("openalex", cfg.api_key_env, required=False), timeout_s=timeout)
    raise SearchError(f"unknown search backend {name!r}")


def _utc_day() -> str:
    return time.strftime("%Y-%m-%d", time.gmtime())


class SearchService:
    """A backend with the per-day cache and the shared per-backend rate limit; counts what reached the backend."""

    def __init__(
        self,
        backend: SearchBackend,
        *,
        cache_path: str | Path | None,
        requests_per_minute: float | None = None,
        limiter_path: str | Path | None = None,
        day: Callable[[], str] = _utc_day,
    ) -> None:
        self.backend = backend
        self.cache = SearchCache(cache_path) if cache_path else None
        self.day = day
        self.requests = 0  # requests that reached the backend (cache misses)
        rpm = requests_per_minute if requests_per_minute is not None else DEFAULT_RPM.get(backend.name)
        self._limiter = None
        if rpm:
            # lazy: +17 ms to import (python -X importtime)
            from reportbench.judges.ratelimit import DEFAULT_STATE_PATH, shared_limiter

            self._limiter = shared_limiter(limiter_path or DEFAULT_STATE_PATH, f"search:{backend.name}", rpm, None)

    @property
    def offers_raw_content(self) -> bool:
        return bool(getattr(self.backend, "offers_raw_content", False))

    def search(self, query: str, max_results: int, *, raw_content: bool = False) -> tuple[list[SearchHit], bool]:
        """(hits, came_from_cache). `raw_content`: ask a backend that offers it for each page's main text (the
        others ignore it: the caller reads pages through the spine's fetcher). A backend error propagates as
        SearchError and is not cached."""
        raw_content = raw_content and self.offers_raw_content
        params = params_key({"max_results": int(max_results), "raw_content": raw_content})
        endpoint = str(getattr(self.backend, "endpoint", "") or "")
        key = (self.backend.name, endpoint, params, " ".join(query.split()), self.day())
        if self.cache is not None:
            hit = self.cache.get(*key)
            if hit is not None:
                return [SearchHit.model_validate(h) for h in hit], True
        if self._limiter is not None:
            wait = self._limiter.reserve()
            if wait > 0:
                time.sleep(wait)
        self.requests += 1
        try:
            normalised = key[3]
            if raw_content:
                hits = self.backend.search(normalised, int(max_results), raw_content=True)  # type: ignore[call-arg]
            else:
                hits = self.backend.search(normalised, int(max_results))
        except SearchError:
            raise
        except Exception as exc:  # noqa: BLE001 - a client's own error types, one message naming the backend
            raise SearchError(f"search backend {self.backend.name}: {type(exc).__name__}: {exc}") from exc
        if self.cache is not None:
            self.cache.put(*key, [h.model_dump() for h in hits])
        return hits, False

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
