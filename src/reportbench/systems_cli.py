"""`reportbench systems add <benchmark> <name> --folder PATH | --command CMD | --endpoint MODEL`: bring your own
system in one command (docs/systems.md).

Why: adding a system by hand took a group file with the right `# @package` line, a compose override that the
next bare `compose` forgot, and a guess at the next command. This writes the group file
(`conf/<b>/systems/<group>.yaml`, inheriting the current selection so the demo systems stay), remembers the
override `<b>/systems=<group>` (reportbench.config `overrides.yaml`), composes `params.yaml` and prints what to run.
Nothing is deleted.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import yaml

from reportbench.benchmark_arg import HELP as BENCHMARK_HELP
from reportbench.benchmark_arg import benchmark_name
from reportbench.config import (
    CONF_DIR,
    PARAMS_FILE,
    ConfigError,
    _report_stale,
    compose_params,
    load_params,
    merge_overrides,
    remembered_overrides,
    save_overrides,
    split_applicable,
)

DEFAULT_GROUP = "my_systems"
# the --command example in the help: the shipped template's own contract (tests run it as written)
COMMAND_EXAMPLE = "python examples/byo_command_system.py --task {task_json} --out {output}"
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")


class UsageError(ValueError):
    """A bad argument (exit 2): the message names it and the valid choices."""


def current_selection(benchmark: str, conf_dir: Path = CONF_DIR) -> str:
    """The `<b>/systems` option in force: the remembered override, else the benchmark file's default."""
    key = f"{benchmark}/systems"
    for o in remembered_overrides(conf_dir):
        k, _, v = o.partition("=")
        if k.lstrip("+~") == key:
            return v
    path = conf_dir / "benchmarks" / f"{benchmark}.yaml"
    if not path.is_file():  # a plug-in benchmark ships its own conf/ tree (docs/plugins.md)
        from reportbench.benchmarks import benchmark_files  # lazy: +596 ms to import (python -X importtime)

        own = benchmark_files(benchmark).conf
        path = Path(own) / "benchmarks" / f"{benchmark}.yaml" if own else path
    if not path.is_file():
        return "demo"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    for d in data.get("defaults") or []:
        if isinstance(d, dict) and key in {str(k).lstrip("/") for k in d}:
            return str(next(v for k, v in d.items() if str(k).lstrip("/") == key))
    return "demo"


def system_entry(args: argparse.Namespace) -> dict[str, Any]:
    """The YAML entry for the chosen kind (validated enough that a typo fails here, not in `dvc repro`)."""
    from reportbench.reports.base import list_formats  # lazy: +285 ms to import (python -X importtime)

    formats = ["auto", *list_formats()]
    if args.format is not None and args.format not in formats:
        raise UsageError(f"unknown --format {args.format!r}; choices: {', '.join(formats)}")
    if args.folder is not None:
        folder = Path(args.folder)
        if not folder.is_dir():
            raise UsageError(f"--folder {args.folder}: no such directory")
        return {"kind": "folder", "path": args.folder, "format": args.format or "auto"}
    if args.command is not None:
        argv = shlex.split(args.command)
        if not argv:
            raise UsageError("--command is empty")
        script = args.path or next((a for a in argv[1:] + argv[:1] if Path(a).is_file()), None)
        if script is None or not Path(script).exists():
            raise UsageError(
                f"--command {args.command!r}: no argument is an existing file to track as the system's code "
                "(its DVC dependency: editing it reruns the system); name it with --path"
            )
        entry: dict[str, Any] = {"kind": "command", "path": script, "cmd": argv}
        entry |= {"timeout_s": args.timeout, "format": args.format or "markdown"}
        return entry
    entry = {"kind": "endpoint", "path": "src/reportbench/systems/endpoint.py", "model": args.endpoint}
    entry |= {"api_base": args.api_base, "api_key_env": args.api_key_env, "temperature": 0.0, "max_tokens": 4096}
    if args.format:
        entry["format"] = args.format
    return entry


def write_group(benchmark: str, name: str, entry: dict[str, Any], group: str, conf_dir: Path = CONF_DIR) -> Path:
    """Add `name: entry` to `conf/<b>/systems/<group>.yaml`, creating it (inheriting the current selection)."""
    path = conf_dir / benchmark / "systems" / f"{group}.yaml"
    body = yaml.safe_dump({name: entry}, sort_keys=False, default_flow_style=False)
    if path.is_file():
        existing = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if name in existing:
            raise UsageError(f"{path} already defines system {name!r}; edit the file or pick another name")
        text = path.read_text(encoding="utf-8")
        path.write_text(text + ("" if text.endswith("\n") else "\n") + body, encoding="utf-8")
        return path
    inherit = current_selection(benchmark, conf_dir)
    head = [
        f"# @package benchmarks.{benchmark}.systems",
        f"# Your systems for {benchmark}, written by `reportbench systems add` (docs/systems.md); selected with",
        f"# `reportbench compose {benchmark}/systems={group}`. Inherits the `{inherit}` systems.",
    ]
    defaults = "defaults:\n  - " + inherit + "\n  - _self_\n" if inherit != group else ""
    path.write_text("\n".join(head) + "\n" + defaults + body, encoding="utf-8")
    return path


