"""A project-owned on-disk HTTP cache in front of `net.PoliteSession`, plus a small item store.

Why: a live release is rebuilt many times while it is being debugged, and arXiv/OpenAlex ask clients not to
re-fetch what they already have. Every arXiv query, e-print download and OpenAlex call of the live builder goes
through one `CachingSession` (arxiv's `Client._session`, pyalex's `_get_requests_session`, plain `get`s), so:

* a rebuild of the same release makes zero requests (`mode: use`), and `mode: offline` proves it: a cache
  miss raises `CacheMissError` instead of touching the network;
* pacing and retries stay in `PoliteSession`; a cache hit neither sleeps nor counts as a request;
* only stable answers are stored: 200/404/410 by default, and per-host predicates can veto a body (an arXiv
  feed page that is spuriously empty must be retried, not replayed forever);
* the key is method + canonical URL (query sorted, secret-looking parameters dropped); auth headers are never
  part of the key and never stored. Large bodies (e-prints) live in content-addressed blob files.

`ItemStore` (same sqlite file) caches per-identifier answers (an arXiv id's metadata, a DOI's OpenAlex work,
a title's candidates), so batches only contain identifiers never seen before: monthly releases that share
references do not fetch them again, whatever batch they fell into last time.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import requests
from requests.structures import CaseInsensitiveDict

from reportbench.net import HostRateLimiter, PoliteSession, make_retry, redact_url

if TYPE_CHECKING:
    import arxiv

log = logging.getLogger(__name__)

CacheMode = Literal["use", "refresh", "offline", "off"]
CACHE_MODES: tuple[str, ...] = ("use", "refresh", "offline", "off")
DEFAULT_CACHEABLE_STATUS = frozenset({200, 404, 410})
INLINE_BODY_LIMIT = 256 * 1024
_KEPT_HEADERS = ("content-type", "content-disposition", "content-length", "last-modified", "etag")
_SECRET_PARAMS = frozenset({"api_key", "apikey", "key", "token", "access_token", "mailto", "email"})
CACHE_HEADER = "X-Reportbench-Cache"


class CacheMissError(requests.exceptions.ConnectionError):
    """`mode: offline` and the answer is not cached: the build would have needed the network."""


class ResponseTooLargeError(requests.exceptions.RequestException):
    """The body exceeds `max_body_bytes` (untrusted servers must not fill memory or disk)."""


def now_iso() -> str:
    """UTC timestamp, second precision, ISO 8601 (what `fetched_at` columns hold)."""
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


def canonical_url(url: str) -> str:
    """Scheme/host lower-cased, query sorted, secret or identity parameters dropped, fragment dropped."""
    parts = urlsplit(url)
    query = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() not in _SECRET_PARAMS)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, urlencode(query), ""))


def cache_key(method: str, url: str) -> str:
    return hashlib.sha256(f"{method.upper()} {canonical_url(url)}".encode()).hexdigest()


_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    method TEXT NOT NULL,
    url TEXT NOT NULL,
    status INTEGER NOT NULL,
    reason TEXT,
    headers TEXT NOT NULL,
    body BLOB,
    blob_sha256 TEXT,
    size INTEGER NOT NULL,
    fetched_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    fetched_at TEXT NOT NULL,
    PRIMARY KEY (namespace, key)
);
"""


@dataclass(frozen=True)
class CachedResponse:
    """One stored answer; `body` is loaded lazily from the blob file for large bodies."""

    key: str
    method: str
    url: str
    status: int
    reason: str | None
    headers: dict[str, str]
    body: bytes
    fetched_at: str


