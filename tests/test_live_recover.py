"""Stage 4 (recovery) through the real `arxiv` and `pyalex` clients against the fake services.

Fixture references (tests/fixtures/live/eprints): P1 = 2513.00101 (.bib), P2 = 2513.00102 (thebibliography).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import responses

from live_fakes import FIX, FakeServices
from reportbench.live_builder.arxiv_listing import ListedPaper
from reportbench.live_builder.filter import KeptPaper
from reportbench.live_builder.http_cache import CachingSession, make_cached_session
from reportbench.live_builder.latex import extract_paper
from reportbench.live_builder.live_config import RecoverParams
from reportbench.live_builder.recover import RecoveredRef, RecoverResult, recover_references, title_batches

pytestmark = pytest.mark.integration


def kept(aid: str, source: Path) -> KeptPaper:
    ex = extract_paper(source)
    assert ex.ok, ex.failure_reason
    listing = ListedPaper(
        arxiv_id=aid,
        base_id=aid[:-2],
        version=1,
        title="T",
        authors=[],
        abstract="A.",
        categories=["cs.CL"],
        primary_category="cs.CL",
        published="2025-06-02T00:00:00+00:00",
        updated="2025-06-02T00:00:00+00:00",
        source_url="https://arxiv.org/src/" + aid,
        query_category="cs.CL",
    )
    return KeptPaper(listing=listing, extracted=ex)


@pytest.fixture(scope="module")
def papers() -> list[KeptPaper]:
    e = FIX / "eprints"
    return [kept("2513.00101v1", e / "2513.00101"), kept("2513.00102v1", e / "2513.00102" / "main.tex")]


def session(tmp_path: Path) -> CachingSession:
    return make_cached_session(tmp_path / "cache", retries=0, backoff_factor=0, min_interval={})


def recover(
    tmp_path: Path, papers: list[KeptPaper], fakes: FakeServices | None = None, **params: object
) -> tuple[RecoverResult, FakeServices, CachingSession]:
    fakes = fakes or FakeServices()
    sess = session(tmp_path)
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        fakes.install(rsps)
        res = recover_references(
            papers, RecoverParams(**params), sess, sess.cache, api_key="sk-TEST", mailto="t@example.org"
        )  # type: ignore[arg-type]
    return res, fakes, sess


def by_key(res: RecoverResult) -> dict[str, RecoveredRef]:
    return {r.ref_key: r for r in res.refs}


def test_every_recovery_route(tmp_path: Path, papers: list[KeptPaper]) -> None:
    res, fakes, sess = recover(tmp_path, papers)
    r = by_key(res)
    # 1. bib entry: eprint field, arXiv DataCite DOI, arxiv URL in a \bibitem
    assert (r["vaswani2513"].method, r["vaswani2513"].arxiv_id) == ("bib_arxiv", "2413.00201")
    assert (r["lee2024doi"].method, r["lee2024doi"].arxiv_id) == ("bib_arxiv", "2413.00202")
    assert (r["b4"].method, r["b4"].arxiv_id) == ("bib_arxiv", "2413.00207")
    # 2. publisher DOI -> OpenAlex work listing an arxiv.org location
    assert (r["kim2023journal"].method, r["kim2023journal"].arxiv_id, r["kim2023journal"].doi) == (
        "openalex_doi",
        "2413.00203",
        "10.1234/jnl.2020.001",
    )
    # publisher DOI, not on arXiv: identified by DOI, count from OpenAlex
    assert (r["park2022conf"].method, r["park2022conf"].arxiv_id, r["park2022conf"].cited_by_count) == (
        "bib_doi",
        None,
        7,
    )
    # 3. arXiv title search, accepted above the threshold (case/punctuation-insensitive)
    assert (r["chen2021title"].method, r["chen2021title"].arxiv_id, r["chen2021title"].match_score) == (
        "arxiv_title",
        "2413.00204",
        100.0,
    )
    assert r["b3"].method == "arxiv_title" and r["b3"].arxiv_id == "2413.00206"
    # ... and rejected below it: the arXiv hit for zhou2020graph is a longer, different title
    z = r["zhou2020graph"]
    assert z.arxiv_id is None and z.title_candidate_score is not None and z.title_candidate_score < 90
    assert z.title_candidate and z.title_candidate.startswith("Graph Neural Summaries of Citation Networks:")
    # 6. OpenAlex title search: exact work without arXiv, and one revealing an arXiv id (then verified)
    assert (z.method, z.openalex_via, z.cited_by_count, z.match_score) == ("openalex_title", "title", 9, 100.0)
    b5 = r["b5"]
    assert (b5.method, b5.arxiv_id, b5.arxiv_verified) == ("openalex_title", "2413.00208", True)
    assert b5.arxiv_title == "Nuggets for Evaluating Long-Form Answers"  # metadata from arXiv id_list
    # nothing above the threshold anywhere: recorded as none, with the best rejected candidate
    w = r["wang2019obscure"]
    assert w.method == "none" and w.arxiv_id is None and w.openalex_id is None and w.match_score is None
    assert (
        w.title_candidate
        and w.title_candidate.startswith("Obscure Bibliometric")
        and 50 <= w.title_candidate_score < 90
    )
    # 5. arXiv metadata for every arXiv id
    v = r["vaswani2513"]
    assert v.arxiv_verified and v.arxiv_title == "Attentive Encoders for Scientific Retrieval"
    assert v.arxiv_published == "2024-01-10T10:00:00+00:00" and v.arxiv_categories == ["cs.IR"]
    assert v.arxiv_abstract and "synthetic abstract" in v.arxiv_abstract
    assert res.errors == []


def test_counts_are_stored_with_their_fetch_date(tmp_path: Path, papers: list[KeptPaper]) -> None:
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    res, _, _ = recover(tmp_path, papers)
    r = by_key(res)
    assert (r["vaswani2513"].cited_by_count, r["vaswani2513"].openalex_via) == (120, "arxiv_doi")
    assert (r["chen2021title"].cited_by_count, r["b2"].cited_by_count) == (64, 64)  # arXiv id found by title
    assert r["kim2023journal"].cited_by_count == 30 and r["b5"].cited_by_count == 15
    assert r["b3"].cited_by_count is None and r["b3"].count_fetched_at is None  # not in OpenAlex: missing, not 0
    for ref in res.refs:
        if ref.cited_by_count is not None:
            fetched = dt.datetime.fromisoformat(ref.count_fetched_at or "")
            assert before <= fetched <= dt.datetime.now(dt.UTC)
    assert r["vaswani2513"].openalex_abstract == "Synthetic OpenAlex abstract for attentive encoders."


def test_lookups_are_batched(tmp_path: Path, papers: list[KeptPaper]) -> None:
    res, fakes, sess = recover(tmp_path, papers)
    arxiv_qs = [parse_qs(urlsplit(u).query) for u in fakes.arxiv.calls]
    id_lists = [q["id_list"][0].split(",") for q in arxiv_qs if q.get("id_list", [""])[0]]
    titles = [q["search_query"][0] for q in arxiv_qs if q.get("search_query", [""])[0]]
    # one id_list request for the arXiv ids known after step 4 (the two found by title search already came
    # with their metadata), one more for the id OpenAlex revealed
    assert [len(x) for x in id_lists] == [4, 1] and id_lists[1] == ["2413.00208"]
    # all titles without an arXiv id in one OR query
    assert len(titles) == 1 and titles[0].count('ti:"') == 6 and " OR " in titles[0]
    oa = [parse_qs(urlsplit(u).query)["filter"][0] for u in fakes.openalex.calls]
    doi_batches = [f for f in oa if f.startswith("doi:")]
    # 3 distinct arXiv DOIs from bib entries (R1 is cited twice) + 2 publisher DOIs; then the ids found by title
    assert len(doi_batches) == 2 and doi_batches[0].count("|") == 4 and doi_batches[1].count("|") == 1
    assert sum(f.startswith("title.search:") for f in oa) == 1
    n_refs = len(res.refs)
    assert n_refs == 12 and sess.stats.n_network == 6
    assert sess.stats.n_network / n_refs <= 1.2  # the authors' pipeline: 2-5 per reference
    # polite pool identity on every OpenAlex request; the key as a bearer header, never in the URL
    assert all(
        h.get("Authorization") == "Bearer sk-TEST" and h.get("From") == "t@example.org" for h in fakes.openalex.headers
    )
    assert all("sk-TEST" not in u for u in fakes.openalex.calls)


def test_small_batches_split_requests(tmp_path: Path, papers: list[KeptPaper]) -> None:
    _, fakes, _ = recover(tmp_path, papers, arxiv_batch_size=2, openalex_batch_size=2, title_batch_size=2)
    id_lists = [q for u in fakes.arxiv.calls if (q := parse_qs(urlsplit(u).query).get("id_list", [""])[0])]
    assert [len(x.split(",")) for x in id_lists] == [2, 2, 1]
    assert sum("filter=doi" in u for u in fakes.openalex.calls) == 3 + 1


def test_threshold_decides(tmp_path: Path, papers: list[KeptPaper]) -> None:
    res, _, _ = recover(tmp_path, papers, title_threshold=70)
    z = by_key(res)["zhou2020graph"]
    assert z.method == "arxiv_title" and z.arxiv_id == "2413.00205" and 70 <= (z.match_score or 0) < 90


def test_rebuild_makes_zero_requests_and_same_rows(tmp_path: Path, papers: list[KeptPaper]) -> None:
    first, f1, _ = recover(tmp_path, papers)
    second, f2, s2 = recover(tmp_path, papers)
    assert f1.n_calls > 0 and f2.n_calls == 0 and s2.stats.n_network == 0
    assert [r.model_dump() for r in first.refs] == [r.model_dump() for r in second.refs]


def test_item_store_skips_known_identifiers_across_releases(tmp_path: Path, papers: list[KeptPaper]) -> None:
    """A later release citing some of the same papers only asks about the new ones, whatever the batches."""
    recover(tmp_path, papers[1:])  # month 1: P2 only
    _, fakes, _ = recover(tmp_path, papers)  # month 2: P1 + P2
    id_lists = [q for u in fakes.arxiv.calls if (q := parse_qs(urlsplit(u).query).get("id_list", [""])[0])]
    asked = {i for q in id_lists for i in q.split(",")}
    assert "2413.00201" not in asked and "2413.00207" not in asked  # known from month 1
    assert "2413.00202" in asked


def test_rejected_doi_batch_is_bisected(tmp_path: Path, papers: list[KeptPaper]) -> None:
    fakes = FakeServices()
    fakes.openalex.reject_dois = {"10.5555/conf.77"}
    res, _, _ = recover(tmp_path, papers, fakes=fakes)
    r = by_key(res)
    assert r["vaswani2513"].cited_by_count == 120 and r["kim2023journal"].method == "openalex_doi"
    park = r["park2022conf"]
    assert any("OpenAlex DOI lookup failed" in n for n in park.notes)
    assert [e["key"] for e in res.errors] == ["10.5555/conf.77"]
    assert (park.openalex_via, park.cited_by_count) == ("title", 7)  # the title fallback still found it


def test_openalex_outage_is_recorded_and_bounded(tmp_path: Path, papers: list[KeptPaper]) -> None:
    fakes = FakeServices()
    fakes.openalex.fail_all = True
    res, fakes, _ = recover(tmp_path, papers, fakes=fakes, openalex_batch_size=1)
    assert len(fakes.openalex.calls) == 3  # circuit breaker: three failed batches, then the service is skipped
    assert all(r.cited_by_count is None for r in res.refs)
    assert (
        res.errors and any("skipped" in e["error"] for e in res.errors) and any("503" in e["error"] for e in res.errors)
    )
    r = by_key(res)
    assert r["vaswani2513"].method == "bib_arxiv" and r["vaswani2513"].arxiv_verified  # arXiv side unaffected
    # errors are not cached: once OpenAlex is back, the next run fetches the counts
    res2, fakes2, _ = recover(tmp_path, papers)
    assert by_key(res2)["vaswani2513"].cited_by_count == 120 and fakes2.openalex.calls


def test_bib_arxiv_id_unknown_to_arxiv_is_dropped(tmp_path: Path) -> None:
    d = tmp_path / "src"
    d.mkdir()
    (d / "main.tex").write_text(
        "\\documentclass{article}\\begin{document}\\section{Related Work}\n"
        "A typo in an eprint field~\\cite{x} should not invent an arXiv paper, and the section needs enough "
        "text to pass the minimum length rule of one hundred characters.\n\\bibliography{r}\\end{document}\n"
    )
    (d / "r.bib").write_text("@misc{x, title={Attentive Encoders for Scientific Retrieval}, eprint={2413.99999}}")
    res, _, _ = recover(tmp_path, [kept("2513.00120v1", d)], arxiv_title_search=False, openalex_title_search=False)
    (x,) = res.refs
    assert x.arxiv_id is None and x.arxiv_verified is False and x.method == "none"
    assert any("arXiv has no paper 2413.99999" in n for n in x.notes)
    assert x.cited_by_count is None


def test_title_batches_isolate_short_titles() -> None:
    titles = ["deep learning", "a much longer specific title one", "another quite specific title two", "x y z w v"]
    assert title_batches(titles, size=8, min_words=3) == [["deep learning"], titles[1:]]
    assert title_batches(titles[1:], size=2, min_words=3) == [titles[1:3], titles[3:]]
    long = ["w" * 1000 + f" t {i}" for i in range(5)]
    assert all(sum(len(t) for t in b) <= 2500 for b in title_batches(long, size=8, min_words=1))
