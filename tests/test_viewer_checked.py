"""The viewer shows what was not checked (site/claims.py): on a sample page (site and `reportbench view`) every
claim shows its cited page's fetch status and its verdict or "not checked (reason)", and one line says which cited
pages were fetched, which failed and why, and which claims went unjudged. The ResearcherBench demo has a claim
whose page was never fetched (footnote_writer q3: https://example.com/missing-page, offline and not recorded)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from reportbench.site.claims import load_ledger, summary_line
from reportbench.site.samples import load_system, render_sample_page, render_text

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
B, R = "researcherbench", "demo"
MISSING = "https://example.com/missing-page"


@pytest.fixture(scope="module")
def demo_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ResearcherBench demo through every stage (in-process), laid out as `dvc repro` leaves data/."""
    from reportbench.config import composed_params
    from spine_helpers import refresh_plan, run_benchmark

    tmp = tmp_path_factory.mktemp("checked")
    cwd = Path.cwd()
    try:
        os.chdir(ROOT)
        params = composed_params([f"benchmarks=[{B}]"], conf_dir=ROOT / "conf")
        params["judge"]["runtime"]["progress"] = False
        run = run_benchmark(refresh_plan(params), B, tmp / "run")
    finally:
        os.chdir(cwd)
    root = tmp / "repo"
    for kind, src in (("runs", run / "runs"), ("judgments", run / "judgments"), ("pages", run / "pages"),
                      ("scores", run / "scores"), ("releases", run / "releases")):
        shutil.copytree(src, root / "data" / kind / B / R)
    return root


def test_the_demo_has_a_claim_whose_page_was_not_fetched(demo_root: Path) -> None:
    pages = pl.read_parquet(demo_root / "data" / "pages" / B / R / "pages.parquet")
    row = pages.filter(pl.col("url") == MISSING).to_dicts()
    assert row and row[0]["error_class"] == "not_fetched"


def test_sample_page_shows_each_claims_page_status_and_verdict(demo_root: Path) -> None:
    sd = load_system(demo_root, B, R, "footnote_writer", ["main"])
    html = render_sample_page(sd, "q3")
    assert 'id="checked"' in html and 'id="claims"' in html
    rows = re.findall(r'<tr class="claim" data-checked="(\d)">(.*?)</tr>', html)
    assert len(rows) == 4  # every claim of q3, the unjudged one included
    unchecked = [r for flag, r in rows if flag == "0"]
    assert len(unchecked) == 1 and MISSING in unchecked[0]
    assert "not fetched" in unchecked[0] and "not checked" in unchecked[0]
    assert "offline mode" in unchecked[0]  # the fetch stage's own reason
    for _, r in (x for x in rows if x[0] == "1"):
        assert "fetched" in r and "not checked" not in r
    summary = re.search(r'id="checked-summary">(.*?)</p>', html).group(1)
    assert "Cited pages: 1 fetched; 1 not fetched" in summary and "Claims: 3 judged; 1 not checked" in summary
    assert "footnote_writer/q3:s0:c3" in summary


def test_text_view_says_the_same(demo_root: Path) -> None:
    text = render_text(load_system(demo_root, B, R, "footnote_writer", ["main"]), "q3")
    assert "Claims: 3 judged; 1 not checked" in text
    assert re.search(r"footnote_writer/q3:s0:c3 \(main\): not checked \(.*not_fetched", text)


def test_a_claim_without_a_url_and_a_task_with_all_pages_fetched(demo_root: Path) -> None:
    sd = load_system(demo_root, B, R, "link_writer", ["main"])
    claims = sd.ledger.claims["q1"]
    no_url = [c for c in claims if not c.urls]
    assert len(no_url) == 1 and no_url[0].verdict is None and "no_url" in no_url[0].why_not
    line = summary_line(claims, sd.ledger)
    assert line.startswith("Cited pages: 2 fetched") and "1 not checked" in line
    fp = load_ledger(demo_root, B, R, "footnote_writer", ["main"])
    assert all(c.verdict is not None for c in fp.claims["q1"])
    assert "not checked" not in summary_line(fp.claims["q1"], fp)


def test_without_a_snapshot_every_page_reads_not_fetched(demo_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(demo_root, root)
    shutil.rmtree(root / "data" / "pages")
    sd = load_system(root, B, R, "footnote_writer", ["main"])
    line = summary_line(sd.ledger.claims["q3"], sd.ledger)
    assert line.startswith("Cited pages: 2 not fetched") and "no page snapshot" in line


def test_a_claim_citing_two_pages_one_failed(tmp_path: Path) -> None:
    """DEER's shape: one verification per (claim, URL); one page fetched and supported, one failed (HTTP 404)."""
    from reportbench.site.claims import render_claims_html

    d = tmp_path / "data" / "judgments" / "deer" / "r" / "S" / "main" / "derived"
    d.mkdir(parents=True)
    ok, dead = "https://example.org/ok", "https://example.org/dead"
    pl.DataFrame({"claim_id": ["S/t:c0", "S/t:c1"], "task_id": ["t", "t"], "text": ["two pages", "dead only"],
                  "urls": [f'["{ok}", "{dead}"]', f'["{dead}"]']}).write_parquet(d / "claims.parquet")
    pl.DataFrame({"claim_id": ["S/t:c0", "S/t:c0", "S/t:c1"], "url": [ok, dead, dead],
                  "result": ["supported", "error", "error"], "error_kind": [None, "fetch", "fetch"]}
                 ).write_parquet(d / "verifications.parquet")
    pages = tmp_path / "data" / "pages" / "deer" / "r"
    pages.mkdir(parents=True)
    pl.DataFrame({"url": [ok, dead], "error_class": ["ok", "http_error"], "error": [None, "HTTP 404"],
                  "http_status": [200, 404]}).write_parquet(pages / "pages.parquet")
    ledger = load_ledger(tmp_path, "deer", "r", "S", ["main"])
    c0, c1 = ledger.claims["t"]
    assert c0.verdict == f"supported ({ok})"
    assert c1.verdict is None and "error" in c1.why_not and "fetch" in c1.why_not
    line = summary_line(ledger.claims["t"], ledger)
    assert line.startswith(f"Cited pages: 1 fetched; 1 failed ({dead}: http_error: HTTP 404)")
    assert "Claims: 1 judged; 1 not checked (S/t:c1: error; fetch)" in line
    html = render_claims_html(ledger.claims["t"], ledger)
    assert html.count('data-checked="0"') == 1 and "http_error: HTTP 404" in html
