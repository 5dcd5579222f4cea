"""Citation counts for Document Importance: a persistent cache in front of OpenAlex.

Why: counts drift daily and OpenAlex now needs an API key with a credit budget, so a benchmark run must be
replayable from stored counts. Order of precedence for each arXiv id:

1. the release's seed table (frozen counts shipped with a release; reproducible);
2. the local cache (`CitationCountStore`, sqlite; every row says when and how it was fetched);
3. only when `offline=False`: OpenAlex through pyalex, batched DOI filter `10.48550/arXiv.<id>` (<= 50 ids
   per request), then a title search accepted only above a rapidfuzz threshold.

An id with no count is reported as missing (`None`), never 0. Negative answers ("OpenAlex has no such
work") are cached too, so a rerun makes zero requests; transport errors are not cached.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import requests
from rapidfuzz import fuzz

from reportbench.net import PoliteSession, make_session, redact_url
from reportbench.types import strip_arxiv_version

log = logging.getLogger(__name__)

ARXIV_DOI_PREFIX = "10.48550/arXiv."
OPENALEX_SELECT = ["id", "doi", "display_name", "cited_by_count", "ids"]

Status = Literal["found", "not_found", "seed", "missing", "error"]
Via = Literal["seed", "cache", "doi", "title", "none"]


def normalise_title(title: str | None) -> str:
    """Lowercase, punctuation to spaces, whitespace collapsed: the key and the fuzzy-match form."""
    if not title:
        return ""
    return " ".join(re.sub(r"[^\w\s]", " ", title.lower()).split())


def arxiv_key(arxiv_id: str) -> str:
    return "arxiv:" + strip_arxiv_version(arxiv_id).lower()


def doi_key(doi: str) -> str:
    d = doi.strip().lower()
    for prefix in ("https://doi.org/", "http://doi.org/", "doi:"):
        if d.startswith(prefix):
            d = d[len(prefix) :]
    return "doi:" + d


def title_key(title: str) -> str:
    return "title:" + normalise_title(title)


def _now_iso() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


@dataclass(frozen=True)
class CountRecord:
    """One stored answer. `cited_by_count` is None unless `status` is 'found' or 'seed'."""

    key: str
    cited_by_count: int | None
    status: Status
    via: Via = "none"
    openalex_id: str | None = None
    fetched_at: str | None = None
    matched_title: str | None = None
    match_score: float | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS counts (
    key TEXT PRIMARY KEY,
    cited_by_count INTEGER,
    status TEXT NOT NULL,
    via TEXT NOT NULL,
    openalex_id TEXT,
    fetched_at TEXT,
    matched_title TEXT,
    match_score REAL
)
"""


class CitationCountStore:
    """sqlite cache: `arxiv:<id>` / `doi:<doi>` / `title:<normalised title>` -> CountRecord."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path)
        self._db.execute(_SCHEMA)
        self._db.commit()

    def get(self, key: str) -> CountRecord | None:
        row = self._db.execute(
            "SELECT key, cited_by_count, status, via, openalex_id, fetched_at, matched_title, match_score "
            "FROM counts WHERE key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        return CountRecord(
            key=row[0],
            cited_by_count=row[1],
            status=row[2],
            via=row[3],
            openalex_id=row[4],
            fetched_at=row[5],
            matched_title=row[6],
            match_score=row[7],
        )

    def put(self, rec: CountRecord) -> None:
        """Insert or replace. Errors are never stored (the next online run should retry them)."""
        if rec.status in ("error", "missing", "seed"):
            raise ValueError(f"refusing to cache a {rec.status!r} record for {rec.key}")
        self._db.execute(
            "INSERT OR REPLACE INTO counts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rec.key,
                rec.cited_by_count,
                rec.status,
                rec.via,
                rec.openalex_id,
                rec.fetched_at,
                rec.matched_title,
                rec.match_score,
            ),
        )
        self._db.commit()

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM counts").fetchone()[0])

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> CitationCountStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load_seed_counts(path: str | Path) -> dict[str, int | None]:
    """Read a release's frozen counts (parquet or CSV with `arxiv_id` and `cited_by_count`)."""
    import polars as pl

    p = Path(path)
    df = pl.read_parquet(p, glob=False) if p.suffix == ".parquet" else pl.read_csv(p)
    count_col = next((c for c in ("cited_by_count", "citation_count", "count") if c in df.columns), None)
    if "arxiv_id" not in df.columns or count_col is None:
        raise ValueError(f"{p}: expected columns arxiv_id and cited_by_count, got {df.columns}")
    out: dict[str, int | None] = {}
    for aid, n in zip(df["arxiv_id"].to_list(), df[count_col].to_list(), strict=True):
        if aid:
            out[strip_arxiv_version(str(aid))] = None if n is None else int(n)
    return out


def seed_from_release(release: Any) -> dict[str, int | None]:
    """A release's frozen counts (`Release.citation_counts`, arXiv rows only) as a `lookup_counts` seed."""
    return {strip_arxiv_version(c.arxiv_id): c.cited_by_count for c in release.citation_counts if c.arxiv_id}


