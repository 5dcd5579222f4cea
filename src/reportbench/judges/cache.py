"""A persistent judge-response cache we own (sqlite, WAL): litellm 1.106.2's disk cache crashes on hits.

Why these choices:
- The key is the sha256 of canonical JSON of *everything that changes the answer* (model, api_base,
  messages, temperature, seed, max_tokens, response_format, prompt-template hash) and nothing
  operational (timeouts, retries, concurrency), like inspect_ai's CachePolicy key. API keys never
  enter the key or a row.
- Answers that parsed OK live in `responses` (the judge calls `put` after parsing); other users of this
  cache (endpoint systems, semantic operators) only ever see those.
- Answers that did NOT parse live apart, in `parse_failures` (every raw answer of the item's attempts and
  the parser's message). A call failure (timeout, 5xx) is never stored: a rerun asks again. A parse
  failure is an answer: a deterministic judge (temperature 0) re-asked the same request gets the same
  answer, so a rerun re-parses the stored answers (free; a fixed parser turns them into judgments) and
  re-asks only when the user says so (`judge.runtime.reask_parse_failures`, `reportbench retry --parse`).
- Lookups and inserts are sub-millisecond local operations, so they run inline on the event loop
  under a lock (one shared connection, `check_same_thread=False`): a thread hop would cost more than
  the query. WAL + busy_timeout lets parallel processes (e.g. `dvc queue -j 2`) share the file.
- The file lives outside DVC outputs (`.reportbench/cache/`), so `dvc repro` never deletes it and the
  run-cache stays enabled.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reportbench.judges.errors import FatalError

DEFAULT_CACHE_PATH = Path(".reportbench/cache/judge.sqlite")
CACHE_KEY_VERSION = "judge-cache-v1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT,
    prompt_hash TEXT,
    text TEXT NOT NULL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    cost_usd REAL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    claimed_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS parse_failures (
    key TEXT PRIMARY KEY,
    model TEXT,
    prompt_hash TEXT,
    answers TEXT NOT NULL,
    error TEXT NOT NULL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    cost_usd REAL,
    attempts INTEGER,
    created_at TEXT NOT NULL
);
"""


def canonical_json(obj: Any) -> str:
    """Stable JSON (sorted keys, no whitespace) so equal requests hash equally."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def cache_key(
    *,
    model: str,
    api_base: str | None,
    messages: list[dict[str, Any]],
    temperature: float | None,
    seed: int | None,
    max_tokens: int | None,
    response_format: Mapping[str, Any] | None,
    prompt_hash: str | None,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """sha256 over the answer-determining request parts (keyword-only so nothing is passed by accident)."""
    parts = {
        "v": CACHE_KEY_VERSION,
        "model": model,
        "api_base": api_base.rstrip("/") if api_base else None,
        "messages": messages,
        "temperature": None if temperature is None else float(temperature),
        "seed": seed,
        "max_tokens": max_tokens,
        "response_format": response_format,
        "prompt_hash": prompt_hash,
        "extra": dict(extra) if extra else None,
    }
    return hashlib.sha256(canonical_json(parts).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    """One stored answer with the usage it cost when it was first fetched."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    created_at: str
    model: str | None = None
    prompt_hash: str | None = None


@dataclass(frozen=True)
class StoredParseFailure:
    """The answers of one request that did not parse (in the order received) and what they cost."""

    answers: tuple[str, ...]
    error: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    attempts: int
    created_at: str


# sqlite errors no retry fixes: the disk (or the file's page budget) is full, the file cannot be written
_LOCAL_FATAL = ("database or disk is full", "disk i/o error", "readonly database", "no space left", "disk full")
CLAIM_STALE_S = 900.0  # a claim older than this is abandoned even if its process still seems alive


class CacheWriteError(FatalError):
    """The cache cannot store an answer (disk full, read-only file): every later answer would be paid for and
    dropped, so the stage stops at once. The answers already paid are spilled to `<cache>.unsaved.jsonl`, and
    the next open of the cache imports them (a rerun after freeing space pays nothing for them)."""


def is_local_fatal(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError | sqlite3.DatabaseError) and any(
        m in str(exc).lower() for m in _LOCAL_FATAL
    )


