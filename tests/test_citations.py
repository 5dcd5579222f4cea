"""Citation counts through the real pyalex code, served from self-authored OpenAlex responses (`responses`).

No test here can reach the network: every test runs inside a `responses.RequestsMock`, where an
unregistered URL raises ConnectionError.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pyalex
import pyalex.api
import pytest
import responses
from responses.registries import OrderedRegistry

from reportbench.citations import CitationCountStore, lookup_counts, normalise_title
from reportbench.net import HostRateLimiter, PoliteSession, make_retry, make_session, redact_url

pytestmark = pytest.mark.integration

FIX = Path(__file__).parent / "fixtures" / "openalex"
DOI_URL = re.compile(r"https://api\.openalex\.org/works\?filter=doi:")
TITLE_MATCH_URL = re.compile(r"https://api\.openalex\.org/works\?filter=title\.search:an\+obscure")
TITLE_NOMATCH_URL = re.compile(r"https://api\.openalex\.org/works\?filter=title\.search:completely")
API_KEY = "sk-test-SECRET-0123"

IDS = ["1706.03762v7", "1810.04805", "2401.99999v1", "2402.88888"]
TITLES = {"2401.99999": "An Obscure Paper: On Things!", "2402.88888": "Completely Unknown Work"}


def body(name: str) -> dict[str, Any]:
    return json.loads((FIX / name).read_text())


@pytest.fixture()
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENALEX_API_KEY", API_KEY)
    monkeypatch.setenv("OPENALEX_MAILTO", "bench@example.org")


def session_with_hook() -> tuple[PoliteSession, list[dict[str, Any]]]:
    """A fast test session (no backoff, no pacing) whose response hook records each request's send kwargs."""
    sess = make_session(retries=2, backoff_factor=0.0, min_interval={}, mailto="bench@example.org")
    seen: list[dict[str, Any]] = []
    sess.hooks["response"].append(lambda r, *a, **kw: seen.append({"url": r.url, **kw}))
    return sess, seen


def register_all(rsps: responses.RequestsMock) -> None:
    rsps.add(responses.GET, DOI_URL, json=body("works_doi_batch.json"))
    rsps.add(responses.GET, TITLE_MATCH_URL, json=body("works_title_match.json"))
    rsps.add(responses.GET, TITLE_NOMATCH_URL, json=body("works_title_nomatch.json"))