class HttpCache:
    """sqlite index + content-addressed blobs under `cache_dir` (`http.sqlite`, `blobs/ab/abcd...`)."""

    def __init__(self, cache_dir: str | os.PathLike[str], inline_limit: int = INLINE_BODY_LIMIT) -> None:
        self.dir = Path(cache_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.blob_dir = self.dir / "blobs"
        self.inline_limit = inline_limit
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.dir / "http.sqlite", check_same_thread=False)
        self._db.executescript(_SCHEMA)
        self._db.commit()

    # -- responses
    def get(self, method: str, url: str) -> CachedResponse | None:
        key = cache_key(method, url)
        with self._lock:
            row = self._db.execute(
                "SELECT method, url, status, reason, headers, body, blob_sha256, fetched_at FROM responses "
                "WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        body = row[5]
        if body is None:
            path = self._blob_path(row[6])
            try:
                body = path.read_bytes()
            except OSError:
                log.warning("http cache: blob %s for %s is missing; treating as a miss", path, redact_url(row[1]))
                return None
            if hashlib.sha256(body).hexdigest() != row[6]:
                log.warning("http cache: blob %s is corrupt; treating as a miss", path)
                return None
        return CachedResponse(key, row[0], row[1], row[2], row[3], json.loads(row[4]), bytes(body), row[7])

    def put(
        self, method: str, url: str, status: int, reason: str | None, headers: Mapping[str, str], body: bytes
    ) -> None:
        key = cache_key(method, url)
        kept = {k.lower(): v for k, v in headers.items() if k.lower() in _KEPT_HEADERS}
        inline: bytes | None = body
        sha: str | None = None
        if len(body) > self.inline_limit:
            sha = hashlib.sha256(body).hexdigest()
            path = self._blob_path(sha)
            if not path.is_file():
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
                tmp.write_bytes(body)
                tmp.replace(path)
            inline = None
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    method.upper(),
                    redact_url(canonical_url(url)),
                    status,
                    reason,
                    json.dumps(kept, sort_keys=True),
                    inline,
                    sha,
                    len(body),
                    now_iso(),
                ),
            )
            self._db.commit()

    def _blob_path(self, sha: str) -> Path:
        return self.blob_dir / sha[:2] / sha

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    # -- items
    def item_get(self, namespace: str, key: str) -> tuple[Any, str] | None:
        """(value, fetched_at) or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT value, fetched_at FROM items WHERE namespace = ? AND key = ?", (namespace, key)
            ).fetchone()
        return None if row is None else (json.loads(row[0]), row[1])

    def item_put(self, namespace: str, key: str, value: Any, fetched_at: str | None = None) -> str:
        """Store a JSON-able value; returns the fetched_at stored with it."""
        when = fetched_at or now_iso()
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO items VALUES (?, ?, ?, ?)",
                (namespace, key, json.dumps(value, sort_keys=True, ensure_ascii=False), when),
            )
            self._db.commit()
        return when

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> HttpCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


CacheFilter = Callable[[str, requests.Response], bool]


def arxiv_feed_cacheable(url: str, resp: requests.Response) -> bool:
    """Veto caching an arXiv API page that claims results but carries no <entry> (arXiv's known flake)."""
    if urlsplit(url).hostname != "export.arxiv.org" or resp.status_code != 200:
        return True
    body = resp.content
    if b"<entry" in body:
        return True
    import re

    m = re.search(rb"<opensearch:totalResults[^>]*>\s*(\d+)\s*<", body)
    return m is not None and int(m.group(1)) == 0


@dataclass
class RequestStats:
    """Network requests and cache hits per host: what `requests per cited reference` is computed from."""

    network: Counter[str] = field(default_factory=Counter)
    cache_hits: Counter[str] = field(default_factory=Counter)
    stored: int = 0
    bytes_downloaded: int = 0

    @property
    def n_network(self) -> int:
        return sum(self.network.values())

    @property
    def n_cache_hits(self) -> int:
        return sum(self.cache_hits.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.n_network,
            "requests_by_host": dict(sorted(self.network.items())),
            "cache_hits": self.n_cache_hits,
            "cache_hits_by_host": dict(sorted(self.cache_hits.items())),
            "stored": self.stored,
            "bytes_downloaded": self.bytes_downloaded,
        }


class CachingSession(PoliteSession):
    """`PoliteSession` that answers from `HttpCache` first. Hits skip pacing and are not counted as requests.

    Bodies are always read fully (bounded by `max_body_bytes`), so `stream=True` callers get a consumed
    response with `.content` set, which is all our callers need.
    """

    def __init__(
        self,
        cache: HttpCache | None,
        *,
        mode: CacheMode = "use",
        max_body_bytes: int = 100 << 20,
        cacheable_status: Iterable[int] = DEFAULT_CACHEABLE_STATUS,
        cache_filters: Iterable[CacheFilter] = (arxiv_feed_cacheable,),
        **kwargs: Any,
    ) -> None:
        if mode not in CACHE_MODES:
            raise ValueError(f"http cache mode {mode!r} is not one of {CACHE_MODES}")
        if cache is None and mode != "off":
            raise ValueError("a cache is required unless mode='off'")
        super().__init__(**kwargs)
        self.cache = cache
        self.mode: CacheMode = mode
        self.max_body_bytes = max_body_bytes
        self.cacheable_status = frozenset(cacheable_status)
        self.cache_filters = list(cache_filters)
        self.stats = RequestStats()

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        method_s = method.decode() if isinstance(method, bytes) else str(method)
        url_s = url.decode() if isinstance(url, bytes) else str(url)
        params = kwargs.get("params")
        if params:
            url_s = requests.Request(method_s, url_s, params=params).prepare().url or url_s
            kwargs.pop("params")
        host = (urlsplit(url_s).hostname or "").lower()
        cacheable_method = method_s.upper() in ("GET", "HEAD")
        if self.cache is not None and cacheable_method and self.mode in ("use", "offline"):
            hit = self.cache.get(method_s, url_s)
            if hit is not None:
                self.stats.cache_hits[host] += 1
                return _response_from_cache(hit, method_s, url_s)
        if self.mode == "offline":
            raise CacheMissError(f"http cache miss in offline mode: {method_s} {redact_url(url_s)}")
        kwargs["stream"] = True
        resp = super().request(method_s, url_s, *args, **kwargs)
        self.stats.network[host] += 1
        try:
            _read_bounded(resp, self.max_body_bytes)
        finally:
            resp.close()
        self.stats.bytes_downloaded += len(resp.content)
        if (
            self.cache is not None
            and cacheable_method
            and resp.status_code in self.cacheable_status
            and all(f(url_s, resp) for f in self.cache_filters)
        ):
            self.cache.put(method_s, url_s, resp.status_code, resp.reason, resp.headers, resp.content)
            self.stats.stored += 1
        return resp


def _read_bounded(resp: requests.Response, cap: int) -> None:
    declared = resp.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > cap:
        raise ResponseTooLargeError(f"{redact_url(resp.url)}: Content-Length {declared} > {cap} bytes")
    chunks: list[bytes] = []
    total = 0
    for chunk in resp.iter_content(chunk_size=1 << 16):
        total += len(chunk)
        if total > cap:
            raise ResponseTooLargeError(f"{redact_url(resp.url)}: body larger than {cap} bytes")
        chunks.append(chunk)
    resp._content = b"".join(chunks)
    resp._content_consumed = True


def _response_from_cache(hit: CachedResponse, method: str, url: str) -> requests.Response:
    resp = requests.Response()
    resp.status_code = hit.status
    resp.reason = hit.reason or ""
    resp._content = hit.body
    resp._content_consumed = True
    resp.headers = CaseInsensitiveDict({**hit.headers, CACHE_HEADER: f"hit; fetched_at={hit.fetched_at}"})
    resp.url = url
    resp.encoding = requests.utils.get_encoding_from_headers(resp.headers)
    resp.request = requests.Request(method, url).prepare()
    return resp


def make_cached_session(
    cache_dir: str | os.PathLike[str] | None,
    *,
    mode: CacheMode = "use",
    timeout: float = 30.0,
    retries: int = 4,
    backoff_factor: float = 1.0,
    min_interval: Mapping[str, float] | None = None,
    mailto: str | None = None,
    max_body_bytes: int = 100 << 20,
) -> CachingSession:
    """The live builder's one session: cache + timeout + retries (Retry-After honoured) + per-host pacing."""
    cache = HttpCache(cache_dir) if cache_dir is not None and mode != "off" else None
    return CachingSession(
        cache,
        mode=mode if cache is not None else "off",
        max_body_bytes=max_body_bytes,
        timeout=timeout,
        retry=make_retry(total=retries, backoff_factor=backoff_factor),
        rate_limiter=HostRateLimiter(min_interval),
        mailto=mailto,
    )


def make_arxiv_client(session: requests.Session, page_size: int = 100) -> arxiv.Client:
    """arxiv.Client on our session. delay 0: pacing lives in the session (a cache hit must not sleep);
    one library retry covers arXiv's spurious empty pages (urllib3 already retries 429/5xx with backoff)."""
    import arxiv  # import cost: ~0.1 s (feedparser), only where an arXiv client is built

    client = arxiv.Client(page_size=page_size, delay_seconds=0.0, num_retries=1)
    client._session = session
    return client
