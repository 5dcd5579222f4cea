"""A content digest of source trees: provenance that changes only when the code that computed something changes."""

from __future__ import annotations

import gc
import hashlib
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path


def tree_digest(paths: Iterable[Path | str], root: Path | str = ".", pattern: str = "*.py", length: int = 12) -> str:
    """sha256 (first `length` hex) over the relative path and bytes of every file matching `pattern` under `paths`
    (bytecode never counts: it differs per interpreter).

    Why paths relative to each tree's parent and not mtimes: a fresh clone of the same commit, or the same plug-in
    installed elsewhere, gives the same digest.
    """
    root = Path(root)
    digest = hashlib.sha256()
    for rel in paths:
        base = root / rel  # an absolute path stays itself
        files = [base] if base.is_file() else sorted(base.rglob(pattern)) if base.is_dir() else []
        for f in files:
            if "__pycache__" in f.parts or f.suffix == ".pyc" or not f.is_file():
                continue
            name = f.relative_to(base.parent)  # the same wherever the package is installed
            digest.update(name.as_posix().encode() + b"\0")
            with open(f, "rb") as fh:  # streamed: a run folder's 70 MB file is neither held nor copied whole
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
            digest.update(b"\0")
    return digest.hexdigest()[:length]


# --------------------------------------------------------------------------------------------- memoised digest
MEMO_PATH = Path(".reportbench") / "cache" / "digests.sqlite"
# A file whose mtime or ctime is this close to the moment it was hashed is hashed again next time: a write in the
# same timestamp tick (coarse kernel clock; 1 s on some file systems, 2 s on FAT) would leave its stat unchanged.
# This is git's "racily clean" rule.
RACY_NS = 3_000_000_000


def memo_tree_digest(path: Path | str, memo: Path | str | None = MEMO_PATH, now_ns: int | None = None) -> str:
    """sha256 (hex) over the relative path and the sha256 of every file under `path` (or of the file `path`), each
    file's sha256 read from a memo when the file's (inode, size, mtime_ns, ctime_ns) are those it had when hashed.

    Why: the judge stage keys every unit by its system's run folder (~70 MB at 1,000 tasks; hashing it was ~50 µs
    per judgment) and reads the same unchanged folders run after run. Like DVC's state db (inode, size, mtime),
    with ctime added: an edit that keeps the size and puts the mtime back (`os.utime`) still changes the ctime,
    which no user call sets. A file stat'd within `RACY_NS` of `now_ns` (the clock before it was hashed) is not
    memoised, so an edit later in the same timestamp tick is never missed. `memo=None`: no memo (all hashed).
    The memo is a cache: unreadable, locked or corrupt, it is ignored and every file hashed."""
    base = Path(path)
    now = time.time_ns() if now_ns is None else now_ns
    files = [base] if base.is_file() else sorted(f for f in base.rglob("*") if f.is_file()) if base.is_dir() else []
    db = _open_memo(memo) if memo is not None and files else None
    fresh: list[tuple[str, int, int, int, int, str]] = []
    digest = hashlib.sha256()
    # memo keys: the resolved folder joined with each file's relative path (a symlinked file resolved), without
    # resolving every file's path component by component; the folder's rows are read in one query
    where = base.resolve()
    rows = _memo_rows(db, str(where)) if db is not None and len(files) > 1 else None
    try:
        for f in files:
            if "__pycache__" in f.parts or f.suffix == ".pyc":
                continue
            stat_key = _stat_key(f)
            name = str(f.resolve()) if f.is_symlink() or f == base else str(where / f.relative_to(base))
            if rows is not None:
                row = rows.get(name)
                known = row[4] if row is not None and tuple(row[:4]) == stat_key else None
            else:
                known = _memo_get(db, name, stat_key)
            if known is None:
                known = _file_sha256(f)
                if _stat_key(f) != stat_key:  # changed while it was hashed: neither memoised nor remembered
                    digest.update(f.relative_to(base.parent).as_posix().encode() + b"\0" + known.encode() + b"\0")
                    continue
                if max(stat_key[2], stat_key[3]) < now - RACY_NS:
                    fresh.append((name, *stat_key, known))
            if max(stat_key[2], stat_key[3]) < now - RACY_NS:  # racily clean files are not vouched for either
                _SEEN[name] = (stat_key, known)
            digest.update(f.relative_to(base.parent).as_posix().encode() + b"\0" + known.encode() + b"\0")
        if db is not None and fresh and speed_caches_writable():
            try:
                with db:
                    db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)", fresh)
            except sqlite3.Error:
                pass
    finally:
        if db is not None:
            db.close()
    return digest.hexdigest()


