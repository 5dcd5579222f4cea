"""Stages 2-3: e-print download + extraction (gzip'd single .tex, tar.gz, failures) and the filter's reasons."""

from __future__ import annotations

from pathlib import Path

import pytest
import responses

from live_fakes import EPRINT, FIX, FakeEprints, gzip_tex, long_related_work, targz, tree
from reportbench.live_builder.arxiv_listing import ListedPaper
from reportbench.live_builder.filter import filter_papers, reasons_for
from reportbench.live_builder.http_cache import make_cached_session
from reportbench.live_builder.latex import LatexConfig
from reportbench.live_builder.live_config import FilterParams
from reportbench.live_builder.sources_stage import SourceRecord, process_all, sniff

pytestmark = pytest.mark.integration


def paper(aid: str) -> ListedPaper:
    return ListedPaper(
        arxiv_id=aid,
        base_id=aid.rsplit("v", 1)[0],
        version=1,
        title=f"Paper {aid}",
        authors=["A"],
        abstract="An abstract.",
        categories=["cs.CL"],
        primary_category="cs.CL",
        published="2025-06-02T00:00:00+00:00",
        updated="2025-06-02T00:00:00+00:00",
        source_url=f"https://arxiv.org/src/{aid}",
        query_category="cs.CL",
    )


def fetch(
    tmp_path: Path, ids: list[str], files: dict[str, bytes] | None = None, **kw: object
) -> tuple[list[SourceRecord], FakeEprints]:
    fake = FakeEprints(files) if files is not None else FakeEprints()
    sess = make_cached_session(tmp_path / "cache", retries=0, backoff_factor=0, min_interval={}, **kw)  # type: ignore[arg-type]
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.add_callback(responses.GET, EPRINT, callback=fake.callback)
        recs = process_all(sess, [paper(i) for i in ids], LatexConfig())
    return recs, fake


def test_sniff() -> None:
    assert sniff(gzip_tex("x")) == "gzip"
    assert sniff(b"%PDF-1.4") == "pdf"
    assert sniff(b"<!DOCTYPE html><html>") == "html"
    assert sniff(b"\\documentclass{article}") == "tex"
    assert sniff(b"\x00\x01\x02") == "unknown"


def test_tar_gz_multi_file_source(tmp_path: Path) -> None:
    (rec,), fake = fetch(tmp_path, ["2513.00101v1"])
    assert rec.status == "ok" and rec.kind == "gzip" and rec.http_status == 200 and rec.sha256
    p = rec.paper
    assert p is not None and p.ok and p.main_file == "main.tex" and p.section_file == "sections/related.tex"
    assert p.source == "https://arxiv.org/src/2513.00101v1"  # no temp path leaks into the stage output
    assert p.cite_keys[:2] == ["vaswani2513", "lee2024doi"] and len(p.cite_keys) == 7
    assert "TODO(ada)" in (p.clean_section or "")  # comments kept by default (published data)
    assert "figure" not in (p.clean_section or "")
    assert [e.key for e in p.bib_entries][-1] == "wang2019obscure" and not p.unresolved_keys


def test_gzipped_single_tex_with_inline_bibliography(tmp_path: Path) -> None:
    (rec,), _ = fetch(tmp_path, ["2513.00102v1"])
    p = rec.paper
    assert rec.status == "ok" and p is not None and p.ok
    assert p.section_title == "Related Works" and p.cite_keys == ["b1", "b2", "b3", "b4", "b5"]
    assert p.bib_files == ["main.tex#thebibliography"]
    assert {e.key: e.arxiv_id for e in p.bib_entries}["b4"] == "2413.00207"


