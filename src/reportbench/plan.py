"""The DVC stage fan-out, derived from the composed config (the `rb_plan` OmegaConf resolver).

DVC's `foreach` needs flat dictionaries: one entry per benchmark (release, fetch, judge, cross, score and,
when enabled, agreement stages) and one per (benchmark, system) run (system stages); `judge_units` derives the
(benchmark, system, judge member) units a judge stage runs. Hydra cannot build cross products with its built-in
resolvers, so `conf/config.yaml` sets `plan: ${rb_plan:}` and this module computes it.
`dvc exp run` loads the resolver through `hydra_plugins/reportbench_resolvers` (DVC puts the repository root
on Hydra's plugin path); `reportbench compose` registers it directly. The result is written into
`params.yaml`, so stages and `dvc repro` only ever read plain values.

Names: a run is `<benchmark>.<system>`; a judge unit is `<benchmark>.<system>` when the benchmark has the
single member `main`, else `<benchmark>.<system>.<member>`. Systems are defined per benchmark
(`benchmarks.<b>.systems`) or once as `agents` (kinds command/endpoint), which run on every enabled benchmark.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

AGENT_KINDS = ("command", "endpoint")
DEFAULT_MEMBER = "main"


class PlanError(ValueError):
    """The benchmark/system configuration cannot be turned into stages; the message names the key."""


def agreement_enabled(agreement: Mapping[str, Any] | None) -> bool:
    """Whether `agreement@<b>` stages exist: `agreement.enabled` true, or `auto` (the default) and a second
    judge configured (`agreement.second_judge` other than `none`). Off by default: the stage re-judges a
    sample with a second judge, which costs more than the rest of a demo run and adds nothing to its scores."""
    cfg = dict(agreement or {})
    enabled = cfg.get("enabled", "auto")
    if enabled == "auto":
        second = cfg.get("second_judge", "none")
        return second is not None and second != "none"
    if not isinstance(enabled, bool):
        raise PlanError(f"agreement.enabled: {enabled!r}; expected true, false or auto")
    return enabled


def build_plan(
    benchmarks: Mapping[str, Any] | None,
    agents: Mapping[str, Any] | None,
    judge: Mapping[str, Any] | None = None,
    agreement: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Stage fan-out for the enabled benchmarks (every key of `benchmarks`) and shared agents.

    Entries hold only what dvc.yaml cannot spell itself (paths are built there from benchmark, release and
    system names; a benchmark's `code` and `prompts` come from its entry point, reportbench.benchmarks): DVC
    re-parses params.yaml for every stage, so its size is paid once per stage. Every release, system and (with
    `judge`) ensemble member is validated first (reportbench.validate): one line naming the key, the bad value
    and the valid choices.
    """
    from reportbench.benchmarks import BenchmarkError, benchmark_files  # lazy: +996 ms to import (python -X importtime)
    from reportbench.release.subset import release_dir_name  # lazy: +530 ms to import (python -X importtime)

    # lazy: +23 ms to import (python -X importtime)
    from reportbench.validate import merge_member, validate_judge, validate_release, validate_system

    benchmarks = dict(benchmarks or {})
    agents = dict(agents or {})
    # lazy: +141 ms to import (python -X importtime)
    from reportbench.agents.protocol import AGENT_KINDS as RUN_AGENT_KINDS  # pure data (docs/agents.md)

    for name, spec in agents.items():
        kind = (spec or {}).get("kind")
        if kind not in AGENT_KINDS + RUN_AGENT_KINDS:
            raise PlanError(f"agents.{name}.kind: {kind!r}; an agent must be one of {AGENT_KINDS + RUN_AGENT_KINDS}")
        validate_system(f"agents.{name}", spec)
    for b in sorted(benchmarks):
        cfg = benchmarks[b] or {}
        validate_release(b, cfg.get("release"))
        for s, spec in (cfg.get("systems") or {}).items():
            validate_system(f"benchmarks.{b}.systems.{s}", spec, b)
        if judge is not None:
            for m, overrides in (cfg.get("judges") or {}).items():
                if overrides is not None and not isinstance(overrides, Mapping):
                    raise PlanError(f"benchmarks.{b}.judges.{m}: expected a mapping of judge overrides")
                validate_judge(merge_member(judge, overrides), f"benchmarks.{b}.judges.{m}", warn_ignored=False)
    plan: dict[str, Any] = {"benchmarks": {}, "fetch": {}, "cross": {}, "agreement": {}}
    with_agreement = agreement_enabled(agreement)
    runs: dict[str, Any] = {}
    for b in sorted(benchmarks):
        cfg = benchmarks[b] or {}
        if "." in b:
            raise PlanError(f"benchmarks.{b}: a benchmark name may not contain '.'")
        if not (cfg.get("release") or {}).get("name"):
            raise PlanError(f"benchmarks.{b}.release.name is missing")
        # `<name>-limit<N>` for a quick subset: never the full release's folders (release/subset.py)
        release = release_dir_name(cfg["release"], f"benchmarks.{b}.release")
        release_dir = f"data/releases/{b}/{release}"
        stages = cfg.get("stages") or {}
        pages, cross = bool(stages.get("fetch", False)), bool(stages.get("cross", False))
        systems = _expanded(cfg.get("systems") or {})
        clash = sorted(set(systems) & set(agents))
        if clash:
            raise PlanError(f"benchmarks.{b}.systems and agents both define {clash}; rename one")
        members = sorted((cfg.get("judges") or {DEFAULT_MEMBER: {}}).keys())
        names = sorted(systems) + sorted(agents)
        # a dependency that always exists when an optional stage is off (DVC accepts a repeated dep)
        pages_dep = f"data/pages/{b}/{release}" if pages else release_dir
        try:
            files = benchmark_files(b)  # its code and prompts, wherever its distribution put them
        except BenchmarkError as exc:
            raise PlanError(f"benchmarks.{b}: {exc.args[0]}") from exc
        deps = {"code": files.code, "prompts": files.prompts}
        # a release built in code (no `source`) depends on that code: never on its own output folder
        source = (cfg.get("release") or {}).get("source") or files.code
        entry = {"release": release, "source": source, **deps}
        plan["benchmarks"][b] = {
            **entry,
            "systems": names,
            "members": members,
            "cross_dep": f"data/cross/{b}/{release}" if cross else release_dir,
            "pages_dep": pages_dep,
        }
        if pages:
            plan["fetch"][b] = entry
        if cross:
            plan["cross"][b] = entry
        if with_agreement:
            keys = ("release", "source", "cross_dep", "pages_dep")
            plan["agreement"][b] = {k: plan["benchmarks"][b][k] for k in keys}
        for s in names:
            if "." in s:
                raise PlanError(f"benchmarks.{b}.systems.{s}: a system name may not contain '.'")
            is_agent = s in agents
            spec = agents[s] if is_agent else systems[s]
            own = f"agents.{s}" if is_agent else f"benchmarks.{b}.systems.{_entry_name(s, spec)}"
            # an agent's search proxy reads result pages through the spine's fetch path (agents.search.pages):
            # its stage declares `fetch` and the benchmark's recorded pages; other kinds repeat their own params
            # key (DVC lists a repeated param once: their dvc.lock entries are unchanged)
            reads_pages = (spec or {}).get("kind") in PAGE_READING_KINDS
            runs[f"{b}.{s}"] = {
                "benchmark": b,
                "system": s,
                "release": release,
                "params": own,
                "fetch_params": "fetch" if reads_pages else own,
                "seeds_params": f"benchmarks.{b}.fetch_seeds" if reads_pages and "fetch_seeds" in cfg else own,
                "path": _run_path(spec),
                "env_lock": _env_lock(spec),
            }
    plan["runs"] = runs
    # the one `site` stage's optional deps (DVC interpolates no lists: a folder that exists when no benchmark
    # fetches pages or judges across systems is named instead, as `pages_dep`/`cross_dep` do per benchmark)
    fetches, crosses = bool(plan["fetch"]), bool(plan["cross"])
    plan["site"] = {
        "pages_dep": "data/pages" if fetches else "data/releases",
        "cross_dep": "data/cross" if crosses else "data/releases",
    }
    return plan


