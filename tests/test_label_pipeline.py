"""The opt-in label pipeline (pipelines/label/, `reportbench label init`) and the root pipeline evaluating the
release it labelled (docs/deepscholar.md, "Importance labels for an imported release").

The documented last step scores the labelled release under the SAME release name
(`-S deepscholar/release=path -S benchmarks.deepscholar.release.name=<R> -S
benchmarks.deepscholar.release.source=data/labelled/deepscholar/<R>`). When the label stage read the root
pipeline's built release (data/releases/deepscholar/<R>), that made a cycle DVC refuses for every command of the
repository: "Same item(s) are defined as both a dependency and an output in stages:
pipelines/label/dvc.yaml:label_importance, release@deepscholar". The label stage now labels the release `label
init` froze (pipelines/label/release.yaml), built from its own source."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dvc_helpers import copy_working_tree

pytestmark = pytest.mark.integration
BIN = Path(sys.executable).parent


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)


def test_the_labelled_release_under_its_own_name_makes_no_dependency_cycle(repo_root: Path, tmp_path: Path) -> None:
    repo = copy_working_tree(repo_root, tmp_path / "repo")
    init = _run([str(BIN / "reportbench"), "label", "init"], repo)
    assert init.returncode == 0, init.stderr
    frozen = yaml.safe_load((repo / "pipelines" / "label" / "release.yaml").read_text())["label_release"]
    assert frozen["name"] == "demo" and frozen["source"] == "data/demo/deepscholar"  # the release composed now
    # the documented command's selection, for the demo release: the labelled copy under the same name
    compose = _run([str(BIN / "reportbench"), "compose", "deepscholar/release=path",
                    "benchmarks.deepscholar.release.name=demo",
                    "benchmarks.deepscholar.release.source=data/labelled/deepscholar/demo"], repo)
    assert compose.returncode == 0, compose.stderr
    dag = _run([str(BIN / "dvc"), "dag", "--md"], repo)
    assert dag.returncode == 0, dag.stdout + dag.stderr
    assert "label_importance" in dag.stdout and "release@deepscholar" in dag.stdout
    stage = yaml.safe_load((repo / "pipelines" / "label" / "dvc.yaml").read_text())["stages"]["label_importance"]
    assert not any(str(d).startswith("data/releases/") for d in stage["deps"])
    # the stage's command builds the frozen release from its source and labels it (offline stand-in judge)
    cmd = ["python", "stages/label_importance.py", "--release-config", "pipelines/label/release.yaml",
           "--out", str(tmp_path / "labelled"), "--allow-offline-judge"]
    ran = _run([str(BIN / cmd[0]), *cmd[1:]], repo)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert (tmp_path / "labelled" / "CARD.md").is_file()


def test_label_init_needs_a_composed_deepscholar_release(tmp_path: Path, repo_root: Path) -> None:
    from reportbench.live_pipeline import LiveInitError, init_live_pipeline

    (tmp_path / "pipelines" / "label").mkdir(parents=True)
    template = (repo_root / "pipelines" / "label" / "dvc.template.yaml").read_text()
    (tmp_path / "pipelines" / "label" / "dvc.template.yaml").write_text(template)
    (tmp_path / "params.yaml").write_text("benchmarks: {}\n")
    with pytest.raises(LiveInitError, match="benchmarks.deepscholar.release"):
        init_live_pipeline(tmp_path, name="label")
