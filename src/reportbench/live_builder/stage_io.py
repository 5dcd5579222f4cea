"""File helpers shared by the live stages: atomic writes, JSON lines, drop records, request reports.

Why: DVC hashes each stage's outputs, so they must be a function of their inputs (sorted rows, sorted JSON
keys, no wall-clock values) and must never be half-written when a stage is interrupted.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict

DROP_SCHEMA: dict[str, Any] = {
    "arxiv_id": pl.String,
    "stage": pl.String,
    "reason_code": pl.String,
    "reason": pl.String,
}


class DropRecord(BaseModel):
    """A paper that left the pipeline, where and why (every failure is recorded, none is silent)."""

    model_config = ConfigDict(extra="forbid")

    arxiv_id: str
    stage: str
    reason_code: str
    reason: str


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, data: Any) -> None:
    _atomic_write_bytes(path, dump_json(data).encode())


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    """One sorted-key JSON object per line; returns the row count."""
    lines = [json.dumps(r, sort_keys=True, ensure_ascii=False, allow_nan=False) for r in rows]
    _atomic_write_bytes(path, ("\n".join(lines) + ("\n" if lines else "")).encode())
    return len(lines)


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: not valid JSON ({exc})") from exc


def write_parquet(path: Path, df: pl.DataFrame) -> None:
    """Deterministic parquet (fixed compression, no statistics timestamps), written atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        df.write_parquet(tmp, compression="zstd", compression_level=9, statistics=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_drops(path: Path, drops: Iterable[DropRecord]) -> int:
    rows = sorted((d.model_dump() for d in drops), key=lambda r: (r["arxiv_id"], r["stage"], r["reason_code"]))
    write_parquet(path, pl.DataFrame(rows, schema=DROP_SCHEMA))
    return len(rows)


def read_drops(path: Path) -> list[DropRecord]:
    if not path.is_file():
        return []
    return [DropRecord.model_validate(r) for r in pl.read_parquet(path, glob=False).iter_rows(named=True)]


def fresh_dir(path: Path) -> Path:
    """An empty output directory (a stage owns its outputs; leftovers from a previous run would be hashed)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path
