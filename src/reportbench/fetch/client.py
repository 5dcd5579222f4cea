"""The page fetcher: guarded, pinned, polite HTTP for the `direct` and `reader` backends.

Why not plain `requests.get`: it resolves the host itself (a DNS-rebinding window after our check), follows
redirects without asking us, reads unbounded bodies and honours proxy/netrc settings from the environment.
Here every hop is checked by `guard.check_url`, then a one-off urllib3 pool connects to exactly the checked IP
while the Host header, TLS SNI and certificate verification use the original host name. Redirects are
followed by hand (bounded), bodies are streamed and cut at `max_bytes`, retries on 429/5xx/timeouts/connection
errors are bounded with exponential backoff, and each host is paced by `net.HostRateLimiter`.

Failures are values: `fetch()` never raises for a bad URL, it returns a `RawResponse` with an error class.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from urllib.parse import quote, urljoin

import certifi
import urllib3
from urllib3.exceptions import ConnectTimeoutError, HTTPError, NewConnectionError, ReadTimeoutError
from urllib3.util import Timeout

from reportbench import __version__
from reportbench.fetch.guard import (
    DnsError,
    RefusedError,
    Resolver,
    Target,
    check_static,
    check_url,
    system_resolver,
)
from reportbench.http_cache import now_iso as _now
from reportbench.net import HostRateLimiter, contact_email, redact_url

log = logging.getLogger(__name__)

FETCHER_VERSION = "1"
BACKENDS = ("direct", "reader")
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
MAX_BACKOFF_S = 60.0
_CHUNK = 64 * 1024
_PATH_SAFE = "/%:@!$&'()*+,;=-._~?"

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
TEXT_TYPES = frozenset({"text/plain", "text/markdown", "text/x-markdown"})
SNIFF_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream"})
SUPPORTED_TYPES = HTML_TYPES | PDF_TYPES | TEXT_TYPES


def default_user_agent() -> str:
    """'reportbench/0.1.0 (page fetch for citation checking; mailto:...)': sites ask crawlers to identify."""
    mailto = contact_email()
    return f"reportbench/{__version__} (page fetch for citation checking{'; mailto:' + mailto if mailto else ''})"


def media_type(content_type: str | None) -> str:
    """'text/html; charset=utf-8' -> 'text/html'."""
    return (content_type or "").split(";", 1)[0].strip().lower()


@dataclass
class RawResponse:
    """What one fetch produced, before extraction. `error_class` is None when a body was received."""

    url: str
    final_url: str | None = None
    status: int | None = None
    content_type: str | None = None
    body: bytes = b""
    error_class: str | None = None
    error: str | None = None
    fetched_at: str | None = None


class _Fail(Exception):
    """Internal: one attempt failed with an error class (retryable or not)."""

    def __init__(self, error_class: str, message: str, *, status: int | None = None, retry: bool = False,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.status = status
        self.retry = retry
        self.retry_after = retry_after


def now_iso() -> str:
    return _now()


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # HTTP-date form: fall back to our own backoff


def make_pool(
    target: Target, connect_timeout_s: float, read_timeout_s: float, *, ca_certs: str | None = None
) -> urllib3.HTTPConnectionPool:
    """A single-use pool that connects to the checked IP, with TLS SNI + cert checks for the host name.

    `ca_certs` defaults to certifi's bundle (tests pass their own self-signed CA).
    """
    timeout = Timeout(connect=connect_timeout_s, read=read_timeout_s)
    if target.is_https:
        return urllib3.HTTPSConnectionPool(
            target.ip,
            target.port,
            maxsize=1,
            timeout=timeout,
            retries=False,
            cert_reqs="CERT_REQUIRED",
            ca_certs=ca_certs or certifi.where(),
            server_hostname=target.host,
            assert_hostname=target.host,
        )
    return urllib3.HTTPConnectionPool(target.ip, target.port, maxsize=1, timeout=timeout, retries=False)


class Fetcher:
    """Fetch one URL at a time through the guard, with one of two backends.

    `direct`: GET the page itself. `reader`: GET `reader_base_url + url` from a reader service (e.g. Jina
    `https://r.jina.ai/`), sending `Authorization: Bearer $<api_key_env>` if that variable is set. The key is
    read from the environment at request time and never logged, stored or forwarded across a redirect to
    another host.

    `resolver` is injectable (tests must not do DNS). `allow_hosts` is test-only, see `guard`.
    """

    def __init__(
        self,
        *,
        backend: str = "direct",
        reader_base_url: str = "https://r.jina.ai/",
        api_key_env: str | None = None,
        connect_timeout_s: float = 10.0,
        timeout_s: float = 30.0,
        retries: int = 2,
        backoff_s: float = 1.0,
        max_bytes: int = 10 * 1024 * 1024,
        max_redirects: int = 5,
        per_host_interval_s: float = 1.0,
        user_agent: str | None = None,
        resolver: Resolver = system_resolver,
        allow_hosts: Collection[str] = (),
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        env: Mapping[str, str] | None = None,
        pool_factory: Callable[[Target, float, float], urllib3.HTTPConnectionPool] = make_pool,
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"unknown fetch backend {backend!r}; expected one of {BACKENDS}")
        self.backend = backend
        self.reader_base_url = reader_base_url
        self.api_key_env = api_key_env or None
        self.connect_timeout_s = float(connect_timeout_s)
        self.timeout_s = float(timeout_s)
        self.retries = max(0, int(retries))
        self.backoff_s = float(backoff_s)
        self.max_bytes = int(max_bytes)
        self.max_redirects = max(0, int(max_redirects))
        self.user_agent = user_agent or default_user_agent()
        self.resolver = resolver
        self.allow_hosts = frozenset(h.lower() for h in allow_hosts)
        if self.allow_hosts:
            log.warning("fetch guard test allowance active for %s (never use outside tests)", sorted(self.allow_hosts))
        self._sleep = sleep
        self._clock = clock
        self._env = env
        self._pool_factory = pool_factory
        self.rate_limiter = HostRateLimiter({}, default_interval=float(per_host_interval_s), clock=clock, sleep=sleep)
        self.n_requests = 0

    @property
    def backend_id(self) -> str:
        """Cache-key part: 'direct', or 'reader:<reader host>' (different readers give different text)."""
        if self.backend == "reader":
            from urllib.parse import urlsplit

            return f"reader:{(urlsplit(self.reader_base_url).hostname or '').lower()}"
        return "direct"

    @property
    def fetcher_id(self) -> str:
        """Recorded in every snapshot: backend id + fetcher version."""
        return f"{self.backend_id}/v{FETCHER_VERSION}"

    def _api_key(self) -> str | None:
        if not self.api_key_env:
            return None
        env = os.environ if self._env is None else self._env
        return (env.get(self.api_key_env) or "").strip() or None

    # --- public -----------------------------------------------------------------------------------------------

    def fetch(self, url: str) -> RawResponse:
        """Fetch `url`; every failure comes back as a RawResponse with `error_class` set."""
        fetched_at = now_iso()
        try:
            if self.backend == "reader":
                check_static(url, self.allow_hosts)  # the reader fetches it, but we never hand it an internal URL
                start = self.reader_base_url + url
                auth = self._api_key()
                headers = {"Authorization": f"Bearer {auth}"} if auth else {}
            else:
                start, headers = url, {}
            resp = self._with_retries(start, headers)
        except _Fail as f:
            return RawResponse(url=url, status=f.status, error_class=f.error_class, error=str(f), fetched_at=fetched_at)
        except RefusedError as e:
            return RawResponse(url=url, error_class="refused", error=str(e), fetched_at=fetched_at)
        except DnsError as e:
            return RawResponse(url=url, error_class="dns", error=str(e), fetched_at=fetched_at)
        except Exception as e:  # noqa: BLE001 - promise: one bad URL never raises; keep the reason
            log.exception("unexpected error fetching %s", redact_url(url))
            return RawResponse(url=url, error_class="connection", error=f"internal error: {type(e).__name__}: "
                               f"{_short(e)}", fetched_at=fetched_at)
        resp.url = url
        resp.fetched_at = fetched_at
        if self.backend == "reader" and resp.final_url and resp.final_url.startswith(self.reader_base_url):
            resp.final_url = resp.final_url[len(self.reader_base_url):]
        return resp

    # --- internals --------------------------------------------------------------------------------------------

    def _with_retries(self, url: str, headers: dict[str, str]) -> RawResponse:
        attempt = 0
        while True:
            try:
                return self._follow(url, headers)
            except _Fail as f:
                if not f.retry or attempt >= self.retries:
                    raise
                delay = min(MAX_BACKOFF_S, self.backoff_s * (2**attempt))
                if f.retry_after is not None:
                    delay = min(MAX_BACKOFF_S, max(delay, f.retry_after))
                log.info("fetch retry %d/%d after %.1fs: %s", attempt + 1, self.retries, delay, f)
                self._sleep(delay)
                attempt += 1

    def _follow(self, url: str, extra_headers: dict[str, str]) -> RawResponse:
        """Follow redirects by hand; the guard checks every hop and the connection is pinned to its IP."""
        current = url
        first_host: str | None = None
        for hop in range(self.max_redirects + 1):
            try:
                target = check_url(current, self.resolver, self.allow_hosts)
            except (RefusedError, DnsError) as e:
                if hop == 0:
                    raise
                # the record must say the page itself was fine to ask for and its redirect was not followed
                raise type(e)(f"redirect hop {hop} to {redact_url(current)} refused: {e}") from None
            first_host = first_host or target.host
            headers = {
                "Host": target.host_header,
                "User-Agent": self.user_agent,
                "Accept": "text/html,application/xhtml+xml,application/pdf,text/plain;q=0.9,*/*;q=0.5",
                "Accept-Encoding": "gzip, deflate",
            }
            if target.host == first_host:  # credentials never follow a redirect to another host
                headers.update(extra_headers)
            status, location, result = self._one_request(target, headers, current)
            if location is None:
                return result
            current = urljoin(current, location)
            log.debug("redirect %d -> %s", status, redact_url(current))
        raise _Fail("http_error", f"more than {self.max_redirects} redirects", status=status)

    def _one_request(self, target: Target, headers: dict[str, str], url: str) -> tuple[int, str | None, RawResponse]:
        self.rate_limiter.wait(target.host)
        self.n_requests += 1
        pool = self._pool_factory(target, self.connect_timeout_s, self.timeout_s)
        watchdog = _Watchdog()
        pool.ConnectionCls = _watched(pool.ConnectionCls, watchdog)
        path = quote(target.path, safe=_PATH_SAFE)
        started = time.monotonic()
        # headers: complete within connect + read timeout of starting; body: within 4 x timeout_s of starting. A read
        # timeout alone restarts with every byte, so a server dripping 1 B/s would hold a worker for hours.
        header_s = self.connect_timeout_s + self.timeout_s
        watchdog.arm(header_s, f"headers not complete within {header_s:g}s")
        try:
            try:
                resp = pool.urlopen(
                    "GET", path, headers=headers, redirect=False, retries=False, preload_content=False,
                    decode_content=True, assert_same_host=False,
                )
            except Exception as e:
                if watchdog.fired:
                    raise _Fail("timeout", f"timeout: {watchdog.fired}", retry=True) from None
                raise _translate(e) from None
            watchdog.arm(
                max(0.0, started + 4 * self.timeout_s - time.monotonic()),
                f"body not complete within {4 * self.timeout_s:g}s",
            )
            try:
                result = self._read(resp, url)
            except Exception:
                if watchdog.fired:
                    raise _Fail("timeout", f"timeout: {watchdog.fired}", retry=True) from None
                raise
            finally:
                resp.release_conn()
            if watchdog.fired:  # a close-delimited body cut by the watchdog reads as a short, "complete" body
                raise _Fail("timeout", f"timeout: {watchdog.fired}", retry=True)
            return result
        finally:
            watchdog.cancel()
            pool.close()

    def _read(self, resp: urllib3.BaseHTTPResponse, url: str) -> tuple[int, str | None, RawResponse]:
        status = int(resp.status)
        ctype = resp.headers.get("Content-Type")
        if 300 <= status < 400 and status != 304:
            location = resp.headers.get("Location")
            if not location:
                raise _Fail("http_error", f"redirect {status} without Location", status=status)
            resp.drain_conn()
            return status, location, RawResponse(url=url)
        if status >= 400:
            retry = status in RETRY_STATUS
            raise _Fail("http_error", f"HTTP {status}", status=status, retry=retry,
                        retry_after=_retry_after(resp.headers.get("Retry-After")) if retry else None)
        mtype = media_type(ctype)
        if mtype not in SUPPORTED_TYPES and mtype not in SNIFF_TYPES:
            raise _Fail("unsupported_type", f"content type {mtype!r} is not HTML, PDF or text", status=status)
        declared = resp.headers.get("Content-Length")
        if declared and declared.isdigit() and int(declared) > self.max_bytes:
            raise _Fail("too_large", f"Content-Length {declared} > max_bytes {self.max_bytes}", status=status)
        deadline = self._clock() + 4 * self.timeout_s
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in resp.stream(_CHUNK):
                size += len(chunk)
                if size > self.max_bytes:
                    raise _Fail("too_large", f"body exceeds max_bytes {self.max_bytes}", status=status)
                chunks.append(chunk)
                if self._clock() > deadline:
                    raise _Fail("timeout", f"body not complete within {4 * self.timeout_s:.0f}s", retry=True)
        except (ReadTimeoutError, TimeoutError) as e:
            raise _Fail("timeout", f"timeout while reading: {type(e).__name__}", retry=True) from None
        except HTTPError as e:
            raise _Fail("connection", f"connection broke while reading: {type(e).__name__}", retry=True) from None
        return status, None, RawResponse(url=url, final_url=url, status=status, content_type=ctype,
                                          body=b"".join(chunks))


def _translate(e: Exception) -> Exception:
    """An exception from sending the request / reading the headers as the attempt's failure class."""
    if isinstance(e, NewConnectionError):  # (a subclass of ConnectTimeoutError in urllib3 2.x: test it first)
        if isinstance(e.__cause__, TimeoutError) or "timed out" in str(e):
            return _Fail("timeout", "timeout: connect", retry=True)
        return _Fail("connection", f"connection failed: {_short(e)}", retry=True)
    if isinstance(e, ConnectTimeoutError | ReadTimeoutError | TimeoutError):
        return _Fail("timeout", f"timeout: {type(e).__name__}", retry=True)
    if isinstance(e, HTTPError):
        return _Fail("connection", f"connection failed: {type(e).__name__}: {_short(e)}", retry=True)
    return e


