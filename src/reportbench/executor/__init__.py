"""Where a stage's units run: in this process (`runtime.executor: local`, the default) or as Ray tasks on a
cluster (`runtime.executor: ray`, with `runtime.ray.address`); docs/scale.md, "Past one machine: Ray". Ray is
imported only when the ray executor is used (`pip install 'reportbench[ray]'`), never on the local path."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reportbench.errors import ConfigError
from reportbench.executor.base import (
    EXECUTORS,
    LocalExecutor,
    RaySettings,
    RuntimeSettings,
    UnitResult,
    run_unit,
    unit_environment,
)

__all__ = [
    "EXECUTORS",
    "LocalExecutor",
    "RaySettings",
    "RuntimeSettings",
    "UnitResult",
    "executor_for",
    "run_unit",
    "unit_environment",
]


def executor_for(params: Mapping[str, Any]) -> LocalExecutor | Any:
    """The executor `runtime.executor` names (the ray one is built only then: it imports ray)."""
    settings = RuntimeSettings.from_params(params)
    if settings.executor == "local":
        return LocalExecutor()
    import importlib.util

    if importlib.util.find_spec("ray") is None:  # fail fast, one line naming the fix
        raise ConfigError("params.yaml: runtime.executor=ray needs Ray on this machine: pip install 'reportbench[ray]'")
    from reportbench.executor.ray_executor import RayExecutor  # lazy: +2000 ms to import (python -X importtime)

    return RayExecutor(settings.ray)
