"""Rate limits shared by every judge stage and process on the machine, and single-flight for identical calls.

Why a file-locked sqlite token bucket: DVC runs judge stages in parallel processes (`dvc exp run --queue` +
`dvc queue start -j N`, several `dvc repro`), and a provider's requests/tokens-per-minute limit is per account,
not per process. One tiny sqlite file next to the response cache (WAL, `BEGIN IMMEDIATE`) serialises a few
microseconds of bookkeeping per call across processes; no daemon, nothing to start or clean up.

The bucket holds the limit over *any* window of `window_s` seconds, not just on average: capacity
`b = limit * burst_s / window_s` (one second's worth by default) and refill rate `(0.98 * limit - b) / window_s`,
so any window of length W holds at most `b + rate * W` reservations, 98 % of the limit when W = window_s. The
2 % headroom absorbs sends that leave later than their slot (connection set-up, a busy event loop: about one
second's worth at the rate), since what the provider counts is arrivals. A caller *reserves* its slot (the
balance may go negative) and sleeps until it is due, so waiters are served in order and never stampede; one
that wakes more than 50 ms late gives its slot back and queues again. A `Retry-After` from the provider blocks
the bucket for every process until it passes.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

T = TypeVar("T")

DEFAULT_STATE_PATH = Path(".reportbench/cache/ratelimit.sqlite")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS buckets (
    name TEXT PRIMARY KEY,
    tokens REAL NOT NULL,
    updated REAL NOT NULL,
    blocked_until REAL NOT NULL DEFAULT 0
)
"""


def provider_key(model: str, api_base: str | None) -> str:
    """The account a limit applies to: litellm's provider prefix plus the endpoint host (if any)."""
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    host = urlparse(api_base).netloc if api_base else ""
    return f"{provider}@{host}" if host else provider


class SharedRateLimiter:
    """Requests- and tokens-per-minute buckets for one provider, shared through a sqlite file."""

    def __init__(
        self,
        path: str | Path,
        provider: str,
        *,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        window_s: float = 60.0,
        burst_s: float = 1.0,
        headroom: float = 0.02,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.provider = provider
        self.window_s = window_s
        self.limits: dict[str, tuple[float, float]] = {}  # bucket -> (capacity, rate per second)
        for kind, limit in (("rpm", requests_per_minute), ("tpm", tokens_per_minute)):
            if limit:
                usable = float(limit) * (1.0 - headroom)
                cap = min(max(1.0, float(limit) * burst_s / window_s), usable)
                rate = max(1e-9, (usable - cap) / window_s) if usable > cap else usable / window_s
                self.limits[f"{provider}:{kind}"] = (cap, rate)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), timeout=60.0, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA busy_timeout=60000")
        self._conn.execute(_SCHEMA)
        self.waited_s = 0.0

    @property
    def active(self) -> bool:
        return bool(self.limits)

    def reserve(self, tokens: int = 0, now: float | None = None) -> float:
        """Take one request (and `tokens`) from the buckets; returns how long to wait before sending."""
        if not self.limits:
            return self._blocked_wait(now)
        with self._lock:
            db = self._conn
            db.execute("BEGIN IMMEDIATE")
            try:
                t = time.time() if now is None else now
                wait = 0.0
                for name, (cap, rate) in self.limits.items():
                    cost = 1.0 if name.endswith(":rpm") else float(max(0, tokens))
                    row = db.execute(
                        "SELECT tokens, updated, blocked_until FROM buckets WHERE name = ?", (name,)
                    ).fetchone()
                    have, updated, blocked = (cap, t, 0.0) if row is None else row
                    have = min(cap, have + max(0.0, t - updated) * rate)
                    if cost > cap:  # bigger than the burst: sent once the bucket is full, leaving a debt
                        wait = max(wait, (cap - have) / rate)
                    elif have < cost:
                        wait = max(wait, (cost - have) / rate)
                    have -= cost
                    wait = max(wait, blocked - t)
                    db.execute(
                        "INSERT OR REPLACE INTO buckets (name, tokens, updated, blocked_until) VALUES (?, ?, ?, ?)",
                        (name, have, t, blocked),
                    )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return max(0.0, wait)

    def _blocked_wait(self, now: float | None) -> float:
        with self._lock:
            row = self._conn.execute(
                "SELECT MAX(blocked_until) FROM buckets WHERE name LIKE ?", (f"{self.provider}:%",)
            ).fetchone()
        t = time.time() if now is None else now
        return max(0.0, (row[0] or 0.0) - t) if row else 0.0

    def block(self, seconds: float) -> None:
        """The provider said Retry-After: nobody on this machine sends to it before that has passed."""
        if seconds <= 0:
            return
        until = time.time() + seconds
        names = list(self.limits) or [f"{self.provider}:retry_after"]
        with self._lock:
            for name in names:
                self._conn.execute(
                    "INSERT INTO buckets (name, tokens, updated, blocked_until) VALUES (?, 0, ?, ?) "
                    "ON CONFLICT(name) DO UPDATE SET blocked_until = MAX(blocked_until, excluded.blocked_until)",
                    (name, time.time(), until),
                )

    def refund(self, tokens: int = 0) -> None:
        """Give a reservation back (its caller woke too late to use its slot)."""
        with self._lock:
            for name, (cap, _rate) in self.limits.items():
                cost = 1.0 if name.endswith(":rpm") else float(max(0, tokens))
                self._conn.execute(
                    "UPDATE buckets SET tokens = MIN(?, tokens + ?) WHERE name = ?", (cap, cost, name)
                )

    async def acquire(self, tokens: int = 0, *, max_late_s: float = 0.05) -> None:
        """Wait for this request's turn (no-op without limits and without a pending Retry-After).

        A caller whose sleep overran its slot by more than `max_late_s` (a busy event loop) gives the slot back
        and queues again: late wake-ups would otherwise all send at once and break the window guarantee."""
        while True:
            wait = self.reserve(tokens)
            if wait <= 0:
                return
            self.waited_s += wait
            due = time.monotonic() + wait
            await asyncio.sleep(wait)
            if time.monotonic() - due <= max_late_s or not self.limits:
                return
            self.refund(tokens)

    def close(self) -> None:
        with self._lock:
            self._conn.close()