def _cmd_add(args: argparse.Namespace) -> int:
    try:  # the benchmark name is checked when the command line is parsed (benchmark_arg)
        if not _NAME.match(args.name):
            raise UsageError(f"system name {args.name!r}: use letters, digits, '_' and '-' only")
        configured = ((load_params().get("benchmarks") or {}).get(args.benchmark) or {}).get("systems") or {}
        if args.name in configured:
            raise UsageError(f"{args.benchmark} already has a system {args.name!r}; pick another name")
        entry = system_entry(args)
    except (UsageError, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    group_file = write_group(args.benchmark, args.name, entry, args.group)
    print(f"wrote {group_file} (system {args.name}: kind {entry['kind']})")
    choice = f"{args.benchmark}/systems={args.group}"
    overrides = merge_overrides(remembered_overrides(), [choice])
    compose_params(split_applicable(overrides, [choice])[0], PARAMS_FILE)  # not another benchmark's unselected one
    saved = save_overrides(overrides)
    print(f"wrote {PARAMS_FILE} (overrides: {' '.join(overrides)}; remembered in {saved})")
    params = load_params()
    _report_stale(params, prune=False)
    release = (params["plan"]["benchmarks"].get(args.benchmark) or {}).get("release")
    if args.folder and (problem := folder_mapping_problem(args.benchmark, args.name, Path(args.folder), str(release))):
        # what the system stage would stop on, said now (names only, no report read), with where to go next
        print(f"warning: {problem}", file=sys.stderr)
        print(f"warning: these reports may answer another release of {args.benchmark} (`reportbench ls releases`): "
              f"`reportbench compose {args.benchmark}/release=<name>`; per file: `reportbench check {args.folder} "
              f"-b {args.benchmark}`", file=sys.stderr)  # fmt: skip
    print("next:")
    print("  dvc repro                     # runs only the stages of what is new")
    print(f"  cat metrics/{args.benchmark}/{release}/leaderboard.md   # {args.name} is a row")
    print(f"  reportbench view --benchmark {args.benchmark} --system {args.name} --task <task_id> --text")
    return 0


def folder_mapping_problem(benchmark: str, name: str, folder: Path, release_name: str) -> str | None:
    """The mapping error the system stage would stop on for this folder against the planned release (the built
    one, else its conf built in memory), by the benchmark's file-naming rule; None when it maps or the release
    cannot be read here (the stage still checks)."""
    # lazy: +35 ms to import (python -X importtime)
    from reportbench.systems.check import load_release_for_check

    # lazy: +208 ms to import (python -X importtime)
    from reportbench.systems.folder import allowed_missing_share, discover_for, mapping_error, naming_for

    try:
        try:
            rel = load_release_for_check(benchmark, None)
        except Exception:  # noqa: BLE001 - not built yet: the release's conf, as `reportbench check --release`
            rel = load_release_for_check(benchmark, release_name)
        ids = [t.task_id for t in rel.tasks]
        naming = naming_for(benchmark)
        rows = discover_for("check", {"path": str(folder)}, ids, naming, None).rows
    except Exception:  # noqa: BLE001 - nothing to say here; the system stage checks with the full rules
        return None
    mapped = {r.task_id for r in rows if r.status == "mapped"}
    missing = [t for t in ids if t not in mapped]
    return mapping_error(name, str(folder), rows, missing, len(ids), allowed_missing_share(name, None), naming)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("systems", help="bring your own system: `reportbench systems add <benchmark> <name> ...`")
    ssub = p.add_subparsers(dest="systems_command", required=True)
    a = ssub.add_parser(
        "add", help="add a system (a folder of reports, a command or an API endpoint), compose, print the next step"
    )
    a.add_argument("benchmark", type=benchmark_name, help=f"the benchmark it answers ({BENCHMARK_HELP})")
    a.add_argument("name", help="the system's name (its leaderboard row)")
    how = a.add_mutually_exclusive_group(required=True)
    how.add_argument("--folder", help="a folder with one report per task (kind: folder)")
    how.add_argument("--command", help=f"a program run once per task, e.g. '{COMMAND_EXAMPLE}' "
                     "({task_json}: the task's JSON file, {output}: where to write the report; docs/systems.md)")
    how.add_argument("--endpoint", metavar="MODEL", help="a litellm model string, e.g. openai/my-agent")
    a.add_argument("--format", default=None, help="report format (adapter), default auto (folder) / markdown")
    a.add_argument("--path", default=None, help="--command: the file DVC tracks (default: the first existing argument)")
    a.add_argument("--timeout", type=int, default=600, help="--command: seconds per task (default 600)")
    a.add_argument("--api-base", default=None, help="--endpoint: base URL of an OpenAI-compatible server")
    a.add_argument("--api-key-env", default=None, help="--endpoint: the NAME of the variable holding the key")
    a.add_argument("--group", default=DEFAULT_GROUP, help=f"group file conf/<b>/systems/<group>.yaml ({DEFAULT_GROUP})")
    a.set_defaults(func=_cmd_add)
