"""Provenance that does not churn (issue 24, item 5): the site's pages name a hash of the code that computed the
numbers, not a commit date, so a config-only commit rebuilds byte-identical pages (no `dvc.lock` churn), and a
change to that code changes the hash."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from reportbench.site.build import CODE_PATHS, build_site, code_hash
from test_site import BENCH, REL, make_repo

pytestmark = pytest.mark.core


def _git(root: Path, *args: str) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t"}
    env |= {"GIT_COMMITTER_EMAIL": "t@example.org", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)


def _snapshot(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_config_only_commit_rebuilds_identical_pages(tmp_path: Path, repo_root: Path) -> None:
    params = make_repo(tmp_path)
    for rel in ("stages/build_site.py", "src/reportbench/site", "src/reportbench/metrics"):
        src = repo_root / rel
        dst = tmp_path / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src, dst) if src.is_dir() else shutil.copy2(src, dst)
    (tmp_path / "conf").mkdir(exist_ok=True)
    (tmp_path / "conf" / "config.yaml").write_text("a: 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "one", "--date=2020-01-01T00:00:00Z")
    build_site(params, tmp_path, tmp_path / "site")
    before = _snapshot(tmp_path / "site")
    page = before[f"benchmarks/{BENCH}/{REL}/index.html"].decode()
    assert code_hash(tmp_path, BENCH) in page and "code date" not in page

    (tmp_path / "conf" / "config.yaml").write_text("a: 2\n")  # a config-only commit, days later
    _git(tmp_path, "commit", "-qam", "two", "--date=2024-06-01T00:00:00Z")
    build_site(params, tmp_path, tmp_path / "site")
    assert _snapshot(tmp_path / "site") == before

    metric_code = next((tmp_path / "src/reportbench/metrics").glob("*.py"))  # the code that computed the numbers
    metric_code.write_text(metric_code.read_text() + "\n# changed\n")
    new = code_hash(tmp_path, BENCH)
    build_site(params, tmp_path, tmp_path / "site")
    after = _snapshot(tmp_path / "site")[f"benchmarks/{BENCH}/{REL}/index.html"].decode()
    assert new in after and new not in page


def test_code_paths_are_site_stage_deps(repo_root: Path) -> None:
    """Every hashed path reaches the stage that builds the pages (else a page could show a hash DVC never
    refreshes): code under src/reportbench through the `code` stage's digest, the stage script directly, and a
    benchmark's own package (`{code}`, maybe a plug-in outside the tree) through score@<b>'s code.json."""
    import yaml

    stages = yaml.safe_load((repo_root / "dvc.yaml").read_text())["stages"]
    site = stages["site"]
    assert "build_site.py --all" in site["cmd"]
    deps = {str(d) for d in site.get("deps") or []}
    digest = next(iter(stages["code"]["outs"]))
    assert "src/reportbench" in stages["code"]["deps"] and digest in deps
    score_deps = {str(d) for d in stages["score"]["do"]["deps"]}
    for p in CODE_PATHS:
        if p == "{code}":
            assert "${item.code}" in score_deps and "data/scores" in deps, p
        elif p.startswith("src/reportbench"):
            assert digest in deps, p
        else:
            assert p in deps, p
