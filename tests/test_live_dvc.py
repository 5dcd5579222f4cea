"""`dvc exp run pipelines/live/dvc.yaml` in a temp copy of the working tree, network replaced by a pre-filled cache.

The live pipeline is created by `reportbench live init` (from `pipelines/live/dvc.template.yaml`), as a user does.

DVC runs each stage in its own process, where `responses` cannot reach, so the HTTP cache is filled
in-process first (fake services, real clients) and DVC then runs with `-S live.http.mode=offline`: any request
would be a cache miss, recorded as a failure, and the byte-for-byte comparison with the in-process release
would fail. Also checks: -S overrides reach the live stages, the root `dvc repro` does not touch them, and
`dvc metrics diff` between two tagged releases shows how they differ. About 30-60 s.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import responses

from dvc_helpers import run_ok
from live_fakes import FakeServices, live_test_params
from reportbench.live_builder.live import Paths, run_all
from reportbench.live_builder.live_config import load_live_config

pytestmark = pytest.mark.integration

OVERRIDES = [
    "live.name=fixture-2025-06",
    "live.categories=[cs.CL,cs.IR]",
    "live.window.start=2025-06-01",
    "live.window.end=2025-06-07",
    "live.http.mode=offline",
    "judge.runtime.progress=false",
]


def _run(cmd: list[str], cwd: Path, stdout_only: bool = False) -> str:
    proc = run_ok(cmd, cwd, timeout=900)
    return proc.stdout if stdout_only else proc.stdout + proc.stderr


def _digest(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


GENERATED = ("pipelines/live/dvc.yaml", "pipelines/live/dvc.lock")  # written by `reportbench live init`


@pytest.fixture(scope="module")
def repo(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The working tree (tracked + untracked, minus ignored) as a fresh one-commit git repo."""
    if not (repo_root / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=repo_root, capture_output=True, check=True
    ).stdout.decode()
    dest = tmp_path_factory.mktemp("livedvc") / "repo"
    for rel in filter(None, listed.split("\0")):
        src = repo_root / rel
        skip = ("live/work/", "live/releases/", "live/exports/", "metrics/live/", *GENERATED)
        if src.is_file() and not rel.startswith(skip):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    _run(["git", "init", "-q"], dest)
    _run(["git", "add", "-A"], dest)
    _run(["git", "commit", "-qm", "copy of the working tree"], dest)
    return dest


def _prefill(repo: Path, scratch: Path) -> Path:
    """Build once in-process against the fakes, with the HTTP cache inside the temp repo. Returns the release dir."""
    from reportbench.config import composed_params

    params = live_test_params(composed_params(["live=default"], conf_dir=repo / "conf"), scratch)
    params["live"]["http"]["cache_dir"] = str(repo / ".reportbench" / "cache" / "http")
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        FakeServices().install(rsps)
        run_all(params, scratch)
    return Paths(load_live_config(params), scratch).release_dir


def test_dvc_builds_two_releases_offline_and_diffs_them(repo: Path, tmp_path: Path) -> None:
    dvc = [sys.executable, "-m", "dvc"]
    expected = _prefill(repo, tmp_path / "scratch")

    # before `reportbench live init` DVC sees no live stage at all (nothing to report as changed)
    root_stages = _run([*dvc, "stage", "list", "--all"], repo)
    assert "live/" not in root_stages and "release" in root_stages
    _run([sys.executable, "-m", "reportbench.cli", "live", "init"], repo)
    _run(["git", "add", "pipelines/live/dvc.yaml"], repo)
    _run(["git", "commit", "-qm", "live pipeline"], repo)
    # `dvc repro` / `dvc exp run` without a target reproduce ./dvc.yaml only (dvc.repo.reproduce: PROJECT_FILE)
    root_stages = _run([*dvc, "stage", "list"], repo)
    assert "live/" not in root_stages and "release" in root_stages

    out = _run([*dvc, "exp", "run", "pipelines/live/dvc.yaml", *[a for o in OVERRIDES for a in ("-S", o)]], repo)
    ran = set(re.findall(r"Running stage '([^']+)'", out))
    assert ran == {f"pipelines/live/dvc.yaml:{s}" for s in ("list", "sources", "filter", "recover", "label", "publish")}
    assert "requests per cited reference = 0.0" in out
    release = repo / "live" / "releases" / "fixture-2025-06"
    assert _digest(release) == _digest(expected)  # same bytes as the in-process build: nothing was fetched
    for stage in ("list", "sources", "recover"):
        assert json.loads((repo / "metrics" / "live" / "requests" / f"{stage}.json").read_text())["requests"] == 0

    _run(["git", "add", "-A"], repo)
    _run(["git", "commit", "-qm", "release fixture-2025-06"], repo)
    _run(["git", "tag", "r1"], repo)

    # a second release: stricter filter (P2 has 5 citations), otherwise the same inputs
    out2 = _run(
        [
            *dvc,
            "exp",
            "run",
            "pipelines/live/dvc.yaml",
            *[a for o in [*OVERRIDES, "live.filter.min_citations=6"] for a in ("-S", o)],
        ],
        repo,
    )
    ran2 = set(re.findall(r"Running stage '([^']+)'", out2))
    # only what the param touches
    assert "pipelines/live/dvc.yaml:list" not in ran2 and "pipelines/live/dvc.yaml:filter" in ran2
    diff: dict[str, Any] = json.loads(_run([*dvc, "metrics", "diff", "r1", "--json"], repo, stdout_only=True))
    rel = diff["metrics/live/release.json"]
    assert rel["papers.published"] == {"old": 2, "new": 1, "diff": -1}
    assert rel["references.total"]["new"] == 7
    # P2 (5 keys) is newly dropped; P7 (5 keys, one unresolved) now fails the citation rule first
    assert (
        rel["dropped_by_reason.too_few_citations"]["diff"] == 2
        and rel["dropped_by_reason.unresolved_keys"]["diff"] == -1
    )
