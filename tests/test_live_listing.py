"""Stage 1 (listing) through the real `arxiv` client, served by the fake arXiv API (tests/live_fakes.py)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import responses

from live_fakes import ARXIV_API, FakeArxiv
from reportbench.live_builder.arxiv_listing import category_query, list_papers, venue_match
from reportbench.live_builder.http_cache import make_cached_session
from reportbench.live_builder.live_config import LiveConfig, LiveConfigError, load_live_config

pytestmark = pytest.mark.integration


def cfg(**kw: object) -> LiveConfig:
    base: dict[str, object] = {
        "name": "t",
        "categories": ["cs.CL", "cs.IR"],
        "window": {"start": "2025-06-01", "end": "2025-06-07"},
    }
    base.update(kw)
    return LiveConfig.model_validate(base)


def run(tmp_path: Path, c: LiveConfig, fake: FakeArxiv | None = None):  # noqa: ANN201
    fake = fake or FakeArxiv()
    sess = make_cached_session(tmp_path / "cache", retries=0, backoff_factor=0, min_interval={})
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.add_callback(responses.GET, ARXIV_API, callback=fake.callback)
        res = list_papers(c, sess)
    return res, fake


def test_query_format() -> None:
    import datetime as dt

    q = category_query("cs.CL", dt.date(2025, 6, 1), dt.date(2025, 6, 7))
    assert q == "cat:cs.CL AND submittedDate:[202506010000 TO 202506072359]"


def test_listing_keeps_v1_dedupes_cross_lists_and_records_drops(tmp_path: Path) -> None:
    res, fake = run(tmp_path, cfg())
    ids = [p.arxiv_id for p in res.papers]
    assert ids == sorted(ids) and "2513.00101v1" in ids
    assert len(ids) == len(set(ids)) == 8  # 2513.00101 and 00106 are cross-listed: listed once
    assert res.per_category == {"cs.CL": 6, "cs.IR": 5}
    drops = {d.arxiv_id: d for d in res.dropped}
    assert set(drops) == {"2513.00103v2"} and drops["2513.00103v2"].reason_code == "not_v1"
    p = next(p for p in res.papers if p.arxiv_id == "2513.00101v1")
    assert p.base_id == "2513.00101" and p.version == 1 and p.primary_category == "cs.CL"
    assert p.categories == ["cs.CL", "cs.IR"] and p.authors == ["Ada Quill", "Bo Reed"]
    assert p.comment == "Accepted at ACL 2025 (main conference)"
    assert p.published == "2025-06-02T17:30:00+00:00"
    assert p.source_url == "https://arxiv.org/src/2513.00101v1"  # upgraded to https
    assert "\n" in p.abstract and p.abstract == p.abstract.strip()  # arXiv line wraps kept, like the authors'
    # one request per category, sorted newest first by submission date
    assert len(fake.calls) == 2
    q = parse_qs(urlsplit(fake.calls[0]).query)
    assert q["sortBy"] == ["submittedDate"] and q["sortOrder"] == ["descending"]


def test_v1_only_off_keeps_revised_papers(tmp_path: Path) -> None:
    res, _ = run(tmp_path, cfg(v1_only=False))
    assert "2513.00103v2" in [p.arxiv_id for p in res.papers] and not res.dropped


def test_venue_filter_keeps_only_accepted_or_published(tmp_path: Path) -> None:
    res, _ = run(tmp_path, cfg(venue_filter={"enabled": True}))
    assert [p.arxiv_id for p in res.papers] == ["2513.00101v1", "2513.00104v1"]
    reasons = {d.arxiv_id: d.reason_code for d in res.dropped}
    assert reasons["2513.00102v1"] == "venue_filter" and reasons["2513.00103v2"] == "not_v1"
    assert "10 pages, 3 figures" in next(d.reason for d in res.dropped if d.arxiv_id == "2513.00102v1")


@pytest.mark.parametrize(
    "comment,hit",
    [
        ("Accepted at ACL 2025", True),
        ("accepted to NeurIPS 2025 (spotlight)", True),
        ("To appear in SIGIR'25", True),
        ("Published as a conference paper at ICLR 2025", True),
        ("camera-ready version", True),
        ("10 pages, 3 figures", False),
        ("under review", False),
        (None, False),
    ],
)
def test_venue_patterns(comment: str | None, hit: bool) -> None:
    assert (venue_match(comment, cfg().venue_filter.patterns) is not None) is hit


def test_per_category_cap_and_pagination(tmp_path: Path) -> None:
    res, fake = run(tmp_path, cfg(categories=["cs.CL"], max_per_category=3, page_size=2))
    assert res.per_category == {"cs.CL": 3}
    assert len(fake.calls) == 2  # pages of 2: 2 + 1
    assert [parse_qs(urlsplit(u).query)["start"][0] for u in fake.calls] == ["0", "2"]


def test_a_failing_category_is_recorded_and_the_others_go_on(tmp_path: Path) -> None:
    fake = FakeArxiv()
    real = fake.callback

    def flaky(request):  # noqa: ANN001, ANN202
        if "cat%3Acs.IR" in request.url or "cat:cs.IR" in request.url:
            return 503, {}, b"Service Unavailable"
        return real(request)

    fake.callback = flaky  # type: ignore[method-assign]
    res, _ = run(tmp_path, cfg(), fake)
    assert res.errors and res.errors[0]["category"] == "cs.IR" and "503" in res.errors[0]["error"]
    assert len(res.papers) == 5  # cs.CL still listed


def test_arxiv_client_requests_have_timeout_and_our_session(tmp_path: Path) -> None:
    sess = make_cached_session(tmp_path / "cache", timeout=12.5, retries=0, backoff_factor=0, min_interval={})
    seen: list[object] = []
    sess.hooks["response"].append(lambda r, *a, **kw: seen.append(kw.get("timeout")))
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.add_callback(responses.GET, ARXIV_API, callback=FakeArxiv().callback)
        list_papers(cfg(categories=["cs.CL"]), sess)
    assert seen == [12.5] and sess.stats.network["export.arxiv.org"] == 1


def test_rebuild_makes_zero_requests(tmp_path: Path) -> None:
    first, fake1 = run(tmp_path, cfg())
    second, fake2 = run(tmp_path, cfg())
    assert len(fake1.calls) == 2 and fake2.calls == []
    assert [p.model_dump() for p in first.papers] == [p.model_dump() for p in second.papers]


def test_config_errors_name_the_key() -> None:
    with pytest.raises(LiveConfigError, match=r"live\.window\.end"):
        load_live_config({"live": {"name": "x", "window": {"start": "2025-06-01"}}})
    with pytest.raises(LiveConfigError, match="before window.start"):
        load_live_config({"live": {"name": "x", "window": {"start": "2025-06-02", "end": "2025-06-01"}}})
    with pytest.raises(LiveConfigError, match=r"live\.name"):
        load_live_config({"live": {"name": "../etc", "window": {"start": "2025-06-01", "end": "2025-06-02"}}})
    with pytest.raises(LiveConfigError, match="not a valid regex"):
        load_live_config(
            {
                "live": {
                    "name": "x",
                    "window": {"start": "2025-06-01", "end": "2025-06-02"},
                    "venue_filter": {"patterns": ["("]},
                }
            }
        )
    with pytest.raises(LiveConfigError, match=r"live\.recover\.titel_threshold"):
        load_live_config(
            {
                "live": {
                    "name": "x",
                    "window": {"start": "2025-06-01", "end": "2025-06-02"},
                    "recover": {"titel_threshold": 1},
                }
            }
        )


def test_repo_config_is_valid() -> None:
    from reportbench.config import composed_params

    c = load_live_config(composed_params(["live=default"]))  # opt-in group: `live init` selects it
    assert c.http.arxiv_interval_s >= 3.0 and c.v1_only and c.filter.max_words == 1000
    m = load_live_config(
        composed_params(["live=monthly", "live.window.start=2025-07-01", "live.window.end=2025-07-31"])
    )
    assert m.window.start.isoformat() == "2025-07-01" and "cs.AI" in m.categories
