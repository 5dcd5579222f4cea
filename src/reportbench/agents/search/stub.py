"""A loopback search server speaking the Tavily and Exa APIs, serving self-authored results (tests, demos).

`POST /search` or `/tavily/search` answers Tavily's JSON, `POST /exa/search` Exa's. Results are deterministic
functions of the query (title, URL under https://stub-search.example/, a snippet that repeats the query's words),
so the same query always gets the same hits. `counts` tallies requests per API for assertions; `require_key`
makes it answer 401 to any other key (with the key echoed, as some real services do: redaction tests).

    reportbench stub-search --port 8766        # prints `listening on http://127.0.0.1:8766`
    with stub_search_thread() as s: s.tavily_url, s.exa_url
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from aiohttp import web

from reportbench.stub_server import serve_in_thread  # the one thread runner of our loopback servers

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")


def stub_hits(query: str, max_results: int) -> list[dict[str, Any]]:
    """Self-authored results for `query` (title, url, content, score), the same for the same query."""
    words = _WORD.findall(query)[:12] or ["topic"]
    digest = hashlib.sha256(query.encode()).hexdigest()[:10]
    topic = " ".join(words[:6])
    out = []
    for k in range(1, max(1, min(int(max_results), 10)) + 1):
        out.append(
            {
                "title": f"Notes on {topic} (part {k})",
                "url": f"https://stub-search.example/{digest}/{k}",
                "content": f"This stub page {k} discusses {' '.join(words)}. It reports that {topic} was studied "
                f"with method {k} and that the findings on {words[0]} were consistent across settings.",
                "score": round(1.0 / k, 4),
                "published_date": "2024-01-0" + str(min(k, 9)),
            }
        )
    return out


class StubSearchServer:
    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, require_key: str | None = None) -> None:
        self.host, self.port, self.require_key = host, port, require_key
        self.counts: Counter[str] = Counter()
        self.queries: list[str] = []
        self.bodies: list[dict[str, Any]] = []  # every search request's JSON body (keys removed), for assertions
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def tavily_url(self) -> str:
        return f"{self.base_url}/tavily"

    @property
    def exa_url(self) -> str:
        return f"{self.base_url}/exa"

    def _denied(self, key: str | None) -> web.Response | None:
        if self.require_key is None or key == self.require_key:
            return None
        return web.json_response({"detail": {"error": f"Unauthorized: invalid API key {key}"}}, status=401)

    async def _tavily(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.bodies.append({k: v for k, v in body.items() if k != "api_key"})
        auth = request.headers.get("Authorization", "")
        key = auth.removeprefix("Bearer ").strip() or body.get("api_key")
        self.counts["tavily"] += 1
        if (denied := self._denied(key)) is not None:
            return denied
        query = str(body.get("query") or "")
        self.queries.append(query)
        hits = stub_hits(query, int(body.get("max_results") or 5))
        return web.json_response({"query": query, "results": hits, "response_time": 0.01, "images": []})

    async def _exa(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.bodies.append(dict(body))
        self.counts["exa"] += 1
        if (denied := self._denied(request.headers.get("x-api-key"))) is not None:
            return denied
        query = str(body.get("query") or "")
        self.queries.append(query)
        hits = stub_hits(query, int(body.get("numResults") or 10))
        results = [
            {
                "id": h["url"],
                "url": h["url"],
                "title": h["title"],
                "text": h["content"],
                "score": h["score"],
                "publishedDate": h["published_date"],
            }
            for h in hits
        ]
        return web.json_response({"requestId": "stub", "results": results})

    def make_app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/search", self._tavily)
        app.router.add_post("/tavily/search", self._tavily)
        app.router.add_post("/exa/search", self._exa)
        return app

    async def start(self) -> StubSearchServer:
        self._runner = web.AppRunner(self.make_app(), access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self.port == 0:
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


@contextlib.contextmanager
def stub_search_thread(**kwargs: Any) -> Iterator[StubSearchServer]:
    with serve_in_thread(StubSearchServer(**kwargs)) as server:
        yield server


def _serve(args: argparse.Namespace) -> int:
    async def main() -> None:
        server = await StubSearchServer(host=args.host, port=args.port).start()
        print(f"listening on {server.base_url}  (Tavily: {server.tavily_url}, Exa: {server.exa_url})", flush=True)
        await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("stub-search", help="a loopback Tavily/Exa-compatible search server (tests, demos)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=8766, help="port (default 8766; 0 picks a free one)")
    p.set_defaults(func=_serve)
