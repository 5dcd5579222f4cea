"""Stage 1 of the live builder: list recent arXiv papers with the `arxiv` package.

One query per category, `cat:X AND submittedDate:[start0000 TO end2359]`, newest first, capped per category
(the authors' scraper, §1.1). Unlike the authors' code, the paper's own rules are applied and every paper
left out is recorded with the reason: v1 only (the latest version must still be v1), the optional
"accepted/published at a venue" filter on the arXiv comment, and a defensive check that the date really is
inside the window. The client runs over our `CachingSession` (timeouts, retries, 3 s pacing, cache), with the
library's own delay switched off so cached pages replay without sleeping.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import arxiv
import requests
from pydantic import BaseModel, ConfigDict, Field

from reportbench.http_cache import make_arxiv_client  # noqa: F401 - arxiv_listing.make_arxiv_client stays importable
from reportbench.live_builder.live_config import LiveConfig
from reportbench.live_builder.stage_io import DropRecord
from reportbench.net import redact_url

log = logging.getLogger(__name__)

_VERSION_RE = re.compile(r"v(\d+)$")
# New-style ids and old-style archive ids (cs/0302025); anything else from the feed is refused.
_SHORT_ID_RE = re.compile(r"^(\d{4}\.\d{4,5}|[a-z][a-z\-]*(?:\.[A-Z]{2})?/\d{7})(v\d+)?$")


class ListedPaper(BaseModel):
    """One paper as listed by the arXiv API (all the metadata later stages and the card need)."""

    model_config = ConfigDict(extra="forbid")

    arxiv_id: str = Field(description="versioned id as listed, e.g. 2506.02838v1 (the task id)")
    base_id: str = Field(description="version-stripped id")
    version: int
    title: str
    authors: list[str]
    abstract: str
    categories: list[str]
    primary_category: str
    published: str = Field(description="ISO 8601 (v1 submission)")
    updated: str = Field(description="ISO 8601 (latest version)")
    comment: str | None = None
    journal_ref: str | None = None
    doi: str | None = None
    source_url: str
    query_category: str = Field(description="the configured category whose query listed it first")


@dataclass
class ListingResult:
    papers: list[ListedPaper] = field(default_factory=list)
    dropped: list[DropRecord] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    per_category: dict[str, int] = field(default_factory=dict)


def category_query(category: str, start: dt.date, end: dt.date) -> str:
    return f"cat:{category} AND submittedDate:[{start:%Y%m%d}0000 TO {end:%Y%m%d}2359]"


def venue_match(comment: str | None, patterns: Iterable[str]) -> str | None:
    """The first pattern that matches the comment (case-insensitive), or None."""
    if not comment:
        return None
    text = " ".join(comment.split())[:2000]  # untrusted: bound the text the regexes run over
    for p in patterns:
        if re.search(p, text, flags=re.IGNORECASE):
            return p
    return None


def to_listed(result: arxiv.Result, query_category: str) -> ListedPaper | str:
    """A ListedPaper, or the reason the entry is unusable."""
    short = result.get_short_id()
    m = _SHORT_ID_RE.match(short or "")
    if not m:
        return f"unrecognised arXiv id {short!r}"
    vm = _VERSION_RE.search(short)
    version = int(vm.group(1)) if vm else 1
    versioned = short if vm else f"{short}v{version}"
    title = " ".join((result.title or "").split())
    abstract = (result.summary or "").strip()
    if not title or not abstract:
        return "empty title or abstract in the arXiv feed"
    source_url = result.source_url() or f"https://arxiv.org/src/{versioned}"
    if source_url.startswith("http://"):  # the API lists http:// links; arxiv.org redirects them anyway
        source_url = "https://" + source_url[len("http://") :]
    return ListedPaper(
        arxiv_id=versioned,
        base_id=m.group(1),
        version=version,
        title=title,
        authors=[a.name for a in result.authors if a.name],
        abstract=abstract,
        categories=list(dict.fromkeys(result.categories)),
        primary_category=result.primary_category or (result.categories[0] if result.categories else ""),
        published=result.published.isoformat(),
        updated=result.updated.isoformat(),
        comment=(result.comment or None),
        journal_ref=(result.journal_ref or None),
        doi=(result.doi or None),
        source_url=source_url,
        query_category=query_category,
    )


def list_papers(cfg: LiveConfig, session: requests.Session) -> ListingResult:
    """List, de-duplicate and filter papers for every configured category; never raises for one category."""
    client = make_arxiv_client(session, cfg.page_size)
    out = ListingResult()
    seen: set[str] = set()
    start, end = cfg.window.start, cfg.window.end
    for cat in cfg.categories:
        search = arxiv.Search(
            query=category_query(cat, start, end),
            max_results=cfg.max_per_category,
            sort_by=arxiv.SortCriterion.SubmittedDate,
            sort_order=arxiv.SortOrder.Descending,
        )
        n = 0
        try:
            for result in client.results(search):
                n += 1
                _consider(result, cat, cfg, seen, out)
        except (arxiv.ArxivError, requests.RequestException, ValueError) as exc:
            msg = redact_url(f"{type(exc).__name__}: {exc}")
            log.error("listing %s failed after %d results: %s", cat, n, msg)
            out.errors.append({"category": cat, "error": msg})
        out.per_category[cat] = n
        log.info("listed %d entries for %s", n, cat)
    if out.errors and not out.papers and not out.dropped:
        raise RuntimeError(f"arXiv listing failed for every category: {out.errors}")
    out.papers.sort(key=lambda p: p.arxiv_id)
    return out


def _consider(result: arxiv.Result, cat: str, cfg: LiveConfig, seen: set[str], out: ListingResult) -> None:
    listed = to_listed(result, cat)
    if isinstance(listed, str):
        out.dropped.append(
            DropRecord(arxiv_id=result.get_short_id() or "?", stage="list", reason_code="bad_entry", reason=listed)
        )
        return
    if listed.base_id in seen:
        return
    seen.add(listed.base_id)
    drop = _drop_reason(listed, cfg)
    if drop is not None:
        out.dropped.append(DropRecord(arxiv_id=listed.arxiv_id, stage="list", reason_code=drop[0], reason=drop[1]))
    else:
        out.papers.append(listed)


def _drop_reason(p: ListedPaper, cfg: LiveConfig) -> tuple[str, str] | None:
    published = dt.datetime.fromisoformat(p.published).astimezone(dt.UTC).date()
    if not cfg.window.start <= published <= cfg.window.end:
        return "outside_window", f"published {published} is outside {cfg.window.start}..{cfg.window.end}"
    if cfg.v1_only and p.version != 1:
        return "not_v1", f"latest version is v{p.version} (updated {p.updated}); only unrevised v1 papers are kept"
    if cfg.venue_filter.enabled and venue_match(p.comment, cfg.venue_filter.patterns) is None:
        shown = (p.comment or "")[:120]
        return "venue_filter", f"comment does not say accepted/published at a venue: {shown!r}"
    return None


def listing_rows(papers: Iterable[ListedPaper]) -> list[dict[str, Any]]:
    return [p.model_dump() for p in papers]
