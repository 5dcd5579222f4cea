"""`dvc repro pipelines/researchqa_survey/dvc.yaml` in a temp copy of the working tree, the network replaced by a
pre-filled HTTP cache, the offline judge as the generator (no key): the five stages run as DVC stages, write the same
release as an in-process build, make zero requests, and a second `dvc repro` reruns nothing. The pipeline file
itself exists only after `run.py init` (the repository ships the template). About 30-60 s."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import responses

from dvc_helpers import run_ok
from reportbench.config import composed_params
from reportbench.survey_builder.stages import STAGES, run_stage
from survey_builder_fakes import FakeServices

pytestmark = [pytest.mark.integration]
NAME = "fixture-2026-05"
PIPE = "pipelines/researchqa_survey"  # the opt-in pipeline's folder (its outputs stay under live_researchqa/)
OVERRIDES = [
    "live_researchqa=default",  # the opt-in group (`run.py init` selects it too)
    f"live_researchqa.name={NAME}",
    "live_researchqa.window.start=2026-05-01",
    "live_researchqa.window.end=2026-05-31",
    "live_researchqa.arxiv_source_id=null",
    "live_researchqa.queries.min_queries_per_field=2",
    "live_researchqa.splits.test_per_field=1",
    "live_researchqa.splits.valid_per_field=1",
    "live_researchqa.http.mode=offline",
    "judge.runtime.progress=false",
]


def _digest(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def repo(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (repo_root / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=repo_root, capture_output=True, check=True
    ).stdout.decode()
    dest = tmp_path_factory.mktemp("surveydvc") / "repo"
    skip = ("live_researchqa/work/", "live_researchqa/releases/", "metrics/live_researchqa/", f"{PIPE}/dvc.")
    for rel in filter(None, listed.split("\0")):
        src = repo_root / rel
        if src.is_file() and (not rel.startswith(skip) or rel.endswith("dvc.template.yaml")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    run_ok(["git", "init", "-q"], dest)
    run_ok(["git", "add", "-A"], dest)
    run_ok(["git", "commit", "-qm", "copy of the working tree"], dest)
    return dest


def _prefill(repo: Path, scratch: Path) -> tuple[Path, FakeServices]:
    """Build in-process against the fakes with the offline judge; the HTTP cache lives inside the temp repo."""
    params = composed_params([o for o in OVERRIDES if ".http.mode=" not in o], conf_dir=repo / "conf")
    params["live_researchqa"]["http"].update(
        {"cache_dir": str(repo / ".reportbench" / "cache" / "http"), "arxiv_interval_s": 0.0, "retries": 0}
    )
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        fakes = FakeServices().install(rsps)
        for stage in STAGES:
            run_stage(stage, params, scratch)
    return scratch / "live_researchqa" / "releases" / NAME, fakes


def test_dvc_runs_the_pipeline_stage_by_stage_from_the_cache(repo: Path, tmp_path: Path) -> None:
    dvc = [sys.executable, "-m", "dvc"]
    expected, fakes = _prefill(repo, tmp_path / "scratch")
    assert fakes.n_calls > 0 and (expected / "test.json").is_file()

    assert not (repo / PIPE / "dvc.yaml").exists()  # shipped as a template only
    assert "researchqa_survey" not in run_ok([*dvc, "stage", "list"], repo).stdout
    run_ok([sys.executable, f"{PIPE}/run.py", "init"], repo)
    run_ok(["reportbench", "compose", *OVERRIDES], repo)
    proc = run_ok([*dvc, "repro", f"{PIPE}/dvc.yaml"], repo, timeout=900)
    out = proc.stdout + proc.stderr
    ran = set(re.findall(r"Running stage '([^']+)'", out))
    assert ran == {f"{PIPE}/dvc.yaml:{s}" for s in STAGES}
    release = repo / "live_researchqa" / "releases" / NAME
    assert _digest(release) == _digest(expected)  # same bytes as the in-process build: nothing was fetched
    for stage in ("surveys", "rubrics"):
        assert json.loads((repo / "metrics" / "live_researchqa" / f"{stage}.json").read_text())["requests"] == 0
    stats = json.loads((repo / "metrics" / "live_researchqa" / "release.json").read_text())
    assert stats["requests"]["total"] == 0 and stats["counts"]["queries_published"] > 0
    assert "offline rules: a plumbing release" in (release / "CARD.md").read_text()

    again = run_ok([*dvc, "repro", f"{PIPE}/dvc.yaml"], repo)
    assert "Running stage" not in again.stdout + again.stderr
    # a section rule change reruns sections and everything after it, never the network-bound listing
    run_ok(["reportbench", "compose", *OVERRIDES, "live_researchqa.sections.min_citations=4"], repo)
    third = run_ok([*dvc, "repro", f"{PIPE}/dvc.yaml"], repo, timeout=900)
    ran3 = set(re.findall(r"Running stage '([^']+)'", third.stdout + third.stderr))
    assert f"{PIPE}/dvc.yaml:surveys" not in ran3 and f"{PIPE}/dvc.yaml:sections" in ran3
    drops = json.loads((repo / "metrics" / "live_researchqa" / "sections.json").read_text())["dropped_by_reason"]
    assert drops["too_few_citations"] > 1
