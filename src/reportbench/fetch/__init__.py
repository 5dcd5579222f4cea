"""Shared, SSRF-safe fetching of the web pages reports cite (see docs/fetch.md).

Modules: `urls` (normalise + collect), `guard` (SSRF policy), `client` (guarded pinned HTTP, direct/reader
backends), `extract` (HTML/PDF/text -> title + text), `snapshot` (record + parquet), `cache` (sqlite cache +
seed files), `stage` (the DVC stage function).
"""

from reportbench.fetch.cache import PageCache, SeedError, load_seeds
from reportbench.fetch.client import Fetcher, RawResponse
from reportbench.fetch.guard import DnsError, RefusedError, check_url
from reportbench.fetch.snapshot import (
    ERROR_CLASSES,
    PageSnapshot,
    page_for,
    read_snapshots,
    snapshot_from_raw,
    write_snapshots,
)
from reportbench.fetch.stage import DEFAULT_FETCH_CONFIG, make_fetcher, run_fetch_stage, validate_fetch_config
from reportbench.fetch.urls import UrlRef, collect_urls, normalise_url

__all__ = [
    "DEFAULT_FETCH_CONFIG",
    "ERROR_CLASSES",
    "DnsError",
    "Fetcher",
    "PageCache",
    "PageSnapshot",
    "RawResponse",
    "RefusedError",
    "SeedError",
    "UrlRef",
    "check_url",
    "collect_urls",
    "load_seeds",
    "make_fetcher",
    "normalise_url",
    "page_for",
    "read_snapshots",
    "run_fetch_stage",
    "snapshot_from_raw",
    "validate_fetch_config",
    "write_snapshots",
]
