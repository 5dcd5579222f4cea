"""DVC stays tidy on a fresh copy of the repository (issue 13 "DVC that stays tidy", issue 15 defects 4 and 5).

The session's one `dvc repro` of the default pipeline (conftest.py `reproduced_template`), copied, then the
documented commands:
`dvc status` clean, `dvc checkout` exit 0, `dvc metrics show` one row per system and no warning, `dvc plots show`
HTML that loads nothing from the network, and systems added/removed or failing leave neither folders nor lock
changes behind. (`dvc exp run --dry --allow-missing -S judge=...` listing only what the switch reaches is checked
once, in test_dvc_pipeline.py.)
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dvc_helpers import Reproduced, copy_repo_state, run_ok, subprocess_env

pytestmark = pytest.mark.integration

DVC = [sys.executable, "-m", "dvc"]
RB = [sys.executable, "-m", "reportbench.cli"]
UP_TO_DATE = "Data and pipelines are up to date."


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=subprocess_env(), capture_output=True, text=True, timeout=900)


def _out(cmd: list[str], cwd: Path) -> str:
    proc = run_ok(cmd, cwd, timeout=900)
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def repo(reproduced_template: Reproduced, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the session's reproduced working tree (conftest.py), its repro committed."""
    dest = copy_repo_state(reproduced_template.path, tmp_path_factory.mktemp("tidy") / "repo")
    _out(["git", "add", "-A"], dest)
    _out(["git", "commit", "-qm", "repro", "--allow-empty"], dest)
    return dest


# Stages whose outputs embed wall-clock values (the opt-in agreement stage, off by default, stores stub-call
# latencies): their OUTPUT hashes differ between two runs of the same inputs. Their dependencies must still
# match: stale system folders would show up there. The site is deterministic (its date is the commit's day).
VOLATILE_OUTPUTS = ("agreement@",)


def _assert_same_lock(before_text: str, after_text: str) -> None:
    before, after = yaml.safe_load(before_text)["stages"], yaml.safe_load(after_text)["stages"]
    assert sorted(after) == sorted(before), sorted(set(after) ^ set(before))  # no entry of a removed system
    def stable(deps: list[dict] | None) -> list[dict]:  # site/ folders are outputs of the volatile site stages
        return [d for d in deps or [] if not str(d.get("path", "")).startswith("site/")]

    for name, entry in before.items():
        assert stable(after[name].get("deps")) == stable(entry.get("deps")), f"{name}: dependencies changed"
        assert after[name].get("params") == entry.get("params"), f"{name}: params changed"
        if not name.startswith(VOLATILE_OUTPUTS):
            assert after[name].get("outs") == entry.get("outs"), f"{name}: outputs changed"


def _plan(repo: Path) -> dict:
    return yaml.safe_load((repo / "params.yaml").read_text())["plan"]


def test_status_clean_and_checkout_ok_after_repro(repo: Path) -> None:
    status = _run([*DVC, "status"], repo)
    assert status.returncode == 0 and status.stdout.strip() == UP_TO_DATE, status.stdout + status.stderr
    checkout = _run([*DVC, "checkout"], repo)
    assert checkout.returncode == 0, checkout.stdout + checkout.stderr
    assert "WARNING" not in checkout.stderr and "ERROR" not in checkout.stderr, checkout.stderr
    # no opt-in stage exists until a user runs `reportbench live init` / `reportbench label init`
    listed = _out([*DVC, "stage", "list", "--all"], repo)
    assert "live/" not in listed and "label/" not in listed
    assert not (repo / "dvc_plots").exists() or "dvc_plots" not in _out(["git", "status", "--porcelain"], repo)


