"""The shared `fetch_pages` stage: every page any report cites -> one snapshot table (parquet).

Why one stage for every benchmark: ResearcherBench, DEER and LiveResearchBench all verify claims against cited
pages; fetching once per URL (across systems, runs and benchmarks, via the persistent cache) is polite and makes
every verifier see the same text.

Where a page comes from, in order: a seed snapshot (shipped, explicit stage input: wins in every mode) ->
the static SSRF check (literal private addresses and bad schemes are `refused` even offline) -> the cache
(`offline` and `use`; `use` re-fetches transient failures) -> the network (`use`, `refresh`) -> `not_fetched`
(`offline` and not cached). Offline (the default) never touches the network and never crashes on a miss.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from reportbench.fetch.cache import PageCache, load_seeds
from reportbench.fetch.client import BACKENDS, Fetcher
from reportbench.fetch.guard import GuardError, check_static
from reportbench.fetch.snapshot import (
    ERROR_CLASSES,
    PageSnapshot,
    page_for,
    read_snapshots,
    snapshot_from_raw,
    write_snapshots,
)
from reportbench.fetch.urls import UrlRef, collect_urls
from reportbench.types import Report

log = logging.getLogger(__name__)

# `read_snapshots` / `page_for` are re-exported: verifiers may import everything from the stage module.
__all__ = [
    "DEFAULT_FETCH_CONFIG",
    "fetch_pages",
    "make_fetcher",
    "page_for",
    "read_snapshots",
    "run_fetch_stage",
    "summarise",
    "validate_fetch_config",
]

MODES = ("offline", "use", "refresh")
DEFAULT_FETCH_CONFIG: dict[str, Any] = {
    "mode": "offline",  # offline: cache + seeds only | use: cache, else fetch | refresh: always fetch
    "backend": "direct",  # direct | reader
    "reader_base_url": "https://r.jina.ai/",
    "api_key_env": "JINA_API_KEY",  # name of the env var holding the reader key (never the key itself)
    "timeout_s": 30.0,  # read timeout per request (the whole body must arrive within 4x this)
    "connect_timeout_s": 10.0,
    "retries": 2,  # extra attempts on 429/5xx/timeouts/connection errors
    "backoff_s": 1.0,  # first backoff; doubles each retry, Retry-After honoured, capped at 60 s
    "max_bytes": 10 * 1024 * 1024,
    "max_redirects": 5,
    "per_host_interval_s": 1.0,
    "workers": 4,  # pages fetched in parallel (different hosts; each host is still paced)
    "user_agent": None,  # None: 'reportbench/<version> (page fetch for citation checking[; mailto:...])'
    "cache_path": ".reportbench/cache/pages.sqlite",
}


def validate_fetch_config(cfg: Mapping[str, Any] | None) -> dict[str, Any]:
    """Defaults merged with `cfg`; unknown keys and bad values are errors (typos must not be silently ignored)."""
    cfg = dict(cfg or {})
    unknown = sorted(set(cfg) - set(DEFAULT_FETCH_CONFIG))
    if unknown:
        raise ValueError(f"unknown fetch config keys {unknown}; known: {sorted(DEFAULT_FETCH_CONFIG)}")
    out = {**DEFAULT_FETCH_CONFIG, **cfg}
    if out["mode"] not in MODES:
        raise ValueError(f"fetch.mode must be one of {MODES}, got {out['mode']!r}")
    if out["backend"] not in BACKENDS:
        raise ValueError(f"fetch.backend must be one of {BACKENDS}, got {out['backend']!r}")
    for k in ("timeout_s", "connect_timeout_s", "backoff_s", "per_host_interval_s"):
        if not isinstance(out[k], int | float) or out[k] < 0:
            raise ValueError(f"fetch.{k} must be a non-negative number, got {out[k]!r}")
    for k in ("retries", "max_bytes", "max_redirects", "workers"):
        if not isinstance(out[k], int) or isinstance(out[k], bool) or out[k] < 0:
            raise ValueError(f"fetch.{k} must be a non-negative integer, got {out[k]!r}")
    if out["workers"] < 1:
        raise ValueError("fetch.workers must be at least 1")
    if out["backend"] == "reader" and not str(out["reader_base_url"] or "").startswith(("http://", "https://")):
        raise ValueError("fetch.reader_base_url must be an http(s) URL for backend: reader")
    return out


def make_fetcher(cfg: Mapping[str, Any], **test_overrides: Any) -> Fetcher:
    """A Fetcher from a validated config. `test_overrides` (resolver, allow_hosts, sleep, env) are for tests."""
    return Fetcher(
        backend=cfg["backend"],
        reader_base_url=cfg["reader_base_url"],
        api_key_env=cfg["api_key_env"],
        connect_timeout_s=cfg["connect_timeout_s"],
        timeout_s=cfg["timeout_s"],
        retries=cfg["retries"],
        backoff_s=cfg["backoff_s"],
        max_bytes=cfg["max_bytes"],
        max_redirects=cfg["max_redirects"],
        per_host_interval_s=cfg["per_host_interval_s"],
        user_agent=cfg["user_agent"],
        **test_overrides,
    )


def _with_refs(snap: PageSnapshot, ref: UrlRef) -> PageSnapshot:
    snap.url = ref.url
    snap.raw_urls = list(ref.raw_urls)
    snap.cited_by = [f"{s}/{r}" for s, r in sorted(ref.cited_by)]
    return snap


def fetch_pages(
    refs: list[UrlRef],
    cfg: Mapping[str, Any],
    seed_files: list[Path] = (),  # type: ignore[assignment]
    *,
    fetcher: Fetcher | None = None,
    cache: PageCache | None = None,
    executor: Any = None,
    fetcher_overrides: Mapping[str, Any] | None = None,
) -> tuple[list[PageSnapshot], Counter[str]]:
    """Snapshots for `refs` (same order) and a count of where each came from (seed/cache/fetched/...).

    `executor` (reportbench.executor; `runtime.executor: ray`): the pages still to fetch run as units on the
    cluster, every host's pages in one unit (its pacing holds cluster-wide), each unit's fetcher built and guarded
    on its worker. `fetcher_overrides` are the test-only Fetcher arguments (`make_fetcher`) such a unit uses."""
    cfg = validate_fetch_config(cfg)
    seeds = load_seeds(seed_files)
    mode = cfg["mode"]
    own_cache = cache is None
    cache = cache if cache is not None else PageCache(Path(cfg["cache_path"]))
    origin: Counter[str] = Counter()
    out: list[PageSnapshot] = []
    try:
        if fetcher is None and mode != "offline":
            fetcher = make_fetcher(cfg)
        backend_id = fetcher.backend_id if fetcher is not None else make_fetcher(cfg).backend_id
        todo: list[int] = []
        slots: list[PageSnapshot | None] = []
        for i, ref in enumerate(refs):
            snap = _local(ref, mode, seeds, cache, fetcher, backend_id, origin)
            slots.append(snap)
            if snap is None:
                todo.append(i)
        if todo and getattr(executor, "name", "local") != "local":
            fetched_by_unit = _fetch_as_units(executor, [refs[i] for i in todo], cfg, backend_id, fetcher_overrides)
            for i, snap in zip(todo, fetched_by_unit, strict=True):
                cache.put(backend_id, snap)  # merged here too: a node's cache may not be this machine's
                slots[i] = snap
            origin["fetched"] += len(todo)
            todo = []
        if todo:
            assert fetcher is not None
            live = fetcher
            from reportbench.progress import progress_bar  # lazy: +13 ms to import (python -X importtime)

            bar = progress_bar(len(todo), desc="fetch pages", unit="page")  # with ETA: fetching can take minutes

            def work(i: int) -> PageSnapshot:
                try:
                    return _fetch_one(refs[i], live, cache, backend_id)
                finally:
                    bar.update(1)

            if cfg["workers"] > 1 and len(todo) > 1:
                with ThreadPoolExecutor(max_workers=cfg["workers"]) as pool:
                    fetched = list(pool.map(work, todo))
            else:
                fetched = [work(i) for i in todo]
            bar.close()
            for i, snap in zip(todo, fetched, strict=True):
                slots[i] = snap
            origin["fetched"] += len(todo)
        out = [_with_refs(snap, ref) for snap, ref in zip(slots, refs, strict=True) if snap is not None]
    finally:
        if own_cache:
            cache.close()
    return out, origin


def _fetch_as_units(
    executor: Any, refs: list[UrlRef], cfg: Mapping[str, Any], backend_id: str,
    overrides: Mapping[str, Any] | None,
) -> list[PageSnapshot]:
    """`refs` fetched as executor units, in order: hosts dealt round-robin (sorted) over at most 4 x `fetch.workers`
    units; one host never spans two units (its pacing is per fetcher)."""
    from urllib.parse import urlsplit

    by_host: dict[str, list[int]] = {}
    for i, ref in enumerate(refs):
        by_host.setdefault((urlsplit(ref.url).hostname or "").lower(), []).append(i)
    n_units = max(1, min(len(by_host), 4 * int(cfg["workers"])))
    groups: list[list[int]] = [[] for _ in range(n_units)]
    for k, host in enumerate(sorted(by_host)):
        groups[k % n_units].extend(by_host[host])
    calls = [([refs[i] for i in g], dict(cfg), backend_id, dict(overrides or {})) for g in groups if g]
    results = executor.map(_fetch_unit, calls)
    out: list[PageSnapshot | None] = [None] * len(refs)
    for g, result in zip([g for g in groups if g], results, strict=True):
        for i, snap in zip(g, result.value, strict=True):
            out[i] = snap
    return [s for s in out if s is not None]


def _fetch_unit(
    refs: list[UrlRef], cfg: dict[str, Any], backend_id: str, overrides: dict[str, Any]
) -> list[PageSnapshot]:
    """One fetch unit on a worker: its own guarded fetcher; the page cache at `fetch.cache_path` read first (a
    unit run again after its node died fetches only what its first attempt did not store) and written after."""
    fetcher = make_fetcher(cfg, **overrides)
    out: list[PageSnapshot | None] = []
    cache = PageCache(Path(cfg["cache_path"]))
    try:
        for ref in refs:
            cached = cache.get(backend_id, ref.url) if cfg["mode"] != "refresh" else None
            out.append(cached if cached is not None and not cached.transient else None)
        todo = [i for i, snap in enumerate(out) if snap is None]

        def work(i: int) -> PageSnapshot:
            return _fetch_one(refs[i], fetcher, cache, backend_id)

        if cfg["workers"] > 1 and len(todo) > 1:
            with ThreadPoolExecutor(max_workers=cfg["workers"]) as pool:
                fetched = list(pool.map(work, todo))
        else:
            fetched = [work(i) for i in todo]
    finally:
        cache.close()
    for i, snap in zip(todo, fetched, strict=True):
        out[i] = snap
    return [snap for snap in out if snap is not None]


def _local(
    ref: UrlRef,
    mode: str,
    seeds: dict[str, PageSnapshot],
    cache: PageCache,
    fetcher: Fetcher | None,
    backend_id: str,
    origin: Counter[str],
) -> PageSnapshot | None:
    """The snapshot without the network (seed, static refusal, cache, not_fetched), or None: fetch it."""
    if ref.url in seeds:
        origin["seed"] += 1
        return PageSnapshot(**{**seeds[ref.url].__dict__})
    try:
        check_static(ref.url)
    except GuardError as e:
        origin["refused_static"] += 1
        return PageSnapshot(url=ref.url, error_class="refused", error=str(e), fetcher=f"guard/{backend_id}")
    cached = cache.get(backend_id, ref.url) if mode != "refresh" else None
    if cached is not None and (mode == "offline" or not cached.transient):
        origin["cache"] += 1
        return cached
    if mode == "offline" or fetcher is None:
        origin["not_fetched"] += 1
        return PageSnapshot(
            url=ref.url, error_class="not_fetched", error="offline mode and not in the page cache or seeds",
            fetcher=f"offline/{backend_id}",
        )
    return None


def _fetch_one(ref: UrlRef, fetcher: Fetcher, cache: PageCache, backend_id: str) -> PageSnapshot:
    """Fetch the normalised URL (what the cache key names), extract, store in the cache."""
    try:
        raw = fetcher.fetch(ref.url)
        snap = snapshot_from_raw(raw, fetcher.fetcher_id, url_key=ref.url)
    except Exception as e:  # noqa: BLE001 - one bad page must never sink the stage; record why
        log.exception("fetch of %s crashed", ref.url)
        snap = PageSnapshot(url=ref.url, error_class="connection", error=f"internal error: {type(e).__name__}: {e}",
                            fetcher=fetcher.fetcher_id)
    cache.put(backend_id, snap)
    return snap


def summarise(snapshots: list[PageSnapshot], origin: Mapping[str, int], cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Counts by error_class (all classes listed, zeros included) and by origin; mode and backend for the log."""

    by_class = Counter(s.error_class for s in snapshots)
    return {
        "n_urls": len(snapshots),
        "by_error_class": {c: by_class.get(c, 0) for c in ERROR_CLASSES} | {
            c: n for c, n in sorted(by_class.items()) if c not in ERROR_CLASSES
        },
        "by_origin": dict(sorted(origin.items())),
        "mode": cfg["mode"],
        "backend": cfg["backend"],
    }


