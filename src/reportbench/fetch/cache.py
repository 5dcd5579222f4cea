"""Persistent page cache (sqlite, outside DVC outputs) and the shipped seed snapshots.

Why a cache outside DVC: the same URL is cited by many systems, runs and benchmarks; it should be fetched once
per backend, ever, and an offline rerun must reproduce exactly what was fetched (same `fetched_at`, same text).
The cache stores finished snapshots (not bodies), keyed by backend id + normalised URL.

Seed files (JSONL, one object per line) ship demo pages so the offline pipeline has something to verify:
`{"url", "status", "content_type", "body" | "body_b64", ["final_url"], ["error_class"], ["error"], ["fetched_at"]}`.
They go through the same extraction as live responses.
"""

from __future__ import annotations

import base64
import binascii
import json
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

from reportbench.fetch.client import RawResponse
from reportbench.fetch.snapshot import PageSnapshot, snapshot_from_raw
from reportbench.fetch.urls import normalise_url

SEED_FETCHER = "seed"
_SEED_KEYS = frozenset({"url", "status", "content_type", "body", "body_b64", "final_url", "error_class", "error",
                        "fetched_at"})

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    url TEXT NOT NULL,
    fetched_at TEXT,
    error_class TEXT NOT NULL,
    record TEXT NOT NULL
)
"""


class PageCache:
    """sqlite table of PageSnapshots keyed by (backend id, normalised url). Safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        self._db.commit()

    @staticmethod
    def key(backend: str, url: str) -> str:
        return f"{backend} {url}"

    def get(self, backend: str, url: str) -> PageSnapshot | None:
        with self._lock:
            row = self._db.execute("SELECT record FROM pages WHERE key = ?", (self.key(backend, url),)).fetchone()
        if row is None:
            return None
        return PageSnapshot.from_row(json.loads(row[0]))

    def put(self, backend: str, snap: PageSnapshot) -> None:
        """Store a snapshot without its run-specific fields (raw spellings, citing reports)."""
        rec = asdict(snap)
        rec["raw_urls"], rec["cited_by"] = [], []
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO pages (key, backend, url, fetched_at, error_class, record) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (self.key(backend, snap.url), backend, snap.url, snap.fetched_at, snap.error_class,
                 json.dumps(rec, ensure_ascii=False, sort_keys=True)),
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM pages").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


class SeedError(ValueError):
    """A seed file line is malformed (a shipped-data bug: fail loudly, naming the file and line)."""


def seed_to_raw(obj: dict) -> RawResponse:
    """One seed object -> the RawResponse a live fetch would have produced."""
    unknown = set(obj) - _SEED_KEYS
    if unknown:
        raise SeedError(f"unknown seed keys {sorted(unknown)}")
    if not isinstance(obj.get("url"), str) or not obj["url"].strip():
        raise SeedError("seed needs a non-empty 'url'")
    if "body" in obj and "body_b64" in obj:
        raise SeedError("seed has both 'body' and 'body_b64'")
    if "body_b64" in obj:
        try:
            body = base64.b64decode(obj["body_b64"], validate=True)
        except (binascii.Error, ValueError, TypeError) as e:
            raise SeedError(f"bad body_b64: {e}") from e
    else:
        body = str(obj.get("body") or "").encode("utf-8")
    status = obj.get("status")
    if status is not None and not isinstance(status, int):
        raise SeedError(f"'status' must be an integer, got {status!r}")
    error_class = obj.get("error_class") or None
    error = obj.get("error") or (f"seed: {error_class}" if error_class else None)
    return RawResponse(
        url=obj["url"],
        final_url=obj.get("final_url") or obj["url"],
        status=status,
        content_type=obj.get("content_type"),
        body=body,
        error_class=error_class,
        error=error,
        fetched_at=obj.get("fetched_at"),
    )


def load_seeds(paths: Iterable[Path]) -> dict[str, PageSnapshot]:
    """Seed files -> {normalised url: snapshot}. Later files (and later lines) win for the same URL."""
    out: dict[str, PageSnapshot] = {}
    for path in paths:
        path = Path(path)
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if not isinstance(obj, dict):
                    raise SeedError("each line must be a JSON object")
                raw = seed_to_raw(obj)
            except (json.JSONDecodeError, SeedError) as e:
                raise SeedError(f"{path}:{lineno}: {e}") from e
            key = normalise_url(raw.url)
            out[key] = snapshot_from_raw(raw, SEED_FETCHER, url_key=key)
    return out