_LIMITERS: dict[tuple[Any, ...], SharedRateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def shared_limiter(
    path: str | Path,
    provider: str,
    requests_per_minute: float | None,
    tokens_per_minute: float | None,
) -> SharedRateLimiter:
    """One limiter per (file, provider, limits) per process: every judge of a stage shares it."""
    key = (str(Path(path).resolve()), provider, requests_per_minute, tokens_per_minute)
    with _LIMITERS_LOCK:
        lim = _LIMITERS.get(key)
        if lim is None:
            lim = _LIMITERS[key] = SharedRateLimiter(
                path, provider, requests_per_minute=requests_per_minute, tokens_per_minute=tokens_per_minute
            )
        return lim


def rough_tokens(messages: list[dict[str, Any]], max_tokens: int | None) -> int:
    """What a provider counts against a tokens-per-minute limit: ~4 characters per prompt token plus the
    completion budget it reserves (`max_tokens`). An estimate on purpose: no tokenizer on the hot path."""
    chars = sum(len(str(m.get("content", ""))) for m in messages)
    return chars // 4 + 1 + int(max_tokens or 0)


class SingleFlight:
    """Identical requests in flight at the same moment are sent once; every caller gets the same result
    (or the same exception). Per event loop; entries leave as soon as the call finishes."""

    def __init__(self) -> None:
        self._inflight: dict[tuple[int, str], asyncio.Future[Any]] = {}
        self.shared = 0  # callers served by someone else's request

    async def run(self, key: str, call: Callable[[], Awaitable[T]]) -> T:
        loop = asyncio.get_running_loop()
        slot = (id(loop), key)
        fut = self._inflight.get(slot)
        if fut is not None:
            self.shared += 1
            return await asyncio.shield(fut)
        fut = loop.create_future()
        self._inflight[slot] = fut
        try:
            result = await call()
        except BaseException as exc:
            if not fut.done():
                if isinstance(exc, asyncio.CancelledError):
                    fut.cancel()
                else:
                    fut.set_exception(exc)
                    fut.exception()  # retrieved: no "never retrieved" warning when nobody else waited
            raise
        else:
            fut.set_result(result)
            return result
        finally:
            self._inflight.pop(slot, None)