def run_fetch_stage(
    reports_by_system: Mapping[str, Iterable[Report]],
    cfg: dict,
    out_path: Path,
    seed_files: list[Path],
    *,
    fetcher: Fetcher | None = None,
    cache: PageCache | None = None,
    executor: Any = None,
    fetcher_overrides: Mapping[str, Any] | None = None,
) -> dict:
    """Collect every cited URL, snapshot each page once, write `out_path` (parquet, sorted by url).

    Returns the summary (counts by error_class and origin). Deterministic in offline mode: rows carry the
    seed's/cache's stored `fetched_at`, never the wall clock of this run.
    """
    cfg = validate_fetch_config(cfg)
    # one pass, report by report: a caller may stream each system's reports (pipeline.fetch_stage)
    refs = collect_urls(r for system in sorted(reports_by_system) for r in reports_by_system[system])
    snapshots, origin = fetch_pages(
        refs, cfg, list(seed_files), fetcher=fetcher, cache=cache, executor=executor,
        fetcher_overrides=fetcher_overrides,
    )
    write_snapshots(snapshots, Path(out_path))
    summary = summarise(snapshots, origin, cfg)
    # which stage output, in which mode, and only the classes that occurred (14 zeros hid the one that mattered)
    seen = {c: n for c, n in summary["by_error_class"].items() if n}
    log.info("fetch stage -> %s (%s, backend %s): %d pages, %s; from %s", out_path, summary["mode"],
             summary["backend"], summary["n_urls"], seen or "none", summary["by_origin"] or "nothing")
    return summary
