"""Issue 24 §1 (a gap its helper reported): `dvc exp run -S ...` composes params.yaml from conf/ and its own
flags only, so it ignored the overrides `reportbench compose` remembers. `compose` now also writes them as a
Hydra config (`conf/remembered/overrides.yaml`) that conf/config.yaml's defaults include last: DVC's own
composition (`dvc.utils.hydra.compose_and_dump`, called here exactly as `dvc exp run` calls it) gives the
params.yaml `reportbench compose` gives, `-S` flags still win, and `--reset` removes it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from reportbench.config import (
    composed_params,
    remembered_as_config,
    remembered_conf_path,
    remembered_conf_problem,
    save_overrides,
)

MINE = """# @package benchmarks.deepscholar.systems
defaults: [demo, _self_]
my_system:
  kind: folder
  path: data/demo/deepscholar/systems/careful_writer
"""


def _conf(repo_root: Path, tmp_path: Path) -> Path:
    conf = tmp_path / "conf"
    shutil.copytree(repo_root / "conf", conf, ignore=shutil.ignore_patterns("remembered"))
    (conf / "deepscholar" / "systems" / "mine.yaml").write_text(MINE)
    return conf


def _dvc_compose(repo_root: Path, conf: Path, out: Path, set_params: list[str]) -> dict[str, Any]:
    """What `dvc exp run -S <set_params>` writes: DVC's compose_and_dump with the repo's .dvc/config [hydra]."""
    from dvc.utils.hydra import compose_and_dump

    compose_and_dump(str(out), str(conf), None, "config", str(repo_root), set_params)
    return yaml.safe_load(out.read_text())


@pytest.mark.core
def test_overrides_become_a_hydra_config(repo_root: Path, tmp_path: Path) -> None:
    conf = _conf(repo_root, tmp_path)
    config, missed = remembered_as_config(
        ["deepscholar/systems=mine", "judge=stub", "judge.runtime.timeout_s=7", "++judge.extra.flag=true"], conf
    )
    assert missed == []
    assert config["defaults"] == [
        {"override /deepscholar/systems": "mine"},
        {"override /judge": "stub"},
        "_self_",
    ]
    assert config["judge"] == {"runtime": {"timeout_s": 7}, "extra": {"flag": True}}  # typed, nested
    _, missed = remembered_as_config(["~judge.seed", "+deepscholar/preset=paper", "judge.seed=1"], conf)
    assert missed == ["~judge.seed", "+deepscholar/preset=paper"]


@pytest.mark.integration
def test_dvc_exp_run_composes_what_compose_remembered(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(repo_root)
    conf = _conf(repo_root, tmp_path)
    remembered = ["deepscholar/systems=mine", "judge=stub", "judge.runtime.timeout_s=7"]
    save_overrides(remembered, conf)
    assert remembered_conf_path(conf).is_file() and (tmp_path / "overrides.yaml").is_file()
    flag = ["judge.runtime.progress=false"]  # DVC composes only when given -S flags
    ours = composed_params(flag, conf_dir=conf, remembered=True)
    theirs = _dvc_compose(repo_root, conf, tmp_path / "dvc_params.yaml", flag)
    assert theirs == ours
    assert "my_system" in theirs["benchmarks"]["deepscholar"]["systems"]
    assert theirs["judge"]["name"] == "stub" and theirs["judge"]["runtime"]["timeout_s"] == 7
    # -S still wins over a remembered choice and value
    wins = _dvc_compose(repo_root, conf, tmp_path / "p2.yaml", ["judge=offline", "judge.runtime.timeout_s=9"])
    assert wins["judge"]["name"] == "offline" and wins["judge"]["runtime"]["timeout_s"] == 9
    # reportbench's own compositions without the remembered overrides do not pick the file up
    plain = composed_params(flag, conf_dir=conf, remembered=False)
    assert "my_system" not in plain["benchmarks"]["deepscholar"]["systems"] and plain["judge"]["name"] != "stub"
    # `compose --check` notices a remembered config that no longer holds overrides.yaml (e.g. edited by hand)
    assert remembered_conf_problem(remembered, conf) is None
    assert "stale" in str(remembered_conf_problem([*remembered, "judge.seed=3"], conf))
    # --reset (no overrides): the file goes, and DVC composes conf/ alone again
    save_overrides([], conf)
    assert not remembered_conf_path(conf).exists()
    assert _dvc_compose(repo_root, conf, tmp_path / "p3.yaml", flag) == plain
    # an override without a config spelling: nothing half-applied, and the user is told
    save_overrides(["deepscholar/systems=mine", "~judge.seed"], conf)
    assert not remembered_conf_path(conf).exists()
    assert "dvc exp run` cannot apply" in capsys.readouterr().err


def _composition_stops(
    repo_root: Path, conf: Path, work: Path, flags: list[str], capsys: pytest.CaptureFixture[str]
) -> str:
    """DVC's composition of `flags` (as `dvc exp run -S` composes) stops with exit 2; what it printed."""
    with pytest.raises(SystemExit) as stopped:
        _dvc_compose(repo_root, conf, work / "params.yaml", flags)
    assert stopped.value.code == 2
    return capsys.readouterr().err