def test_failures_are_records_not_exceptions(tmp_path: Path) -> None:
    recs, fake = fetch(tmp_path, ["2513.00104v1", "2513.00105v1", "2513.00108v1"])
    by = {r.arxiv_id: r for r in recs}
    assert by["2513.00104v1"].status == "download_failed" and by["2513.00104v1"].http_status == 404
    assert "HTTP 404" in (by["2513.00104v1"].reason or "")
    assert by["2513.00105v1"].status == "no_source" and "corrupt" in (by["2513.00105v1"].reason or "")
    assert by["2513.00108v1"].status == "no_source" and by["2513.00108v1"].kind == "pdf"
    assert len(fake.calls) == 3


def test_oversized_source_is_recorded(tmp_path: Path) -> None:
    (rec,), _ = fetch(tmp_path, ["2513.00101v1"], max_body_bytes=100)
    assert rec.status == "download_failed" and "larger than 100 bytes" in (rec.reason or "")


def test_hostile_tarball_is_contained(tmp_path: Path) -> None:
    files = tree(FIX / "eprints" / "2513.00101")
    files["../../escape.tex"] = "pwned"
    (rec,), _ = fetch(tmp_path, ["2513.00101v1"], files={"2513.00101v1": targz(files)})
    assert rec.status == "ok" and rec.paper is not None and rec.paper.ok
    assert any("parent-directory" in s.reason for s in rec.paper.skipped_members)
    assert not (tmp_path / "escape.tex").exists() and not (tmp_path.parent / "escape.tex").exists()


def test_second_fetch_is_served_from_cache(tmp_path: Path) -> None:
    fetch(tmp_path, ["2513.00101v1", "2513.00104v1"])
    recs, fake = fetch(tmp_path, ["2513.00101v1", "2513.00104v1"])
    assert fake.calls == []  # the 404 is a stable answer, cached too
    assert [r.status for r in recs] == ["ok", "download_failed"]


# ------------------------------------------------------------------------------------------------ filter


def test_filter_reasons(tmp_path: Path) -> None:
    files = {
        "2513.00101v1": targz(tree(FIX / "eprints" / "2513.00101")),
        "2513.00106v1": targz(long_related_work()),
        "2513.00107v1": targz(tree(FIX / "eprints" / "2513.00107")),
        "2513.00109v1": targz(tree(FIX / "eprints" / "2513.00109")),
        "2513.00110v1": targz(
            {"main.tex": "\\documentclass{article}\\begin{document}\\section{Intro}x\\end{document}"}
        ),
    }
    ids = [*files, "2513.00104v1"]
    recs, _ = fetch(tmp_path, ids, files=files)
    res = filter_papers([paper(i) for i in [*ids, "2513.00111v1"]], recs, FilterParams())
    assert [k.listing.arxiv_id for k in res.kept] == ["2513.00101v1"]
    codes = {d.arxiv_id: (d.stage, d.reason_code) for d in res.dropped}
    assert codes == {
        "2513.00104v1": ("sources", "download_failed"),
        "2513.00106v1": ("filter", "too_many_words"),
        "2513.00107v1": ("filter", "unresolved_keys"),
        "2513.00109v1": ("filter", "too_few_citations"),
        "2513.00110v1": ("filter", "no_section"),
        "2513.00111v1": ("sources", "not_downloaded"),
    }
    long = next(d for d in res.dropped if d.arxiv_id == "2513.00106v1")
    assert "> max_words=1000" in long.reason
    ghost = next(d for d in res.dropped if d.arxiv_id == "2513.00107v1")
    assert "ghost" in ghost.reason


def test_filter_thresholds_are_configurable(tmp_path: Path) -> None:
    (rec,), _ = fetch(tmp_path, ["2513.00109v1"])
    assert reasons_for(rec, FilterParams(min_citations=2)) == []
    assert reasons_for(rec, FilterParams(min_citations=3))[0][0] == "too_few_citations"
    assert reasons_for(rec, FilterParams(min_citations=0, max_words=10))[0][0] == "too_many_words"
    (rec7,), _ = fetch(tmp_path, ["2513.00107v1"])
    assert reasons_for(rec7, FilterParams(require_all_keys_resolved=False)) == []