def judge_units(plan: Mapping[str, Any], benchmark: str | None = None) -> dict[str, dict[str, Any]]:
    """Every (system, judge member) unit the stage `judge@<b>` runs, keyed `<b>.<S>` (`<b>.<S>.<m>` for an
    ensemble), in plan order. Derived from `plan.benchmarks` rather than stored in params.yaml, which DVC parses
    once per stage."""
    units: dict[str, dict[str, Any]] = {}
    for b, entry in (plan.get("benchmarks") or {}).items():
        if benchmark is not None and b != benchmark:
            continue
        members = list(entry.get("members") or [DEFAULT_MEMBER])
        for s in entry.get("systems") or []:
            for m in members:
                key = f"{b}.{s}" if members == [DEFAULT_MEMBER] else f"{b}.{s}.{m}"
                units[key] = {"benchmark": b, "system": s, "member": m, "release": entry["release"]}
    return units


def _expanded(systems: Any) -> dict[str, Any]:
    """Systems with `layout: per_model` parents turned into one system per subfolder (docs/mapping.md)."""
    from reportbench.systems.folder import expand_per_model  # lazy: +586 ms to import (python -X importtime)

    try:
        return expand_per_model(dict(systems))
    except ValueError as exc:
        raise PlanError(str(exc)) from exc


