"""Stage 4 of the live builder: identify every cited reference (arXiv id, DOI, OpenAlex work) and its citations.

The authors' recovery made 2-5 unpaced requests per reference, one reference at a time, and trusted the top
web hit (§1.6-1.7). Here identifiers come first and everything is batched:

1. bib entry: arXiv id from eprint/url/doi/journal fields, DOI from doi/url (method `bib_arxiv` / `bib_doi`);
2. OpenAlex `filter=doi:a|b|...` (<= 50 per request) for the arXiv DataCite DOIs `10.48550/arXiv.<id>` and the
   publisher DOIs; a DOI work that lists an arxiv.org location gives the arXiv id (`openalex_doi`);
3. arXiv title search for the references still without an arXiv id, several titles per request
   (`ti:"a" OR ti:"b"`), accepted only when rapidfuzz ratio(normalised titles) >= `title_threshold`
   (`arxiv_title`);
4. OpenAlex DOI batch for the arXiv ids found in 3 (their citation counts);
5. arXiv `id_list` (<= 100 per request) for every arXiv id, for title/abstract/authors/date and to verify ids
   from bib entries (an id arXiv does not know is dropped, with a note);
6. OpenAlex title search (boolean OR of quoted titles) for references with no OpenAlex work yet, same
   threshold (`openalex_title`); arXiv ids it reveals go through 5 again.

Every answer is stored per identifier in the item store (with its fetch date) and every HTTP response in
the HTTP cache, so a rebuild makes zero requests and a new month only asks about references never seen.
A failed batch of OpenAlex/arXiv ids is split in halves when the server rejected it (HTTP 400: one bad
DOI must not sink 49 good ones); transport failures are recorded per reference, and after three failed
batches in a row a service is skipped for the rest of the stage (recorded, never silent).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import arxiv
import requests
from pydantic import BaseModel, ConfigDict, Field
from rapidfuzz import fuzz

from reportbench.citations import ARXIV_DOI_PREFIX, normalise_title, pyalex_session
from reportbench.live_builder.arxiv_listing import make_arxiv_client
from reportbench.live_builder.filter import KeptPaper
from reportbench.live_builder.http_cache import HttpCache
from reportbench.live_builder.latex import BibEntry
from reportbench.live_builder.live_config import RecoverParams
from reportbench.net import redact_url
from reportbench.types import strip_arxiv_version

log = logging.getLogger(__name__)

ARXIV_ID_RE = re.compile(r"^(\d{4}\.\d{4,5}|[a-z][a-z\-]*(\.[A-Z]{2})?/\d{7})$")
_ARXIV_URL_RE = re.compile(
    r"arxiv\.org/(?:abs|pdf)/(\d{4}\.\d{4,5}|[a-z][a-z\-]*(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?", re.IGNORECASE
)
OPENALEX_SELECT = [
    "id",
    "doi",
    "display_name",
    "cited_by_count",
    "publication_date",
    "abstract_inverted_index",
    "locations",
]
MAX_CANDIDATES = 5
MAX_QUERY_CHARS = 2500  # OpenAlex rejects URLs over ~4 KB; arXiv GETs stay well under it too
FAILURES_BEFORE_SKIP = 3
MIN_CANDIDATE_SCORE = 50.0

Method = Literal["bib_arxiv", "bib_doi", "openalex_doi", "arxiv_title", "openalex_title", "none"]


# ------------------------------------------------------------------------------------------------ records


class RecoveredRef(BaseModel):
    """One exemplar reference after recovery: what the bib said, what was found, how, and how sure."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    ref_key: str
    position: int
    bib_title: str | None = None
    bib_authors: list[str] = Field(default_factory=list)
    bib_year: int | None = None
    bib_venue: str | None = None
    bib_doi: str | None = None
    bib_url: str | None = None
    bib_arxiv_id: str | None = None
    method: Method = Field("none", description="how the reference was identified (derived at the end)")
    match_score: float | None = Field(None, description="100 for identifier matches; rapidfuzz ratio for titles")
    arxiv_id: str | None = None
    arxiv_via: Literal["bib_arxiv", "openalex_doi", "arxiv_title", "openalex_title"] | None = None
    arxiv_score: float | None = None
    arxiv_verified: bool | None = Field(None, description="arXiv id_list returned it; None = not checked")
    arxiv_title: str | None = None
    arxiv_abstract: str | None = None
    arxiv_authors: list[str] = Field(default_factory=list)
    arxiv_published: str | None = None
    arxiv_categories: list[str] = Field(default_factory=list)
    doi: str | None = Field(None, description="non-arXiv DOI (bib, or the OpenAlex work's)")
    openalex_id: str | None = None
    openalex_title: str | None = None
    openalex_via: Literal["arxiv_doi", "doi", "title"] | None = None
    openalex_score: float | None = None
    openalex_abstract: str | None = None
    openalex_publication_date: str | None = None
    cited_by_count: int | None = None
    count_fetched_at: str | None = None
    title_candidate: str | None = Field(None, description="best rejected title match (audit)")
    title_candidate_score: float | None = None
    notes: list[str] = Field(default_factory=list)

    @property
    def title(self) -> str | None:
        return self.arxiv_title or self.bib_title or self.openalex_title

    @property
    def abstract(self) -> str | None:
        return self.arxiv_abstract or self.openalex_abstract


