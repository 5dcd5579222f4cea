"""Configuration: `conf/` (Hydra) is the source of truth; `params.yaml` is its composed snapshot.

`dvc exp run` composes `params.yaml` itself (DVC's Hydra mode); plain `dvc repro` never does. After
editing `conf/`, run `reportbench compose` (same composition, same writer as DVC), and
`reportbench compose --check` (also a test) fails when `params.yaml` is stale.

Overrides given to `reportbench compose` (`deepscholar/systems=mine`, `judge=llm`) are remembered in
`overrides.yaml` next to `conf/`, so a later bare `compose`, `compose --check`, `estimate` and `check-judge` compose
the same configuration (and `ls`, `view` and the site read the `params.yaml` it gives). `compose --reset` forgets
them. Outputs of systems that left the config are deleted only with `compose --prune`. `dvc exp run -S ...`
composes conf/ itself, so the remembered overrides are also written as a Hydra config that conf/config.yaml
includes last (`conf/remembered/overrides.yaml`; `remembered_as_config`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from reportbench import yamlio
from reportbench.conf_checks import (  # noqa: F401 - re-exported: check_package_headers, benchmark_of, ...
    OVERRIDES_FILE,
    _override_key,
    benchmark_of,
    check_package_headers,
    composing,
    overrides_path,
    remembered_notes,
    remembered_overrides,
    selected_benchmarks,
    split_applicable,
    yaml_problem,
)
from reportbench.errors import ConfigError
from reportbench.plan import missing_release_sources, register_resolvers

PARAMS_FILE = Path("params.yaml")
CONF_DIR = Path("conf")


REMEMBERED_GROUP, REMEMBERED_OPTION = "remembered", "overrides"  # conf/remembered/overrides.yaml, for dvc exp run


def remembers_key(overrides: list[str], key: str) -> bool:
    """Whether `overrides` set `key` (a group choice `live=monthly` or a value `judge.model=x`)."""
    return any(_override_key(o) == key for o in overrides)


def merge_overrides(old: list[str], new: list[str]) -> list[str]:
    """`old` with each key of `new` replaced (in place) or appended."""
    out = list(old)
    for o in new:
        keys = [_override_key(x) for x in out]
        if _override_key(o) in keys:
            out[keys.index(_override_key(o))] = o
        else:
            out.append(o)
    return out


def remembered_conf_path(conf_dir: Path | str = CONF_DIR) -> Path:
    """The Hydra config that carries the remembered overrides into `dvc exp run`'s own composition."""
    return Path(conf_dir) / REMEMBERED_GROUP / f"{REMEMBERED_OPTION}.yaml"


def _is_group(key: str, conf_dir: Path) -> bool:
    """Whether an override key names a config group (a folder of conf/ or of an installed benchmark's tree)."""
    from reportbench.benchmarks import benchmark_conf_dirs  # lazy: +199 ms to import (python -X importtime)

    roots = [Path(conf_dir), *(Path(d) for d in benchmark_conf_dirs().values())]
    return bool(key) and any((root / key).is_dir() for root in roots)