def _entry_name(system: str, spec: Any) -> str:
    """The config entry a system comes from (a per_model parent for its subfolder systems)."""
    return str((spec or {}).get("parent_entry") or system)


def _run_path(spec: Any) -> str:
    """What a system stage reads: its path (the model's subfolder of a per_model parent)."""
    spec = spec or {}
    path = spec.get("path") or _default_path(spec)
    return f"{path}/{spec['subfolder']}" if spec.get("subfolder") else str(path)


def _default_path(spec: Any) -> str:
    """The code a system stage depends on when its entry names none: the agents' package for agent kinds."""
    # lazy: +141 ms to import (python -X importtime)
    from reportbench.agents.protocol import AGENT_KINDS as RUN_AGENT_KINDS  # pure data

    return "src/reportbench/agents" if (spec or {}).get("kind") in RUN_AGENT_KINDS else "src/reportbench/systems"


# the agent kinds whose search proxy answers page-text requests (pipeline.AGENT_PAGE_KINDS)
PAGE_READING_KINDS = ("storm", "open_deep_research", "gpt_researcher", "smolagents_deep_research", "search_llm")


def _env_lock(spec: Any) -> str:
    """The environment a system runs in, as a DVC dependency: a venv kind's lock (`reportbench agents install`),
    reportbench's own constraints for the built-in agent kinds, the systems' shared records for the rest."""
    # lazy: +141 ms to import (python -X importtime)
    from reportbench.agents.protocol import BUILTIN_KINDS, VENV_KINDS, lock_path

    kind = (spec or {}).get("kind")
    if kind in VENV_KINDS:
        return lock_path(kind)
    return "constraints.txt" if kind in BUILTIN_KINDS else "src/reportbench/systems/base.py"


