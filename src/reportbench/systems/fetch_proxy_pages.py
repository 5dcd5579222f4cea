"""Pages a sandboxed program asks the fetch proxy for, read through the spine's fetch path (docs/fetch.md).

Why not forward the program's own request: the spine's fetcher checks every hop (redirects included) with the
SSRF guard, connects to the checked address, verifies the real site's certificate (certifi's roots, never
weakened), bounds size and time; and a page read once is read once per cache, ever: the same page reads the same
for every agent and every rerun. The program's own headers (cookies, authorisation, user agent) are not sent.

The cache: the page cache's sqlite file (`fetch.cache_path`, default `.reportbench/cache/pages.sqlite`) holds,
next to the spine's snapshots (table `pages`, extracted text for the verifiers, which also gets each page fetched
here), a table `proxy_pages` of the bytes as received: a cached page is served without any request. Failures
that another try may change (DNS, timeouts, connection errors, 408/425/429/5xx) are served but never stored.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reportbench.fetch.cache import PageCache
from reportbench.fetch.client import Fetcher, RawResponse
from reportbench.fetch.guard import GuardError, check_static
from reportbench.fetch.snapshot import TRANSIENT_CLASSES, TRANSIENT_STATUS, snapshot_from_raw
from reportbench.fetch.urls import normalise_url
from reportbench.net import redact_url

_SCHEMA = """
CREATE TABLE IF NOT EXISTS proxy_pages (
    key TEXT PRIMARY KEY,
    fetched_at TEXT,
    meta TEXT NOT NULL,
    body BLOB NOT NULL
)
"""
# what the program is told for a failure the fetcher classified (an upstream HTTP status is passed on as it is)
_FAILURE_STATUS = {"refused": 403, "dns": 502, "connection": 502, "timeout": 504, "too_large": 502,
                   "unsupported_type": 502, "http_error": 502, "access_denied": 403}  # fmt: skip
MAX_LOGGED = 500  # page entries kept per task in sandbox.json (the counts cover all)


@dataclass
class Served:
    """One answer of the proxy: what the program gets and where it came from (cache, fetched, refused, failed)."""

    url: str
    status: int
    content_type: str | None
    body: bytes
    source: str
    error: str | None = None
    final_url: str | None = None
    error_class: str | None = None


def _served(raw: RawResponse, url: str, source: str) -> Served:
    if raw.error_class is None:
        return Served(url, int(raw.status or 200), raw.content_type, raw.body, source, final_url=raw.final_url)
    status = raw.status if raw.error_class in ("http_error", "access_denied") and raw.status else None
    status = status or _FAILURE_STATUS.get(raw.error_class, 502)
    why = f"reportbench fetch proxy: {raw.error_class}: {raw.error or ''}".rstrip(": ")
    source = "refused" if raw.error_class == "refused" else source if source == "cache" else "failed"
    return Served(url, status, "text/plain; charset=utf-8", (why + "\n").encode(), source, error=why,
                  error_class=raw.error_class)


class ProxyPages:
    """The page cache + the spine's fetcher, shared by a run's tasks (thread-safe; one fetch per URL at a time)."""

    def __init__(self, cache_path: str | Path, fetcher_factory: Callable[[], Fetcher]) -> None:
        self.cache_path = Path(cache_path)
        self._factory = fetcher_factory
        self._fetcher: Fetcher | None = None
        self._db: sqlite3.Connection | None = None  # opened on the first page (most runs read none)
        self._spine: Any = None
        self._lock = threading.Lock()
        self._url_locks: dict[str, threading.Lock] = {}
        self.upstream_requests = 0  # pages fetched (each may be several HTTP requests: redirects, retries)

    def _open(self) -> sqlite3.Connection:
        with self._lock:
            if self._db is None:
                self._spine = PageCache(self.cache_path)
                db = sqlite3.connect(self.cache_path, check_same_thread=False, timeout=30)
                db.execute(_SCHEMA)
                db.commit()
                self._db = db
            return self._db

    def _cached(self, key: str) -> RawResponse | None:
        db = self._open()
        with self._lock:
            row = db.execute("SELECT meta, body FROM proxy_pages WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        meta = json.loads(row[0])
        return RawResponse(url=key, body=bytes(row[1]), **meta)

    def _store(self, key: str, raw: RawResponse, fetcher: Fetcher) -> None:
        meta = {k: getattr(raw, k) for k in ("final_url", "status", "content_type", "error_class", "error",
                                             "fetched_at")}  # fmt: skip
        db = self._open()
        with self._lock:
            db.execute("INSERT OR REPLACE INTO proxy_pages (key, fetched_at, meta, body) VALUES (?, ?, ?, ?)",
                       (key, raw.fetched_at, json.dumps(meta, sort_keys=True), raw.body))  # fmt: skip
            db.commit()
        try:  # the verifiers' snapshot of the same page: the fetch stage then needs no request of its own
            self._spine.put(fetcher.backend_id, snapshot_from_raw(raw, fetcher.fetcher_id, url_key=key))
        except Exception:  # noqa: BLE001 - the page was served and its bytes stored; a snapshot is a bonus
            pass

    def get(self, url: str) -> Served:
        """The page at `url`: from the cache, else fetched by the spine's fetcher (and stored)."""
        key = normalise_url(url)
        try:
            check_static(key)
        except GuardError as exc:  # (the proxy checked with DNS already; this is what the cache key names)
            return _served(RawResponse(url=key, error_class="refused", error=str(exc)), url, "refused")
        with self._lock:
            url_lock = self._url_locks.setdefault(key, threading.Lock())
        with url_lock:  # concurrent asks for one page: one fetch, the others read the cache
            cached = self._cached(key)
            if cached is not None:
                return _served(cached, url, "cache")
            with self._lock:
                if self._fetcher is None:
                    self._fetcher = self._factory()
                fetcher = self._fetcher
            raw = fetcher.fetch(key)
            with self._lock:
                self.upstream_requests += 1
            transient = raw.error_class in TRANSIENT_CLASSES or (
                raw.error_class in ("http_error", "access_denied") and raw.status in TRANSIENT_STATUS
            )
            if not transient:
                self._store(key, raw, fetcher)
            return _served(raw, url, "fetched")

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._spine.close()
                self._db = None


def _loggable(url: str) -> str:
    """The URL without userinfo and with secret-looking query values redacted (it goes into sandbox.json)."""
    if "@" in url.split("/", 3)[2 if "://" in url else 0]:
        scheme, _, rest = url.partition("://")
        authority, slash, tail = rest.partition("/")
        url = f"{scheme}://{authority.rpartition('@')[2]}{slash}{tail}"
    return redact_url(url)[:2000]


class TaskLog:
    """What one task's program read through the proxy: counts by source, and the first MAX_LOGGED pages."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.pages: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, method: str, url: str, status: int, source: str, error: str | None = None) -> None:
        with self._lock:
            self.counts[source] = self.counts.get(source, 0) + 1
            if len(self.pages) < MAX_LOGGED:
                entry = {"method": method, "url": _loggable(url), "status": status, "source": source}
                self.pages.append({**entry, "error": error[:300]} if error else entry)

    def record(self) -> Mapping[str, Any]:
        with self._lock:
            return {"counts": dict(sorted(self.counts.items())), "pages": list(self.pages),
                    "pages_left_out": max(0, sum(self.counts.values()) - len(self.pages))}  # fmt: skip
