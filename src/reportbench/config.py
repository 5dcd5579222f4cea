"""Configuration: `conf/` (Hydra) is the source of truth; `params.yaml` is its composed snapshot.

`dvc exp run` composes `params.yaml` itself (DVC's Hydra mode); plain `dvc repro` never does. After
editing `conf/`, run `reportbench compose` (same composition, same writer as DVC), and
`reportbench compose --check` (also a test) fails when `params.yaml` is stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

PARAMS_FILE = Path("params.yaml")
CONF_DIR = Path("conf")


class ConfigError(ValueError):
    """A params file or config entry is missing or malformed; the message names file and key."""


def compose_params(overrides: list[str] | None = None, out: Path = PARAMS_FILE, conf_dir: Path = CONF_DIR) -> Path:
    """Compose conf/ with Hydra overrides and write `out` exactly as `dvc exp run` would."""
    from dvc.utils.hydra import compose_and_dump

    from reportbench.plan import register_resolvers

    register_resolvers()
    compose_and_dump(str(out), str(Path(conf_dir).resolve()), None, "config", "", list(overrides or []))
    return out


def composed_params(overrides: list[str] | None = None, conf_dir: Path = CONF_DIR) -> dict[str, Any]:
    """The composition of conf/ as a plain dict (no file written)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = compose_params(overrides, Path(tmp) / "params.yaml", conf_dir)
        return yaml.safe_load(path.read_text())


def load_params(path: Path | str = PARAMS_FILE) -> dict[str, Any]:
    """Read the composed params; stages call this (they never compose themselves)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: not found; run `reportbench compose` (or `dvc exp run`) first")
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def require(params: dict[str, Any], dotted: str, source: str = str(PARAMS_FILE)) -> Any:
    """params['a']['b'] for 'a.b', with an error naming the file and the missing key."""
    node: Any = params
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ConfigError(f"{source}: missing key '{dotted}'")
        node = node[part]
    return node


def diff_params(expected: dict[str, Any], actual: dict[str, Any], prefix: str = "") -> list[str]:
    """Human-readable list of keys whose values differ between two param trees."""
    out: list[str] = []
    for key in sorted(set(expected) | set(actual), key=str):
        name = f"{prefix}{key}"
        if key not in actual:
            out.append(f"{name}: missing from params.yaml")
        elif key not in expected:
            out.append(f"{name}: in params.yaml but not in conf/")
        elif isinstance(expected[key], dict) and isinstance(actual[key], dict):
            out.extend(diff_params(expected[key], actual[key], name + "."))
        elif expected[key] != actual[key]:
            out.append(f"{name}: conf/ gives {expected[key]!r}, params.yaml has {actual[key]!r}")
    return out


def _cmd_compose(args: argparse.Namespace) -> int:
    if args.check:
        expected = composed_params(args.overrides)
        actual = load_params(args.out)
        problems = diff_params(expected, actual)
        if problems:
            print(f"{args.out} is out of sync with conf/:", file=sys.stderr)
            for p in problems:
                print(f"  {p}", file=sys.stderr)
            print("run `reportbench compose` to regenerate it", file=sys.stderr)
            return 1
        print(f"{args.out} matches conf/")
        return 0
    compose_params(args.overrides, Path(args.out))
    print(f"wrote {args.out}")
    if Path(args.out) == PARAMS_FILE and LOCK_FILE.is_file():
        params = load_params(args.out)
        dropped = prune_lock(params.get("plan") or {})
        if dropped:
            print(f"{LOCK_FILE}: dropped {len(dropped)} entries of stages no longer configured: {', '.join(dropped)}")
        _prune_workspace(params)
    return 0


def _prune_workspace(params: dict[str, Any]) -> None:
    """Outputs of systems/members that left the config leave the folders later stages hash (reportbench.stale);
    they stay in DVC's cache. Done here too because stages that read those folders may run in any order."""
    from reportbench.stale import prune_stale_outputs

    for b, entry in ((params.get("plan") or {}).get("benchmarks") or {}).items():
        release = entry.get("release")
        if release:
            prune_stale_outputs(
                params,
                b,
                runs_dir=Path("data/runs") / b / release,
                judgments_dir=Path("data/judgments") / b / release,
                usage_dir=Path("metrics") / b / release / "usage",
            )


LOCK_FILE = Path("dvc.lock")
PIPELINE_FILE = Path("dvc.yaml")


def stale_lock_entries(plan: dict[str, Any], pipeline: dict[str, Any], lock: dict[str, Any]) -> list[str]:
    """Lock entries `<stage>@<key>` of a `foreach: ${plan.X}` stage whose key is no longer in `plan.X`.

    DVC never removes the lock entry of a foreach item that left the config (a system switched off), so the
    committed dvc.lock kept stages that no longer exist. Also stale: entries of a stage dvc.yaml no longer
    defines, and `<stage>@<key>` entries of a stage that is no longer a `foreach` (e.g. `site@<b>` after the
    per-benchmark site stages became one `site` stage).
    """
    groups: dict[str, set[str]] = {}
    for name, stage in (pipeline.get("stages") or {}).items():
        foreach = stage.get("foreach") if isinstance(stage, dict) else None
        if isinstance(foreach, str) and foreach.startswith("${plan.") and foreach.endswith("}"):
            node: Any = plan
            for part in foreach[len("${plan.") : -1].split("."):
                node = node.get(part, {}) if isinstance(node, dict) else {}
            groups[name] = set(node) if isinstance(node, dict) else set()
    stages = set(pipeline.get("stages") or {})
    stale = []
    for entry in (lock.get("stages") or {}):
        name, sep, key = str(entry).partition("@")
        if sep and name in groups and key not in groups[name]:
            stale.append(str(entry))
        elif (stages and name not in stages) or (sep and name in stages and name not in groups):
            stale.append(str(entry))  # a stage dvc.yaml no longer has (or no longer fans out)
    return stale


def prune_lock(plan: dict[str, Any], lock_path: Path = LOCK_FILE, pipeline_path: Path = PIPELINE_FILE) -> list[str]:
    """Drop `stale_lock_entries` from dvc.lock in place (DVC's own YAML round-trip keeps the rest byte-equal)."""
    if not lock_path.is_file() or not pipeline_path.is_file():
        return []
    pipeline = yaml.safe_load(pipeline_path.read_text()) or {}
    lock = yaml.safe_load(lock_path.read_text()) or {}
    stale = stale_lock_entries(plan, pipeline, lock)
    if stale:
        from dvc.utils.serialize import modify_yaml

        with modify_yaml(str(lock_path)) as data:
            for entry in stale:
                data["stages"].pop(entry, None)
    return stale


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compose", help="compose conf/ (Hydra) into params.yaml, as `dvc exp run` does")
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. judge=llm judge.model=openai/gpt-4.1")
    p.add_argument("--out", default=str(PARAMS_FILE))
    p.add_argument("--check", action="store_true", help="exit 1 if params.yaml differs from conf/")
    p.set_defaults(func=_cmd_compose)
