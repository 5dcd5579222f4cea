"""The search cache: one sqlite row per (backend, normalised query, max_results, UTC day) → the hits as JSON.

Shared by every agent run on the machine (WAL, a lock per process); it never stores a key or a header."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS search (
    backend TEXT NOT NULL, query TEXT NOT NULL, max_results INTEGER NOT NULL, day TEXT NOT NULL,
    hits TEXT NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (backend, query, max_results, day)
)
"""


class SearchCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        self._db.commit()

    def get(self, backend: str, query: str, max_results: int, day: str) -> list[dict[str, Any]] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT hits FROM search WHERE backend=? AND query=? AND max_results=? AND day=?",
                (backend, query, max_results, day),
            ).fetchone()
        return None if row is None else list(json.loads(row[0]))

    def put(self, backend: str, query: str, max_results: int, day: str, hits: list[dict[str, Any]]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO search VALUES (?, ?, ?, ?, ?, ?)",
                (backend, query, max_results, day, json.dumps(hits, ensure_ascii=False), time.time()),
            )
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()