@dataclass
class LookupOutcome:
    """Per key: the answer (None = looked up, not found) or an error message; plus the requests used."""

    found: dict[str, Any] = field(default_factory=dict)
    fetched_at: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    n_calls: int = 0


# ---------------------------------------------------------------------------------------------- helpers


def norm_doi(doi: str | None) -> str | None:
    if not doi:
        return None
    d = doi.strip().lower()
    for prefix in ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/", "doi:"):
        if d.startswith(prefix):
            d = d[len(prefix) :]
    return d if d.startswith("10.") and "/" in d and len(d) < 300 else None


def arxiv_doi(arxiv_id: str) -> str:
    return (ARXIV_DOI_PREFIX + strip_arxiv_version(arxiv_id)).lower()


def arxiv_id_from_doi(doi: str | None) -> str | None:
    d = norm_doi(doi)
    prefix = ARXIV_DOI_PREFIX.lower()
    if d and d.startswith(prefix):
        cand = d[len(prefix) :]
        return cand if ARXIV_ID_RE.match(cand) else None
    return None


def valid_arxiv_id(value: str | None) -> str | None:
    if not value:
        return None
    v = strip_arxiv_version(value.strip())
    return v if ARXIV_ID_RE.match(v) else None


def title_score(a: str, b: str | None) -> float:
    """rapidfuzz ratio of normalised titles (0..100): the one acceptance test for title matches."""
    na, nb = normalise_title(a), normalise_title(b)
    if not na or not nb:
        return 0.0
    return round(float(fuzz.ratio(na, nb)), 2)


def _error_text(exc: BaseException) -> str:
    return redact_url(f"{type(exc).__name__}: {exc}")[:500]


def _is_rejected_query(exc: BaseException) -> bool:
    """The server refused the query itself (HTTP 400): splitting the batch can isolate the bad value."""
    status = getattr(getattr(exc, "response", None), "status_code", None) or getattr(exc, "status", None)
    return status == 400 or type(exc).__name__ == "QueryError"


