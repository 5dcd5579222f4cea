"""Pluggable search: BM25 offline, Tavily and Exa over their HTTP APIs (against the loopback stub), arXiv and
OpenAlex through their clients (recorded HTTP via `responses`), the per-day cache and fail-fast on a missing key."""

from __future__ import annotations

import pytest
import responses

from reportbench.agents.protocol import SearchConfig
from reportbench.agents.search import SearchError, SearchService, make_backend
from reportbench.agents.search.stub import stub_search_thread
from reportbench.agents.search.types import Doc

pytestmark = pytest.mark.core

DOCS = [
    Doc(url="https://example.org/a", title="Sparse attention for long documents", text="Sketching keys."),
    Doc(url="https://example.org/b", title="Recall estimation for retrieval", text="Pooling judgments."),
    Doc(url="https://example.org/c", title="Unrelated cooking notes", text="Bread and butter."),
]


def test_bm25_ranks_the_release_corpus_and_returns_nothing_without_a_match() -> None:
    backend = make_backend(SearchConfig(backend="bm25"), DOCS)
    hits = backend.search("retrieval recall estimation", 2)
    assert [h.url for h in hits] == ["https://example.org/b"]
    assert backend.search("quantum chromodynamics", 5) == []
    assert make_backend(SearchConfig(backend="bm25"), []).search("anything", 5) == []


@pytest.mark.parametrize("backend", ["tavily", "exa"])
def test_tavily_and_exa_speak_their_apis(backend: str) -> None:
    with stub_search_thread(require_key="k-123") as stub, pytest.MonkeyPatch.context() as mp:
        mp.setenv("MY_SEARCH_KEY", "k-123")
        base = stub.tavily_url if backend == "tavily" else stub.exa_url
        cfg = SearchConfig(backend=backend, api_base=base, api_key_env="MY_SEARCH_KEY")
        hits = make_backend(cfg).search("sparse attention", 3)
        assert stub.counts[backend] == 1
    assert len(hits) == 3 and all(h.url.startswith("https://stub-search.example/") for h in hits)
    assert "sparse attention" in hits[0].content


def test_a_hosted_backend_without_its_key_fails_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with pytest.raises(SearchError, match="TAVILY_API_KEY"):
        make_backend(SearchConfig(backend="tavily"))


def test_cache_answers_the_same_query_the_same_day(tmp_path, stub_search) -> None:
    day = ["2026-01-01"]
    cfg = SearchConfig(backend="tavily", api_base=stub_search.tavily_url)
    svc = SearchService(make_backend(cfg), cache_path=tmp_path / "c.sqlite", day=lambda: day[0])
    first, cached1 = svc.search("graph  neural networks", 2)
    again, cached2 = svc.search("graph neural networks", 2)  # whitespace-normalised: the same query
    assert (cached1, cached2, stub_search.counts["tavily"]) == (False, True, 1) and again == first
    svc.search("graph neural networks", 3)  # another max_results is another request
    day[0] = "2026-01-02"
    svc.search("graph neural networks", 2)  # another day too
    assert stub_search.counts["tavily"] == 3 and svc.requests == 3
    svc.close()



def test_the_cache_keys_on_the_endpoint_so_a_stub_answer_never_serves_another_backend(tmp_path) -> None:
    """Issue 35: after a run against the stub search, the same query to another Tavily endpoint the same day
    must reach that endpoint (before: its key ignored the URL, the stub's hits came back with 0 requests)."""
    cache = tmp_path / "c.sqlite"
    with stub_search_thread() as stub, stub_search_thread() as other:
        for server in (stub, other):
            svc = SearchService(make_backend(SearchConfig(backend="tavily", api_base=server.tavily_url)),
                                cache_path=cache, day=lambda: "2026-01-01")  # fmt: skip
            svc.search("graph neural networks", 2)
            svc.close()
        assert (stub.counts["tavily"], other.counts["tavily"]) == (1, 1)
        # and the parameters: page text or not is another answer (another request), the same one is cached
        svc = SearchService(make_backend(SearchConfig(backend="tavily", api_base=stub.tavily_url)),
                            cache_path=cache, day=lambda: "2026-01-01")  # fmt: skip
        svc.search("graph neural networks", 2, raw_content=True)
        _, cached = svc.search("graph neural networks", 2, raw_content=True)
        svc.close()
        assert cached and stub.counts["tavily"] == 2


def test_tavily_and_exa_ask_for_page_text_only_when_asked(tmp_path) -> None:
    with stub_search_thread() as stub, pytest.MonkeyPatch.context() as mp:
        mp.setenv("TAVILY_API_KEY", "k")
        mp.setenv("EXA_API_KEY", "k")
        tavily = make_backend(SearchConfig(backend="tavily", api_base=stub.tavily_url))
        tavily.search("q", 1)
        tavily.search("q", 1, raw_content=True)
        exa = make_backend(SearchConfig(backend="exa", api_base=stub.exa_url))
        exa.search("q", 1)
        hits = exa.search("q", 1, raw_content=True)
    tav_plain, tav_raw, exa_plain, exa_raw = stub.bodies
    assert "include_raw_content" not in tav_plain and tav_raw["include_raw_content"] is True
    assert exa_plain["contents"]["text"]["maxCharacters"] == 4000
    assert exa_raw["contents"]["text"]["maxCharacters"] == 50_000 and hits[0].raw_content  # Exa's text: the page


ATOM = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/"
 xmlns:arxiv="http://arxiv.org/schemas/atom">
<opensearch:totalResults>1</opensearch:totalResults><opensearch:startIndex>0</opensearch:startIndex>
<opensearch:itemsPerPage>1</opensearch:itemsPerPage>
<entry><id>http://arxiv.org/abs/2401.00001v1</id><updated>2024-01-01T00:00:00Z</updated>
<published>2024-01-01T00:00:00Z</published><title>A Self-Authored Test Paper</title>
<summary>We test the search backend.</summary><author><name>A. Tester</name></author>
<link href="http://arxiv.org/abs/2401.00001v1" rel="alternate" type="text/html"/>
<arxiv:primary_category term="cs.IR"/><category term="cs.IR"/></entry>
</feed>"""


@responses.activate
def test_arxiv_backend_reads_the_atom_feed() -> None:
    responses.get("https://export.arxiv.org/api/query", body=ATOM, content_type="application/atom+xml")
    hits = make_backend(SearchConfig(backend="arxiv")).search("test paper", 1)
    assert [(h.title, h.url, h.published) for h in hits] == [
        ("A Self-Authored Test Paper", "http://arxiv.org/abs/2401.00001v1", "2024-01-01")
    ]


@responses.activate
def test_openalex_backend_rebuilds_abstracts() -> None:
    work = {
        "id": "https://openalex.org/W1",
        "display_name": "A Self-Authored Work",
        "doi": "https://doi.org/10.0000/test",
        "publication_date": "2023-05-01",
        "primary_location": {"landing_page_url": "https://example.org/w1"},
        "abstract_inverted_index": {"search": [1], "We": [0], "works": [2]},
    }
    responses.get("https://api.openalex.org/works", json={"meta": {"count": 1, "per_page": 1}, "results": [work]})
    hits = make_backend(SearchConfig(backend="openalex")).search("works", 1)
    assert [(h.url, h.content, h.published) for h in hits] == [
        ("https://example.org/w1", "We search works", "2023-05-01")
    ]
