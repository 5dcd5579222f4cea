"""The search records every backend shares (below the backends and the service: no import cycle)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel


class SearchError(RuntimeError):
    """A backend failed (timeout, HTTP error, missing key); the message names the backend and never the key."""


class SearchHit(BaseModel):
    title: str = ""
    url: str
    content: str = ""  # a snippet or the document's text (cut to a few thousand characters)
    score: float | None = None
    published: str | None = None
    # the page's main text when the backend returned it (Tavily `raw_content`, Exa `contents.text`); None otherwise
    raw_content: str | None = None


class SearchBackend(Protocol):
    """`endpoint`: where the backend's answers come from (its API base URL; the corpus for BM25), part of every
    cache key. `offers_raw_content`: `search(..., raw_content=True)` returns each page's main text itself."""

    name: str
    endpoint: str
    offers_raw_content: bool

    def search(self, query: str, max_results: int) -> list[SearchHit]: ...


# requests per minute when the config sets none (arXiv asks for one request every 3 s)
DEFAULT_RPM: dict[str, float | None] = {"arxiv": 20.0, "openalex": 300.0, "tavily": None, "exa": None, "bm25": None}
KEY_ENV: dict[str, str] = {"tavily": "TAVILY_API_KEY", "exa": "EXA_API_KEY", "openalex": "OPENALEX_API_KEY"}


def backend_key(backend: str, api_key_env: str | None, *, required: bool) -> str | None:
    """The backend's key from the environment (fail fast with the variable's name when it is required)."""
    env = api_key_env or KEY_ENV.get(backend)
    value = os.environ.get(env) if env else None
    if required and not value:
        raise SearchError(f"search backend {backend}: set the environment variable {env} (its API key)")
    return value or None


@dataclass
class Doc:
    """A document the offline BM25 backend can return (the release's corpus)."""

    url: str
    title: str
    text: str
    published: str | None = None