class _Breaker:
    """Stop calling a service after FAILURES_BEFORE_SKIP consecutive failed batches (it is down or refusing us)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.consecutive = 0

    @property
    def open(self) -> bool:
        return self.consecutive >= FAILURES_BEFORE_SKIP

    def ok(self) -> None:
        self.consecutive = 0

    def failed(self) -> None:
        self.consecutive += 1
        if self.open:
            log.error(
                "%s: %d failed batches in a row; skipping it for the rest of this stage", self.name, self.consecutive
            )


def _run_batches(
    keys: Sequence[str],
    size: int,
    fetch: Callable[[list[str]], dict[str, Any]],
    out: LookupOutcome,
    breaker: _Breaker,
) -> None:
    """fetch(batch) -> {key: answer or None} for every key of the batch; failures land in out.errors."""

    def run(batch: list[str]) -> None:
        if breaker.open:
            for k in batch:
                out.errors[k] = f"skipped: {breaker.name} failed {FAILURES_BEFORE_SKIP} batches in a row"
            return
        out.n_calls += 1
        try:
            answers = fetch(batch)
        except Exception as exc:  # noqa: BLE001 - arxiv/pyalex/requests raise many types; all are recorded
            if len(batch) > 1 and _is_rejected_query(exc):
                mid = len(batch) // 2
                run(batch[:mid])
                run(batch[mid:])
                return
            breaker.failed()
            msg = _error_text(exc)
            log.warning("%s batch of %d failed: %s", breaker.name, len(batch), msg)
            for k in batch:
                out.errors[k] = msg
            return
        breaker.ok()
        out.found.update(answers)

    for start in range(0, len(keys), size):
        run(list(keys[start : start + size]))


def title_batches(
    titles: Sequence[str], size: int, min_words: int, max_chars: int = MAX_QUERY_CHARS
) -> list[list[str]]:
    """Group normalised titles for OR queries; short (generic) titles go alone so they cannot crowd others out."""
    batches: list[list[str]] = []
    cur: list[str] = []
    cur_len = 0
    for t in titles:
        if len(t.split()) < min_words:
            batches.append([t])
            continue
        cost = len(t) + 12
        if cur and (len(cur) >= size or cur_len + cost > max_chars):
            batches.append(cur)
            cur, cur_len = [], 0
        cur.append(t[:max_chars])
        cur_len += cost
    if cur:
        batches.append(cur)
    return batches


def _top_candidates(title: str, pool: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    scored = [{**c, "score": title_score(title, c.get("title"))} for c in pool]
    scored.sort(key=lambda c: (-c["score"], str(c.get("id"))))
    return scored[:MAX_CANDIDATES]


# ------------------------------------------------------------------------------------------------- arXiv


def arxiv_meta(result: arxiv.Result) -> dict[str, Any] | None:
    """The fields recovery keeps from an arXiv entry (JSON-able, for the item store)."""
    short = result.get_short_id() or ""
    base = valid_arxiv_id(short)
    if base is None:
        return None
    return {
        "id": base,
        "versioned": short,
        "title": " ".join((result.title or "").split()),
        "abstract": (result.summary or "").strip(),
        "authors": [a.name for a in result.authors if a.name],
        "published": result.published.isoformat(),
        "categories": list(result.categories),
        "doi": result.doi or None,
    }


class _ItemLookup:
    """Batched lookups of one service behind the item store: stored answers first, the rest asked in batches."""

    SERVICE = ""

    def __init__(self, session: requests.Session, cache: HttpCache, params: RecoverParams) -> None:
        self.session = session
        self.cache = cache
        self.params = params
        self.breaker = _Breaker(self.SERVICE)

    def _stored(self, ns: str, keys: Iterable[str], out: LookupOutcome, *, not_found_marker: bool) -> list[str]:
        """Put the item store's answers into `out`; return the (de-duplicated) keys it does not hold yet."""
        todo: list[str] = []
        for k in dict.fromkeys(keys):
            hit = self.cache.item_get(ns, k)
            if hit is not None:
                out.found[k] = None if not_found_marker and hit[0].get("_not_found") else hit[0]
                out.fetched_at[k] = hit[1]
            else:
                todo.append(k)
        return todo

    def _by_keys(
        self, ns: str, keys: Iterable[str], batch_size: int, fetch_found: Callable[[list[str]], dict[str, Any]]
    ) -> LookupOutcome:
        """Key -> record or None (unknown to the service, stored as such); fetch_found(batch) -> {key: record}."""
        out = LookupOutcome()
        todo = self._stored(ns, keys, out, not_found_marker=True)
        if not todo:
            return out

        def fetch(batch: list[str]) -> dict[str, Any]:
            got = fetch_found(batch)
            answers = {}
            for k in batch:
                answers[k] = got.get(k)
                out.fetched_at[k] = self.cache.item_put(ns, k, got[k] if k in got else {"_not_found": True})
            return answers

        _run_batches(todo, batch_size, fetch, out, self.breaker)
        return out

    def _by_titles(
        self, ns: str, titles: Iterable[str], search: Callable[[list[str]], list[dict[str, Any]]]
    ) -> LookupOutcome:
        """Normalised title -> up to 5 candidates (`search(batch)` pool + score), best first, batched OR queries."""
        out = LookupOutcome()
        todo = self._stored(ns, titles, out, not_found_marker=False)

        def fetch(b: list[str]) -> dict[str, Any]:
            pool = search(b)
            answers = {}
            for t in b:
                answers[t] = _top_candidates(t, pool)
                out.fetched_at[t] = self.cache.item_put(ns, t, answers[t])
            return answers

        for batch in title_batches(todo, self.params.title_batch_size, self.params.title_min_words):
            _run_batches(batch, len(batch), fetch, out, self.breaker)
        return out


