"""The search cache: one sqlite row per (backend, endpoint, parameters, normalised query, UTC day) → the hits as
JSON. Every field that changes an answer is in the key: the same query to the loopback stub and to the real
Tavily are two rows, as are a query with and without page text (`raw_content`) or with another `max_results`.

Shared by every agent run on the machine (WAL, a lock per process); it never stores a key or a header. The table
of the earlier key (backend, query, max_results, day: no endpoint) is left unread, so a stub's answer cached
under it can never be served for a real backend."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS search_v2 (
    backend TEXT NOT NULL, endpoint TEXT NOT NULL, params TEXT NOT NULL, query TEXT NOT NULL, day TEXT NOT NULL,
    hits TEXT NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (backend, endpoint, params, query, day)
)
"""


def params_key(params: dict[str, Any]) -> str:
    """The request's parameters as one canonical string (sorted keys)."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


class SearchCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        self._db.commit()

    def get(self, backend: str, endpoint: str, params: str, query: str, day: str) -> list[dict[str, Any]] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT hits FROM search_v2 WHERE backend=? AND endpoint=? AND params=? AND query=? AND day=?",
                (backend, endpoint, params, query, day),
            ).fetchone()
        return None if row is None else list(json.loads(row[0]))

    def put(
        self, backend: str, endpoint: str, params: str, query: str, day: str, hits: list[dict[str, Any]]
    ) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO search_v2 VALUES (?, ?, ?, ?, ?, ?, ?)",
                (backend, endpoint, params, query, day, json.dumps(hits, ensure_ascii=False), time.time()),
            )
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()