@contextlib.contextmanager
def _local_fatal_as(cache: ResponseCache) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        if not is_local_fatal(exc):
            raise
        raise CacheWriteError(
            f"judge cache {cache.path} cannot store answers: {exc}; stopped before paying for more calls. "
            "Free disk space (or point judge.runtime.cache_path elsewhere) and rerun."
        ) from None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ResponseCache:
    """sqlite-backed map key -> CachedResponse. Safe for concurrent async use within one process."""

    def __init__(self, path: str | Path = DEFAULT_CACHE_PATH) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        try:
            self._open()
        except (OSError, sqlite3.Error) as exc:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if isinstance(exc, sqlite3.Error) and not (is_local_fatal(exc) or "unable to open" in str(exc)):
                raise
            why = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
            raise CacheWriteError(
                f"judge cache {self.path} cannot be created or opened: {why}. Free disk space there (or point "
                "judge.runtime.cache_path elsewhere) and rerun; nothing was paid for."
            ) from None
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self.owner = uuid.uuid4().hex  # this process's (this cache object's) claims
        self.host = socket.gethostname()
        self.spilled = 0
        self._import_spill()

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False, isolation_level=None)
        for attempt in range(50):  # two processes opening a new file at once: switching to WAL can be "locked"
            try:
                self._conn.execute("PRAGMA busy_timeout=30000")
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
                self._conn.executescript(_SCHEMA)
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 49:
                    raise
                time.sleep(0.1)

    @property
    def spill_path(self) -> Path:
        """Where paid answers go when the cache cannot store them: beside the cache first."""
        return self.path.with_name(self.path.name + ".unsaved.jsonl")

    @property
    def spill_fallback(self) -> Path:
        """The second place, used when the first cannot be written (it sits on the cache's full disk): the
        system's temporary folder, one file per cache. On a machine whose temporary folder shares that disk
        this cannot help either, and the error says so."""
        digest = hashlib.sha256(str(self.path.resolve()).encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / "reportbench-unsaved" / f"{self.path.name}.{digest}.jsonl"

    def _import_spill(self) -> None:
        """Answers a run paid for but could not store (disk full) go into the cache now, if it has room."""
        for spill in (self.spill_path, self.spill_fallback):
            if spill.is_file():
                self._import_spill_file(spill)

    def _import_spill_file(self, spill: Path) -> None:
        rows = []
        for line in spill.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by the full disk
        try:
            with self._lock:
                db = self._db()
                db.execute("BEGIN IMMEDIATE")
                try:
                    for r in rows:
                        db.execute(
                            "INSERT OR IGNORE INTO responses (key, model, prompt_hash, text, prompt_tokens, "
                            "completion_tokens, cost_usd, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (r["key"], r.get("model"), r.get("prompt_hash"), r["text"], r.get("prompt_tokens"),
                             r.get("completion_tokens"), r.get("cost_usd"), r.get("created_at") or ""),
                        )
                except BaseException:
                    if db.in_transaction:  # sqlite rolls back by itself on SQLITE_FULL
                        db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
        except (sqlite3.Error, KeyError, TypeError):
            return  # still no room (or a damaged file): keep the spill for the next open
        spill.unlink(missing_ok=True)

    def _spill(self, row: dict[str, Any], exc: BaseException) -> CacheWriteError:
        """Append a paid answer to the spill file (beside the cache, else in the temporary folder) and say what
        happened (the caller raises it)."""
        line = json.dumps(row, ensure_ascii=False) + "\n"
        errors: list[str] = []
        kept = ""
        for spill in (self.spill_path, self.spill_fallback):
            try:
                spill.parent.mkdir(parents=True, exist_ok=True)
                with spill.open("a", encoding="utf-8") as f:
                    f.write(line)
                self.spilled += 1
                kept = (
                    f"the {self.spilled} answer(s) paid but not stored are kept in {spill} (imported on the next run"
                    + (f"; {self.spill_path} could not be written: {errors[0]}" if errors else "")
                    + ")"
                )
                break
            except OSError as spill_exc:
                errors.append(spill_exc.strerror or str(spill_exc))
        if not kept:
            kept = (
                f"the answer just paid could not be kept either: {self.spill_path} ({errors[0]}) and "
                f"{self.spill_fallback} ({errors[-1]}) are on full or read-only disks"
            )
        return CacheWriteError(
            f"judge cache {self.path} cannot store answers: {exc}; stopped before paying for more calls; {kept}. "
            "Free disk space (or point judge.runtime.cache_path elsewhere) and rerun."
        )

    # ---------------------------------------------------------------- claims (cross-process de-duplication)

    def claim(self, key: str) -> bool:
        """Claim the right to pay for `key`: True if this cache object holds the claim now (new, its own, or
        taken over from a dead or stale owner); False while another live process works on it."""
        now = time.time()
        with self._lock:
            db = self._db()
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                if is_local_fatal(exc):
                    return True  # cannot record a claim: ask anyway (storing the answer then stops the run)
                raise
            try:
                row = db.execute("SELECT owner, pid, host, claimed_at FROM claims WHERE key = ?", (key,)).fetchone()
                if row is not None and row[0] != self.owner:
                    owner_gone = row[2] == self.host and not _pid_alive(int(row[1]))
                    if not owner_gone and now - float(row[3]) < CLAIM_STALE_S:
                        db.execute("COMMIT")
                        return False
                db.execute(
                    "INSERT OR REPLACE INTO claims (key, owner, pid, host, claimed_at) VALUES (?, ?, ?, ?, ?)",
                    (key, self.owner, os.getpid(), self.host, now),
                )
            except BaseException as exc:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error) and is_local_fatal(exc):
                    return True
                raise
            db.execute("COMMIT")
            return True

    def release(self, key: str) -> None:
        """Drop this object's claim on `key` (after its answer is stored, or the call failed)."""
        with self._lock:
            try:
                self._db().execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self.owner))
            except sqlite3.Error:
                pass  # a claim that cannot be deleted goes stale; others take it over then

    def claimed_elsewhere(self, key: str) -> bool:
        """Whether another live owner still holds a claim on `key` (waiters poll this and `get`)."""
        with self._lock:
            row = self._db().execute("SELECT owner, pid, host, claimed_at FROM claims WHERE key = ?", (key,)).fetchone()
        if row is None or row[0] == self.owner:
            return False
        if row[2] == self.host and not _pid_alive(int(row[1])):
            return False
        return time.time() - float(row[3]) < CLAIM_STALE_S

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"cache {self.path} is closed")
        return self._conn

    def get(self, key: str) -> CachedResponse | None:
        with self._lock:
            row = (
                self._db()
                .execute(
                    "SELECT text, prompt_tokens, completion_tokens, cost_usd, created_at, model, prompt_hash "
                    "FROM responses WHERE key = ?",
                    (key,),
                )
                .fetchone()
            )
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        return CachedResponse(*row)

    def put(
        self,
        key: str,
        text: str,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        cost_usd: float | None = None,
        model: str | None = None,
        prompt_hash: str | None = None,
    ) -> None:
        """Store an answer that parsed OK (last write wins); it supersedes a stored parse failure."""
        created = datetime.now(UTC).isoformat(timespec="seconds")
        with self._lock:
            db = self._db()
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    db.execute(
                        "INSERT OR REPLACE INTO responses "
                        "(key, model, prompt_hash, text, prompt_tokens, completion_tokens, cost_usd, created_at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (key, model, prompt_hash, text, prompt_tokens, completion_tokens, cost_usd, created),
                    )
                    db.execute("DELETE FROM parse_failures WHERE key = ?", (key,))
                    db.execute("DELETE FROM claims WHERE key = ?", (key,))
                except BaseException:
                    if db.in_transaction:  # sqlite rolls back by itself on SQLITE_FULL
                        db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                if not is_local_fatal(exc):
                    raise
                row = {"key": key, "model": model, "prompt_hash": prompt_hash, "text": text,
                       "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "cost_usd": cost_usd,
                       "created_at": created}
                raise self._spill(row, exc) from None
            self.writes += 1

    def get_parse_failure(self, key: str) -> StoredParseFailure | None:
        """The stored unparseable answers of a request, if any (never returned by `get`)."""
        with self._lock:
            row = (
                self._db()
                .execute(
                    "SELECT answers, error, prompt_tokens, completion_tokens, cost_usd, attempts, created_at "
                    "FROM parse_failures WHERE key = ?",
                    (key,),
                )
                .fetchone()
            )
        if row is None:
            return None
        try:
            answers = json.loads(row[0])
        except json.JSONDecodeError:
            return None  # a damaged row is a miss: the request is asked again
        if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
            return None
        return StoredParseFailure(tuple(answers), row[1], row[2], row[3], row[4], int(row[5] or 0), row[6])

    def put_parse_failure(
        self,
        key: str,
        answers: list[str] | tuple[str, ...],
        error: str,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        cost_usd: float | None = None,
        attempts: int = 0,
        model: str | None = None,
        prompt_hash: str | None = None,
    ) -> None:
        """Keep the answers of a request whose every attempt failed to parse (last write wins)."""
        if not answers:
            raise ValueError("put_parse_failure needs at least one answer")
        created = datetime.now(UTC).isoformat(timespec="seconds")
        with self._lock, _local_fatal_as(self):
            self._db().execute(
                "INSERT OR REPLACE INTO parse_failures (key, model, prompt_hash, answers, error, prompt_tokens, "
                "completion_tokens, cost_usd, attempts, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    model,
                    prompt_hash,
                    json.dumps(list(answers), ensure_ascii=False),
                    error,
                    prompt_tokens,
                    completion_tokens,
                    cost_usd,
                    attempts,
                    created,
                ),
            )

    def parse_failure_count(self) -> int:
        with self._lock:
            return int(self._db().execute("SELECT COUNT(*) FROM parse_failures").fetchone()[0])

    def delete(self, key: str) -> None:
        with self._lock:
            self._db().execute("DELETE FROM responses WHERE key = ?", (key,))
            self._db().execute("DELETE FROM parse_failures WHERE key = ?", (key,))

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return self._db().execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None

    def __len__(self) -> int:
        with self._lock:
            return int(self._db().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
