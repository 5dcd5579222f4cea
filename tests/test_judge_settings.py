"""The judge config is parsed once at the stage boundary (judges/settings.py) and handed down typed: building the
judge and its client from a JudgeSettings walks the config no second time, and bad bounds fail at the parse."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportbench.config import composed_params
from reportbench.errors import ConfigError
from reportbench.judges import client as client_module
from reportbench.judges import llm as llm_module
from reportbench.judges import plain as plain_module
from reportbench.judges.factory import make_judge
from reportbench.judges.settings import JudgeSettings

pytestmark = pytest.mark.core


def test_a_parsed_judge_config_is_never_walked_again(repo_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = composed_params(["judge=stub"], conf_dir=repo_root / "conf", remembered=False)["judge"]
    cfg["runtime"].update(cache_path=None, progress=False)
    walks: list[object] = []
    real = plain_module.to_plain

    def counting(value: object) -> object:
        if isinstance(value, dict) and "backend" in value:  # a whole judge group (not the recursion's parts)
            walks.append(value)
        return real(value)

    monkeypatch.setattr(plain_module, "to_plain", counting)  # the recursion inside calls this name too
    monkeypatch.setattr(client_module, "to_plain", counting)
    monkeypatch.setattr(llm_module, "to_plain", counting)
    settings = JudgeSettings.parse(cfg)
    assert len(walks) == 1  # the one parse at the boundary
    judge = make_judge("support", settings, prompts_dir=repo_root / "prompts")
    assert len(walks) == 1, "the judge or its client re-parsed the config"
    assert judge.cfg.model == "openai/stub-judge" and judge.client.cfg is judge.cfg
    assert settings.backend == "litellm" and settings.max_failure_rate == 0.1 and settings.max_cost_usd is None


@pytest.mark.parametrize(
    ("key", "value"), [("max_failure_rate", 1.5), ("max_call_failure_rate", "x"), ("max_cost_usd", -1)]
)
def test_bad_runtime_bounds_fail_at_the_parse_naming_the_key(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=rf"judge\.runtime\.{key}"):
        JudgeSettings.parse({"backend": "offline", "runtime": {key: value}})
