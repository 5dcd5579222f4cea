"""The toy benchmark for in-process tests: its source is the plug-in distribution in tests/plugins/reportbench_toy/
(docs/plugins.md); here it is imported from that folder without installing it. Importing registers nothing
(`uninstall` below runs at once): tests call `install()` / `uninstall()` around themselves, as before."""

from __future__ import annotations

import sys
from pathlib import Path

_SOURCE = str(Path(__file__).resolve().parent / "plugins" / "reportbench_toy")
if _SOURCE not in sys.path:
    sys.path.insert(0, _SOURCE)

from reportbench_toy import (  # noqa: E402
    BENCHMARK,
    METRICS,
    NAME,
    TOY_TASKS,
    _check_offline,
    get_task_for_tests,
    install,
    uninstall,
)

uninstall()  # the import registered the toy's tasks and metrics; other tests enumerate those registries

__all__ = ["BENCHMARK", "METRICS", "NAME", "TOY_TASKS", "_check_offline", "get_task_for_tests", "install", "uninstall"]
