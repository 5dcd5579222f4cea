"""`reportbench cache export|import`: share the judge response cache as one file.

Why: a collaborator (or another machine) with the same cache pays nothing for calls already made anywhere.
The file is gzip'd JSON lines (a header, then one row per answer), so it is diffable, streamable and does not
depend on the sqlite build; import merges (`INSERT OR IGNORE`: an answer already present locally is kept) and
refuses a file written with another cache-key version (its keys could never match). Rows hold answers, token
counts and prices, never a key or a secret (cache.py never stores one).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

from reportbench.judges.cache import CACHE_KEY_VERSION, DEFAULT_CACHE_PATH, ResponseCache

FORMAT = "reportbench-judge-cache"


def _columns(db: sqlite3.Connection) -> list[str]:
    return [r[1] for r in db.execute("PRAGMA table_info(responses)")]


def export_cache(cache_path: str | Path, out: str | Path, *, model: str | None = None) -> int:
    """Write every stored answer (of `model`, if given) to `out`; returns the row count."""
    src = Path(cache_path)
    if not src.is_file():
        raise FileNotFoundError(f"no response cache at {src}")
    db = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
    try:
        cols = _columns(db)
        where, args = ("WHERE model = ?", (model,)) if model else ("", ())
        rows = db.execute(f"SELECT {', '.join(cols)} FROM responses {where} ORDER BY key", args)  # noqa: S608
        n = 0
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(out, "wt", encoding="utf-8") as f:
            f.write(json.dumps({"format": FORMAT, "key_version": CACHE_KEY_VERSION, "columns": cols}) + "\n")
            for row in rows:
                f.write(json.dumps(dict(zip(cols, row, strict=True)), ensure_ascii=False) + "\n")
                n += 1
    finally:
        db.close()
    return n


def import_cache(cache_path: str | Path, src: str | Path) -> tuple[int, int]:
    """Merge an exported file into the cache; returns (rows added, rows already present)."""
    with gzip.open(src, "rt", encoding="utf-8") as f:
        try:
            header = json.loads(f.readline())
        except json.JSONDecodeError:
            header = {}
        if header.get("format") != FORMAT:
            raise ValueError(f"{src}: not a reportbench judge-cache export (no '{FORMAT}' header)")
        if header.get("key_version") != CACHE_KEY_VERSION:
            raise ValueError(
                f"{src}: cache-key version {header.get('key_version')!r}, this reportbench uses "
                f"{CACHE_KEY_VERSION!r}; its keys cannot match (re-export it with this version)"
            )
        cache = ResponseCache(cache_path)  # creates the file and schema if needed
        db = cache._db()
        cols = set(_columns(db))
        added = present = 0
        try:
            db.execute("BEGIN IMMEDIATE")
            for line in f:
                if not line.strip():
                    continue
                row: dict[str, Any] = {k: v for k, v in json.loads(line).items() if k in cols}
                if not isinstance(row.get("key"), str) or not isinstance(row.get("text"), str):
                    raise ValueError(f"{src}: a row without key/text")
                names = list(row)
                cur = db.execute(
                    f"INSERT OR IGNORE INTO responses ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",  # noqa: S608
                    [row[k] for k in names],
                )
                if cur.rowcount:
                    added += 1
                else:
                    present += 1
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        finally:
            cache.close()
    return added, present


def _cmd_export(args: argparse.Namespace) -> int:
    try:
        n = export_cache(args.cache, args.out, model=args.model)
    except (FileNotFoundError, sqlite3.DatabaseError) as exc:
        print(f"error: {exc}")
        return 2
    print(f"exported {n} answers from {args.cache} to {args.out}")
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    try:
        added, present = import_cache(args.cache, args.file)
    except (OSError, ValueError, sqlite3.DatabaseError) as exc:
        print(f"error: {exc}")
        return 2
    print(f"imported {added} answers into {args.cache} ({present} were already there)")
    return 0


def register(subparsers: Any) -> None:
    """`reportbench cache export|import`."""
    p = subparsers.add_parser("cache", help="share the judge response cache as a file (export / import)")
    sub = p.add_subparsers(dest="cache_command", required=True)
    e = sub.add_parser("export", help="write the cached answers to a .jsonl.gz file")
    e.add_argument("out", type=Path, help="the .jsonl.gz file to write")
    e.add_argument("--cache", type=Path, default=DEFAULT_CACHE_PATH,
                   help=f"the response cache (default {DEFAULT_CACHE_PATH})")
    e.add_argument("--model", default=None, help="only this judge model's answers")
    e.set_defaults(func=_cmd_export)
    i = sub.add_parser("import", help="merge an exported file into the cache (local answers win)")
    i.add_argument("file", type=Path, help="a file written by `reportbench cache export`")
    i.add_argument("--cache", type=Path, default=DEFAULT_CACHE_PATH,
                   help=f"the response cache (default {DEFAULT_CACHE_PATH})")
    i.set_defaults(func=_cmd_import)
