"""Hydra's search path gains every installed benchmark's own config tree (`BenchmarkSpec.conf_dir`), and the
default benchmark selection is computed from what is installed.

A plug-in distribution ships `conf/benchmarks/<name>.yaml`, `conf/<name>/release/*.yaml` and
`conf/<name>/systems/*.yaml` inside its package; appended after the project's `conf/`, its options become
choices of the same groups (`benchmarks=[..., <name>]`, `-S <name>/release=...`), and the project's own files
win on a clash. `reportbench compose` registers the plugin directly; `dvc exp run` finds it through
`hydra_plugins/reportbench_resolvers` (Hydra's plugin scan).

`conf/config.yaml` selects `benchmarks: [installed]`: the option `benchmarks/installed` is not a file but a
config this plugin stores (Hydra's ConfigStore, `structured://` on every search path) whose defaults list is
every installed benchmark by name, so a benchmark that is not installed is never in the default composition and
installing a plug-in adds it without editing conf/ (`benchmarks=[a,b]` still picks any subset).
"""

from __future__ import annotations

import sys
from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

from reportbench import benchmarks, conf_checks
from reportbench.conf_checks import check_package_headers, check_yaml_syntax, fail
from reportbench.errors import ConfigError

INSTALLED_OPTION = "installed"  # `benchmarks/installed`: every installed benchmark (conf/config.yaml's default)
_main_conf: list[Path] = []  # the primary config folder of the composition under way (for the rb_plan checks)


def main_conf_dir() -> Path:
    """The primary config folder of the latest composition (`conf/` of the repository DVC or compose uses)."""
    return _main_conf[-1] if _main_conf else Path("conf")


def store_installed_default() -> list[str]:
    """Store `benchmarks/installed` (defaults: every installed benchmark, by name); returns the names."""
    from hydra.core.config_store import ConfigStore

    names = sorted(benchmarks.benchmark_entry_points())
    ConfigStore.instance().store(
        group="benchmarks", name=INSTALLED_OPTION, node={"defaults": [*names, "_self_"]}, provider="reportbench"
    )
    return names


class BenchmarkConfSearchPath(SearchPathPlugin):
    """Appends `file://<conf_dir>` of every installed benchmark that ships one; stores `benchmarks/installed`."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        store_installed_default()
        mains = [e.path for e in search_path.get_path() if e.provider == "main" and e.path]
        main = Path(mains[0].removeprefix("file://")) if mains else None
        if main is not None:
            _main_conf.append(main)
        folders = benchmarks.benchmark_conf_dirs()
        for name, folder in folders.items():
            search_path.append(provider=f"reportbench-benchmark-{name}", path=f"file://{Path(folder).resolve()}")
        # before Hydra reads a file: its own errors name neither (ScannerError) nor refuse a header-less file
        roots = [*([main] if main is not None else []), *folders.values()]
        try:
            check_yaml_syntax(roots)
            for root in roots:
                check_package_headers(root)
        except ConfigError as exc:
            fail(exc)
        if main is not None and not conf_checks._own:
            shadow = _remembered_in_dvc(main)
            if shadow is not None:  # the remembered overrides this selection can apply, found before conf/'s file
                search_path.prepend(provider="reportbench-remembered", path=f"file://{shadow}")


def _dvc_overrides() -> list[str] | None:
    """The `-S` overrides of the `dvc exp run` composing now (a local of DVC's `compose_and_dump`, which calls
    Hydra, which calls this plugin); None when DVC is not the caller."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "compose_and_dump" and frame.f_globals.get("__name__") == "dvc.utils.hydra":
            found = frame.f_locals.get("overrides")
            return [str(o) for o in found] if isinstance(found, list | tuple) else None
        frame = frame.f_back
    return None


