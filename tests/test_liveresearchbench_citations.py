"""Claim–URL extraction for citation accuracy, and the offline rules' hand-checked behaviour."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportbench.protocols.liveresearchbench import tasks as T
from reportbench.protocols.liveresearchbench.citations import (
    all_urls,
    expand_marker,
    extract_claims,
    numbered_citations,
    plain_regex_urls,
)
from reportbench.reports.base import load_report

pytestmark = pytest.mark.core

REPORT = """# Teapots

## Market

Sales rose 5 percent in 2024 [1, 3]. Prices fell [2–3]. See [the site](https://c.example/x?utm_source=y#frag).
The market grew 8 percent in 2025 and the market grew 12 percent in 2025 without any source at all.

### Sources

[1] A: https://a.example/1
[2] B: https://b.example/2
[3] C: https://a.example/1#top
"""


@pytest.fixture()
def report(tmp_path: Path) -> object:
    f = tmp_path / "qid_x_report.md"
    f.write_text(REPORT, encoding="utf-8")
    return load_report(f, task_id="x", system="s")


def test_markers_ranges_and_lists() -> None:
    assert expand_marker("1, 3–5") == ["1", "3", "4", "5"]
    assert expand_marker("7-7; 2") == ["7", "2"]
    assert numbered_citations(REPORT) == ["1", "3", "2"]  # the reference list itself is not a citation


def test_claims_resolve_numbers_and_dedupe_normalised_urls(report: object) -> None:
    claims = extract_claims(report)
    by_text = {c.text: c.urls for c in claims}
    # [1, 3] point to the same page once normalised: one (claim, URL) pair, not two
    assert by_text["Sales rose 5 percent in 2024."] == ("https://a.example/1",)
    assert by_text["Prices fell."] == ("https://b.example/2", "https://a.example/1")  # a range, two sources
    assert by_text["See the site."] == ("https://c.example/x",)  # inline link, tracking + fragment stripped
    assert (
        plain_regex_urls(REPORT)
        == all_urls(report)
        == {
            "https://a.example/1",
            "https://b.example/2",
            "https://c.example/x",
        }
    )


def test_offline_rules_on_a_small_report() -> None:
    checks = T.presentation_checks(REPORT)
    assert checks["p1"][0] == 1 and checks["p3"][0] == 1 and checks["p4"][0] == 1 and checks["p5"][0] == 1
    assert checks["p6"][0] == 0  # numbered markers and an inline link: two citation styles
    assert checks["p10"][0] == 0  # [1] and [3] are the same URL: a duplicate source
    assert T.consistency_issues(REPORT) == ["'market grew' is given as 12 and as 8 percent"]
    assert T.uncited_claims(REPORT, 8) == [
        "The market grew 8 percent in 2025 and the market grew 12 percent in 2025 without any source at all."
    ]
    assert T.issue_bin_score(len(T.uncited_claims(REPORT, 8))) == 90
