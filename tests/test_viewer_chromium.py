"""In headless Chromium (issue 24, items 3 and 4): at 1,400 px the DeepScholar and LiveResearchBench demo pages
have no table wider than its box (no column hidden behind an inner scrollbar), and the sample viewer's verdict
badges are coloured by verdict (supported, not supported and a failed call each distinct) with a legend.

A probe page loads the site page in a 1,400 px iframe and writes what it measured into its own DOM
(`--dump-dom`); `--allow-file-access-from-files` lets it read the file:// page. Skips without Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from reportbench.config import load_params
from reportbench.site.build import build_benchmark_site

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed")
NETWORK_OFF = ["--no-proxy-server", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost"]

PROBE = """<!doctype html><html><body style="margin:0">
<iframe id="f" style="width:1400px;height:900px;border:0"></iframe><pre id="out">pending</pre>
<script>
var f=document.getElementById('f');
f.onload=function(){var d=f.contentDocument,w=f.contentWindow,r={tables:[],badges:{},legend:0};
 d.querySelectorAll('.tw').forEach(function(t){var tb=t.querySelector('table');
  r.tables.push({id:tb&&tb.id,scroll:t.scrollWidth,client:t.clientWidth});});
 ['v-pos','v-neg','v-part','v-fail','v-oth'].forEach(function(c){var b=d.querySelector('.legend .badge.'+c);
  if(b){var s=w.getComputedStyle(b);r.badges[c]=s.backgroundColor+'|'+s.backgroundImage+'|'+s.borderStyle;}});
 r.legend=d.querySelectorAll('.legend').length;
 document.getElementById('out').textContent=JSON.stringify(r);};
f.src=decodeURIComponent(location.hash.slice(1));
</script></body></html>"""


def probe(tmp: Path, page: Path) -> dict:
    (tmp / "probe.html").write_text(PROBE)
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        f"--user-data-dir={tmp / 'profile'}",
        "--allow-file-access-from-files",
        *NETWORK_OFF,
        "--virtual-time-budget=5000",
        "--dump-dom",
        (tmp / "probe.html").as_uri() + "#" + page.as_uri(),
    ]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=90).stdout
    found = re.search(r'<pre id="out">(.*?)</pre>', dom, flags=re.S)
    assert found and found.group(1) != "pending", dom[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


@needs_chromium
@pytest.mark.parametrize("benchmark", ["deepscholar", "liveresearchbench"])
def test_demo_tables_fit_1400_px(benchmark: str, repo_root: Path, tmp_path: Path) -> None:
    params = load_params(repo_root / "params.yaml")
    if not (repo_root / "metrics" / benchmark / "demo" / "leaderboard.json").is_file():
        pytest.skip(f"no committed {benchmark} demo metrics (run `dvc repro`)")
    build_benchmark_site(params, benchmark, repo_root, tmp_path / "site", max_samples=0)
    page = tmp_path / "site" / "benchmarks" / benchmark / "demo" / "index.html"
    html = page.read_text()
    assert html.count("some means rest on fewer tasks") + html.count("Some means rest on fewer tasks") <= 1
    r = probe(tmp_path, page)
    assert any(t["id"] == "leaderboard" for t in r["tables"]), r
    wide = [t for t in r["tables"] if t["scroll"] > t["client"]]
    assert not wide, wide


@needs_chromium
def test_verdict_badges_are_distinct_with_a_legend(tmp_path: Path) -> None:
    from reportbench.site.samples import load_system, render_sample_page
    from test_viewer import B, R, S, T, make_run

    make_run(tmp_path)
    sd = load_system(tmp_path, B, R, S)
    page = tmp_path / "sample.html"
    page.write_text(render_sample_page(sd, T))
    r = probe(tmp_path, page)
    assert r["legend"] == 1
    styles = r["badges"]
    assert set(styles) == {"v-pos", "v-neg", "v-part", "v-fail", "v-oth"}, styles
    assert len(set(styles.values())) == 5, styles  # every verdict class looks different
    assert styles["v-pos"] != styles["v-neg"] and "dashed" in styles["v-fail"]