def test_online_doi_batch_then_title_fallback(
    tmp_path: Path, env: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    saved_factory = pyalex.api._get_requests_session
    sess, seen = session_with_hook()
    with CitationCountStore(tmp_path / "counts.sqlite") as store, responses.RequestsMock() as rsps:
        register_all(rsps)
        res = lookup_counts(IDS, TITLES, store=store, offline=False, session=sess)
        calls = list(rsps.calls)
    assert res.counts == {"1706.03762": 6543, "1810.04805": 4321, "2401.99999": 12, "2402.88888": None}
    assert res.records["1706.03762"].via == "doi" and res.records["1706.03762"].openalex_id.endswith(
        "W9000000001"
    )
    rec = res.records["2401.99999"]
    assert (
        rec.via == "title" and rec.match_score == 100.0 and rec.matched_title == "An Obscure Paper: On Things"
    )
    assert res.records["2402.88888"].status == "not_found"  # best hit "Something Else Entirely" is rejected
    assert res.n_requests == 3 and len(calls) == 3  # one DOI batch + two title searches

    # the DOI batch asked for every id at once, version-stripped, with per-page = batch size
    q = parse_qs(urlsplit(calls[0].request.url).query)
    assert q["filter"] == [
        "doi:10.48550/arXiv.1706.03762|10.48550/arXiv.1810.04805|10.48550/arXiv.2401.99999|"
        "10.48550/arXiv.2402.88888"
    ]
    assert q["per-page"] == ["4"]
    # identity: pyalex's auth hook sends the key as a Bearer header and the email as From
    h = calls[0].request.headers
    assert h["Authorization"] == f"Bearer {API_KEY}" and h["From"] == "bench@example.org"
    assert h["User-Agent"].startswith("reportbench/")
    # a timeout on every request (seen by the session's response hook and by responses)
    assert len(seen) == 3 and all(s["timeout"] == sess.timeout for s in seen)
    assert all(c.request.req_kwargs["timeout"] == sess.timeout for c in calls)
    # pyalex globals restored; the key never reached the logs
    assert pyalex.api._get_requests_session is saved_factory and pyalex.config.api_key is None
    assert API_KEY not in caplog.text


def test_rerun_hits_cache_with_zero_requests(tmp_path: Path, env: None) -> None:
    path = tmp_path / "counts.sqlite"
    with CitationCountStore(path) as store, responses.RequestsMock() as rsps:
        register_all(rsps)
        first = lookup_counts(IDS, TITLES, store=store, offline=False, session=session_with_hook()[0])
    with CitationCountStore(path) as store, responses.RequestsMock() as rsps:  # nothing registered
        again = lookup_counts(IDS, TITLES, store=store, offline=False, session=session_with_hook()[0])
        assert len(rsps.calls) == 0
    assert again.counts == first.counts and again.n_requests == 0
    assert again.records["1706.03762"].via == "cache"
    assert again.records["2402.88888"].status == "not_found"  # negative answers are cached too
    assert again.records["1706.03762"].fetched_at == first.records["1706.03762"].fetched_at


def test_429_then_200_is_retried(tmp_path: Path, env: None) -> None:
    sess, seen = session_with_hook()
    with CitationCountStore(tmp_path / "c.sqlite") as store:
        with responses.RequestsMock(registry=OrderedRegistry) as rsps:
            rsps.add(
                responses.GET, DOI_URL, status=429, headers={"Retry-After": "0"}, json={"error": "slow down"}
            )
            rsps.add(responses.GET, DOI_URL, json=body("works_doi_batch.json"))
            res = lookup_counts(["1706.03762", "1810.04805"], store=store, offline=False, session=sess)
            assert len(rsps.calls) == 2  # the 429 and its retry
    assert res.counts == {"1706.03762": 6543, "1810.04805": 4321}
    assert res.n_requests == 1 and len(seen) == 1  # one logical request; the retry happened in urllib3


def test_persistent_5xx_is_an_error_and_not_cached(tmp_path: Path, env: None) -> None:
    sess = make_session(retries=1, backoff_factor=0.0, min_interval={})
    with CitationCountStore(tmp_path / "c.sqlite") as store:
        with responses.RequestsMock() as rsps:
            rsps.add(responses.GET, DOI_URL, status=503, json={"error": "down"})
            res = lookup_counts(["1706.03762"], store=store, offline=False, session=sess)
            assert len(rsps.calls) == 2
        assert res.counts == {"1706.03762": None} and res.records["1706.03762"].status == "error"
        assert len(store) == 0  # the next online run retries it
        with responses.RequestsMock() as rsps:
            rsps.add(responses.GET, DOI_URL, json=body("works_doi_batch.json"))
            res = lookup_counts(["1706.03762"], store=store, offline=False, session=sess)
        assert res.counts == {"1706.03762": 6543}


def test_offline_never_touches_network(tmp_path: Path) -> None:
    with CitationCountStore(tmp_path / "c.sqlite") as store, responses.RequestsMock() as rsps:
        res = lookup_counts(
            IDS, TITLES, store=store, offline=True, seed={"1810.04805v2": 77, "1706.03762": None}
        )
        assert len(rsps.calls) == 0
    assert res.counts == {"1706.03762": None, "1810.04805": 77, "2401.99999": None, "2402.88888": None}
    assert res.records["1810.04805"].status == "seed"
    assert res.records["1706.03762"].status == "missing"  # missing, never 0
    assert res.summary()["n_missing"] == 3 and res.n_requests == 0


def test_batches_of_at_most_50(tmp_path: Path, env: None) -> None:
    ids = [f"2403.{i:05d}" for i in range(120)]
    sizes: list[int] = []

    def cb(request: Any) -> tuple[int, dict[str, str], str]:
        flt = parse_qs(urlsplit(request.url).query)["filter"][0]
        sizes.append(len(flt.split("|")))
        return 200, {}, json.dumps(body("works_empty.json"))

    with CitationCountStore(tmp_path / "c.sqlite") as store, responses.RequestsMock() as rsps:
        rsps.add_callback(responses.GET, DOI_URL, callback=cb)
        res = lookup_counts(ids, store=store, offline=False, session=session_with_hook()[0])
    assert sizes == [50, 50, 20] and res.n_requests == 3
    assert all(v is None for v in res.counts.values())  # no title given -> not_found, no title search


def test_rate_limiter_and_retry_policy() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    lim = HostRateLimiter({"export.arxiv.org": 3.0}, clock=lambda: now[0], sleep=sleep)
    assert lim.wait("export.arxiv.org") == 0.0
    now[0] += 1.0
    assert lim.wait("export.arxiv.org") == pytest.approx(2.0)
    assert lim.wait("api.openalex.org") == 0.0 and slept == [pytest.approx(2.0)]
    r = make_retry()
    assert r.respect_retry_after_header and 429 in r.status_forcelist and 503 in r.status_forcelist
    assert "POST" not in r.allowed_methods
    assert redact_url("https://x.org/a?api_key=SECRET&q=1") == "https://x.org/a?api_key=***&q=1"
    assert normalise_title("BERT: Pre-training,  of X!") == "bert pre training of x"
