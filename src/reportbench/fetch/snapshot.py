"""The page-snapshot record, its parquet table, and the one function that turns a response into a record.

Why one record type for everything: the claim verifiers of ResearcherBench, DEER and LiveResearchBench read the
same table whatever backend, cache or seed produced a row, and a failed fetch is a row with a reason, never a
missing row.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from reportbench.fetch.client import RawResponse, media_type
from reportbench.fetch.extract import EXTRACTOR_VERSION, extract
from reportbench.fetch.urls import normalise_url
from reportbench.injection import flags_for, neutralize

OK = "ok"
ERROR_CLASSES = (
    OK,
    "dns",
    "timeout",
    "connection",
    "http_error",
    "access_denied",
    "empty",
    "refused",
    "too_large",
    "unsupported_type",
    "extract_error",
    "not_fetched",
)
ACCESS_DENIED_STATUS = frozenset({401, 402, 403, 451})
# Outcomes that may change if we ask again; `mode: use` re-fetches them instead of trusting the cache.
TRANSIENT_CLASSES = frozenset({"dns", "timeout", "connection", "not_fetched"})
TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})

SNAPSHOT_SCHEMA: dict[str, pl.DataType] = {
    "url": pl.String(),
    "raw_urls": pl.List(pl.String()),
    "final_url": pl.String(),
    "http_status": pl.Int32(),
    "error_class": pl.String(),
    "error": pl.String(),
    "fetched_at": pl.String(),
    "content_type": pl.String(),
    "n_bytes": pl.Int64(),
    "sha256": pl.String(),
    "title": pl.String(),
    "text": pl.String(),
    "fetcher": pl.String(),
    "cited_by": pl.List(pl.String()),
    "flags": pl.List(pl.String()),
}


@dataclass
class PageSnapshot:
    """One cited page as the verifiers see it. `error_class` is 'ok' or one of ERROR_CLASSES (docs/fetch.md)."""

    url: str  # normalised (the key)
    raw_urls: list[str] = field(default_factory=list)
    final_url: str | None = None
    http_status: int | None = None
    error_class: str = OK
    error: str | None = None
    fetched_at: str | None = None
    content_type: str | None = None
    n_bytes: int | None = None
    sha256: str | None = None
    title: str | None = None
    text: str = ""
    fetcher: str = ""
    cited_by: list[str] = field(default_factory=list)  # "system/report_id"
    # reportbench.injection: "judge_directed_text" when the page addressed the judge (that text was cut from
    # `text` before any verifier saw it), "hidden_text" for invisible characters that carried text
    flags: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error_class == OK

    @property
    def access_denied(self) -> bool:
        return self.error_class == "access_denied"

    @property
    def transient(self) -> bool:
        return self.error_class in TRANSIENT_CLASSES or (
            self.error_class == "http_error" and self.http_status in TRANSIENT_STATUS
        )

    def to_row(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> PageSnapshot:
        known = {k: row.get(k) for k in SNAPSHOT_SCHEMA}
        known["raw_urls"] = list(known.get("raw_urls") or [])
        known["cited_by"] = list(known.get("cited_by") or [])
        known["flags"] = list(known.get("flags") or [])  # tables written before flags existed
        known["text"] = known.get("text") or ""
        known["fetcher"] = known.get("fetcher") or ""
        known["error_class"] = known.get("error_class") or OK
        return cls(**known)


def classify_status(status: int | None) -> str:
    """http_error, or access_denied for 401/402/403/451 (login walls, paywalls, legal blocks)."""
    return "access_denied" if status in ACCESS_DENIED_STATUS else "http_error"


def snapshot_from_raw(raw: RawResponse, fetcher: str, url_key: str | None = None) -> PageSnapshot:
    """Extraction + classification shared by live responses, cached bodies and seeds."""
    key = url_key or normalise_url(raw.url)
    ctype = media_type(raw.content_type) or None
    if raw.error_class is not None:
        ec = raw.error_class
        if ec == "http_error":
            ec = classify_status(raw.status)
        return PageSnapshot(
            url=key, final_url=raw.final_url, http_status=raw.status, error_class=ec, error=raw.error,
            fetched_at=raw.fetched_at, content_type=ctype, fetcher=fetcher,
        )
    body = raw.body
    snap = PageSnapshot(
        url=key, final_url=raw.final_url or raw.url, http_status=raw.status, fetched_at=raw.fetched_at,
        content_type=ctype, n_bytes=len(body), sha256=hashlib.sha256(body).hexdigest(),
        fetcher=f"{fetcher}+x{EXTRACTOR_VERSION}",
    )
    if raw.status is not None and raw.status >= 400:
        snap.error_class, snap.error = classify_status(raw.status), f"HTTP {raw.status}"
        return snap
    out = extract(body, raw.content_type)
    snap.text, findings = neutralize(out.text or "")
    snap.title = out.title
    if out.title:
        title, title_findings = neutralize(out.title)
        snap.title, findings = title.strip() or None, findings + title_findings
    if findings:
        snap.flags = flags_for(findings)
    if out.final_url:
        snap.final_url = out.final_url
    if out.error_class:
        snap.error_class, snap.error = out.error_class, out.error
    return snap


def write_snapshots(snapshots: list[PageSnapshot], path: Path) -> None:
    """Parquet with the fixed schema, sorted by url, no statistics: identical inputs give identical bytes."""
    rows = [s.to_row() for s in sorted(snapshots, key=lambda s: s.url)]
    df = pl.DataFrame(rows, schema=SNAPSHOT_SCHEMA, orient="row") if rows else pl.DataFrame(schema=SNAPSHOT_SCHEMA)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    df.write_parquet(tmp, statistics=False)
    tmp.replace(path)


def read_snapshots(path: Path) -> dict[str, PageSnapshot]:
    """The snapshot table as {normalised url: PageSnapshot}."""
    df = pl.read_parquet(path, glob=False)
    return {row["url"]: PageSnapshot.from_row(row) for row in df.iter_rows(named=True)}


def page_for(url: str, snapshots: dict[str, PageSnapshot]) -> PageSnapshot | None:
    """Look a raw cited URL up in a snapshot table (normalised first, so any spelling finds its page)."""
    return snapshots.get(normalise_url(url))
