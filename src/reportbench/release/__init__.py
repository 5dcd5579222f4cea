"""Benchmark releases: a directory of parquet tables + `release.json` manifest + `CARD.md` (see format.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from reportbench.release.deepscholar_import import DEEPSCHOLAR_REPO, fetch_deepscholar, import_deepscholar
from reportbench.release.format import (
    CitationCount,
    CorpusDoc,
    ImportantRef,
    Release,
    ReleaseError,
    ReleaseMeta,
    read_release,
    write_release,
)

DEFAULT_DOWNLOAD_DIR = Path(".reportbench/cache/deepscholar-bench")


def build_release(
    kind: str,
    source: str | Path,
    *,
    name: str | None = None,
    max_tasks: int | None = None,
    download_dir: str | Path = DEFAULT_DOWNLOAD_DIR,
) -> Release:
    """Build a release from config (`conf/release/*.yaml`: kind, source, name, max_tasks).

    kind 'demo' reads the self-authored sources in `source` (data/demo/deepscholar); kind 'deepscholar' imports a local
    checkout, or downloads one first when `source` is an http(s) URL (network needed).
    """
    if kind == "demo":
        from reportbench.release.demo import build_demo_release  # lazy: +40 ms to import (python -X importtime)

        release = build_demo_release(source, max_tasks=max_tasks)
    elif kind == "deepscholar":
        src = str(source)
        if src.startswith(("http://", "https://")):
            root = fetch_deepscholar(download_dir)
            release = import_deepscholar(root, max_tasks=max_tasks, source=src)
        else:
            release = import_deepscholar(src, max_tasks=max_tasks, source=DEEPSCHOLAR_REPO)
    else:
        raise ValueError(f"release kind {kind!r} is not one of 'demo', 'deepscholar'")
    if name is not None:
        release = dataclasses.replace(release, meta=dataclasses.replace(release.meta, name=name))
    return release


__all__ = [
    "CitationCount",
    "CorpusDoc",
    "ImportantRef",
    "Release",
    "ReleaseError",
    "ReleaseMeta",
    "build_release",
    "read_release",
    "write_release",
]
