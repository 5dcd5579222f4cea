"""conf/ (Hydra) is the source of truth; params.yaml must be exactly its composition."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from reportbench.config import ConfigError, composed_params, diff_params, load_params, require
from reportbench.plan import judge_units

pytestmark = pytest.mark.core


def test_params_yaml_is_in_sync_with_conf(repo_root: Path) -> None:
    expected = composed_params(conf_dir=repo_root / "conf")
    actual = yaml.safe_load((repo_root / "params.yaml").read_text())
    assert diff_params(expected, actual) == [], "params.yaml is stale: run `reportbench compose`"


def test_every_judge_option_composes_and_builds_a_judge(repo_root: Path) -> None:
    from reportbench.judges.factory import make_judge

    for option in sorted(p.stem for p in (repo_root / "conf" / "judge").glob("*.yaml")):
        params = composed_params([f"judge={option}"], conf_dir=repo_root / "conf")
        assert params["judge"]["name"] == option
        cfg = dict(params["judge"], prompts_dir=str(repo_root / "prompts"))
        for task in ("organization", "nugget_assign", "relevance", "support"):
            assert make_judge(task, cfg) is not None


def test_overrides_reach_params_and_the_plan_follows_systems(repo_root: Path) -> None:
    params = composed_params(
        ["judge=llm", "judge.model=anthropic/claude-sonnet-4-5", "deepscholar/systems=deepscholar_baselines"],
        conf_dir=repo_root / "conf",
    )
    assert params["judge"]["backend"] == "litellm"
    assert params["judge"]["model"] == "anthropic/claude-sonnet-4-5"
    systems = params["benchmarks"]["deepscholar"]["systems"]
    assert params["plan"]["benchmarks"]["deepscholar"]["systems"] == sorted(systems)
    runs = [k for k, r in params["plan"]["runs"].items() if r["benchmark"] == "deepscholar"]
    judges = list(judge_units(params["plan"], "deepscholar"))
    assert sorted(runs) == sorted(judges) == sorted(f"deepscholar.{s}" for s in systems)


def test_no_secret_shaped_values_in_params(repo_root: Path) -> None:
    text = (repo_root / "params.yaml").read_text()
    assert "sk-" not in text and "api_key:" not in text  # keys come only from the environment


def test_missing_keys_name_the_file_and_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="params.yaml: not found"):
        load_params(tmp_path / "params.yaml")
    with pytest.raises(ConfigError, match="missing key 'judge.model'"):
        require({"judge": {}}, "judge.model")
