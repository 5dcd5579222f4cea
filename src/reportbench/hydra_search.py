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
            _remembered_in_dvc(main)


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


def _remembered_in_dvc(conf: Path) -> None:
    """`dvc exp run` applies the remembered overrides through conf/remembered/overrides.yaml: name each one it
    applies (where from, how to drop it), and refuse, in one line, a remembered override of a benchmark its
    `-S benchmarks=[...]` leaves out (Hydra would stop with "Could not override ... No match")."""
    flags = _dvc_overrides()
    path = conf / conf_checks.REMEMBERED_CONF
    if flags is None or not path.is_file() or any(f.lstrip("~") == "remembered" for f in flags):
        return
    remembered = conf_checks.split_applicable(conf_checks.remembered_overrides(conf), conf_dir=conf)[0]
    chosen = conf_checks.selected_benchmarks([*remembered, *flags])
    flag_keys = {conf_checks._override_key(f) for f in flags}
    where = f"{conf_checks.shown(conf_checks.overrides_path(conf))} (written to {conf_checks.shown(path)})"
    for o in remembered:
        b = conf_checks.benchmark_of(o, conf)
        if b is not None and b not in chosen:
            fail(
                ConfigError(
                    f"remembered override {o} from {where} is for benchmark {b}, which these -S flags do not "
                    f"select: add it (-S 'benchmarks=[...,{b}]'), or drop the override (edit "
                    f"{conf_checks.shown(conf_checks.overrides_path(conf))}, then `reportbench compose`; "
                    "`reportbench compose --reset` forgets all)"
                )
            )
    for o in remembered:
        if conf_checks._override_key(o) not in flag_keys:
            print(
                f"remembered: {o} (from {where}; a -S flag of the same key wins over it; "
                "`reportbench compose --reset` forgets all)",
                file=sys.stderr,
                flush=True,
            )


def register_search_path() -> None:
    """Make Hydra use the plugin in this process (idempotent: Hydra keys plugins by class name)."""
    from hydra.core.plugins import Plugins

    Plugins.instance().register(BenchmarkConfSearchPath)
