"""The executor settings and the local executor (reportbench.executor picks one).

Where a stage's units run: in this process (`runtime.executor: local`, the default) or as Ray tasks on a cluster
(`runtime.executor: ray`, with `runtime.ray.address`). DVC stays the orchestrator: a stage still runs as one
`dvc repro` command and writes the same outputs; only the units it already has (judge units, system tasks) are
spread over machines. The setting is operational: no stage declares `runtime` as a DVC param, so switching
executors never reruns a stage or changes an output (docs/scale.md, "Past one machine: Ray")."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from reportbench.errors import ConfigError
from reportbench.redaction import install_log_redaction

EXECUTORS = ("local", "ray")

# Settings a unit needs in its environment on another node. Never an API key: those come from each node's own
# environment (the one `ray start` ran in), so no secret travels through Ray.
_FORWARDED_ENV_PREFIXES = ("REPORTBENCH_",)
_FORWARDED_ENV = ("LITELLM_LOCAL_MODEL_COST_MAP", "LITELLM_MODE", "DVC_NO_ANALYTICS")


@dataclass(frozen=True, slots=True)
class RaySettings:
    """`runtime.ray.*`: how to reach the cluster and what one unit asks of it."""

    address: str | None = None  # None: start a one-machine Ray for this stage; "auto" or "ray://host:10001"
    num_cpus: float = 1.0  # per unit (a judge unit waits on the network; a system task runs an agent)
    max_retries: int = 3  # a unit whose node died runs again elsewhere; its paid answers come from the caches
    object_store_mb: int | None = None  # only when this process starts Ray itself (address null)


@dataclass(frozen=True, slots=True)
class RuntimeSettings:
    """The `runtime:` group of params.yaml, parsed once (typed)."""

    executor: Literal["local", "ray"] = "local"
    ray: RaySettings = field(default_factory=RaySettings)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> RuntimeSettings:
        """From composed params; an absent `runtime` block is the local executor. One-line errors name the key."""
        raw = params.get("runtime") or {}
        if not isinstance(raw, Mapping):
            raise ConfigError(f"params.yaml: runtime must be a mapping, got {raw!r}")
        executor = raw.get("executor", "local") or "local"
        if executor not in EXECUTORS:
            raise ConfigError(f"params.yaml: runtime.executor must be one of {EXECUTORS}, got {executor!r}")
        ray_raw = raw.get("ray") or {}
        if not isinstance(ray_raw, Mapping):
            raise ConfigError(f"params.yaml: runtime.ray must be a mapping, got {ray_raw!r}")
        unknown = set(ray_raw) - set(RaySettings.__slots__)  # type: ignore[attr-defined]
        if unknown:
            raise ConfigError(f"params.yaml: runtime.ray has unknown key(s) {sorted(unknown)}")
        address = ray_raw.get("address")
        if address is not None and not isinstance(address, str):
            raise ConfigError(f"params.yaml: runtime.ray.address must be a string or null, got {address!r}")
        num_cpus = ray_raw.get("num_cpus", 1.0)
        if isinstance(num_cpus, bool) or not isinstance(num_cpus, int | float) or num_cpus < 0:
            raise ConfigError(f"params.yaml: runtime.ray.num_cpus must be a number >= 0, got {num_cpus!r}")
        retries = ray_raw.get("max_retries", 3)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigError(f"params.yaml: runtime.ray.max_retries must be an integer >= 0, got {retries!r}")
        store = ray_raw.get("object_store_mb")
        if store is not None and (isinstance(store, bool) or not isinstance(store, int) or store < 80):
            raise ConfigError(f"params.yaml: runtime.ray.object_store_mb must be null or >= 80, got {store!r}")
        return cls(executor, RaySettings(address or None, float(num_cpus), retries, store))


@dataclass(slots=True)
class UnitResult:
    """One unit's return value, or the exception it ended with (kept, when the caller said to keep going)."""

    value: Any = None
    error: BaseException | None = None


class LocalExecutor:
    """Every unit in this process, in order: what every stage did before executors existed."""

    name = "local"

    def map(
        self,
        fn: Callable[..., Any],
        calls: Sequence[tuple[Any, ...]],
        *,
        keep_going: tuple[type[BaseException], ...] = (),
        shared_budget: bool = False,
    ) -> list[UnitResult]:
        """`fn(*args)` for every args tuple, results in order. An exception of a `keep_going` type is recorded and
        the next unit runs; any other stops at once (raised). `shared_budget` (a cost bound is set): one process,
        one spend ledger already, which starts the stage at zero, as a `dvc repro` stage's own process does (a
        stage run in-process after another must not count the earlier stage's spending).
        """
        if shared_budget:
            from reportbench.judges.client import BUDGET  # lazy: +152 ms to import (python -X importtime)

            BUDGET.reset()
        out = []
        for args in calls:
            try:
                out.append(UnitResult(value=fn(*args)))
            except keep_going as exc:
                out.append(UnitResult(error=exc))
        return out


def unit_environment() -> dict[str, str]:
    """The non-secret settings a unit needs on another node (prefix REPORTBENCH_, litellm's offline switches)."""
    return {
        k: v for k, v in os.environ.items() if k in _FORWARDED_ENV or k.startswith(_FORWARDED_ENV_PREFIXES)
    }


def run_unit(cwd: str, env: Mapping[str, str], fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """One unit on a worker: in the stage's working directory (params hold repo-relative paths) with the stage's
    settings and its logging (secrets redacted)."""
    os.chdir(Path(cwd))
    os.environ.update(env)
    # the stage's logging, redaction included: no fragment of a secret-looking env value reaches a node's log
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    install_log_redaction()
    return fn(*args)
