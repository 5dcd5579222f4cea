"""Tavily and Exa through their HTTP APIs (the same JSON their PyPI clients `tavily-python` and `exa-py` send):
no extra dependency, and the loopback stub speaks the same API, so the real request path is what tests run."""

from __future__ import annotations

from typing import Any

from reportbench.agents.search.types import SearchError, SearchHit

TAVILY_BASE = "https://api.tavily.com"
EXA_BASE = "https://api.exa.ai"
# characters of page text asked for / kept per result when an agent asks for the page (open_deep_research reads up
# to 50,000 characters of each result's `raw_content`)
RAW_CONTENT_CHARS = 50_000


def _post(backend: str, url: str, body: dict[str, Any], headers: dict[str, str], timeout_s: float) -> Any:
    import requests

    try:
        resp = requests.post(url, json=body, headers=headers, timeout=timeout_s)
    except requests.RequestException as exc:
        raise SearchError(f"search backend {backend}: {type(exc).__name__}") from exc
    if resp.status_code >= 400:
        raise SearchError(f"search backend {backend}: HTTP {resp.status_code}")
    try:
        return resp.json()
    except ValueError as exc:
        raise SearchError(f"search backend {backend}: the answer is not JSON") from exc


def _text(value: Any) -> str | None:
    return str(value)[:RAW_CONTENT_CHARS] if isinstance(value, str) and value.strip() else None


class TavilyBackend:
    name = "tavily"
    offers_raw_content = True  # `include_raw_content`: Tavily extracts each result page's text itself

    def __init__(self, api_key: str | None, *, api_base: str | None = None, timeout_s: float = 30.0) -> None:
        self.api_key = api_key
        self.base = (api_base or TAVILY_BASE).rstrip("/")
        self.endpoint = self.base
        self.timeout_s = timeout_s

    def search(self, query: str, max_results: int, *, raw_content: bool = False) -> list[SearchHit]:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        body: dict[str, Any] = {"query": query, "max_results": max_results, "search_depth": "basic"}
        if raw_content:
            body["include_raw_content"] = True
        data = _post(self.name, f"{self.base}/search", body, headers, self.timeout_s)
        out = []
        for r in (data or {}).get("results") or []:
            if isinstance(r, dict) and r.get("url"):
                out.append(
                    SearchHit(
                        title=str(r.get("title") or ""),
                        url=str(r["url"]),
                        content=str(r.get("content") or "")[:4000],
                        score=r.get("score") if isinstance(r.get("score"), int | float) else None,
                        published=r.get("published_date"),
                        raw_content=_text(r.get("raw_content")) if raw_content else None,
                    )
                )
        return out[:max_results]


class ExaBackend:
    name = "exa"
    offers_raw_content = True  # `contents.text`: Exa returns each result page's text itself

    def __init__(self, api_key: str | None, *, api_base: str | None = None, timeout_s: float = 30.0) -> None:
        self.api_key = api_key
        self.base = (api_base or EXA_BASE).rstrip("/")
        self.endpoint = self.base
        self.timeout_s = timeout_s

    def search(self, query: str, max_results: int, *, raw_content: bool = False) -> list[SearchHit]:
        headers = {"x-api-key": self.api_key} if self.api_key else {}
        chars = RAW_CONTENT_CHARS if raw_content else 4000
        body = {"query": query, "numResults": max_results, "contents": {"text": {"maxCharacters": chars}}}
        data = _post(self.name, f"{self.base}/search", body, headers, self.timeout_s)
        out = []
        for r in (data or {}).get("results") or []:
            if isinstance(r, dict) and r.get("url"):
                out.append(
                    SearchHit(
                        title=str(r.get("title") or ""),
                        url=str(r["url"]),
                        content=str(r.get("text") or r.get("summary") or "")[:4000],
                        score=r.get("score") if isinstance(r.get("score"), int | float) else None,
                        published=r.get("publishedDate"),
                        raw_content=_text(r.get("text")) if raw_content else None,
                    )
                )
        return out[:max_results]