@dataclass
class LookupResult:
    """Counts per requested id (None = missing), how each was obtained, and the traffic it cost."""

    counts: dict[str, int | None] = field(default_factory=dict)
    records: dict[str, CountRecord] = field(default_factory=dict)
    n_requests: int = 0
    offline: bool = True

    @property
    def missing(self) -> list[str]:
        return [k for k, v in self.counts.items() if v is None]

    def summary(self) -> dict[str, Any]:
        """Small JSON-able report for a stage's log / metrics file."""
        by_via: dict[str, int] = {}
        by_status: dict[str, int] = {}
        for r in self.records.values():
            by_via[r.via] = by_via.get(r.via, 0) + 1
            by_status[r.status] = by_status.get(r.status, 0) + 1
        return {
            "n_ids": len(self.counts),
            "n_with_count": sum(v is not None for v in self.counts.values()),
            "n_missing": len(self.missing),
            "by_via": by_via,
            "by_status": by_status,
            "n_requests": self.n_requests,
            "offline": self.offline,
        }


@contextlib.contextmanager
def pyalex_session(session: requests.Session, *, mailto: str | None, api_key: str | None) -> Iterator[None]:
    """Route pyalex through `session` and set its identity, restoring pyalex's globals afterwards.

    pyalex builds a fresh retry-less, timeout-less Session in `pyalex.api._get_requests_session`; it is
    the documented seam. Its auth hook overwrites User-Agent, so we also set `config.user_agent`.
    """
    import pyalex
    import pyalex.api

    saved_factory = pyalex.api._get_requests_session
    saved_cfg = {k: pyalex.config[k] for k in ("email", "api_key", "user_agent")}
    pyalex.api._get_requests_session = lambda: session
    pyalex.config.email = mailto
    pyalex.config.api_key = api_key
    pyalex.config.user_agent = session.headers.get("User-Agent", saved_cfg["user_agent"])
    try:
        yield
    finally:
        pyalex.api._get_requests_session = saved_factory
        for k, v in saved_cfg.items():
            pyalex.config[k] = v


def _arxiv_id_from_doi(doi: str | None) -> str | None:
    if not doi:
        return None
    d = doi_key(doi)[len("doi:") :]
    prefix = ARXIV_DOI_PREFIX.lower()
    return strip_arxiv_version(d[len(prefix) :]) if d.startswith(prefix) else None


def _is_stale(rec: CountRecord, max_age_days: float | None) -> bool:
    if max_age_days is None or not rec.fetched_at:
        return False
    try:
        fetched = dt.datetime.fromisoformat(rec.fetched_at)
    except ValueError:
        return True
    return (dt.datetime.now(dt.UTC) - fetched).total_seconds() > max_age_days * 86400


def lookup_counts(
    ids: Iterable[str],
    titles: Mapping[str, str | None] | None = None,
    *,
    store: CitationCountStore,
    offline: bool = True,
    seed: Mapping[str, int | None] | None = None,
    mailto: str | None = None,
    mailto_env: str = "OPENALEX_MAILTO",
    api_key_env: str = "OPENALEX_API_KEY",
    batch_size: int = 50,
    title_search: bool = True,
    title_threshold: float = 90.0,
    refetch_not_found: bool = False,
    max_age_days: float | None = None,
    session: PoliteSession | requests.Session | None = None,
) -> LookupResult:
    """Citation counts for arXiv `ids` (any version suffix; results keyed version-stripped).

    `titles` (id -> title) enables the title-search fallback. `offline=True` reads only `seed` and
    the cache and makes no request at all. `mailto`/`api_key` come from the arguments or the env vars
    named by `mailto_env` / `api_key_env`; the key is sent as pyalex's Authorization header and never logged.
    """
    if not 1 <= batch_size <= 100:
        raise ValueError("batch_size must be in 1..100 (OpenAlex OR-filter limit)")
    titles = {strip_arxiv_version(k): v for k, v in (titles or {}).items()}
    seed = {strip_arxiv_version(k): v for k, v in (seed or {}).items()}
    wanted = list(dict.fromkeys(strip_arxiv_version(i) for i in ids if i and i.strip()))
    result = LookupResult(offline=offline)

    todo: list[str] = []
    for aid in wanted:
        if seed.get(aid) is not None:
            _set_answer(result, aid, CountRecord(arxiv_key(aid), int(seed[aid]), "seed", "seed"))  # type: ignore[arg-type]
            continue
        rec = store.get(arxiv_key(aid))
        usable = rec is not None and not (offline is False and _is_stale(rec, max_age_days))
        if (
            rec is not None
            and usable
            and not (rec.status == "not_found" and refetch_not_found and not offline)
        ):
            result.counts[aid] = rec.cited_by_count if rec.status == "found" else None
            result.records[aid] = replace(rec, via="cache") if rec.status == "found" else rec
            continue
        if offline:
            _set_answer(result, aid, CountRecord(arxiv_key(aid), None, "missing", "none"))
            continue
        todo.append(aid)

    if not todo:
        return result

    mailto = mailto or (os.environ.get(mailto_env) or None)
    api_key = os.environ.get(api_key_env) or None
    if api_key is None:
        log.warning("no OpenAlex API key in $%s; OpenAlex allows very few keyless requests", api_key_env)
    own_session = session is None
    sess = session if session is not None else make_session(mailto=mailto)
    start_requests = getattr(sess, "n_requests", 0)
    n_calls = 0
    try:
        with pyalex_session(sess, mailto=mailto, api_key=api_key):
            unresolved, n = _fetch_by_doi(todo, store, result, batch_size)
            n_calls += n
            for aid in unresolved:
                title = titles.get(aid)
                if title_search and title and normalise_title(title):
                    n_calls += _fetch_by_title(aid, title, store, result, title_threshold)
                elif aid not in result.records:
                    rec = CountRecord(arxiv_key(aid), None, "not_found", "doi", fetched_at=_now_iso())
                    store.put(rec)
                    _set_answer(result, aid, rec)
    finally:
        if own_session:
            sess.close()
    result.n_requests = getattr(sess, "n_requests", start_requests + n_calls) - start_requests
    return result


