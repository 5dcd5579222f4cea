"""Sample pages reused by key across `site` runs (issue 36, "the site at real size").

DVC reruns the `site` stage whole when anything it reads changes, and a sample page costs parsing its report,
re-rendering its judge messages and writing ~90 KB of HTML. A page is a function of what it reads, so each is keyed
by a hash of: the code, params.yaml's content, the prompts, the authors' prompts (mirror setting and cache), the
release, the fetched pages, its system's run folder and judgment records (both whole: a change to either renders
that system's pages again), the task's score rows and cross-system rows (a battle against a changed system changes
them), what the page links to (other systems, previous/next task, breadcrumbs), the metric definitions, the
problems listed on every page, and the bytes of the report file as submitted (shown verbatim). A page whose key
matches is copied from `.reportbench/cache/site-pages/` instead of rendered; the others are rendered (their
messages only) and stored. Off with `REPORTBENCH_UNIT_REUSE=0` (the switch of every reuse: unit_reuse)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reportbench import partial_reuse
from reportbench.site.samples import raw_report

CACHE_DIR = Path(".reportbench") / "cache" / "site-pages"


def _dir_digest(path: Path) -> str:
    return partial_reuse.dir_digest(path)  # streamed: a run's reports.jsonl is never read whole


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def benchmark_digest(params: Mapping[str, Any], root: Path, benchmark: str, release: str) -> str:
    """What every sample page of a benchmark × release reads besides its own system's files."""
    authors_cache = root / ".reportbench" / "cache" / "authors"
    parts = {
        "code": partial_reuse.code_digest(benchmark),
        "site_stage": _dir_digest(root / "stages" / "build_site.py"),
        "params": _json(params),
        "prompts": _dir_digest(root / "prompts"),
        "authors_mirror": os.environ.get("REPORTBENCH_AUTHORS_MIRROR"),
        "authors_cache": _dir_digest(authors_cache),
        "release": _dir_digest(root / "data" / "releases" / benchmark / release),
        "pages": _dir_digest(root / "data" / "pages" / benchmark / release),
    }
    return hashlib.sha256(_json(parts).encode()).hexdigest()


def system_digest(base: str, root: Path, sd: Any, extra: Any) -> str:
    """`base` plus one system's run folder and judgment records, the problems every page lists, and `extra`."""
    parts = {
        "base": base,
        "run": _dir_digest(root / "data" / "runs" / sd.benchmark / sd.release / sd.system),
        "judgments": _dir_digest(root / "data" / "judgments" / sd.benchmark / sd.release / sd.system),
        "problems": sd.problems,
        "extra": extra,
    }
    return hashlib.sha256(_json(parts).encode()).hexdigest()


def page_key(system_key: str, sd: Any, task_id: str, extra: Any) -> str:
    """The key of one sample page: its system's key, the task's rows, the file as submitted, `extra`."""
    head = getattr(sd.reports, "heads", {}).get(task_id)
    raw = raw_report(sd, task_id, _Head(head) if head else None)
    parts = {
        "system": system_key,
        "task": task_id,
        "scores": sd.scores.get(task_id, []),
        "cross": sd.cross.get(task_id, []),
        "raw": None if raw is None else [raw[0], hashlib.sha256(raw[1].encode()).hexdigest()],
        "extra": extra,
    }
    return hashlib.sha256(_json(parts).encode()).hexdigest()[:40]


class _Head:
    """What `raw_report` reads of a report (its `path`), from the line's head: no parse of the body."""

    def __init__(self, head: Mapping[str, Any]) -> None:
        self.path = head.get("path")


class PageStore:
    """One system's stored pages: `get(key)` the HTML of a page rendered earlier with this key, `put` a new one,
    `keep_only` the keys of this run (the cache holds one system's current pages, not every version)."""

    def __init__(self, root: Path, benchmark: str, release: str, system_slug: str) -> None:
        self.dir = Path(root) / CACHE_DIR / benchmark / release / system_slug
        self.enabled = partial_reuse.enabled()

    def has(self, key: str) -> bool:
        return self.enabled and (self.dir / f"{key}.html").is_file()

    def copy_to(self, key: str, dest: Path) -> bool:
        src = self.dir / f"{key}.html"
        if not self.enabled or not src.is_file():
            return False
        shutil.copyfile(src, dest)
        return True

    def put(self, key: str, path: Path) -> None:
        if not self.enabled:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.dir)
        os.close(fd)
        try:
            shutil.copyfile(path, tmp)
            os.replace(tmp, self.dir / f"{key}.html")
        finally:
            Path(tmp).unlink(missing_ok=True)

    def keep_only(self, keys: set[str]) -> None:
        if not self.enabled or not self.dir.is_dir():
            return
        for p in self.dir.iterdir():
            if p.suffix != ".html" or p.stem not in keys:
                p.unlink(missing_ok=True)