def test_metrics_show_is_one_flat_row_per_system(repo: Path) -> None:
    shown = _run([*DVC, "metrics", "show"], repo)
    assert shown.returncode == 0
    assert "failed to load" not in (shown.stdout + shown.stderr).lower(), shown.stderr
    data = json.loads(run_ok([*DVC, "metrics", "show", "--json"], repo).stdout)
    files = data[""]["data"]
    plan = _plan(repo)
    expected = {
        f"metrics/{b}/{e['release']}/summary/{s}.json" for b, e in plan["benchmarks"].items() for s in e["systems"]
    }
    # + the narrow view, one file per benchmark x release (docs/dvc.md)
    expected |= {f"metrics/{b}/{e['release']}/brief.json" for b, e in plan["benchmarks"].items()}
    assert set(files) == expected  # no usage, systems.json or extra.json among DVC metrics

    def leaves(node: object) -> list[object]:
        return [x for v in node.values() for x in leaves(v)] if isinstance(node, dict) else [node]

    for path, entry in files.items():
        values = leaves(entry["data"])
        assert values and all(v is None or isinstance(v, int | float) for v in values), path
    # one benchmark's table: a row per system, a column per metric (+ overall)
    table = _out([*DVC, "metrics", "show", "metrics/deepscholar/demo/summary"], repo).splitlines()
    header = table[0].split()
    assert header[0] == "Path" and "overall" in header and "nugget_coverage" in header
    assert len(table) == 1 + len(plan["benchmarks"]["deepscholar"]["systems"])
    assert max(len(line) for line in table) < 260
    full = shown.stdout.splitlines()
    header = full[0].split()
    assert len([c for c in header if "." not in c]) < 45  # summaries: was 107 columns and 3,500-character lines
    assert len([c for c in header if "." in c]) < 25  # brief.json's `<tag>.<system>` columns (docs/dvc.md)


def test_plots_show_renders_offline(repo: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "plots"
    _out([*DVC, "plots", "show", "-o", str(out_dir)], repo)
    html = (out_dir / "index.html").read_text()
    assert not re.search(r"<script[^>]+src=", html), "a script is loaded from somewhere"
    assert not re.search(r"<link[^>]+href=\"https?:", html)
    assert "cdn.jsdelivr" not in html and "vegaEmbed(" in html
    n_plots = html.count("vegaEmbed('#")
    assert n_plots == len(_plan(repo)["benchmarks"]), n_plots
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return
    dom = subprocess.run(
        [
            chromium,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--host-resolver-rules=MAP * ~NOTFOUND",  # the network is off for the page
            "--virtual-time-budget=10000",
            "--dump-dom",
            (out_dir / "index.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    ).stdout
    assert dom.count('class="marks"') == n_plots, "vega did not render every plot offline"


def test_removed_or_failed_systems_leave_no_folder_and_no_lock_change(repo: Path) -> None:
    runs = repo / "data" / "runs" / "deepscholar" / "demo"
    lock_before = (repo / "dvc.lock").read_text()
    extra = (
        "+benchmarks.deepscholar.systems.extra_writer={kind:folder,path:data/demo/deepscholar/systems/careful_writer}"
    )
    _out([*RB, "compose", extra], repo)
    _out([*DVC, "repro"], repo)
    assert (runs / "extra_writer").is_dir()
    assert (repo / "metrics/deepscholar/demo/summary/extra_writer.json").is_file()
    _out([*RB, "compose", "--reset", "--prune"], repo)  # switched off again (forget it); --prune deletes its outputs
    _out([*DVC, "repro"], repo)
    assert not (runs / "extra_writer").exists()
    assert not (repo / "metrics/deepscholar/demo/summary/extra_writer.json").exists()
    assert not (repo / "metrics/deepscholar/demo/usage/extra_writer.main.json").exists()
    _assert_same_lock(lock_before, (repo / "dvc.lock").read_text())
    dirty = {line.strip() for line in _out(["git", "status", "--porcelain"], repo).splitlines() if line.strip()}
    assert dirty <= {"M dvc.lock"}, dirty  # only the volatile outputs above may differ
    forced = _out([*DVC, "repro", "-f", "score@deepscholar"], repo)
    assert "score@deepscholar" in forced
    _assert_same_lock(lock_before, (repo / "dvc.lock").read_text())
    _out(["git", "commit", "-qam", "system switched off again", "--allow-empty"], repo)

    # a failed experiment (a system stage that stops: no credentials) leaves no run folder behind, and the
    # workspace is clean once params are restored
    bad = (
        "+benchmarks.deepscholar.systems.broken={kind:endpoint,path:src/reportbench/systems/endpoint.py,"
        "model:openai/gpt-4o,api_key_env:RB_TEST_SURELY_UNSET_KEY}"
    )
    failed = _run([*DVC, "exp", "run", "-S", bad], repo)
    assert failed.returncode != 0 and "RB_TEST_SURELY_UNSET_KEY" in failed.stderr, failed.stderr[-2000:]
    assert not (runs / "broken").exists()
    _out(["git", "checkout", "--", "params.yaml", "dvc.lock"], repo)
    status = _run([*DVC, "status"], repo)
    assert status.stdout.strip() == UP_TO_DATE, status.stdout
