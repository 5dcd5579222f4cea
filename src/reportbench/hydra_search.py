"""Hydra's search path gains every installed benchmark's own config tree (`BenchmarkSpec.conf_dir`).

A plug-in distribution ships `conf/benchmarks/<name>.yaml`, `conf/<name>/release/*.yaml` and
`conf/<name>/systems/*.yaml` inside its package; appended after the project's `conf/`, its options become
choices of the same groups (`benchmarks=[..., <name>]`, `-S <name>/release=...`), and the project's own files
win on a clash. `reportbench compose` registers the plugin directly; `dvc exp run` finds it through
`hydra_plugins/reportbench_resolvers` (Hydra's plugin scan).
"""

from __future__ import annotations

from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

from reportbench.benchmarks import benchmark_conf_dirs


class BenchmarkConfSearchPath(SearchPathPlugin):
    """Appends `file://<conf_dir>` of every installed benchmark that ships one."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        for name, folder in benchmark_conf_dirs().items():
            search_path.append(provider=f"reportbench-benchmark-{name}", path=f"file://{Path(folder).resolve()}")


def register_search_path() -> None:
    """Make Hydra use the plugin in this process (idempotent: Hydra keys plugins by class name)."""
    from hydra.core.plugins import Plugins

    Plugins.instance().register(BenchmarkConfSearchPath)
