"""Search backends for the producing systems: BM25 over the release's reference pool, and arXiv through the
`arxiv` package. Both return `Doc`s; the caller applies the publication cut-off (`common.usable_docs`).

Why these choices:
- BM25 (rank-bm25) over title + abstract is the classic lexical baseline: no model, no network, fully
  deterministic (ties broken by doc id), so the offline baseline is reproducible byte for byte.
- arXiv: the `arxiv` client has no timeout and paces with its own sleep; we hand it our `PoliteSession`
  (timeout, urllib3 retries with backoff, per-host pacing of 3 s for arxiv.org) and turn its own delay and
  retries off, so there is exactly one pacing and one retry layer. The date range also goes into the query
  (`submittedDate:[... TO cutoff]`, as LOTUS does), but results are filtered again client-side because the
  API's submittedDate and a result's `published` can disagree, and a recorded or proxied feed may not
  honour the range at all.
- Search answers are cached in sqlite (`.reportbench/cache/search.sqlite`, outside DVC outputs) keyed by
  endpoint + query + k, so reruns are stable and do not hit arXiv again.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from reportbench.judges.lexical import ENGLISH_STOP_WORDS, SCHOLARLY_STOP_WORDS
from reportbench.systems.common import Doc
from reportbench.types import strip_arxiv_version

ARXIV_API = "https://export.arxiv.org/api/query"
SEARCH_CACHE_VERSION = "search-cache-v1"
_WORD_RE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_QUERY_UNSAFE_RE = re.compile(r"[^\w\s\-.]+", re.UNICODE)
STOP_WORDS: frozenset[str] = ENGLISH_STOP_WORDS | SCHOLARLY_STOP_WORDS


class SearchFailed(RuntimeError):
    """One search could not be answered (HTTP error after retries, timeout, malformed feed)."""


# ------------------------------------------------------------------------------------------------ terms


def _light_stem(word: str) -> str:
    """Plural folding only ('pools' -> 'pool'); enough for BM25 on abstracts, and easy to explain."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """Lower-cased content words (stop words and scholarly boilerplate removed), plural-folded, in order."""
    out: list[str] = []
    for word in _WORD_RE.findall((text or "").lower()):
        if len(word) < 3 or word in STOP_WORDS:
            continue
        out.append(_light_stem(word))
    return out


def doc_terms(doc: Doc) -> list[str]:
    """Index text of a document: the title counts twice (titles name the topic), then the abstract."""
    title = terms(doc.title)
    return [*title, *title, *terms(doc.abstract)]


# ------------------------------------------------------------------------------------------------- BM25


class PoolTerms:
    """Index terms of a document pool, computed once per pool and shared by every task of a stage.

    Why: tokenising is the offline baseline's main cost (regex + stop words + stemming per word), and the
    pool is the same for every task; only which documents a task may see (its cut-off) changes. Keyed by the
    (frozen, hashable) `Doc`, so a per-task subset of the pool looks its terms up instead of re-tokenising.
    """

    def __init__(self, docs: Iterable[Doc]) -> None:
        self._terms: dict[Doc, list[str]] = {}
        self._sets: dict[Doc, frozenset[str]] = {}
        for d in docs:
            if d not in self._terms:
                t = doc_terms(d)
                self._terms[d] = t
                self._sets[d] = frozenset(t)

    def __len__(self) -> int:
        return len(self._terms)

    def terms(self, doc: Doc) -> list[str]:
        """`doc_terms(doc)` from the cache (tokenised on first sight if the doc was not in the pool)."""
        t = self._terms.get(doc)
        if t is None:
            t = self._terms[doc] = doc_terms(doc)
            self._sets[doc] = frozenset(t)
        return t

    def term_set(self, doc: Doc) -> frozenset[str]:
        if doc not in self._sets:
            self.terms(doc)
        return self._sets[doc]


class BM25Index:
    """BM25 (Okapi) over a fixed list of documents; deterministic ranking (score desc, then doc id).

    Pass `pool_terms` to reuse a pool's tokenisation: the index over a per-task subset then costs only the
    BM25 statistics of that subset (the scores are the same as tokenising afresh, by construction)."""

    def __init__(
        self, docs: Iterable[Doc], *, k1: float = 1.5, b: float = 0.75, pool_terms: PoolTerms | None = None
    ) -> None:
        self.docs = list(docs)
        if pool_terms is None:
            tokenized = [doc_terms(d) or ["\u2205"] for d in self.docs]
            self._term_sets: list[set[str] | frozenset[str]] = [set(t) for t in tokenized]
        else:
            tokenized = [pool_terms.terms(d) or ["\u2205"] for d in self.docs]
            self._term_sets = [pool_terms.term_set(d) or frozenset(("\u2205",)) for d in self.docs]
        self._bm25: Any = None
        if self.docs:
            from rank_bm25 import BM25Okapi

            self._bm25 = BM25Okapi(tokenized, k1=k1, b=b)

    def scores(self, query_terms: list[str]) -> list[float]:
        if self._bm25 is None or not query_terms:
            return [0.0] * len(self.docs)
        return [float(s) for s in self._bm25.get_scores(query_terms)]

    def search(self, query_terms: list[str], k: int) -> list[tuple[Doc, float]]:
        """Top-k documents that share at least one query term, by BM25 score (Okapi idf can go negative
        for terms in over half of a small pool, so matching is decided by the terms, not the sign)."""
        wanted = set(query_terms)
        scored = [
            (d, round(s, 6))
            for d, s, doc_set in zip(self.docs, self.scores(query_terms), self._term_sets, strict=True)
            if doc_set & wanted
        ]
        scored.sort(key=lambda pair: (-pair[1], pair[0].doc_id))
        return scored[: max(0, k)]


# ------------------------------------------------------------------------------------------------ cache


class SearchCache:
    """sqlite map (endpoint, query, k) -> list of Doc dicts. Only non-empty answers are stored."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA busy_timeout=30000")
        self._conn.execute("CREATE TABLE IF NOT EXISTS searches (key TEXT PRIMARY KEY, docs TEXT NOT NULL)")
        self.hits = 0

    @staticmethod
    def key(endpoint: str, query: str, k: int) -> str:
        blob = json.dumps([SEARCH_CACHE_VERSION, endpoint, query, k], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def get(self, key: str) -> list[Doc] | None:
        with self._lock:
            row = self._conn.execute("SELECT docs FROM searches WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        self.hits += 1
        return [Doc(**d) for d in json.loads(row[0])]

    def put(self, key: str, docs: list[Doc]) -> None:
        if not docs:
            return
        from dataclasses import asdict

        blob = json.dumps([asdict(d) for d in docs], ensure_ascii=False, sort_keys=True)
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO searches (key, docs) VALUES (?, ?)", (key, blob))

    def close(self) -> None:
        with self._lock:
            self._conn.close()


# ------------------------------------------------------------------------------------------------ arXiv


def clean_query(query: str, max_chars: int = 300) -> str:
    """Keep words only: quotes, brackets and field prefixes in a generated query would change its meaning
    under the arXiv query syntax (the paper's Box 4 asks for simple keyword queries anyway)."""
    text = _QUERY_UNSAFE_RE.sub(" ", query or "")
    return " ".join(text.split())[:max_chars].strip()


def arxiv_query(query: str, cutoff: datetime | None) -> str:
    """`(<words>) AND submittedDate:[000001010000 TO <cutoff>]` (the range is inclusive; results are
    filtered again client-side with a strict comparison)."""
    q = clean_query(query)
    if cutoff is None:
        return q
    return f"({q}) AND submittedDate:[000001010000 TO {cutoff.strftime('%Y%m%d%H%M')}]"


class ArxivSearch:
    """arXiv API search through the `arxiv` package with our polite session and a result cache."""

    def __init__(
        self,
        *,
        url: str = ARXIV_API,
        timeout_s: float = 30.0,
        retries: int = 3,
        date_filter_in_query: bool = True,
        cache_path: str | None = None,
        session: Any = None,
    ) -> None:
        from reportbench.net import make_session  # lazy: +38 ms to import (python -X importtime)

        self.url = url
        self.date_filter_in_query = date_filter_in_query
        self.session = session if session is not None else make_session(timeout=timeout_s, retries=retries)
        self.cache = SearchCache(cache_path) if cache_path else None
        self.requests = 0

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> ArxivSearch:
        return cls(
            url=str(cfg.get("arxiv_url") or ARXIV_API),
            timeout_s=float(cfg.get("timeout_s", 30.0)),
            retries=int(cfg.get("retries", 3)),
            date_filter_in_query=bool(cfg.get("date_filter_in_query", True)),
            cache_path=cfg.get("cache_path"),
        )

    def search(self, query: str, k: int, cutoff: datetime | None) -> list[Doc]:
        """Up to k results in arXiv's relevance order. Raises SearchFailed; never returns a partial page."""
        import arxiv
        import requests

        if not clean_query(query):
            return []
        q = arxiv_query(query, cutoff if self.date_filter_in_query else None)
        key = SearchCache.key(self.url, q, k)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return hit
        client = arxiv.Client(page_size=max(1, min(k, 2000)), delay_seconds=0.0, num_retries=0)
        client._session = self.session  # our timeout, retries and per-host pacing (stack.md §4)
        client.query_url_format = self.url + "?{}"
        search = arxiv.Search(query=q, max_results=k, sort_by=arxiv.SortCriterion.Relevance)
        docs: list[Doc] = []
        try:
            self.requests += 1
            for result in client.results(search):
                aid = strip_arxiv_version(result.get_short_id())
                docs.append(
                    Doc(
                        doc_id=f"arxiv:{aid}",
                        title=" ".join(result.title.split()),
                        abstract=" ".join((result.summary or "").split()),
                        arxiv_id=aid,
                        published=result.published.isoformat() if result.published else None,
                        url=f"https://arxiv.org/abs/{aid}",
                        authors=", ".join(a.name for a in result.authors) or None,
                        origin="arxiv",
                    )
                )
        except (arxiv.ArxivError, requests.RequestException) as exc:
            raise SearchFailed(f"arXiv search {query!r}: {type(exc).__name__}: {exc}"[:500]) from None
        except Exception as exc:  # noqa: BLE001 - a malformed feed must not kill the whole run
            raise SearchFailed(f"arXiv search {query!r}: {type(exc).__name__}: {exc}"[:500]) from None
        if self.cache is not None:
            self.cache.put(key, docs)
        return docs

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
