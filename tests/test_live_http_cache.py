"""The live builder's HTTP cache: zero requests on a rebuild, offline mode, what is (not) stored, pacing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import requests
import responses

from reportbench.citations import pyalex_session
from reportbench.live_builder.http_cache import (
    CACHE_HEADER,
    CacheMissError,
    HttpCache,
    ResponseTooLargeError,
    arxiv_feed_cacheable,
    cache_key,
    canonical_url,
    make_cached_session,
)
from reportbench.net import HostRateLimiter

pytestmark = pytest.mark.core

URL = "https://api.openalex.org/works?filter=doi:10.1/x&select=id"


def session(tmp_path: Path, mode: str = "use", **kw: object):  # noqa: ANN201 - CachingSession
    return make_cached_session(tmp_path / "c", mode=mode, retries=0, backoff_factor=0, min_interval={}, **kw)  # type: ignore[arg-type]


def test_canonical_url_sorts_query_and_drops_secrets() -> None:
    a = canonical_url("HTTPS://API.openalex.org/works?select=id&filter=x&api_key=SECRET&mailto=me@x.org#frag")
    b = canonical_url("https://api.openalex.org/works?filter=x&select=id")
    assert a == b and "SECRET" not in a and "mailto" not in a
    assert cache_key("get", a) == cache_key("GET", b)


def test_second_request_is_served_from_cache_without_network(tmp_path: Path) -> None:
    s = session(tmp_path)
    with responses.RequestsMock() as rsps:
        rsps.add(responses.GET, URL, json={"results": [1]}, status=200)
        r1 = s.get(URL)
        r2 = s.get(URL)
        assert len(rsps.calls) == 1
    assert r1.json() == r2.json() == {"results": [1]}
    assert CACHE_HEADER in r2.headers and CACHE_HEADER not in r1.headers
    assert s.stats.n_network == 1 and s.stats.n_cache_hits == 1 and s.n_requests == 1
    # a new session on the same directory (a rebuild in a new process) still hits
    s2 = session(tmp_path, mode="offline")
    with responses.RequestsMock() as rsps:
        assert s2.get(URL).json() == {"results": [1]}
        assert len(rsps.calls) == 0


def test_offline_mode_raises_on_miss_and_refresh_refetches(tmp_path: Path) -> None:
    off = session(tmp_path, mode="offline")
    with pytest.raises(CacheMissError) as exc, responses.RequestsMock():
        off.get(URL)
    assert isinstance(exc.value, requests.ConnectionError)  # callers record it like any network failure
    s = session(tmp_path)
    with responses.RequestsMock() as rsps:
        rsps.add(responses.GET, URL, json={"v": 1})
        s.get(URL)
    ref = session(tmp_path, mode="refresh")
    with responses.RequestsMock() as rsps:
        rsps.add(responses.GET, URL, json={"v": 2})
        assert ref.get(URL).json() == {"v": 2}
        assert len(rsps.calls) == 1
    assert session(tmp_path, mode="offline").get(URL).json() == {"v": 2}


@pytest.mark.parametrize(
    "status,stored", [(200, True), (404, True), (410, True), (429, False), (500, False), (503, False)]
)
def test_only_stable_statuses_are_cached(tmp_path: Path, status: int, stored: bool) -> None:
    s = session(tmp_path)
    with responses.RequestsMock() as rsps:
        rsps.add(responses.GET, URL, body="x", status=status)
        assert s.get(URL).status_code == status
    assert (len(s.cache) == 1) is stored  # type: ignore[arg-type]


def test_arxiv_page_claiming_results_without_entries_is_not_cached() -> None:
    url = "https://export.arxiv.org/api/query?search_query=x&start=100"
    empty = requests.Response()
    empty.status_code = 200
    empty._content = b"<feed><opensearch:totalResults>250</opensearch:totalResults></feed>"
    assert not arxiv_feed_cacheable(url, empty)
    empty._content = b"<feed><opensearch:totalResults>0</opensearch:totalResults></feed>"
    assert arxiv_feed_cacheable(url, empty)  # a genuinely empty answer is a stable answer
    empty._content = b"<feed><entry>..</entry></feed>"
    assert arxiv_feed_cacheable(url, empty)


def test_large_bodies_go_to_verified_blob_files(tmp_path: Path) -> None:
    cache = HttpCache(tmp_path / "c", inline_limit=10)
    body = b"\x1f\x8b" + b"x" * 100
    cache.put(
        "GET", "https://arxiv.org/src/1", 200, "OK", {"Content-Type": "application/gzip", "Set-Cookie": "s"}, body
    )
    hit = cache.get("GET", "https://arxiv.org/src/1")
    assert hit is not None and hit.body == body
    assert hit.headers == {"content-type": "application/gzip"}  # cookies and the like are never stored
    blob = next((tmp_path / "c" / "blobs").rglob("*"), None)
    blobs = [p for p in (tmp_path / "c" / "blobs").rglob("*") if p.is_file()]
    assert blob is not None and len(blobs) == 1
    blobs[0].write_bytes(b"tampered")
    assert cache.get("GET", "https://arxiv.org/src/1") is None  # a corrupt blob is a miss, never bad data


def test_body_size_is_bounded(tmp_path: Path) -> None:
    s = session(tmp_path, max_body_bytes=50)
    with responses.RequestsMock() as rsps:
        rsps.add(responses.GET, "https://arxiv.org/src/big", body=b"a" * 51)
        with pytest.raises(ResponseTooLargeError):
            s.get("https://arxiv.org/src/big")
    assert len(s.cache) == 0  # type: ignore[arg-type]


def test_cache_hits_do_not_wait_for_the_rate_limiter(tmp_path: Path) -> None:
    slept: list[float] = []
    clock = iter(range(0, 1000)).__next__
    s = session(tmp_path)
    s.rate_limiter = HostRateLimiter({"export.arxiv.org": 3.0}, clock=lambda: float(clock()), sleep=slept.append)
    url = "https://export.arxiv.org/api/query?id_list=1"
    with responses.RequestsMock() as rsps:
        rsps.add(responses.GET, url, body="<feed><entry/></feed>")
        rsps.add(responses.GET, url + "2", body="<feed><entry/></feed>")
        s.get(url)
        s.get(url + "2")  # second network request: must wait ~3 s
        for _ in range(5):
            s.get(url)  # hits: no waiting at all
    assert len(slept) == 1 and slept[0] > 0


def test_pyalex_and_timeout_go_through_the_cached_session(tmp_path: Path) -> None:
    from pyalex import Works

    s = session(tmp_path)
    seen: list[dict[str, object]] = []
    s.hooks["response"].append(
        lambda r, *a, **kw: seen.append({"timeout": kw.get("timeout"), "auth": r.request.headers.get("Authorization")})
    )
    body = {
        "meta": {"count": 0, "db_response_time_ms": 1, "page": 1, "per_page": 25, "groups_count": None},
        "results": [],
        "group_by": [],
    }
    with responses.RequestsMock() as rsps, pyalex_session(s, mailto="me@example.org", api_key="sk-SECRET"):
        rsps.add(responses.GET, re.compile(r"https://api\.openalex\.org/works\?.*"), json=body)
        Works().filter(doi="10.1/x").get()
        Works().filter(doi="10.1/x").get()
        assert len(rsps.calls) == 1
    assert seen[0]["timeout"] == 30.0 and seen[0]["auth"] == "Bearer sk-SECRET"
    with HttpCache(tmp_path / "c") as cache:
        rows = cache._db.execute("SELECT url, headers FROM responses").fetchall()
    assert all("SECRET" not in str(r) for r in rows)
