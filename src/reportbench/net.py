"""HTTP politeness shared by every arXiv / OpenAlex caller.

Why: `requests`, `arxiv` and `pyalex` all default to no timeout, and pyalex to no retries; the
DeepScholar authors hammered export.arxiv.org with no pacing. One session type fixes that everywhere:

- a default timeout on every request (callers may still pass their own);
- urllib3 `Retry` on 429/5xx with exponential backoff, honouring `Retry-After`;
- a per-host minimum interval between requests (arXiv asks for 3 s);
- a User-Agent naming reportbench and a contact address taken from the environment;
- URLs are logged with secrets redacted; API keys are never logged.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.util import Retry

from reportbench import __version__

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_STATUS_FORCELIST = (429, 500, 502, 503, 504)
DEFAULT_MIN_INTERVAL_S: dict[str, float] = {
    "export.arxiv.org": 3.0,  # arXiv API terms of use: no more than one request every 3 seconds
    "arxiv.org": 3.0,
    "api.openalex.org": 0.1,  # OpenAlex caps at 100 req/s per user; stay well under it
}
MAILTO_ENV_VARS = ("REPORTBENCH_MAILTO", "OPENALEX_MAILTO")

_SECRET_QUERY_RE = re.compile(r"(?i)((?:api[_-]?key|key|token|access_token)=)[^&#]+")


def redact_url(url: str) -> str:
    """Drop secret-looking query values so a URL can go into a log or an error message."""
    return _SECRET_QUERY_RE.sub(r"\1***", url)


def contact_email(env: Mapping[str, str] | None = None) -> str | None:
    """The operator's contact address (REPORTBENCH_MAILTO, then OPENALEX_MAILTO), if configured."""
    env = os.environ if env is None else env
    for var in MAILTO_ENV_VARS:
        value = (env.get(var) or "").strip()
        if value:
            return value
    return None


def user_agent(mailto: str | None = None) -> str:
    """'reportbench/0.1.0 (mailto:someone@example.org)': APIs ask clients to identify themselves."""
    mailto = mailto if mailto is not None else contact_email()
    return f"reportbench/{__version__}" + (f" (mailto:{mailto})" if mailto else "")


class HostRateLimiter:
    """Minimum interval between requests to the same host, shared by all threads using one session."""

    def __init__(
        self,
        min_interval: Mapping[str, float] | None = None,
        *,
        default_interval: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.min_interval = dict(DEFAULT_MIN_INTERVAL_S if min_interval is None else min_interval)
        self.default_interval = default_interval
        self._clock = clock
        self._sleep = sleep
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()
        self.slept_s = 0.0

    def interval_for(self, host: str) -> float:
        return self.min_interval.get(host.lower(), self.default_interval)

    def wait(self, host: str) -> float:
        """Block until `host` may be contacted again; returns the seconds slept."""
        host = host.lower()
        interval = self.interval_for(host)
        with self._lock:  # reserve a slot, then sleep outside the lock so other hosts are not held up
            now = self._clock()
            last = self._last.get(host)
            start = now if last is None else max(now, last + interval)
            self._last[host] = start
            delay = start - now
            self.slept_s += delay
        if delay > 0:
            self._sleep(delay)
        return delay


def make_retry(
    total: int = 4,
    backoff_factor: float = 1.0,
    status_forcelist: tuple[int, ...] = DEFAULT_STATUS_FORCELIST,
    backoff_max: float = 60.0,
) -> Retry:
    """Retry policy: idempotent methods only, backoff 1, 2, 4 ... s, `Retry-After` wins when present."""
    return Retry(
        total=total,
        connect=total,
        read=total,
        status=total,
        backoff_factor=backoff_factor,
        backoff_max=backoff_max,
        status_forcelist=status_forcelist,
        allowed_methods=frozenset({"GET", "HEAD", "OPTIONS"}),
        respect_retry_after_header=True,
        raise_on_status=False,  # hand the final 429/5xx back so callers see the real status
    )


class PoliteSession(requests.Session):
    """`requests.Session` with a default timeout, retries, per-host pacing and an identifying UA.

    `n_requests` counts requests issued through this session (urllib3-internal retries not included),
    so callers can report how much traffic a run made.
    """

    def __init__(
        self,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        retry: Retry | None = None,
        rate_limiter: HostRateLimiter | None = None,
        mailto: str | None = None,
    ) -> None:
        super().__init__()
        self.timeout = timeout
        self.rate_limiter = rate_limiter if rate_limiter is not None else HostRateLimiter()
        self.n_requests = 0
        adapter = HTTPAdapter(max_retries=retry if retry is not None else make_retry())
        self.mount("https://", adapter)
        self.mount("http://", adapter)
        self.headers["User-Agent"] = user_agent(mailto)

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        """Apply the default timeout and the host's pacing, then send."""
        if kwargs.get("timeout") is None:
            kwargs["timeout"] = self.timeout
        url_s = url.decode() if isinstance(url, bytes) else str(url)
        host = urlsplit(url_s).hostname or ""
        self.rate_limiter.wait(host)
        self.n_requests += 1
        log.debug("%s %s", method if isinstance(method, str) else method.decode(), redact_url(url_s))
        return super().request(method, url, *args, **kwargs)


def make_session(
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    retries: int = 4,
    backoff_factor: float = 1.0,
    min_interval: Mapping[str, float] | None = None,
    mailto: str | None = None,
) -> PoliteSession:
    """The one way project code should build an HTTP session."""
    return PoliteSession(
        timeout=timeout,
        retry=make_retry(total=retries, backoff_factor=backoff_factor),
        rate_limiter=HostRateLimiter(min_interval),
        mailto=mailto,
    )