def dvc_run_is_lenient() -> bool:
    """True when the `dvc exp run` composing now was asked not to run every stage for real (`--dry`,
    `--allow-missing`, `--queue`, or named targets, which may not reach the missing input): a missing stage input
    is then a warning, not an error (the CLI command's arguments, found as `_dvc_overrides` finds DVC's overrides:
    up the call stack)."""
    frame = sys._getframe(1)
    while frame is not None:
        cmd = frame.f_locals.get("self")
        if type(cmd).__name__ == "CmdExperimentsRun":
            args = getattr(cmd, "args", None)
            flags = any(bool(getattr(args, flag, False)) for flag in ("dry", "allow_missing", "queue"))
            return flags or bool(getattr(args, "targets", None))
        frame = frame.f_back
    return False


def _remembered_in_dvc(conf: Path) -> Path | None:
    """`dvc exp run` applies the remembered overrides through conf/remembered/overrides.yaml: name each one it
    applies (where from, how to drop it). A remembered override of a benchmark its `-S benchmarks=[...]` leaves out
    is skipped with a note, as `reportbench compose` skips it (Hydra would stop with "Could not override ... No
    match"): returns a folder holding `remembered/overrides.yaml` without those overrides, for the caller to put
    before conf/ on the search path (conf/'s own file stays as compose wrote it), or None when nothing is skipped."""
    flags = _dvc_overrides()
    path = conf / conf_checks.REMEMBERED_CONF
    if flags is None or not path.is_file() or any(f.lstrip("~") == "remembered" for f in flags):
        return None
    remembered = conf_checks.split_applicable(conf_checks.remembered_overrides(conf), conf_dir=conf)[0]
    chosen = conf_checks.selected_benchmarks([*remembered, *flags])
    flag_keys = {conf_checks._override_key(f) for f in flags}
    where = f"{conf_checks.shown(conf_checks.overrides_path(conf))} (written to {conf_checks.shown(path)})"
    unselected = {o: b for o in remembered if (b := conf_checks.benchmark_of(o, conf)) is not None and b not in chosen}
    for o, b in unselected.items():
        print(
            f"remembered: {o} not applied: benchmark {b} is not selected (from {where}; add it with "
            f"-S 'benchmarks=[...,{b}]'; `reportbench compose --reset` forgets all)",
            file=sys.stderr,
            flush=True,
        )
    for o in remembered:
        if o in unselected:
            continue
        if conf_checks._override_key(o) not in flag_keys:
            print(
                f"remembered: {o} (from {where}; a -S flag of the same key wins over it; "
                "`reportbench compose --reset` forgets all)",
                file=sys.stderr,
                flush=True,
            )
    if not unselected:
        return None
    return _without_benchmarks(path, conf, {b for b in unselected.values()})


def _without_benchmarks(path: Path, conf: Path, drop: set[str]) -> Path:
    """A temporary folder with `remembered/overrides.yaml`: `path` (compose's file) without the group choices and
    `benchmarks.<b>` values of the benchmarks in `drop` (removed when the process exits)."""
    import atexit
    import shutil
    import tempfile

    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    defaults = []
    for entry in data.get("defaults") or []:
        if isinstance(entry, dict) and len(entry) == 1:
            (key, value), = entry.items()
            group = str(key).removeprefix("override ").lstrip("/")
            if conf_checks.benchmark_of(f"{group}={value}", conf) in drop:
                continue
        defaults.append(entry)
    data["defaults"] = defaults or ["_self_"]
    bench = data.get("benchmarks")
    if isinstance(bench, dict):
        data["benchmarks"] = {k: v for k, v in bench.items() if k not in drop}
        if not data["benchmarks"]:
            del data["benchmarks"]
    folder = Path(tempfile.mkdtemp(prefix="reportbench-remembered-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    (folder / "remembered").mkdir()
    (folder / "remembered" / "overrides.yaml").write_text(
        "# @package _global_\n" + yaml.safe_dump(data, sort_keys=False), encoding="utf-8"
    )
    return folder


def register_search_path() -> None:
    """Make Hydra use the plugin in this process (idempotent: Hydra keys plugins by class name)."""
    from hydra.core.plugins import Plugins

    Plugins.instance().register(BenchmarkConfSearchPath)