def _put(tree: dict[str, Any], path: list[str], value: Any) -> bool:
    """tree[a][b]... = value; False when a prefix already holds a non-mapping value (`a=1` then `a.b=2`)."""
    node = tree
    for part in path[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            return False
    node[path[-1]] = value
    return True


def remembered_as_config(overrides: list[str], conf_dir: Path | str = CONF_DIR) -> tuple[dict[str, Any], list[str]]:
    """The remembered overrides as one Hydra config (`# @package _global_`), and the ones it cannot hold.

    Why a config: `dvc exp run -S ...` composes params.yaml from conf/ and its own flags only. conf/config.yaml
    ends its defaults with `optional remembered: overrides`, so that composition includes this file: a group
    choice (`deepscholar/systems=mine`) becomes an `override /deepscholar/systems: mine` entry of its defaults
    list, a value (`judge.model=x`, `++a.b=1`) its content, merged after everything else. `-S` flags still win
    (Hydra applies command-line choices and values after it). A deletion (`~key`), an added group (`+group=x`)
    or a package override (`group@pkg=x`) has no such spelling: returned as unrepresentable."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    defaults: list[Any] = []
    content: dict[str, Any] = {}
    unrepresentable: list[str] = []
    for text in overrides:
        try:
            ov = parser.parse_override(text)
            value = ov.value()
        except Exception:  # noqa: BLE001 - a sweep or anything else without one value
            unrepresentable.append(text)
            continue
        key = ov.key_or_group
        group = _is_group(key, Path(conf_dir))
        if ov.is_delete() or ov.package is not None or (group and (ov.is_add() or ov.is_force_add())):
            unrepresentable.append(text)
        elif group:
            defaults.append({f"override /{key}": value})
        elif not _put(content, key.split("."), value):
            unrepresentable.append(text)
    return ({"defaults": [*defaults, "_self_"], **content} if defaults or content else {}), unrepresentable


def remembered_conf_text(overrides: list[str], conf_dir: Path | str = CONF_DIR) -> tuple[str | None, list[str]]:
    """The text of `conf/remembered/overrides.yaml` for `overrides` (None: no file), and the unrepresentable."""
    # only what the remembered selection can apply (an override of an unselected benchmark has no match)
    config, unrepresentable = remembered_as_config(split_applicable(overrides, conf_dir=conf_dir)[0], conf_dir)
    if not config or unrepresentable:  # all or nothing: never a half-applied configuration
        return None, unrepresentable
    head = (
        "# @package _global_\n"
        f"# Written by `reportbench compose` from {OVERRIDES_FILE} (do not edit): the remembered overrides, so\n"
        "# `dvc exp run`'s own composition of conf/ applies them too (conf/config.yaml: optional remembered).\n"
    )
    return head + yaml.safe_dump(config, sort_keys=False), []


def remembered_conf_problem(overrides: list[str], conf_dir: Path | str = CONF_DIR) -> str | None:
    """Why `conf/remembered/overrides.yaml` does not hold `overrides` (for `compose --check`), or None."""
    path = remembered_conf_path(conf_dir)
    want, _ = remembered_conf_text(overrides, conf_dir)
    have = path.read_text(encoding="utf-8") if path.is_file() else None
    if want == have:
        return None
    return f"{path} does not hold the remembered overrides ({'stale' if have else 'missing'}; `dvc exp run` reads it)"


def _save_remembered_conf(overrides: list[str], conf_dir: Path | str) -> list[str]:
    """Write (or remove) `conf/remembered/overrides.yaml`; returns the overrides `dvc exp run` will not see."""
    path = remembered_conf_path(conf_dir)
    text, unrepresentable = remembered_conf_text(overrides, conf_dir)
    if text is None:
        path.unlink(missing_ok=True)
        return unrepresentable
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return []


def without_remembered_conf(overrides: list[str], conf_dir: Path | str = CONF_DIR) -> list[str]:
    """`overrides` plus `~remembered` when the remembered config exists: reportbench's own compositions apply
    the remembered overrides explicitly (or, with `--reset` / `remembered=False`, not at all)."""
    return [*overrides, f"~{REMEMBERED_GROUP}"] if remembered_conf_path(conf_dir).is_file() else list(overrides)


def save_overrides(overrides: list[str], conf_dir: Path | str = CONF_DIR) -> Path:
    path = overrides_path(conf_dir)
    missed = _save_remembered_conf(overrides, conf_dir)
    if missed:
        print(
            f"note: `dvc exp run` cannot apply the remembered override(s) {' '.join(missed)} (no Hydra config "
            f"spelling), so it applies none of them: pass them with -S, or use `dvc repro`",
            file=sys.stderr,
        )
    if not overrides:
        path.unlink(missing_ok=True)
        return path
    head = (
        "# Overrides `reportbench compose` remembered: compose, compose --check, estimate and check-judge apply them\n"
        "# on top of conf/. Edit with `reportbench compose KEY=VALUE`; forget with `reportbench compose --reset`.\n"
    )
    path.write_text(head + yaml.safe_dump({"overrides": overrides}, sort_keys=False), encoding="utf-8")
    return path


def compose_params(overrides: list[str] | None = None, out: Path = PARAMS_FILE, conf_dir: Path = CONF_DIR) -> Path:
    """Compose conf/ with Hydra overrides and write `out` exactly as `dvc exp run` would."""
    from dvc.utils.hydra import compose_and_dump

    from reportbench.hydra_search import register_search_path  # lazy: +1269 ms to import (python -X importtime)

    register_resolvers()
    register_search_path()  # installed benchmarks' own conf/ trees (plug-ins); YAML and package-line checks
    overrides = without_remembered_conf(list(overrides or []), conf_dir)
    with composing():  # the checks raise ConfigError here (inside `dvc exp run` they print it and exit 2)
        compose_and_dump(str(out), str(Path(conf_dir).resolve()), None, "config", "", overrides)
    return out


def composed_params(
    overrides: list[str] | None = None, conf_dir: Path = CONF_DIR, remembered: bool | None = None
) -> dict[str, Any]:
    """The composition of conf/ as a plain dict (no file written). `remembered` (default: when `conf_dir` is
    the working tree's `conf`) puts the overrides `compose` remembered under `overrides`, so `estimate`,
    `check-judge` and `compose --check` see what `params.yaml` holds."""
    import tempfile

    if remembered if remembered is not None else Path(conf_dir) == CONF_DIR:
        explicit = list(overrides or [])
        overrides = split_applicable(merge_overrides(remembered_overrides(conf_dir), explicit), explicit, conf_dir)[0]

    with tempfile.TemporaryDirectory() as tmp:
        path = compose_params(overrides, Path(tmp) / "params.yaml", conf_dir)
        return yaml.safe_load(path.read_text())


def load_params(path: Path | str = PARAMS_FILE) -> dict[str, Any]:
    """Read the composed params; stages call this (they never compose themselves)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: not found; run `reportbench compose` (or `dvc exp run`) first")
    try:
        data = yamlio.safe_load(path.read_text())
    except yaml.YAMLError:
        raise ConfigError(yaml_problem(path) or f"{path}: not valid YAML") from None
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
    base = [] if args.reset else remembered_overrides()
    overrides = merge_overrides(base, list(args.overrides))
    applied, skipped = split_applicable(overrides, list(args.overrides))
    for line in remembered_notes([o for o in base if o not in args.overrides], applied, skipped):
        print(line, file=sys.stderr)
    shown = " ".join(applied) or "(none)"
    if args.check:
        expected = composed_params(applied, remembered=False)
        actual = load_params(args.out)
        problems = diff_params(expected, actual)
        if problems:
            print(f"{args.out} is out of sync with conf/ + overrides {shown}:", file=sys.stderr)
            for p in problems:
                print(f"  {p}", file=sys.stderr)
            print("run `reportbench compose` to regenerate it (it applies the remembered overrides)", file=sys.stderr)
            return 1
        stale_conf = None if args.reset else remembered_conf_problem(base)
        if stale_conf:
            print(f"{stale_conf}: run `reportbench compose` to rewrite it", file=sys.stderr)
            return 1
        print(f"{args.out} matches conf/ + overrides {shown}")
        return 0
    compose_params(applied, Path(args.out))
    if Path(args.out) == PARAMS_FILE:
        saved = save_overrides(overrides)
        print(f"wrote {args.out} (overrides: {shown}" + (f"; remembered in {saved})" if overrides else ")"))
    else:
        print(f"wrote {args.out} (overrides: {shown})")
    if Path(args.out) == PARAMS_FILE:
        params = load_params(args.out)
        _report_stale(params, prune=args.prune)
        for line in missing_release_sources(params, fix="`reportbench compose --reset` goes back to the demo"):
            print(f"warning: {line}", file=sys.stderr)
    return 0


def _prune_workspace(params: dict[str, Any]) -> None:
    """Outputs of systems/members that left the config leave the folders later stages hash (reportbench.stale);
    they stay in DVC's cache."""
    from reportbench.stale import prune_stale_outputs  # lazy: +27 ms to import (python -X importtime)

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


def stale_workspace(params: dict[str, Any]) -> list[Path]:
    """What `prune_stale_outputs` would delete (runs, judgments, judge usage of systems/members that left the
    config), without deleting anything."""
    from reportbench.stale import planned  # lazy: +27 ms to import (python -X importtime)

    out: list[Path] = []
    for b, entry in ((params.get("plan") or {}).get("benchmarks") or {}).items():
        release = entry.get("release")
        systems, members = planned(params, b)
        if not (release and systems):
            continue
        for folder in (Path("data/runs") / b / release, Path("data/judgments") / b / release):
            if folder.is_dir():
                out += [c for c in sorted(folder.iterdir()) if c.name not in systems and not c.name.startswith(".")]
        usage = Path("metrics") / b / release / "usage"
        if members and usage.is_dir():
            for f in sorted(usage.glob("*.*.json")):
                system, _, member = f.name[: -len(".json")].partition(".")
                if system not in systems or member not in members:
                    out.append(f)
    return out


STALE_SHOWN = 8  # names printed by a compose that keeps stale outputs (a release switch leaves dozens)


def _report_stale(params: dict[str, Any], *, prune: bool) -> None:
    """Name the outputs and lock entries of systems that left the config; delete them only with `--prune`."""
    plan = params.get("plan") or {}
    files = stale_workspace(params)
    if not prune:
        lock = []
        if LOCK_FILE.is_file() and PIPELINE_FILE.is_file():
            lock = stale_lock_entries(
                plan, yaml.safe_load(PIPELINE_FILE.read_text()) or {}, yaml.safe_load(LOCK_FILE.read_text()) or {}
            )
        if files or lock:
            names = [str(f) for f in files] + [f"{LOCK_FILE}:{e}" for e in lock]
            shown = ", ".join(names[:STALE_SHOWN]) + (f", … ({len(names)} in all)" if len(names) > STALE_SHOWN else "")
            print(
                f"kept {len(names)} outputs of stages no longer planned (releases, systems; e.g. of a release you "
                f"switched away from): {shown}; `reportbench compose --prune` deletes them (DVC's cache keeps a copy)"
            )
        return
    dropped = prune_lock(plan) if LOCK_FILE.is_file() else []
    if dropped:
        print(f"{LOCK_FILE}: dropped {len(dropped)} entries of stages no longer configured: {', '.join(dropped)}")
    if files:
        _prune_workspace(params)
        print(f"deleted {len(files)} outputs of systems no longer configured: {', '.join(map(str, files))}")


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
    p.add_argument("--out", default=str(PARAMS_FILE), metavar="PATH",
                   help=f"where to write the composed params (default: {PARAMS_FILE}, the file DVC's stages read)")
    p.add_argument("--check", action="store_true", help="exit 1 if params.yaml differs from conf/ + overrides")
    p.add_argument("--reset", action="store_true", help="forget the remembered overrides (overrides.yaml)")
    p.add_argument(
        "--prune", action="store_true", help="delete outputs and lock entries of systems no longer configured"
    )
    p.set_defaults(func=_cmd_compose)
