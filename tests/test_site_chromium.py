"""The scorecard site in headless Chromium (Debian's package) with the network off: pages load from file://,
every sortable table sorts by every numeric column (the pages' own ?selftest), a leaderboard cell's link
highlights and sorts its column on the system page, and screenshots have the expected size.

Skips cleanly when Chromium is not installed (`apt-get install chromium`)."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from reportbench.site.build import build_site
from test_site import BENCH, REL, make_repo
from test_viewer import S, T, make_run

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed")

# no proxy and every host name unresolvable: a page that tried to fetch anything would fail to
NETWORK_OFF = ["--no-proxy-server", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost"]


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        f"--user-data-dir={tmp / 'profile'}",
        *NETWORK_OFF,
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90)


def selftest(dom: str) -> str:
    """The report the page's own ?selftest wrote into <pre id="selftest"> (not the script's source)."""
    assert '<pre id="selftest">' in dom, dom[-2000:]
    return dom.split('<pre id="selftest">', 1)[1].split("</pre>", 1)[0]


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    params = make_repo(root)
    make_run(root)  # a system with a report and judgments, for the viewer page
    params["plan"]["benchmarks"][BENCH]["systems"].append(S)
    build_site(params, root, root / "site")
    return root / "site"


@needs_chromium
def test_benchmark_page_sorts_offline(site: Path, tmp_path: Path) -> None:
    page = site / "benchmarks" / BENCH / REL / "index.html"
    res = chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", page.as_uri() + "?selftest=1")
    report = selftest(res.stdout)
    assert report.startswith("SELFTEST PASS") and "FAIL" not in report, report
    # the leaderboard and the pairwise table were both exercised, column by column
    assert report.count("ok table 0 col") >= 8 and "ok table 2 col" in report, report
    assert "ok no external resources" in report


@needs_chromium
def test_cell_link_highlights_its_column_and_index_loads(site: Path, tmp_path: Path) -> None:
    system_page = site / "benchmarks" / BENCH / REL / "samples" / S / "index.html"
    res = chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", system_page.as_uri() + "#m-citation_precision")
    assert 'class="hl"' in res.stdout and 'aria-sort="ascending"' in res.stdout, res.stderr[-2000:]
    index = chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", (site / "index.html").as_uri() + "?selftest")
    assert selftest(index.stdout).startswith("SELFTEST PASS") and f"benchmarks/{BENCH}/{REL}/index.html" in index.stdout


@needs_chromium
@pytest.mark.parametrize("which", ["benchmark", "sample"])
def test_screenshots(site: Path, tmp_path: Path, which: str) -> None:
    page = (
        site / "benchmarks" / BENCH / REL / "index.html"
        if which == "benchmark"
        else site / "benchmarks" / BENCH / REL / "samples" / S / f"{T}.html"
    )
    shot = tmp_path / f"{which}.png"
    res = chromium(tmp_path, "--hide-scrollbars", "--window-size=1280,1600", f"--screenshot={shot}", page.as_uri())
    assert shot.is_file(), res.stderr[-2000:]
    assert png_size(shot) == (1280, 1600)
    assert shot.stat().st_size > 40_000  # a rendered page of tables and plots, not a blank or error page