class _Watchdog:
    """Shuts the connection's socket down when a deadline passes, so the blocked read in progress returns at
    once whatever the server's pace (socket timeouts only bound the gap between two bytes)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._timer: threading.Timer | None = None
        self.fired: str | None = None

    def attach(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._socks.append(sock)
            if self.fired:
                _shutdown(sock)

    def arm(self, seconds: float, reason: str) -> None:
        self.cancel()
        timer = threading.Timer(seconds, self._fire, args=(reason,))
        timer.daemon = True
        self._timer = timer
        timer.start()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self, reason: str) -> None:
        with self._lock:
            self.fired = reason
            for sock in self._socks:
                _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _watched(base: type, watchdog: _Watchdog) -> type:
    """`base` (the pool's connection class) whose socket the watchdog can shut down once connected."""

    class Watched(base):  # type: ignore[misc, valid-type]
        def connect(self) -> None:
            super().connect()
            watchdog.attach(getattr(self, "sock", None))

    return Watched


def _short(e: BaseException, limit: int = 200) -> str:
    """An exception message without secrets and bounded in length (it ends up in records)."""
    msg = str(e)
    if msg.startswith("<") and ">: " in msg:  # urllib3 prefixes the connection object's repr (an address)
        msg = msg.split(">: ", 1)[1]
    return redact_url(msg)[:limit]