def memoise_written(
    folder: Path | str, memo: Path | str | None = MEMO_PATH, patience_s: float = 0.05
) -> dict[str, str]:
    """Hash every file under `folder` that its writer (this process: `system@`) has just written and closed, and
    memoise each sha256 under the stat it has now, although the files are racily new; {relative path: sha256}.

    Why: the judge stage keys its units by the run folders' digests (`memo_tree_digest`) and, on the first run
    after `system@`, hashed every run folder again (~70 MB per 1,000 reports, ~80 µs per judgment): the files were
    too new to be memoised when `system@` hashed them (the racily-clean rule), so nothing was memoised at all.

    Why it is sound although the files were changed within the last tick: a memo row (stat, sha256) is wrong only
    if the file's bytes change later while its stat does not. Any change sets the file's ctime to the file
    system's clock at that moment (no call sets a ctime), so it keeps the stat only if it happens in the very tick
    of the ctime recorded. So before hashing, the file system's own clock is read in the same folder (the ctime of
    an unnamed temporary file: the same clock and granularity, whatever the file system) and the files are
    memoised only once that clock has passed the newest mtime and ctime among them: every change from then on
    gets a later ctime, and a change during the hashing a changed stat (checked after it, as in
    `memo_tree_digest`). A coarse clock that does not pass within `patience_s` (FAT's 2 s): nothing is memoised
    (the judge stage hashes the files as before). Symbolic links are not vouched for."""
    base = Path(folder)
    files = sorted(f for f in base.rglob("*") if f.is_file() and not f.is_symlink()) if base.is_dir() else []
    stats = {f: _stat_key(f) for f in files}
    newest = max((max(k[2], k[3]) for k in stats.values()), default=0)
    vouched = bool(files) and memo is not None and speed_caches_writable() and _fs_clock_past(base, newest, patience_s)
    where = base.resolve()
    out: dict[str, str] = {}
    rows: list[tuple[str, int, int, int, int, str]] = []
    for f in files:
        rel = f.relative_to(base).as_posix()
        out[rel] = sha = _file_sha256(f)
        if vouched and _stat_key(f) == stats[f]:  # unchanged while it was hashed
            rows.append((str(where / rel), *stats[f], sha))
    if rows and memo is not None:
        db = _open_memo(memo)
        if db is not None:
            try:
                with db:
                    db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)", rows)
            except sqlite3.Error:
                pass
            finally:
                db.close()
    return out


def _fs_clock_past(folder: Path, newest_ns: int, patience_s: float) -> bool:
    """Whether the clock of `folder`'s file system has passed `newest_ns` (waiting up to `patience_s` for it)."""
    deadline = time.monotonic() + patience_s
    while True:
        now = _fs_now(folder)
        if now is None:
            return False
        if now > newest_ns:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.001)


def _fs_now(folder: Path) -> int | None:
    """The clock of `folder`'s file system at its own granularity: the ctime and mtime an unnamed temporary file
    created there gets (O_TMPFILE on Linux: nothing appears in the folder); None when none can be created."""
    try:
        with tempfile.TemporaryFile(dir=folder) as probe:
            st = os.fstat(probe.fileno())
    except OSError:
        return None
    return min(st.st_ctime_ns, st.st_mtime_ns)


# path -> (stat key, sha256) of every file memo_tree_digest hashed or found memoised in this process
_SEEN: dict[str, tuple[tuple[int, int, int, int], str]] = {}


def seen_sha256(path: Path | str, stat_key: tuple[int, int, int, int]) -> str | None:
    """The sha256 `memo_tree_digest` found for this file in this process, if the file still has the stat it had
    then (else None: it was never digested here, or it changed since). What the judge stage already computed for
    its unit keys, offered to whoever reads the same file next (reports.stored) without hashing it again."""
    seen = _SEEN.get(str(Path(path).resolve()))
    return seen[1] if seen is not None and seen[0] == stat_key else None


def _stat_key(path: Path) -> tuple[int, int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _file_sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _open_memo(memo: Path | str) -> sqlite3.Connection | None:
    if not speed_caches_writable():  # read what it holds, create and store nothing
        try:
            return sqlite3.connect(f"file:{Path(memo).resolve()}?mode=ro", uri=True, timeout=5) \
                if Path(memo).is_file() else None
        except sqlite3.Error:
            return None
    try:
        Path(memo).parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(str(memo), timeout=5)
        db.execute(
            "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, ino INTEGER, size INTEGER, mtime_ns INTEGER,"
            " ctime_ns INTEGER, sha256 TEXT)"
        )
        return db
    except (OSError, sqlite3.Error):
        return None


def _memo_rows(db: sqlite3.Connection, folder: str) -> dict[str, tuple[int, int, int, int, str]] | None:
    """Every memoised file under `folder` (a range of the primary key), or None when the memo cannot be read."""
    try:
        rows = db.execute(
            "SELECT path, ino, size, mtime_ns, ctime_ns, sha256 FROM files WHERE path > ? AND path < ?",
            (folder + "/", folder + "0"),  # '0' sorts right after '/': exactly the paths below the folder
        ).fetchall()
    except sqlite3.Error:
        return None
    return {row[0]: tuple(row[1:]) for row in rows}


def _memo_get(db: sqlite3.Connection | None, name: str, stat_key: tuple[int, int, int, int]) -> str | None:
    if db is None:
        return None
    try:
        row = db.execute("SELECT ino, size, mtime_ns, ctime_ns, sha256 FROM files WHERE path = ?", (name,)).fetchone()
    except sqlite3.Error:
        return None
    return row[4] if row is not None and tuple(row[:4]) == stat_key else None


# ------------------------------------------------------------------------------- read-only speed caches
_READ_ONLY: list[bool] = []


@contextmanager
def speed_caches_read_only() -> Iterator[None]:
    """The caches that only make a run faster (this memo, the written-reports registry, the stored releases) are
    read but neither created nor written while this is entered: `reportbench estimate` promises to write no cache
    (issue 32), and a run it counts still reads what the last real run memoised."""
    _READ_ONLY.append(True)
    try:
        yield
    finally:
        _READ_ONLY.pop()


def speed_caches_writable() -> bool:
    return not _READ_ONLY


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a reader builds many objects that form no cycles (parsed reports,
    an unpickled release): every collection it triggered walked all of them again (~40 µs per report at 1,000
    tasks, bench/judge_overhead.py). Reference counting frees as before; the collector's state is put back."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
