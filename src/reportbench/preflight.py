"""What a stage checks in `params.yaml` before it does any work: problems no retry fixes, found in milliseconds,
so `dvc repro` stops at the first stage that runs instead of after minutes of release and system stages.

- A top-level key that is no reportbench setting (e.g. `deer:` from a system file without its package line,
  composed by an older reportbench or written by hand): the key, where it came from, the fix.
- A benchmark params.yaml selects that is not installed (params.yaml composed where a plug-in was installed):
  install it, or recompose from what is installed.
- With `credentials=True` (the stages before judging: release, system, fetch): every configured judge role's
  key (`judge.model`, `judge.task_models.*`, every ensemble member of every selected benchmark) is in the
  environment. Cheap: a provider prefix litellm maps to one variable is checked from `PROVIDER_KEYS` without
  importing litellm (~3.5 s); only another model string asks litellm itself (`judges.client.preflight_problem`).
  The stages after judging do not check: a judge stage whose answers are all cached needs no key.

Each problem is one `error:` line and exit 2 (stage_errors.exit_on_error).
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from reportbench.conf_checks import stray_keys_problem
from reportbench.config import PARAMS_FILE, load_params
from reportbench.errors import ConfigError
from reportbench.judges.errors import FatalJudgeError
from reportbench.validate import merge_member

ENTRY_POINT_GROUP = "reportbench.benchmarks"  # = reportbench.benchmarks.ENTRY_POINT_GROUP (tested)

# litellm's `validate_environment(model)` for these provider prefixes asks for exactly this variable
# (tests/test_preflight.py compares every entry with litellm itself).
PROVIDER_KEYS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}


def judge_role_configs(params: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(role, client config) for every litellm judge role the selected benchmarks use: `judge.model`, each
    `judge.task_models` entry, under every ensemble member's overrides (`benchmarks.<b>.judges.<m>`)."""
    judge = params.get("judge") or {}
    for b, cfg in (params.get("benchmarks") or {}).items():
        for m, overrides in ((cfg or {}).get("judges") or {"main": {}}).items():
            merged = merge_member(judge, overrides if isinstance(overrides, Mapping) else {})
            if str(merged.get("backend", "offline")) != "litellm":
                continue
            where = "judge" if not overrides else f"benchmarks.{b}.judges.{m}"
            yield f"{where}.model", merged
            for task, model in sorted((merged.get("task_models") or {}).items()):
                if model:
                    yield f"{where}.task_models.{task}", {**merged, "model": model}


def missing_key(cfg: Mapping[str, Any]) -> tuple[str, str] | None:
    """(variable, fix) when the key `cfg` needs is not in the environment; None when it is or none is needed."""
    env, base, model = cfg.get("api_key_env"), cfg.get("api_base"), str(cfg.get("model") or "")
    if env:
        return (str(env), f"set {env} in the environment (judge.api_key_env names it)") if not os.environ.get(
            str(env)
        ) else None
    if base:
        return None  # a self-hosted endpoint (the loopback stub) needs no key unless api_key_env names one
    provider = model.split("/", 1)[0] if "/" in model else ""
    name = PROVIDER_KEYS.get(provider)
    if name is not None:
        if os.environ.get(name):
            return None
        return name, f"set {name} in the environment (or name the variable holding the key in judge.api_key_env)"
    # another model string: litellm itself (its import costs seconds, paid only here)
    from reportbench.judges.client import preflight_problem  # lazy: +3500 ms to import (python -X importtime)

    problem = preflight_problem(dict(cfg))
    if problem is None or problem[0] != "auth":
        return None
    variable = problem[1].split(" not set")[0]
    return variable, f"set {variable} in the environment (or name the variable holding the key in judge.api_key_env)"


def check_credentials(params: Mapping[str, Any]) -> None:
    """FatalJudgeError (exit 2) for the first judge role whose key is not in the environment."""
    seen: set[tuple[Any, ...]] = set()
    for role, cfg in judge_role_configs(params):
        ident = (cfg.get("model"), cfg.get("api_key_env"), cfg.get("api_base"))
        if ident in seen:
            continue
        seen.add(ident)
        missing = missing_key(cfg)
        if missing is not None:
            variable, fix = missing
            raise FatalJudgeError(
                judge=str(cfg.get("name") or "judge"),
                model=str(cfg.get("model")),
                kind="auth",
                fix=fix,
                detail=f"{variable} not set for {role} (checked before any stage does work)",
            )


def check_installed(params: Mapping[str, Any]) -> None:
    """ConfigError for a benchmark params.yaml selects that is not installed."""
    # the entry points themselves, not reportbench.benchmarks (its import, ~0.7 s, is a stage's own business)
    installed = {ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    missing = [b for b in (params.get("benchmarks") or {}) if b not in installed]
    if missing:
        raise ConfigError(
            f"{PARAMS_FILE}: benchmark {missing[0]!r} is selected but not installed (installed: "
            f"{', '.join(sorted(installed))}): reinstall reportbench (`pip install -c constraints.txt -e '.[test]'`) "
            "or the plug-in that provides it, or run `reportbench compose` to recompose params.yaml from what is "
            "installed"
        )


def check_params(params: Mapping[str, Any], *, credentials: bool, conf_dir: Path | str = "conf") -> None:
    """Every check of this module on a loaded params.yaml (the stray-key check needs conf/config.yaml)."""
    problem = stray_keys_problem(params, conf_dir)
    if problem:
        raise ConfigError(problem)
    check_installed(params)
    if credentials:
        check_credentials(params)


def stage_params(path: Path | str = PARAMS_FILE, *, credentials: bool = False) -> dict[str, Any]:
    """`load_params(path)`, checked (`check_params`) before the stage does any work."""
    params = load_params(path)
    check_params(params, credentials=credentials)
    return params
