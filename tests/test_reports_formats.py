"""Adapters on self-authored fixtures (tests/fixtures/reports): detection, citation resolution, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportbench.reports import ReportParseError, detect_format, list_formats, load_report
from reportbench.reports.citations import scan_citations
from reportbench.types import Report

pytestmark = pytest.mark.core


@pytest.fixture(scope="module")
def reports_dir(fixtures_dir: Path) -> Path:
    return fixtures_dir / "reports"


def _claims_and_keys(report: Report) -> list[tuple[str, list[str]]]:
    return [(s.claim, s.citation_keys) for s in report.sentences]


@pytest.mark.parametrize(
    ("relpath", "fmt"),
    [
        ("markdown/multi_cite.md", "markdown"),
        ("openai_deep_research/export.md", "openai_deep_research"),
        ("openai_deep_research/response.json", "openai_deep_research"),
        ("searchai/0", "searchai"),
        ("storm/0", "storm"),
        ("deepscholar_base/0", "deepscholar_base"),
        ("openscholar/0", "openscholar"),
        ("deepresearcher/0", "deepresearcher"),
        ("deepresearcher/1", "deepresearcher"),
    ],
)
def test_auto_detection_picks_the_right_adapter(reports_dir: Path, relpath: str, fmt: str) -> None:
    path = reports_dir / relpath
    assert detect_format(path) == fmt
    auto = load_report(path, task_id="t", system="s")
    explicit = load_report(path, fmt, task_id="t", system="s")
    assert auto.format == explicit.format == fmt
    assert auto.model_dump() == explicit.model_dump()
    assert auto.report_id == "s/t"
    assert auto.sentences and all(s.claim for s in auto.sentences)


def test_registry_lists_every_builtin_in_priority_order() -> None:
    assert list_formats() == [
        "storm",
        "deepscholar_base",
        "openscholar",
        "deepresearcher",
        "searchai",
        "openai_deep_research",
        "markdown",
    ]


def test_markdown_multi_citation_forms_and_reference_styles(reports_dir: Path) -> None:
    report = load_report(reports_dir / "markdown/multi_cite.md", task_id="t", system="s")
    keys = [s.citation_keys for s in report.sentences]
    assert keys[:4] == [["1"], ["2", "3"], ["4", "5", "6"], ["1", "7", "8"]]  # [n], [n, m], [n-m], [n][m]
    assert report.unresolved_citations == ["9"]
    src = report.sources
    assert src["1"].title == "Dense Retrieval of Source Code at Scale" and src["1"].arxiv_id == "2301.01234"
    assert src["2"].title == "Graph indexes for code search"  # 'Authors (Year). Title. Venue' -> Title
    assert src["3"].arxiv_id == "2205.04321"  # 'n. Title. arXiv:ID'
    assert src["4"].url == "https://arxiv.org/pdf/2402.05678v3"  # '[n]: url'
    assert src["5"].doi == "10.1145/1234567.7654321"
    assert src["6"].arxiv_id == "hep-th/9901001" and src["6"].title == "Old but gold: lattice retrieval"
    assert src["7"].arxiv_id == "2310.09876"  # '[n] [ID]'
    assert src["8"].title == "Code Search: A Survey"
    # body links are sources keyed by URL; prose link text stays in the claim, a bare URL too
    assert src["https://example.org/codegraph"].title == "CodeGraph toolkit"
    claims = [s.claim for s in report.sentences]
    assert "Some work builds on the CodeGraph toolkit to build call graphs." in claims
    assert "Benchmarks are collected at https://bench.example.com/leaderboard." in claims
    assert "References" not in report.body and "[8] Code Search" not in report.body
    assert report.retrieved_arxiv_ids == [
        "2301.01234",
        "2205.04321",
        "2402.05678",
        "hep-th/9901001",
        "2310.09876",
        "2403.11111",
    ]


def test_numeric_marker_variants() -> None:
    body = "A [1]. B [2,3]. C [4–6]. D \\[7\\]. E [8][9]. F [2020]. G [1-90000]."
    scan = scan_citations(body, {})
    assert [list(m.keys) for m in scan.markers] == [
        ["1"],
        ["2", "3"],
        ["4", "5", "6"],
        ["7"],
        ["8"],
        ["9"],
        ["1", "90000"],
    ]
    assert any("not expanded" in w for w in scan.warnings)


def test_openai_export_links_footnotes_and_browse_markers(reports_dir: Path) -> None:
    report = load_report(reports_dir / "openai_deep_research/export.md", task_id="t", system="s")
    by_claim = dict(_claims_and_keys(report))
    assert by_claim["Hard negatives mined from the same repository matter most."] == ["3"]
    assert by_claim["Combining graph and dense scores is the strongest single configuration."] == ["1"]
    assert report.sources["3"].title == "Mining Hard Negatives for Code Retrieval"
    assert report.sources["1"].title == "Hybrid ranking for code"
    two = by_claim["Benchmarks remain small, i.e. a few thousand queries each."]
    assert len(two) == 2 and all(k.startswith("https://") for k in two)
    assert "2301.01234" in report.retrieved_arxiv_ids
    assert not report.unresolved_citations
    assert "## Sources" not in report.body and "[^1]:" not in report.body


def test_openai_responses_json_annotations(reports_dir: Path) -> None:
    report = load_report(reports_dir / "openai_deep_research/response.json", task_id="t", system="s")
    assert _claims_and_keys(report) == [
        (
            "Dense retrievers now dominate code search benchmarks.",
            ["https://arxiv.org/abs/2301.01234?utm_source=openai"],
        ),
        (
            "Graph-aware rankers add call-graph evidence and help on sparse documentation.",
            ["https://arxiv.org/abs/2205.04321", "https://example.org/graph-rank"],
        ),
        ("A survey from 2024 summarises open problems.", ["https://arxiv.org/abs/2403.11111"]),
    ]
    assert report.sources["https://example.org/graph-rank"].title == "GraphRank project page"
    assert report.retrieved_arxiv_ids == ["2301.01234", "2205.04321", "2403.11111"]


def test_searchai_resolves_through_its_own_numbering_not_ctxs_order(reports_dir: Path) -> None:
    report = load_report(reports_dir / "searchai/0", task_id="t", system="s")
    assert report.sentences[0].citation_keys == ["7"]
    seven = report.sources["7"]
    assert seven.title == "Dense Retrieval of Source Code at Scale" and seven.arxiv_id == "2301.01234"
    assert seven.abstract == "A bi-encoder for code retrieval trained on docstrings."  # matched by URL
    assert report.sources["1"].abstract is None  # not retrieved: no ctxs row has its URL
    assert any("not among the SearchAI retrieved contexts" in w for w in report.warnings)


def test_storm_uses_url_to_unified_index(reports_dir: Path) -> None:
    report = load_report(reports_dir / "storm/0", task_id="t", system="s")
    assert report.sources["2"].url == "http://arxiv.org/abs/2205.04321v1"
    assert report.sources["2"].title == "Call Graphs Help Retrieval"
    assert report.sources["2"].raw == "(reference 1 from collected information)"
    assert report.sources["1"].abstract == "A bi-encoder for code."  # empty description -> snippets
    assert report.sources["3"].arxiv_id is None
    assert report.sentences[1].claim == "For example, proposed call-graph propagation for ranking."
    assert report.path is not None and report.path.endswith("storm_gen_article.md")


def test_deepscholar_base_link_citations_and_paper_csv(reports_dir: Path) -> None:
    report = load_report(reports_dir / "deepscholar_base/0", task_id="t", system="s")
    dense = "http://arxiv.org/abs/2301.01234v2"
    assert report.sentences[1].citation_keys == ["http://arxiv.org/abs/2205.04321v1", dense]
    assert report.sources[dense].abstract == "A bi-encoder for code retrieval."
    assert report.sources["http://arxiv.org/abs/2205.04321v1"].title == "Call Graphs Help Retrieval"
    assert report.retrieved_arxiv_ids == ["2301.01234", "2205.04321", "hep-th/9901001"]
    assert "2101.00001" not in report.retrieved_arxiv_ids  # retrieved into paper.csv, never cited
    assert not report.warnings  # trailing '---' above the list is not a truncation


def test_openscholar_zero_based_snippets_and_titles(reports_dir: Path) -> None:
    report = load_report(reports_dir / "openscholar/0", task_id="t", system="s")
    src = report.sources
    # a title at the start of a pes2o passage
    assert src["0"].title == "Dense Retrieval of Source Code at Scale"
    assert src["0"].url == "https://api.semanticscholar.org/CorpusID:222"
    assert src["3"].title is None and src["3"].abstract.startswith("relevance is propagated")
    assert src["5"].arxiv_id == "2404.02222"  # from the matched ctx's URL, not from snippet text
    assert report.unresolved_citations == ["9"]
    assert "[abstract]" in report.sentences[2].claim  # not a citation marker


def test_deepresearcher_answer_block_and_draft_references(reports_dir: Path) -> None:
    report = load_report(reports_dir / "deepresearcher/0", task_id="t", system="s")
    assert "<tool_calls>" not in report.body and "</think>" not in report.body
    assert report.body.count("Dense retrievers dominate") == 1  # the <answer>, not the draft as well
    assert report.sources["2"].title == "Call graphs help retrieval?"
    assert any("draft" in w for w in report.warnings)
    assert any("truncated" in w for w in report.warnings)


def test_deepresearcher_references_tag(reports_dir: Path) -> None:
    report = load_report(reports_dir / "deepresearcher/1", task_id="t", system="s")
    assert report.unresolved_citations == ["3"]
    assert report.sources["1"].arxiv_id == "2301.01234"
    assert report.sources["2"].title == "Call Graphs Help Retrieval"  # ctxs matched by URL
    assert {s.section for s in report.sentences} == {"Related Works"}
    assert "<references>" not in report.body


def test_oversized_file_is_refused_with_its_name(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text("x" * 2000)
    with pytest.raises(ReportParseError) as err:
        load_report(big, max_bytes=1000)
    assert "big.md" in str(err.value) and "limit" in str(err.value)


def test_undecodable_bytes_are_replaced(tmp_path: Path) -> None:
    md = tmp_path / "r.md"
    md.write_bytes(b"Bad byte \xff here [1].\n\n## References\n\n[1] A title (2020)\n")
    report = load_report(md)
    assert "\ufffd" in report.body
    assert report.sentences[0].citation_keys == ["1"]


def test_errors_name_the_file_and_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ReportParseError, match="no such file"):
        load_report(tmp_path / "missing.md")
    (tmp_path / "a.md").write_text("one")
    (tmp_path / "b.md").write_text("two")
    with pytest.raises(ReportParseError, match="several markdown files"):
        load_report(tmp_path, "markdown")
    bad = tmp_path / "x"
    bad.mkdir()
    (bad / "r.json").write_text("{not json")
    (bad / "r.md").write_text("text")
    with pytest.raises(ReportParseError, match=r"r\.json: line 1 column 2: invalid JSON"):
        load_report(bad, "searchai")
    with pytest.raises(ValueError, match="unknown report format"):
        load_report(tmp_path / "a.md", "nope")


def test_nothing_recognisable_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "data.bin").write_bytes(b"\x00\x01")
    with pytest.raises(ReportParseError, match=r"folder holds no report file \(found \['data.bin'\]\)"):
        load_report(tmp_path)


def test_defaults_for_task_and_system(reports_dir: Path) -> None:
    report = load_report(reports_dir / "searchai/0")
    assert (report.system, report.task_id) == ("searchai", "0")


def test_author_date_link_text_is_not_a_title() -> None:
    body = "A claim \\[[Ann Lee' 2021-02-03](http://arxiv.org/abs/2102.01234v1)\\]. Built on [CodeGraph](https://x.org/cg)."
    scan = scan_citations(body, {})
    assert scan.link_sources["http://arxiv.org/abs/2102.01234v1"].title is None
    assert scan.link_sources["https://x.org/cg"].title == "CodeGraph"