class ArxivLookup(_ItemLookup):
    """arXiv by id (batched id_list) and by title (batched OR of phrase queries), through the item store."""

    SERVICE = "arXiv API"
    NS_ID = "arxiv:id"
    NS_TITLE = "arxiv:title"

    def by_ids(self, ids: Iterable[str]) -> LookupOutcome:
        def fetch(batch: list[str]) -> dict[str, Any]:
            client = make_arxiv_client(self.session, page_size=len(batch))
            got: dict[str, Any] = {}
            for r in client.results(arxiv.Search(id_list=batch, max_results=len(batch))):
                meta = arxiv_meta(r)
                if meta is not None and meta["id"] in batch:
                    got[meta["id"]] = meta
            return got

        return self._by_keys(self.NS_ID, ids, self.params.arxiv_batch_size, fetch)

    def by_titles(self, titles: Iterable[str]) -> LookupOutcome:
        """Normalised title -> up to 5 candidates (arXiv metadata + score), best first."""

        def search(b: list[str]) -> list[dict[str, Any]]:
            query = " OR ".join(f'ti:"{t}"' for t in b)
            k = min(100, 5 * len(b))
            client = make_arxiv_client(self.session, page_size=k)
            pool = []
            for r in client.results(arxiv.Search(query=query, max_results=k)):
                meta = arxiv_meta(r)
                if meta is not None:
                    pool.append(meta)
                    self.cache.item_put(self.NS_ID, meta["id"], meta)
            return pool

        return self._by_titles(self.NS_TITLE, titles, search)


# ---------------------------------------------------------------------------------------------- OpenAlex


def _abstract(inv: Any) -> str | None:
    if not isinstance(inv, dict) or not inv:
        return None
    from pyalex.api import invert_abstract

    try:
        text = invert_abstract(inv)
    except (TypeError, ValueError, IndexError):
        return None
    return " ".join(str(text).split()) or None


def work_arxiv_id(work: dict[str, Any]) -> str | None:
    """arXiv id of an OpenAlex work: its DataCite DOI, or an arxiv.org landing/pdf URL among its locations."""
    aid = arxiv_id_from_doi(work.get("doi")) or arxiv_id_from_doi((work.get("ids") or {}).get("doi"))
    if aid:
        return aid
    for loc in work.get("locations") or []:
        if not isinstance(loc, dict):
            continue
        for key in ("landing_page_url", "pdf_url"):
            m = _ARXIV_URL_RE.search(str(loc.get(key) or ""))
            if m:
                return valid_arxiv_id(m.group(1))
    return None


def reduce_work(work: dict[str, Any]) -> dict[str, Any]:
    """The fields recovery keeps from an OpenAlex work (abstract de-inverted, arXiv id derived)."""
    count = work.get("cited_by_count")
    return {
        "id": work.get("id"),
        "doi": norm_doi(work.get("doi")),
        "title": " ".join(str(work.get("display_name") or "").split()) or None,
        "cited_by_count": int(count) if isinstance(count, int | float) else None,
        "publication_date": work.get("publication_date"),
        "abstract": _abstract(work.get("abstract_inverted_index")),
        "arxiv_id": work_arxiv_id(work),
    }


