"""A content digest of source trees: provenance that changes only when the code that computed something changes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
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