def missing_release_sources(params: Mapping[str, Any], root: Path = Path("."), fix: str = "") -> list[str]:
    """One line per planned stage input DVC would find missing — a release's local `source`, a system's folder, a
    venv agent kind's lock (`reportbench agents install <kind>`) — naming the stage, the key, the path and the fix:
    `dvc repro` / `dvc exp run` would stop there with DVC's bare "dependency ... does not exist". `fix`: the way
    back to the demo for the caller's path (`{b}`: the benchmark)."""
    from reportbench.agents.protocol import VENV_KINDS, lock_path  # lazy: +141 ms to import (python -X importtime)

    plan = params.get("plan") or {}
    out = []
    for b, entry in (plan.get("benchmarks") or {}).items():
        source = str((entry or {}).get("source") or "")
        if not source or "://" in source or (root / source).exists():
            continue
        out.append(
            f"release@{b} reads {source} (benchmarks.{b}.release.source), which does not exist, so release@{b} "
            f"cannot run. Put the data there (docs/{b.replace('_', '-')}.md says where it comes from) or point "
            f"benchmarks.{b}.release.source (and .path) at your copy" + (f"; {fix.format(b=b)}" if fix else "")
        )
    locks = {lock_path(k): k for k in VENV_KINDS}
    for run in (plan.get("runs") or {}).values():
        stage, key = f"system@{run.get('benchmark')}.{run.get('system')}", run.get("params")
        lock, path = str(run.get("env_lock") or ""), str(run.get("path") or "")
        if lock in locks and not (root / lock).exists():
            out.append(
                f"{stage} runs agent kind {locks[lock]} ({key}.kind) in its own venv, which is not installed "
                f"({lock} does not exist): run `reportbench agents install {locks[lock]}` (needs: network; "
                "docs/agents.md, \"Isolated environments\")"
            )
        if path and "://" not in path and not (root / path).exists():
            out.append(
                f"{stage} reads {path} ({key}.path), which does not exist: put the system's reports there or point "
                f"{key}.path at them (docs/systems.md)"
            )
    return out


def _resolve_plan(*, _root_: Any) -> Any:
    from omegaconf import OmegaConf

    def plain(key: str) -> dict[str, Any]:
        node = _root_.get(key)
        return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_dict(node) else {}  # type: ignore[return-value]

    from reportbench import conf_checks  # lazy: +2 ms to import (python -X importtime)
    from reportbench.conf_checks import fail, stray_keys_problem  # lazy: +2 ms to import (python -X importtime)
    from reportbench.errors import ConfigError  # lazy: +0 ms to import (python -X importtime)
    from reportbench.hydra_search import main_conf_dir  # lazy: +1269 ms to import (python -X importtime)

    # the top-level keys only (reading `plan` here would call this resolver again); a stray key's first child
    keys = {str(k): None for k in _root_.keys()}
    for k in keys:
        node = _root_._get_node(k)
        if OmegaConf.is_dict(node) and k not in ("plan", "judge_identity"):
            keys[k] = {str(c): None for c in node.keys()}
    problem = stray_keys_problem(keys, main_conf_dir(), source="the composition")
    if problem:
        fail(ConfigError(problem))
    try:
        plan = build_plan(plain("benchmarks"), plain("agents"), plain("judge"), plain("agreement"))
    except (PlanError, ConfigError) as exc:
        fail(exc)  # inside DVC: one `error:` line and exit 2, not "unexpected error" and a traceback
    if not conf_checks._own:  # `dvc exp run -S ...`: stop before any stage runs, as `compose` warns (config.py)
        from reportbench.hydra_search import dvc_run_is_lenient  # lazy: +1269 ms to import (python -X importtime)

        missing = missing_release_sources(
            {"plan": plan},
            fix="`-S {b}/release=demo` goes back to the demo (`reportbench compose --reset` forgets a remembered one)")
        if missing and dvc_run_is_lenient():  # --dry / --allow-missing / --queue: said, not stopped
            for line in missing:
                print(f"warning: {line}", file=sys.stderr, flush=True)
        elif missing:
            fail(ConfigError("\n".join(missing)))
    # a Container (not a dict), so OmegaConf.resolve() — what DVC calls — can store it in place
    return OmegaConf.create(plan)


def _resolve_judge_identity(*, _root_: Any) -> Any:
    """`judge_identity`: the judge settings that can change an answer for the configured backend (validated)."""
    from omegaconf import OmegaConf

    from reportbench.validate import judge_identity  # lazy: +23 ms to import (python -X importtime)

    node = _root_.get("judge")
    judge = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_dict(node) else {}
    return OmegaConf.create(judge_identity(judge))  # type: ignore[arg-type]


def register_resolvers() -> None:
    """Register `rb_plan` and `rb_judge_identity` with OmegaConf (idempotent)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("rb_plan"):
        OmegaConf.register_new_resolver("rb_plan", _resolve_plan, use_cache=False)
    if not OmegaConf.has_resolver("rb_judge_identity"):
        OmegaConf.register_new_resolver("rb_judge_identity", _resolve_judge_identity, use_cache=False)
