"""Opt-in pipelines live in one place (`pipelines/<name>/`), and a pipeline written before the move is named.

Why: `reportbench live init` wrote `live/dvc.yaml` before the templates moved under `pipelines/`; its stages call
`live/run.py`, which is gone, so `init` must say what to do instead of leaving a pipeline that fails obscurely.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from reportbench.live_pipeline import FOLDERS, LiveInitError, init_live_pipeline, pipeline_dir

pytestmark = pytest.mark.core

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_every_template_runs_at_the_root_and_calls_scripts_that_exist(name: str) -> None:
    template = pipeline_dir(name, ROOT) / "dvc.template.yaml"
    doc = yaml.safe_load(template.read_text())
    # the root's params, then (the label pipeline) the release `reportbench label init` froze beside the template
    assert doc["vars"][0] == "../../params.yaml", template
    for extra in doc["vars"][1:]:
        assert "/" not in extra and extra.endswith(".yaml"), (template, extra)
    for stage, spec in doc["stages"].items():
        assert spec["wdir"] == "../..", (template, stage)
        for dep in spec["deps"]:
            generated = [f"pipelines/{name}/{v}" for v in doc["vars"][1:]]  # written by `init` beside dvc.yaml
            if "${" not in dep and not dep.startswith(("live/", "live_researchqa/", "data/", "metrics/")) \
                    and dep not in generated:
                assert (ROOT / dep).exists(), f"{template}: stage {stage} depends on missing {dep}"


def test_no_opt_in_pipeline_folder_at_the_top_level() -> None:
    assert not [d for d in ("live", "label", "live_researchqa") if (ROOT / d / "dvc.template.yaml").exists()]


def test_a_pre_move_pipeline_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "pipelines" / "live"
    folder.mkdir(parents=True)
    (folder / "dvc.template.yaml").write_text((pipeline_dir("live", ROOT) / "dvc.template.yaml").read_text())
    (tmp_path / "live").mkdir()
    (tmp_path / "live" / "dvc.yaml").write_text("stages: {}\n")
    path = init_live_pipeline(tmp_path)
    assert path == folder / "dvc.yaml"
    err = capsys.readouterr().err
    assert "live/dvc.yaml predates the move" in err and "pipelines/live/dvc.yaml" in err


def test_an_unknown_pipeline_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LiveInitError, match="unknown opt-in pipeline"):
        init_live_pipeline(tmp_path, name="nope")


def test_init_selects_its_config_group_and_keeps_a_chosen_option(tmp_path: Path) -> None:
    """The default params.yaml has no `live:`/`live_researchqa:` (DVC parses params.yaml once per stage of every
    `dvc repro`); `init` selects the group's default, remembered so `dvc exp run -S live.name=...` composes it."""
    import shutil

    from reportbench.config import load_params, remembered_overrides
    from reportbench.live_pipeline import select_config_group

    shutil.copytree(ROOT / "conf", tmp_path / "conf", ignore=shutil.ignore_patterns("remembered"))
    for name in ("live", "live_researchqa"):
        folder = pipeline_dir(name, tmp_path)
        folder.mkdir(parents=True)
        shutil.copy2(pipeline_dir(name, ROOT) / "dvc.template.yaml", folder / "dvc.template.yaml")
    default = load_params(ROOT / "params.yaml")
    assert "live" not in default and "live_researchqa" not in default

    init_live_pipeline(tmp_path, name="live")
    params = load_params(tmp_path / "params.yaml")
    assert params["live"]["name"] and "live_researchqa" not in params
    assert remembered_overrides(tmp_path / "conf") == ["live=default"]
    assert "override /live: default" in (tmp_path / "conf" / "remembered" / "overrides.yaml").read_text()

    # a second init (another pipeline) adds its group; an option already chosen stays
    (tmp_path / "overrides.yaml").write_text("overrides:\n- live=monthly\n")
    init_live_pipeline(tmp_path, name="live_researchqa")
    assert remembered_overrides(tmp_path / "conf") == ["live=monthly", "live_researchqa=default"]
    params = load_params(tmp_path / "params.yaml")
    assert params["live_researchqa"]["name"] and "cs.AI" in params["live"]["categories"]
    assert select_config_group("label", tmp_path) is None  # the label pipeline reads no group of its own
