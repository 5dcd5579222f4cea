"""Result pages' main text for agents that ask for it (Tavily `include_raw_content`, Exa `contents`), read through
the spine's fetch path (reportbench.fetch, docs/fetch.md): the release's recorded pages (`fetch_seeds`) first, the
static SSRF check, the persistent page cache, then the network only when `fetch.mode` allows it (`use`,
`refresh`; the guarded, pinned fetcher). Offline (the default) a page that was never recorded has no text
(`not_fetched`): the agent gets `raw_content: null`, as Tavily answers for a page it could not read, never a
snippet passed off as the page.

Why the spine's fetcher and not the agent's own HTTP: the same page reads the same for every agent and for the
verifiers later (one cache, one extraction), private addresses are refused, and an offline rerun reads exactly
what the first run read.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# characters of a page's main text handed to the agent (open_deep_research reads up to 50,000 per result)
PAGE_TEXT_CHARS = 50_000


@dataclass
class PageText:
    """One result page as the agent received it: `text` is None when the page could not be read (`why`)."""

    url: str
    source: str  # provider | seed | cache | fetched | refused_static | not_fetched
    text: str | None
    why: str | None = None


class PageReader:
    """The spine's fetch path for agents' result pages (one per system run; thread-safe like the page cache)."""

    def __init__(
        self, fetch_cfg: Mapping[str, Any] | None = None, seed_files: Sequence[str | Path] = (), **test_overrides: Any
    ) -> None:
        """`fetch_cfg`: the pipeline's `fetch` params (mode, cache_path, ...); `seed_files`: the benchmark's
        `fetch_seeds` (the release's recorded pages). `test_overrides` go to the fetcher (resolver, allow_hosts)."""
        from reportbench.fetch.stage import validate_fetch_config  # lazy: +293 ms to import (python -X importtime)

        self.cfg = validate_fetch_config(fetch_cfg)
        self.seed_files = [Path(p) for p in seed_files]
        self._cache: Any = None  # opened on the first page asked for (most runs ask for none)
        self._overrides = test_overrides
        self._fetcher: Any = None
        self._lock = threading.Lock()

    @property
    def cache(self) -> Any:
        with self._lock:
            if self._cache is None:
                from reportbench.fetch.cache import PageCache  # lazy: +20 ms to import (python -X importtime)

                self._cache = PageCache(Path(self.cfg["cache_path"]))
            return self._cache

    def _live(self) -> Any:
        if self.cfg["mode"] == "offline":
            return None
        with self._lock:
            if self._fetcher is None:
                from reportbench.fetch.stage import make_fetcher  # lazy: +293 ms to import (python -X importtime)

                self._fetcher = make_fetcher(self.cfg, **self._overrides)
            return self._fetcher

    def read(self, urls: Sequence[str]) -> list[PageText]:
        """The main text of each URL (same order), from seeds, the page cache or the guarded fetcher."""
        from reportbench.fetch.stage import fetch_pages  # lazy: +293 ms to import (python -X importtime)
        from reportbench.fetch.urls import UrlRef, normalise_url  # lazy: +1 ms to import (python -X importtime)

        done: dict[str, PageText] = {}
        out = []
        for raw in urls:
            key = normalise_url(raw)
            if key not in done:
                # one page per call: the origin counter then says where this page came from
                snaps, origin = fetch_pages([UrlRef(url=key)], self.cfg, self.seed_files, fetcher=self._live(),
                                            cache=self.cache)  # fmt: skip
                source = next(iter(origin), "not_fetched")
                snap = snaps[0] if snaps else None
                if snap is not None and snap.ok and snap.text.strip():
                    done[key] = PageText(url=raw, source=source, text=snap.text[:PAGE_TEXT_CHARS])
                else:
                    why = "no snapshot" if snap is None else (
                        "empty page" if snap.ok else f"{snap.error_class}: {snap.error or ''}".rstrip(": "))
                    done[key] = PageText(url=raw, source=source, text=None, why=why)
            out.append(PageText(**{**done[key].__dict__, "url": raw}))
        return out

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()

