"""Config validation at composition time (`reportbench compose`, `dvc exp run`): one line per problem.

Why here: a bad value used to surface minutes later inside a stage (or as a 45-line traceback), and an offline
ablation that changes nothing real (`-S judge.model=` or `-S judge.temperature=0.3` with the offline judge)
silently changed a DVC param and reran every judge stage. Every judge, ensemble member, system and release
entry is checked against what its backend or kind accepts; invalid values raise `ConfigError` naming the key,
the bad value and the valid choices. Settings the offline judge ignores are reported as warnings and left out
of `judge_identity` (the one judge param the judge stages declare), so they rerun nothing.

Unknown keys are warnings, not errors: other parts of reportbench add knobs (e.g. `judge.runtime.*`), and a
warning names the keys that are known.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping
from typing import Any

from reportbench.errors import ConfigError

JUDGE_BACKENDS = ("offline", "litellm")
STRUCTURED_OUTPUT = ("auto", "json_schema", "json_object", "none")
PROMPT_PACKS = ("ours", "authors")
# the built-in kinds registered by reportbench.systems (tests/test_validation.py checks the two lists agree)
SYSTEM_KINDS = ("folder", "offline_baseline", "deepscholar_ref", "human_exemplar", "command", "endpoint")
OFFLINE_MODEL = "offline-lexical-v1"
# judge fields that change an answer (judge_identity); `name` and `runtime` never do
JUDGE_IDENTITY_KEYS = (
    "backend",
    "model",
    "api_base",
    "temperature",
    "seed",
    "max_tokens",
    "output_budgets",  # per judge step (judges/budgets.py); the identity carries the resolved table
    "request_params",
    "structured_output",
    "task_models",
    "offline",
    "prompts",
    "request",  # ours | authors: the authors' request kwargs exactly (judges/llm.py _with_step_request)
)
# what the offline backend reads from the judge group (the rest is ignored by it)
OFFLINE_READS = ("backend", "offline", "prompts")
JUDGE_KEYS = (
    *JUDGE_IDENTITY_KEYS,
    "name",
    "api_key_env",
    "prompts_dir",
    "runtime",
    # client.ClientConfig fields that change the price or the transport, never the answer
    "input_cost_per_token",
    "output_cost_per_token",
    "drop_params",
)
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_WARNED: set[str] = set()


def warn(message: str) -> None:
    """One `warning:` line on stderr (once per process: DVC may compose more than once)."""
    if message not in _WARNED:
        _WARNED.add(message)
        print(f"warning: {message}", file=sys.stderr)


def _choices(where: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ConfigError(f"{where}: {value!r} is not valid; choose one of {', '.join(choices)}")


def _number(where: str, value: Any, lo: float | None = None, hi: float | None = None, integer: bool = False) -> None:
    kind = "an integer" if integer else "a number"
    ok = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not ok or (not integer and not math.isfinite(value)):
        raise ConfigError(f"{where}: {value!r} is not {kind}" + (f" in [{lo}, {hi}]" if lo is not None else ""))
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bounds = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise ConfigError(f"{where}: {value!r} is out of range; expected {kind} {bounds}")


def _text(where: str, value: Any, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {value!r} must be a non-empty string")


def _unknown(where: str, cfg: Mapping[str, Any], known: tuple[str, ...]) -> None:
    extra = sorted(set(cfg) - set(known))
    if extra:
        warn(f"{where}: unknown key(s) {', '.join(extra)} (known: {', '.join(sorted(known))})")


def validate_judge(cfg: Mapping[str, Any], where: str = "judge", warn_ignored: bool = True) -> None:
    """Check one judge config (the `judge` group, or it merged with an ensemble member's overrides).

    `warn_ignored`: warn about settings the offline judge ignores (off for ensemble members, whose model
    overrides are there for LLM runs).
    """
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(cfg).__name__}")
    backend = cfg.get("backend")
    _choices(f"{where}.backend", backend, JUDGE_BACKENDS)
    if warn_ignored:
        _unknown(where, cfg, JUDGE_KEYS)
    _choices(f"{where}.prompts", cfg.get("prompts", "ours"), PROMPT_PACKS)
    if "temperature" in cfg:
        _number(f"{where}.temperature", cfg["temperature"], 0.0, 2.0)
    if cfg.get("seed") is not None:
        _number(f"{where}.seed", cfg["seed"], integer=True)
    if cfg.get("max_tokens") is not None:
        _number(f"{where}.max_tokens", cfg["max_tokens"], 1, integer=True)
    _choices(f"{where}.structured_output", cfg.get("structured_output", "none"), STRUCTURED_OUTPUT)
    _text(f"{where}.api_base", cfg.get("api_base"), optional=True)
    key_env = cfg.get("api_key_env")
    if key_env is not None and (not isinstance(key_env, str) or not ENV_NAME.match(key_env)):
        raise ConfigError(f"{where}.api_key_env: {key_env!r} must be the NAME of an environment variable")
    budgets = cfg.get("output_budgets") or {}
    if not isinstance(budgets, Mapping):
        raise ConfigError(f"{where}.output_budgets: expected a mapping task -> max completion tokens, got {budgets!r}")
    for task, n in budgets.items():
        if n is not None:
            _number(f"{where}.output_budgets.{task}", n, 1, integer=True)
    if not isinstance(cfg.get("request_params") or {}, Mapping):
        raise ConfigError(f"{where}.request_params: expected a mapping of request keys, got {cfg['request_params']!r}")
    task_models = cfg.get("task_models") or {}
    if not isinstance(task_models, Mapping):
        raise ConfigError(f"{where}.task_models: expected a mapping task -> model, got {task_models!r}")
    for task, model in task_models.items():
        _text(f"{where}.task_models.{task}", model)
    offline = cfg.get("offline") or {}
    if not isinstance(offline, Mapping):
        raise ConfigError(f"{where}.offline: expected a mapping of threshold sections, got {offline!r}")
    if offline:
        from reportbench.judges.offline import resolve_params  # lazy: +462 ms to import (python -X importtime)

        try:
            resolve_params(offline)
        except ValueError as exc:
            raise ConfigError(f"{where}.offline: {exc}") from None
    runtime = cfg.get("runtime") or {}
    if not isinstance(runtime, Mapping):
        raise ConfigError(f"{where}.runtime: expected a mapping, got {runtime!r}")
    for key in ("max_concurrency", "max_retries", "parse_retries"):
        if key in runtime:
            _number(f"{where}.runtime.{key}", runtime[key], 1 if key == "max_concurrency" else 0, integer=True)
    for key in ("timeout_s", "backoff_base_s", "backoff_max_s"):
        if key in runtime:
            _number(f"{where}.runtime.{key}", runtime[key], 0.0)
    for key in ("max_failure_rate", "max_call_failure_rate"):  # judge-stage failure bounds (docs/reliability.md)
        if key in runtime:
            _number(f"{where}.runtime.{key}", runtime[key], 0.0, 1.0)
    reask = runtime.get("reask_parse_failures", False)
    if not isinstance(reask, bool):
        raise ConfigError(f"{where}.runtime.reask_parse_failures: {reask!r} must be true or false")
    if backend == "litellm":
        _text(f"{where}.model", cfg.get("model"))
    elif warn_ignored:  # offline: only thresholds and the prompt pack matter; say what is ignored, rerun nothing
        ignored = []
        if cfg.get("model") not in (None, OFFLINE_MODEL):
            ignored.append(f"model={cfg.get('model')!r}")
        if cfg.get("temperature") not in (None, 0, 0.0):
            ignored.append(f"temperature={cfg.get('temperature')!r}")
        if task_models:
            ignored.append("task_models")
        if ignored:
            warn(f"{where}: the offline judge ignores {', '.join(ignored)}; judge stages are not rerun for it")


def judge_identity(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Every judge setting that can change an answer, for the backend in use (the `judge_identity` param)."""
    validate_judge(cfg)
    if cfg.get("backend") == "offline":
        ident = {k: cfg.get(k) for k in OFFLINE_READS}
        ident["model"] = OFFLINE_MODEL
        ident["offline"] = dict(cfg.get("offline") or {})
        return ident
    from reportbench.judges.budgets import resolved_table  # lazy: +12 ms to import (python -X importtime)

    ident = {k: cfg.get(k) for k in JUDGE_IDENTITY_KEYS}
    ident["output_budgets"] = resolved_table(cfg)  # a budget edited in code reruns the judge stages too
    return ident


def merge_member(judge: Mapping[str, Any], overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The judge group with an ensemble member's overrides (one level of nesting merged), as the stages do."""
    out = dict(judge)
    for key, value in (overrides or {}).items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def judge_config(params: Mapping[str, Any], task: str, benchmark: str | None = None, member: str | None = None) -> dict:
    """The `judge` group with the ensemble member's overrides (`merge_member`), then the task's grader role
    (`judge.task_models[task]` overrides the model). What every stage and protocol builds a judge from."""
    if not isinstance(params, dict) or "judge" not in params:
        raise ConfigError("params.yaml: missing key 'judge'")
    cfg = dict(params["judge"])
    if benchmark is not None and member is not None:
        members = (params.get("benchmarks") or {}).get(benchmark, {}).get("judges") or {"main": {}}
        if member not in members:
            raise ConfigError(f"params.yaml: benchmarks.{benchmark}.judges has no member {member!r}")
        cfg = merge_member(cfg, members[member] or {})
    role = (cfg.get("task_models") or {}).get(task)
    if role:
        cfg["model"] = role
    return cfg


def validate_release(benchmark: str, cfg: Any) -> None:
    where = f"benchmarks.{benchmark}.release"
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {cfg!r}")
    name = cfg.get("name")
    if not isinstance(name, str) or not SAFE_NAME.match(name) or ".." in name:
        raise ConfigError(
            f"{where}.name: {name!r} is not a usable release name (letters, digits, '.', '_', '-'; no '/' or '..')"
        )
    _text(f"{where}.kind", cfg.get("kind"), optional=True)  # each benchmark's importer checks its own kinds
    if cfg.get("max_tasks") is not None:
        _number(f"{where}.max_tasks", cfg["max_tasks"], 1, integer=True)
    from reportbench.release.subset import release_limit  # lazy: +530 ms to import (python -X importtime)

    release_limit(cfg, where)  # the quick subset (release/subset.py): null or a positive integer
    source = cfg.get("source")
    if source is not None and not isinstance(source, str):
        raise ConfigError(f"{where}.source: {source!r} must be a path or URL string")


def _formats() -> tuple[str, ...]:
    from reportbench.reports.base import list_formats  # lazy: +296 ms to import (python -X importtime)

    return ("auto", *list_formats())


def _system_kinds(benchmark: str | None) -> tuple[str, ...]:
    """Built-in kinds plus those the benchmark's spec declares (`BenchmarkSpec.system_kinds`): the systems
    package is never imported to validate a config."""
    extra: tuple[str, ...] = ()
    if benchmark is not None:
        from reportbench.benchmarks import get_benchmark  # lazy: +355 ms to import (python -X importtime)

        try:
            extra = get_benchmark(benchmark).system_kinds
        except Exception:  # noqa: BLE001 - an unknown benchmark is reported elsewhere
            pass
    from reportbench.agents.protocol import AGENT_KINDS  # lazy: +110 ms to import (python -X importtime)

    return tuple(sorted({*SYSTEM_KINDS, *AGENT_KINDS, *extra}))


def _validate_agent(where: str, spec: Mapping[str, Any]) -> None:
    """An agent entry (docs/agents.md): its typed model, the first error naming the field."""
    from pydantic import ValidationError

    from reportbench.agents.protocol import AgentSystemConfig  # lazy: +110 ms to import (python -X importtime)

    try:
        AgentSystemConfig.model_validate(dict(spec))
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"{where}.{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None


def _folder_options(where: str, spec: Mapping[str, Any]) -> None:
    """The folder kind's mapping options (docs/mapping.md), checked when the config is composed."""
    if spec.get("layout") is not None:
        _choices(f"{where}.layout", spec["layout"], ("auto", "flat", "task_folders", "per_model"))
    if spec.get("shift_check") is not None:
        _choices(f"{where}.shift_check", spec["shift_check"], ("error", "warn", "off"))
    allow = spec.get("allow_missing")
    if allow is not None and not isinstance(allow, bool):
        _number(f"{where}.allow_missing", allow, 0.0, 1.0)


def validate_system(where: str, spec: Any, benchmark: str | None = None) -> None:
    """The fields every system kind shares; each kind checks its own knobs when it runs (one line each)."""
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}: expected a mapping with a 'kind', got {spec!r}")
    from reportbench.agents.protocol import AGENT_KINDS  # lazy: +110 ms to import (python -X importtime)

    if spec.get("kind") in AGENT_KINDS:
        _validate_agent(where, spec)
        return
    if spec.get("kind") not in SYSTEM_KINDS:
        _choices(f"{where}.kind", spec.get("kind"), _system_kinds(benchmark))
    if spec.get("path") is not None:
        _text(f"{where}.path", spec.get("path"))
    if spec.get("format") is not None:
        _choices(f"{where}.format", spec.get("format"), _formats())
    if spec.get("timeout_s") is not None:
        _number(f"{where}.timeout_s", spec["timeout_s"], 0.0)
    kind = spec.get("kind")
    if kind == "folder":
        _text(f"{where}.path", spec.get("path"))
        _folder_options(where, spec)
    if kind == "command":
        cmd = spec.get("cmd")
        if not isinstance(cmd, list) or not cmd or not all(isinstance(a, str | int | float) for a in cmd):
            raise ConfigError(f"{where}.cmd: {cmd!r} must be a non-empty argv list (no shell), e.g. [python, x.py]")
    if kind in ("endpoint", "deepscholar_ref"):
        _text(f"{where}.model", spec.get("model"))
        key_env = spec.get("api_key_env")
        if key_env is not None and (not isinstance(key_env, str) or not ENV_NAME.match(key_env)):
            raise ConfigError(f"{where}.api_key_env: {key_env!r} must be the NAME of an environment variable")
        if "temperature" in spec:
            _number(f"{where}.temperature", spec["temperature"], 0.0, 2.0)