@pytest.mark.integration
def test_dvc_exp_run_with_a_missing_release_source_stops_naming_key_path_and_doc(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dvc exp run -S researchqa/release=researchqa` without ../shared/data/researchqa ran other stages and then
    stopped with DVC's bare "dependency '…/shared/data/researchqa' does not exist". DVC's composition now stops
    first (exit 2) with the key, the missing path, the doc and the way back; the demo composes as before."""
    conf = _conf(repo_root, tmp_path)
    work = tmp_path / "work"  # ../shared/data/researchqa does not exist from here
    work.mkdir()
    monkeypatch.chdir(work)
    flags = ["benchmarks=[researchqa]", "researchqa/release=researchqa"]
    err = _composition_stops(repo_root, conf, work, flags, capsys)
    assert "error: release@researchqa reads ../shared/data/researchqa (benchmarks.researchqa.release.source)" in err
    assert "does not exist" in err and "docs/researchqa.md" in err and "researchqa/release=demo" in err
    monkeypatch.chdir(repo_root)  # the demo's sources are in the repository: composes
    params = _dvc_compose(repo_root, conf, tmp_path / "demo.yaml", ["benchmarks=[researchqa]"])
    assert params["plan"]["benchmarks"]["researchqa"]["release"] == "demo"


STORM = """# @package benchmarks.deepscholar.systems
my_storm:
  kind: storm
  model: openai/stub-model
  api_base: http://127.0.0.1:8765/v1
my_folder:
  kind: folder
  path: data/nowhere/my_reports
"""


@pytest.mark.integration
def test_dvc_exp_run_with_an_agent_not_installed_or_a_missing_folder_names_the_fix(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/agents.md's offline agent path without `reportbench agents install storm` stopped at the system stage
    with DVC's "dependency '.reportbench/agents/storm/lock.txt' does not exist"; a folder system whose folder is
    absent likewise. Composition now stops first naming the stage, the key and the command that fixes it."""
    conf = _conf(repo_root, tmp_path)
    (conf / "deepscholar" / "systems" / "my_storm.yaml").write_text(STORM)
    work = tmp_path / "work"  # the repository's data and code, no agent venvs
    work.mkdir()
    for name in ("data", "src"):
        (work / name).symlink_to(repo_root / name)
    monkeypatch.chdir(work)
    flags = ["benchmarks=[deepscholar]", "deepscholar/systems=my_storm"]
    err = _composition_stops(repo_root, conf, work, flags, capsys)
    assert "system@deepscholar.my_storm runs agent kind storm (benchmarks.deepscholar.systems.my_storm.kind)" in err
    assert ".reportbench/agents/storm/lock.txt does not exist" in err
    assert "run `reportbench agents install storm`" in err
    assert ("system@deepscholar.my_folder reads data/nowhere/my_reports "
            "(benchmarks.deepscholar.systems.my_folder.path)") in err
    assert "release@" not in err  # the demo's release is there


@pytest.mark.integration
@pytest.mark.parametrize(
    "flags",
    [
        {"dry": True, "allow_missing": True, "queue": False},
        {"dry": False, "allow_missing": False, "queue": False, "targets": ["judge@deepscholar"]},
    ],
    ids=["dry", "targets"],
)
def test_a_dry_dvc_exp_run_with_a_missing_release_source_warns_and_composes(
    repo_root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: dict[str, Any],
) -> None:
    """`dvc exp run --dry --allow-missing` (README: which stages an override would rerun) lists stages without
    running them, and `dvc exp run <targets>` runs only what the targets reach (maybe not the missing input): a
    missing input is said, not a stop."""
    from types import SimpleNamespace

    conf = _conf(repo_root, tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)

    class CmdExperimentsRun:  # DVC's command object, as found up the stack (its args: the CLI flags)
        args = SimpleNamespace(**flags)

        def run(self) -> dict[str, Any]:
            overrides = ["benchmarks=[researchqa]", "researchqa/release=researchqa"]
            return _dvc_compose(repo_root, conf, work / "params.yaml", overrides)

    params = CmdExperimentsRun().run()
    assert params["plan"]["benchmarks"]["researchqa"]["source"] == "../shared/data/researchqa"
    assert "warning: release@researchqa reads ../shared/data/researchqa" in capsys.readouterr().err
