"""Title and abstract for every arXiv id a report cites or links (the `source_texts` step of the judge stage).

Why: a link-only citation such as `([arxiv.org](https://arxiv.org/abs/2108.02755))` gives the judges nothing
but an id, while the authors judged the cited paper's title and abstract. Order of trust:

1. the release corpus (the exemplars' references, frozen with the release);
2. the local cache of earlier arXiv answers (`ItemStore` namespace `arxiv_text`, each with its fetch date);
3. the arXiv API through the `arxiv` client, in batches of `batch_size` ids (`id_list`), with a timeout and
   the live builder's polite cached session (pacing, retries) -- only when `offline: false`.

Offline (the default) never touches the network: ids that neither the release nor the cache know stay
`missing`, and the judges see what the report itself gave (`evidence` title_only / id_only, per item).
An id arXiv does not know is cached as `not_found` (asking again would give the same answer).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from reportbench.protocols.deepscholar.items import weak_title
from reportbench.types import Report, strip_arxiv_version

log = logging.getLogger(__name__)

NAMESPACE = "arxiv_text"
SOURCE_TEXTS_SCHEMA: dict[str, Any] = {
    "arxiv_id": pl.String,
    "title": pl.String,
    "abstract": pl.String,
    "status": pl.String,  # release | cache | api | not_found | missing | error
    "fetched_at": pl.String,  # when arXiv answered (cache/api/not_found); null for release and missing
}


@dataclass
class SourceTextResult:
    """One row per requested id, and what the lookup cost."""

    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    n_requests: int = 0
    errors: list[str] = field(default_factory=list)

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(
            [self.rows[k] for k in sorted(self.rows)], schema=SOURCE_TEXTS_SCHEMA, orient="row"
        )

    def texts(self) -> dict[str, tuple[str | None, str | None]]:
        """id -> (title, abstract) for the ids that have text (what ReleaseContext.with_resolved takes)."""
        return {k: (r["title"], r["abstract"]) for k, r in self.rows.items() if r["abstract"] or r["title"]}


def ids_to_resolve(reports: Iterable[Report]) -> list[str]:
    """Distinct version-stripped arXiv ids cited or linked by the reports through at least one source that does
    not give both a real title and an abstract (a source that does is judged on the system's own text), sorted."""

    need: set[str] = set()
    for rep in reports:
        for src in rep.sources.values():
            if not src.arxiv_id:
                continue
            aid = strip_arxiv_version(src.arxiv_id)
            if weak_title(src.title) or not (src.abstract or "").strip():
                need.add(aid)
    return sorted(need)


def texts_from_frame(df: pl.DataFrame | None) -> dict[str, tuple[str | None, str | None]]:
    """The `source_texts` derived table -> id -> (title, abstract), rows from the API or its cache only
    (release rows are already in the release context)."""
    if df is None or df.height == 0:
        return {}
    out: dict[str, tuple[str | None, str | None]] = {}
    for r in df.iter_rows(named=True):
        if r["status"] in ("cache", "api") and (r["title"] or r["abstract"]):
            out[r["arxiv_id"]] = (r["title"], r["abstract"])
    return out


def _row(aid: str, title: str | None, abstract: str | None, status: str, fetched_at: str | None) -> dict[str, Any]:
    return {"arxiv_id": aid, "title": title, "abstract": abstract, "status": status, "fetched_at": fetched_at}


def resolve_source_texts(
    ids: Sequence[str],
    corpus: Mapping[str, tuple[str | None, str | None]],
    *,
    cache_dir: str | Path | None,
    offline: bool = True,
    batch_size: int = 50,
    timeout: float = 20.0,
    min_interval: float = 3.0,
    client: Any = None,
) -> SourceTextResult:
    """Resolve `ids` (release corpus -> cache -> arXiv API in batches). Never raises for a failed batch:
    its ids stay `error` (not cached, asked again next run) and the message is in `errors`.

    `client`: an `arxiv.Client` (tests pass one whose session serves recorded responses); by default one
    on the live builder's cached, paced session with `timeout`.
    """
    result = SourceTextResult()
    norm_corpus = {strip_arxiv_version(k): v for k, v in corpus.items()}
    todo: list[str] = []
    store = None
    if cache_dir is not None:
        from reportbench.http_cache import HttpCache  # lazy: +102 ms to import (python -X importtime)

        store = HttpCache(cache_dir)
    try:
        for raw in dict.fromkeys(strip_arxiv_version(i) for i in ids):
            title, abstract = norm_corpus.get(raw, (None, None))
            if abstract and abstract.strip():
                result.rows[raw] = _row(raw, title, abstract, "release", None)
                continue
            hit = store.item_get(NAMESPACE, raw) if store is not None else None
            if hit is not None:
                value, fetched_at = hit
                status = "cache" if value.get("found") else "not_found"
                result.rows[raw] = _row(raw, value.get("title"), value.get("abstract"), status, fetched_at)
                continue
            todo.append(raw)
        if todo and not offline:
            _fetch(todo, result, store, batch_size, timeout, min_interval, client, cache_dir)
        for raw in todo:
            result.rows.setdefault(raw, _row(raw, None, None, "missing", None))
    finally:
        if store is not None:
            store.close()
    return result


def _fetch(
    todo: list[str],
    result: SourceTextResult,
    store: Any,
    batch_size: int,
    timeout: float,
    min_interval: float,
    client: Any,
    cache_dir: str | Path | None,
) -> None:
    import arxiv
    import requests

    from reportbench.http_cache import now_iso  # lazy: +102 ms to import (python -X importtime)
    from reportbench.net import redact_url  # lazy: +53 ms to import (python -X importtime)

    if client is None:
        # lazy: +102 ms to import (python -X importtime)
        from reportbench.http_cache import make_arxiv_client, make_cached_session

        session = make_cached_session(
            None if cache_dir is None else Path(cache_dir) / "http",
            timeout=timeout,
            min_interval={"export.arxiv.org": min_interval},
        )
        client = make_arxiv_client(session, page_size=batch_size)
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        search = arxiv.Search(id_list=batch, max_results=len(batch))
        try:
            found = {strip_arxiv_version(r.get_short_id()): r for r in client.results(search)}
        except (arxiv.ArxivError, requests.RequestException, ValueError) as exc:
            msg = redact_url(f"{type(exc).__name__}: {exc}")
            log.warning("arXiv batch of %d ids failed: %s", len(batch), msg)
            result.errors.append(msg)
            for aid in batch:
                result.rows[aid] = _row(aid, None, None, "error", None)
            continue
        finally:
            result.n_requests += 1
        when = now_iso()
        for aid in batch:
            r = found.get(aid)
            if r is None:
                value: dict[str, Any] = {"found": False}
                result.rows[aid] = _row(aid, None, None, "not_found", when)
            else:
                title = " ".join((r.title or "").split()) or None
                abstract = (r.summary or "").strip() or None
                value = {"found": True, "title": title, "abstract": abstract}
                result.rows[aid] = _row(aid, title, abstract, "api", when)
            if store is not None:
                store.item_put(NAMESPACE, aid, value, when)