class OpenAlexLookup(_ItemLookup):
    """OpenAlex works by DOI (batched OR filter) and by title (boolean OR of phrases), through the item store."""

    SERVICE = "OpenAlex"
    NS_DOI = "openalex:doi"
    NS_TITLE = "openalex:title"

    def by_dois(self, dois: Iterable[str]) -> LookupOutcome:
        from pyalex import Works

        def fetch(batch: list[str]) -> dict[str, Any]:
            works = Works().filter_or(doi=batch).select(OPENALEX_SELECT).get(per_page=min(200, 2 * len(batch)))
            by_doi: dict[str, dict[str, Any]] = {}
            for w in works:
                red = reduce_work(dict(w))
                if red["doi"]:
                    by_doi.setdefault(red["doi"], red)
            return by_doi

        return self._by_keys(self.NS_DOI, dois, self.params.openalex_batch_size, fetch)

    def by_titles(self, titles: Iterable[str]) -> LookupOutcome:
        from pyalex import Works

        def search(b: list[str]) -> list[dict[str, Any]]:
            query = " OR ".join(f'"{t}"' for t in b)
            per_page = min(200, max(10, 10 * len(b)))
            works = Works().search_filter(title=query).select(OPENALEX_SELECT).get(per_page=per_page)
            return [reduce_work(dict(w)) for w in works]

        return self._by_titles(self.NS_TITLE, titles, search)


# ---------------------------------------------------------------------------------------------- pipeline


