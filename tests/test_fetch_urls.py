"""URL normalisation (the page cache key) and collection of cited URLs from reports."""

from __future__ import annotations

import pytest

from reportbench.fetch.urls import collect_urls, find_bare_links, normalise_url
from reportbench.types import Report, Source

pytestmark = pytest.mark.core


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTPS://Example.ORG/Path/A", "https://example.org/Path/A"),
        ("https://example.org:443/a", "https://example.org/a"),
        ("http://example.org:80/a", "http://example.org/a"),
        ("http://example.org:8080/a", "http://example.org:8080/a"),
        ("https://example.org", "https://example.org/"),
        ("https://example.org/a#section-2", "https://example.org/a"),
        ("https://example.org/a#:~:text=some%20quote", "https://example.org/a"),
        ("https://example.org/a?utm_source=x&utm_medium=y&id=3&fbclid=abc&b=2", "https://example.org/a?id=3&b=2"),
        ("https://example.org/a?gclid=1&mc_cid=2&mc_eid=3&ref_src=twsrc", "https://example.org/a"),
        ("https://example.org/a?z=1&a=2", "https://example.org/a?z=1&a=2"),  # order kept
        ("  https://example.org./a  ", "https://example.org/a"),
        ("https://[2001:DB8::1]:443/x", "https://[2001:db8::1]/x"),
    ],
)
def test_normalise_url(raw: str, expected: str) -> None:
    assert normalise_url(raw) == expected


def test_normalise_is_idempotent() -> None:
    u = normalise_url("HTTP://A.example:80/p?utm_campaign=q&x=1#frag")
    assert normalise_url(u) == u == "http://a.example/p?x=1"


def test_unparseable_url_is_kept_not_crashing() -> None:
    assert normalise_url("http://example.org:99999999/") == "http://example.org:99999999/"


def test_find_bare_links_trims_prose_and_markdown() -> None:
    text = (
        "See https://example.org/a. Also [doc](https://example.org/b) and "
        "(https://en.wikipedia.org/wiki/Foo_(bar)), plus <https://example.org/c>!"
    )
    assert find_bare_links(text) == [
        "https://example.org/a",
        "https://example.org/b",
        "https://en.wikipedia.org/wiki/Foo_(bar)",
        "https://example.org/c",
    ]


def _report(system: str, rid: str, urls: list[str], body: str = "") -> Report:
    sources = {str(i + 1): Source(key=str(i + 1), url=u) for i, u in enumerate(urls)}
    return Report(report_id=rid, task_id="t1", system=system, format="markdown", body=body, sources=sources)


def test_collect_urls_dedupes_and_keeps_spellings_and_citers() -> None:
    r1 = _report("sysA", "r1", ["https://Example.org/a?utm_source=x", "https://example.org/b"])
    r2 = _report("sysB", "r2", ["https://example.org/a#intro"], body="bare link https://example.org/c.")
    r3 = _report("sysA", "r3", ["https://example.org/a"])
    refs = collect_urls([r1, r2, r3])
    assert [r.url for r in refs] == ["https://example.org/a", "https://example.org/b", "https://example.org/c"]
    a = refs[0]
    assert a.raw_urls == ["https://Example.org/a?utm_source=x", "https://example.org/a#intro", "https://example.org/a"]
    assert a.cited_by == [("sysA", "r1"), ("sysB", "r2"), ("sysA", "r3")]
    assert refs[2].cited_by == [("sysB", "r2")]


def test_collect_urls_skips_sources_without_url() -> None:
    r = Report(
        report_id="r", task_id="t", system="s", format="markdown", body="no links",
        sources={"1": Source(key="1", title="A paper"), "2": Source(key="2", url="  ")},
    )
    assert collect_urls([r]) == []
