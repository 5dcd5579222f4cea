"""arXiv id extraction: every spelling reduces to one version-stripped id."""

from __future__ import annotations

import pytest

from reportbench.reports.arxiv_ids import arxiv_id_from_url, extract_arxiv_ids, is_plausible_arxiv_id

pytestmark = pytest.mark.core


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see http://arxiv.org/abs/2408.14476v1 for details", ["2408.14476"]),
        ("https://arxiv.org/pdf/2402.05678v3.pdf", ["2402.05678"]),
        ("https://arxiv.org/html/2501.12345", ["2501.12345"]),
        ("as in arXiv:2205.04321v2, and arXiv: 2205.04321", ["2205.04321"]),
        ("1. [2204.06547v2]", ["2204.06547"]),
        ("bare 2311.05822v2 id", ["2311.05822"]),
        ("doi 10.48550/arXiv.2403.11111", ["2403.11111"]),
        ("old style hep-th/9901001v2 and arxiv.org/abs/math/0511322v1", ["hep-th/9901001", "math/0511322"]),
        ("four-digit era: arXiv:0801.1234", ["0801.1234"]),
    ],
)
def test_spellings_reduce_to_version_stripped_ids(text: str, expected: list[str]) -> None:
    assert extract_arxiv_ids(text) == expected


def test_ids_are_deduplicated_in_first_appearance_order() -> None:
    text = "B arXiv:2301.01234v1, A [2205.04321], B again http://arxiv.org/abs/2301.01234v3"
    assert extract_arxiv_ids(text) == ["2301.01234", "2205.04321"]


@pytest.mark.parametrize(
    "text",
    [
        "improves by 2.35x and 1234.5678 units",  # month 34 / 5-digit rule
        "version 3.14159 of the tool",
        "the year 2023.12 budget",
        "and/or 1234567",
        "price 2408.14476.5",  # a longer decimal number, not an id
        "path/2408.14476",  # glued to a path that is not arXiv
    ],
)
def test_numbers_that_only_look_like_ids_are_rejected(text: str) -> None:
    assert extract_arxiv_ids(text) == []


def test_plausibility_rules() -> None:
    assert is_plausible_arxiv_id("0704.0001")
    assert not is_plausible_arxiv_id("0703.0001")  # new-style ids start in April 2007
    assert not is_plausible_arxiv_id("1501.0001")  # from 2015 on, 5 digits
    assert is_plausible_arxiv_id("1412.1234")
    assert is_plausible_arxiv_id("hep-th/9901001")
    assert not is_plausible_arxiv_id("hep-th/9913001")


def test_url_helper_only_trusts_arxiv_urls() -> None:
    assert arxiv_id_from_url("http://arxiv.org/abs/2408.14476v1") == "2408.14476"
    assert arxiv_id_from_url("https://doi.org/10.48550/arXiv.2408.14476") == "2408.14476"
    assert arxiv_id_from_url("https://example.org/papers/2408.14476") is None
    assert arxiv_id_from_url(None) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8799/arxiv.org/abs/2005.11401",  # issue 15 defect 7: any host claimed an arXiv id
        "https://evil.example/arxiv.org/abs/2005.11401",
        "https://arxiv.org.evil.example/abs/2005.11401",
        "https://evil.example/?u=https://arxiv.org/abs/2005.11401",
        "https://evil.example/10.48550/arXiv.2005.11401",
        "ftp://arxiv.org/abs/2005.11401",
    ],
)
def test_only_arxiv_hosts_vouch_for_an_arxiv_id(url: str) -> None:
    assert arxiv_id_from_url(url) is None
    assert extract_arxiv_ids(f"see {url} for details") == []


@pytest.mark.parametrize(
    "url",
    [
        "https://arxiv.org/abs/2005.11401v2",
        "http://export.arxiv.org/abs/2005.11401",
        "https://www.arxiv.org/pdf/2005.11401.pdf",
        "https://ar5iv.labs.arxiv.org/html/2005.11401",
        "https://ar5iv.org/abs/2005.11401",
        "https://doi.org/10.48550/arXiv.2005.11401",
        "arxiv.org/abs/2005.11401",
    ],
)
def test_arxiv_hosts_and_documented_mirrors_are_read(url: str) -> None:
    assert arxiv_id_from_url(url) == "2005.11401"
    assert extract_arxiv_ids(f"see ({url}) for details") == ["2005.11401"]


def test_explicit_identifiers_still_count_but_not_inside_foreign_urls() -> None:
    assert extract_arxiv_ids("as shown in arXiv:2005.11401 and [2106.09685]") == ["2005.11401", "2106.09685"]
    assert extract_arxiv_ids("https://evil.example/?id=arXiv:2005.11401&x=2106.09685") == []


def test_a_report_citing_a_fake_arxiv_host_retrieves_no_arxiv_paper(tmp_path) -> None:  # noqa: ANN001
    """Defect 7 end to end: neither the link nor the reference entry makes the report retrieve 2005.11401."""
    from reportbench.reports import load_report

    path = tmp_path / "r.md"
    path.write_text(
        "## Related Work\n\nRAG helps [1]. See also [this](http://127.0.0.1:8799/arxiv.org/abs/2106.09685).\n\n"
        "## References\n\n[1] RAG. http://127.0.0.1:8799/arxiv.org/abs/2005.11401\n",
        encoding="utf-8",
    )
    report = load_report(path, "markdown")
    assert report.retrieved_arxiv_ids == []
    assert {s.url for s in report.sources.values()} >= {"http://127.0.0.1:8799/arxiv.org/abs/2005.11401"}