@dataclass
class RecoverResult:
    refs: list[RecoveredRef]
    n_calls: dict[str, int] = field(default_factory=dict)
    errors: list[dict[str, str]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        by_method: dict[str, int] = {}
        for r in self.refs:
            by_method[r.method] = by_method.get(r.method, 0) + 1
        n = len(self.refs)
        return {
            "references": n,
            "by_method": dict(sorted(by_method.items())),
            "on_arxiv": sum(1 for r in self.refs if r.arxiv_id),
            "with_count": sum(1 for r in self.refs if r.cited_by_count is not None),
            "lookup_calls": dict(sorted(self.n_calls.items())),
            "errors": len(self.errors),
        }


def exemplar_refs(kept: Iterable[KeptPaper]) -> list[tuple[str, str, int, BibEntry | None]]:
    """(task_id, cite key, first-appearance position, bib entry) for every cite key of every kept paper."""
    out: list[tuple[str, str, int, BibEntry | None]] = []
    for kp in kept:
        entries = {e.key.casefold(): e for e in kp.extracted.bib_entries}
        for pos, key in enumerate(kp.extracted.cite_keys):
            out.append((kp.listing.arxiv_id, key, pos, entries.get(key.casefold())))
    return out


def _start_ref(task_id: str, key: str, pos: int, e: BibEntry | None) -> RecoveredRef:
    r = RecoveredRef(task_id=task_id, ref_key=key, position=pos)
    if e is None:
        r.notes.append("no bibliography entry")
        return r
    r.bib_title = " ".join((e.title or "").split()) or None
    r.bib_authors = list(e.authors)
    r.bib_year = e.year
    r.bib_venue = e.venue
    r.bib_url = e.url
    r.bib_doi = norm_doi(e.doi)
    r.bib_arxiv_id = valid_arxiv_id(e.arxiv_id)
    aid = r.bib_arxiv_id or arxiv_id_from_doi(e.doi)
    if aid:
        _set_arxiv(r, aid, "bib_arxiv", 100.0)
    elif e.arxiv_id:
        r.notes.append(f"bib arXiv id {e.arxiv_id!r} is malformed; ignored")
    if r.bib_doi and not arxiv_id_from_doi(r.bib_doi):
        r.doi = r.bib_doi
    return r


def _set_arxiv(
    r: RecoveredRef, aid: str, via: Literal["bib_arxiv", "openalex_doi", "arxiv_title", "openalex_title"], score: float
) -> None:
    r.arxiv_id, r.arxiv_via, r.arxiv_score = aid, via, score


def finalise_method(r: RecoveredRef) -> None:
    """`method`/`match_score`: the arXiv route if an arXiv id stands, else the DOI, else the OpenAlex title."""
    if r.arxiv_id and r.arxiv_via:
        r.method, r.match_score = r.arxiv_via, r.arxiv_score
    elif r.bib_doi and not arxiv_id_from_doi(r.bib_doi):
        r.method, r.match_score = "bib_doi", 100.0
    elif r.openalex_via == "title":
        r.method, r.match_score = "openalex_title", r.openalex_score
    else:
        r.method, r.match_score = "none", None


def _note_candidate(r: RecoveredRef, best: dict[str, Any]) -> None:
    """Keep the best rejected title hit for auditing (a batch-mate scoring < 50 is not a candidate at all)."""
    score = float(best["score"])
    if score >= MIN_CANDIDATE_SCORE and (r.title_candidate_score is None or score > r.title_candidate_score):
        r.title_candidate, r.title_candidate_score = best.get("title"), score


def _set_work(
    r: RecoveredRef, w: dict[str, Any], via: Literal["arxiv_doi", "doi", "title"], score: float, when: str | None
) -> None:
    r.openalex_id = w.get("id")
    r.openalex_title = w.get("title")
    r.openalex_via = via
    r.openalex_score = score
    r.openalex_abstract = w.get("abstract")
    r.openalex_publication_date = w.get("publication_date")
    r.cited_by_count = w.get("cited_by_count")
    r.count_fetched_at = when
    if r.doi is None and w.get("doi") and not arxiv_id_from_doi(w.get("doi")):
        r.doi = w["doi"]


def recover_references(
    kept: Sequence[KeptPaper],
    params: RecoverParams,
    session: requests.Session,
    cache: HttpCache,
    *,
    api_key: str | None = None,
    mailto: str | None = None,
) -> RecoverResult:
    """Run steps 1-6 (module docstring) over all references of all kept papers at once (batching across papers)."""
    refs = [_start_ref(*t) for t in exemplar_refs(kept)]
    ax = ArxivLookup(session, cache, params)
    oa = OpenAlexLookup(session, cache, params)
    result = RecoverResult(refs=refs)
    calls: dict[str, int] = {}

    def note_errors(step: str, outcome: LookupOutcome) -> None:
        calls[step] = calls.get(step, 0) + outcome.n_calls
        for key, msg in sorted(outcome.errors.items()):
            result.errors.append({"step": step, "key": key, "error": msg})

    with pyalex_session(session, mailto=mailto, api_key=api_key):
        # 2. OpenAlex by DOI: arXiv DataCite DOIs (counts) and publisher DOIs (identification)
        dois = [arxiv_doi(r.arxiv_id) for r in refs if r.arxiv_id and params.counts]
        dois += [r.doi for r in refs if r.doi and not r.arxiv_id]
        got = oa.by_dois(dois)
        note_errors("openalex_doi", got)
        for r in refs:
            if r.arxiv_id and params.counts:
                w = got.found.get(arxiv_doi(r.arxiv_id))
                if w:
                    _set_work(r, w, "arxiv_doi", 100.0, got.fetched_at.get(arxiv_doi(r.arxiv_id)))
            elif r.doi and not r.arxiv_id:
                w = got.found.get(r.doi)
                if w:
                    _set_work(r, w, "doi", 100.0, got.fetched_at.get(r.doi))
                    if w.get("arxiv_id"):
                        _set_arxiv(r, w["arxiv_id"], "openalex_doi", 100.0)
                elif r.doi in got.errors:
                    r.notes.append(f"OpenAlex DOI lookup failed: {got.errors[r.doi]}")

        # 3. arXiv title search for references still without an arXiv id
        if params.arxiv_title_search:
            wanted = {
                r.ref_key + "@" + r.task_id: normalise_title(r.bib_title)
                for r in refs
                if not r.arxiv_id and r.bib_title
            }
            found = ax.by_titles([t for t in wanted.values() if t])
            note_errors("arxiv_title", found)
            for r in refs:
                t = wanted.get(r.ref_key + "@" + r.task_id)
                if not t:
                    continue
                cands = found.found.get(t) or []
                if t in found.errors:
                    r.notes.append(f"arXiv title search failed: {found.errors[t]}")
                best = cands[0] if cands else None
                if best and best["score"] >= params.title_threshold:
                    _set_arxiv(r, best["id"], "arxiv_title", best["score"])
                elif best:
                    _note_candidate(r, best)

        # 4. counts for arXiv ids found by title
        if params.counts:
            new = [arxiv_doi(r.arxiv_id) for r in refs if r.arxiv_id and r.openalex_id is None]
            got = oa.by_dois(new)
            note_errors("openalex_doi", got)
            for r in refs:
                if r.arxiv_id and r.openalex_id is None:
                    w = got.found.get(arxiv_doi(r.arxiv_id))
                    if w:
                        _set_work(r, w, "arxiv_doi", 100.0, got.fetched_at.get(arxiv_doi(r.arxiv_id)))

        # 5. arXiv metadata (and verification) for every arXiv id
        _apply_arxiv_meta(refs, ax, note_errors)

        # 6. OpenAlex title search for references with no OpenAlex work yet
        if params.openalex_title_search:
            todo = {
                id(r): normalise_title(r.arxiv_title or r.bib_title)
                for r in refs
                if r.openalex_id is None and (r.arxiv_title or r.bib_title)
            }
            found = oa.by_titles([t for t in todo.values() if t])
            note_errors("openalex_title", found)
            newly: list[RecoveredRef] = []
            for r in refs:
                t = todo.get(id(r))
                if not t:
                    continue
                if t in found.errors:
                    r.notes.append(f"OpenAlex title search failed: {found.errors[t]}")
                cands = found.found.get(t) or []
                best = cands[0] if cands else None
                if best and best["score"] >= params.title_threshold:
                    _set_work(r, best, "title", best["score"], found.fetched_at.get(t))
                    if not params.counts:
                        r.cited_by_count, r.count_fetched_at = None, None
                    if not r.arxiv_id and best.get("arxiv_id"):
                        _set_arxiv(r, best["arxiv_id"], "openalex_title", best["score"])
                        newly.append(r)
                elif best:
                    _note_candidate(r, best)
            _apply_arxiv_meta(newly, ax, note_errors)

    for r in refs:
        finalise_method(r)
    result.n_calls = calls
    return result


def _apply_arxiv_meta(
    refs: Sequence[RecoveredRef], ax: ArxivLookup, note_errors: Callable[[str, LookupOutcome], None]
) -> None:
    ids = [r.arxiv_id for r in refs if r.arxiv_id]
    if not ids:
        return
    got = ax.by_ids(ids)
    note_errors("arxiv_id_list", got)
    for r in refs:
        if not r.arxiv_id:
            continue
        if r.arxiv_id in got.errors:
            r.notes.append(f"arXiv id lookup failed: {got.errors[r.arxiv_id]}")
            continue
        meta = got.found.get(r.arxiv_id)
        if meta is None:
            r.notes.append(f"arXiv has no paper {r.arxiv_id} (found via {r.arxiv_via}); id dropped")
            r.arxiv_verified = False
            r.arxiv_id = r.arxiv_via = r.arxiv_score = None
            if r.openalex_via == "arxiv_doi":  # the count belonged to the bogus id
                r.openalex_id = r.openalex_title = r.openalex_via = None
                r.cited_by_count = r.count_fetched_at = None
            continue
        r.arxiv_verified = True
        r.arxiv_title = meta.get("title") or None
        r.arxiv_abstract = meta.get("abstract") or None
        r.arxiv_authors = list(meta.get("authors") or [])
        r.arxiv_published = meta.get("published")
        r.arxiv_categories = list(meta.get("categories") or [])


def ref_rows(refs: Iterable[RecoveredRef]) -> list[dict[str, Any]]:
    return [r.model_dump() for r in sorted(refs, key=lambda r: (r.task_id, r.position, r.ref_key))]
