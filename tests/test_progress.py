"""System stages show a progress bar with an ETA, named after the stage (issue 13 "Discoverability")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reportbench import pipeline
from reportbench.config import composed_params
from reportbench.progress import progress_bar, stage_label

pytestmark = pytest.mark.core


def test_progress_bar_shows_count_and_time_remaining(capsys: pytest.CaptureFixture[str]) -> None:
    with stage_label("system@toy.agent"):
        bar = progress_bar(4, enabled=True)
    bar.update(1)
    bar.close()
    err = capsys.readouterr().err
    assert "system@toy.agent" in err and "1/4" in err
    assert re.search(r"\[\d\d:\d\d<[\d?:]+", err), err  # elapsed<remaining
    assert progress_bar(3, enabled=False).disable and progress_bar(0, enabled=True).disable


def test_system_stage_reports_progress_per_task(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(repo_root)
    monkeypatch.setenv("REPORTBENCH_PROGRESS", "1")
    params = composed_params(conf_dir=repo_root / "conf")
    release = tmp_path / "release"
    pipeline.build_release(params, "deepscholar", release)
    counts = pipeline.run_system(params, "deepscholar", "offline_baseline", release, tmp_path / "run")
    n = sum(counts.values())
    err = capsys.readouterr().err
    assert "system@deepscholar.offline_baseline: 100%" in err and f"{n}/{n}" in err, err[-2000:]
