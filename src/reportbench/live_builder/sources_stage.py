"""Stage 2 of the live builder: download each paper's e-print and extract its related-work section.

The extraction itself is `build.latex.extract_paper` (safe extraction, main file, section, cleaning, cite
keys, .bib/.bbl). This module only fetches the bytes through the caching session (bounded size, one request
per paper, 3 s pacing for arxiv.org) and records one outcome per paper: a download that fails (404, a PDF-only
paper, a broken tarball, a timeout) is a recorded failure with its reason, never an exception that stops the
release.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import requests
from pydantic import BaseModel, ConfigDict, Field

from reportbench.live_builder.arxiv_listing import ListedPaper
from reportbench.live_builder.latex import ExtractedPaper, LatexConfig, extract_paper
from reportbench.live_builder.safe_extract import GZIP_MAGIC
from reportbench.net import redact_url

log = logging.getLogger(__name__)

SourceStatus = Literal["ok", "download_failed", "no_source", "extract_failed"]


class SourceRecord(BaseModel):
    """What happened to one paper's source. `paper` is the extraction (also for extraction failures)."""

    model_config = ConfigDict(extra="forbid")

    arxiv_id: str
    url: str
    status: SourceStatus
    reason: str | None = None
    http_status: int | None = None
    n_bytes: int = 0
    sha256: str | None = None
    kind: str | None = Field(None, description="gzip / tar / tex / pdf / html / unknown")
    paper: ExtractedPaper | None = None


def sniff(data: bytes) -> str:
    """What arXiv sent: a gzip stream, a tar, a PDF, an HTML page, or (probably) TeX."""
    head = data[:1024]
    if head[:2] == GZIP_MAGIC:
        return "gzip"
    if len(data) >= 262 and data[257:262] == b"ustar":
        return "tar"
    if head.startswith(b"%PDF"):
        return "pdf"
    lowered = head.lstrip().lower()
    if lowered.startswith((b"<!doctype html", b"<html")):
        return "html"
    if b"\x00" in head:
        return "unknown"
    return "tex"


def download_source(session: requests.Session, url: str) -> tuple[bytes | None, int | None, str | None]:
    """(body, http status, failure reason). Never raises for network or HTTP errors."""
    try:
        resp = session.get(url, stream=True)
    except requests.RequestException as exc:
        return None, None, redact_url(f"{type(exc).__name__}: {exc}")
    if resp.status_code != 200:
        return None, resp.status_code, f"HTTP {resp.status_code} for {redact_url(url)}"
    return resp.content, resp.status_code, None


def extract_from_bytes(
    data: bytes, url: str, cfg: LatexConfig
) -> tuple[SourceStatus, str | None, str, ExtractedPaper | None]:
    """Write the bytes to a private temp dir and run `extract_paper`; (status, reason, kind, paper)."""
    kind = sniff(data)
    if kind in ("pdf", "html", "unknown"):
        what = {"pdf": "a PDF (no LaTeX source on arXiv)", "html": "an HTML page", "unknown": "binary data"}[kind]
        return "no_source", f"arXiv served {what}, not a LaTeX source", kind, None
    with tempfile.TemporaryDirectory(prefix="reportbench-eprint-") as tmp:
        path = Path(tmp) / ("source.tex" if kind == "tex" else "source.eprint")
        path.write_bytes(data)
        try:
            paper = extract_paper(path, cfg)
        except Exception as exc:  # noqa: BLE001 - untrusted input; one paper must not stop the release
            log.exception("extraction crashed for %s", url)
            return "extract_failed", f"internal: {type(exc).__name__}: {exc}", kind, None
    paper = paper.model_copy(update={"source": url})
    if paper.failure == "no_source":
        return "no_source", paper.failure_reason, kind, paper
    return "ok", None, kind, paper


def process_paper(session: requests.Session, paper: ListedPaper, cfg: LatexConfig) -> SourceRecord:
    """Download + extract one paper. `status == 'ok'` means the source was read; the section checks
    (section found, citations, bibliography) are the filter stage's business and live in `paper.failure`."""
    url = paper.source_url
    data, http_status, reason = download_source(session, url)
    if data is None:
        return SourceRecord(
            arxiv_id=paper.arxiv_id, url=url, status="download_failed", reason=reason, http_status=http_status
        )
    status, why, kind, extracted = extract_from_bytes(data, url, cfg)
    return SourceRecord(
        arxiv_id=paper.arxiv_id,
        url=url,
        status=status,
        reason=why,
        http_status=http_status,
        n_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        kind=kind,
        paper=extracted,
    )


def process_all(
    session: requests.Session, papers: Iterable[ListedPaper], cfg: LatexConfig, max_papers: int | None = None
) -> list[SourceRecord]:
    """One record per paper, in input order (sequential: arxiv.org asks for one request per 3 s anyway)."""
    out: list[SourceRecord] = []
    todo = list(papers)
    if max_papers is not None:
        todo = todo[:max_papers]
    for i, p in enumerate(todo, start=1):
        rec = process_paper(session, p, cfg)
        if rec.status != "ok" or (rec.paper is not None and not rec.paper.ok):
            why = rec.reason or (rec.paper.failure_reason if rec.paper else None)
            log.info(
                "[%d/%d] %s: %s (%s)",
                i,
                len(todo),
                p.arxiv_id,
                rec.status if rec.status != "ok" else rec.paper.failure,
                why,
            )  # type: ignore[union-attr]
        else:
            log.info(
                "[%d/%d] %s: ok (%d cite keys)", i, len(todo), p.arxiv_id, len(rec.paper.cite_keys) if rec.paper else 0
            )
        out.append(rec)
    return out


def record_rows(records: Iterable[SourceRecord]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in sorted(records, key=lambda r: r.arxiv_id)]