def _set_answer(result: LookupResult, aid: str, rec: CountRecord) -> None:
    """`rec` is the answer for `aid`: its count (None unless found or seed) and the record itself."""
    result.counts[aid] = rec.cited_by_count
    result.records[aid] = rec


def _error_record(aid: str, exc: BaseException) -> CountRecord:
    msg = redact_url(f"{type(exc).__name__}: {exc}")
    return CountRecord(arxiv_key(aid), None, "error", "none", fetched_at=_now_iso(), error=msg)


def _found_record(aid: str, work: dict[str, Any], via: Via, fetched_at: str, match_score: float) -> CountRecord:
    """A 'found' answer for `aid` taken from one OpenAlex work."""
    return CountRecord(
        key=arxiv_key(aid),
        cited_by_count=int(work["cited_by_count"]),
        status="found",
        via=via,
        openalex_id=work.get("id"),
        fetched_at=fetched_at,
        matched_title=work.get("display_name"),
        match_score=match_score,
    )


def _fetch_by_doi(
    todo: list[str], store: CitationCountStore, result: LookupResult, batch_size: int
) -> tuple[list[str], int]:
    """Batched `filter=doi:a|b|...`; returns the ids OpenAlex did not know (or errored) and #calls."""
    from pyalex import Works

    unresolved: list[str] = []
    n_calls = 0
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        dois = [ARXIV_DOI_PREFIX + aid for aid in batch]
        n_calls += 1
        try:
            works = Works().filter_or(doi=dois).select(OPENALEX_SELECT).get(per_page=len(batch))
        except Exception as exc:  # noqa: BLE001 - pyalex raises HTTPError/QueryError/ValueError
            log.warning("OpenAlex DOI batch failed: %s", redact_url(str(exc)))
            for aid in batch:
                _set_answer(result, aid, _error_record(aid, exc))
            continue
        by_id: dict[str, dict[str, Any]] = {}
        for w in works:
            aid = _arxiv_id_from_doi(w.get("doi")) or _arxiv_id_from_doi((w.get("ids") or {}).get("doi"))
            if aid is not None:
                by_id.setdefault(aid.lower(), w)
        fetched_at = _now_iso()
        for aid in batch:
            w = by_id.get(aid.lower())
            if w is None or w.get("cited_by_count") is None:
                unresolved.append(aid)
                continue
            rec = _found_record(aid, w, "doi", fetched_at, 100.0)
            store.put(rec)
            _set_answer(result, aid, rec)
    return [a for a in unresolved if a not in result.records], n_calls


def _fetch_by_title(
    aid: str, title: str, store: CitationCountStore, result: LookupResult, threshold: float
) -> int:
    """Title search fallback: the best hit counts only if fuzz.ratio of normalised titles >= threshold."""
    from pyalex import Works

    query = normalise_title(title)
    try:
        works = Works().search_filter(title=query).select(OPENALEX_SELECT).get(per_page=5)
    except Exception as exc:  # noqa: BLE001
        log.warning("OpenAlex title search failed: %s", redact_url(str(exc)))
        _set_answer(result, aid, _error_record(aid, exc))
        return 1
    best: tuple[float, dict[str, Any]] | None = None
    for w in works:
        score = float(fuzz.ratio(query, normalise_title(w.get("display_name"))))
        if best is None or score > best[0]:
            best = (score, w)
    fetched_at = _now_iso()
    if best is not None and best[0] >= threshold and best[1].get("cited_by_count") is not None:
        score, w = best
        rec = _found_record(aid, w, "title", fetched_at, score)
        store.put(rec)
        store.put(replace(rec, key=title_key(title)))
    else:
        rec = CountRecord(
            key=arxiv_key(aid),
            cited_by_count=None,
            status="not_found",
            via="title",
            fetched_at=fetched_at,
            matched_title=None if best is None else best[1].get("display_name"),
            match_score=None if best is None else best[0],
        )
        store.put(rec)
    _set_answer(result, aid, rec)
    return 1
