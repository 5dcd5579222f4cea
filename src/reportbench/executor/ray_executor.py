"""`runtime.executor: ray`: a stage's units as Ray tasks (`pip install 'reportbench[ray]'`).

- `runtime.ray.address` null starts a Ray for this stage on this machine (a test, or one big box); "auto" joins the
  cluster this node belongs to (`ray start --address ...` ran here); `ray://host:10001` is Ray Client.
- Each unit runs in the stage's working directory, by path: every node must see the workspace (and the caches
  under `.reportbench/cache`) at the same path, e.g. on a shared filesystem. So the response and search caches are
  one cache: an answer paid for on one node is a hit on every other, and a unit whose node died runs again
  (`runtime.ray.max_retries`) paying only for what its first attempt did not store.
- `judge.runtime.max_cost_usd` bounds the stage's spending across its units (a `_Ledger` actor), as it bounds one
  process's under the local executor.
- Results come back in input order whatever node ran what: outputs and metrics are the local executor's, byte for
  byte. Ray is imported here only, never on the local path.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

import ray
from ray.exceptions import RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from reportbench.executor.base import RaySettings, UnitResult, run_unit, unit_environment
from reportbench.judges.client import BUDGET, SpendLedger

log = logging.getLogger(__name__)


def _connect(settings: RaySettings) -> None:
    """Join (or start) Ray once per process; a stage may map several times."""
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"log_to_driver": True, "configure_logging": False}
    if settings.address:
        kwargs["address"] = settings.address
    else:  # a Ray of our own for this stage: small, no dashboard
        kwargs["include_dashboard"] = False
        if settings.object_store_mb:
            kwargs["object_store_memory"] = settings.object_store_mb * 1024 * 1024
    ray.init(**kwargs)


class RayExecutor:
    """Units as Ray tasks; the same `map` contract as `LocalExecutor`."""

    name = "ray"

    def __init__(self, settings: RaySettings) -> None:
        self.settings = settings

    def map(
        self,
        fn: Callable[..., Any],
        calls: Sequence[tuple[Any, ...]],
        *,
        keep_going: tuple[type[BaseException], ...] = (),
        shared_budget: bool = False,
    ) -> list[UnitResult]:
        """`fn(*args)` for every args tuple as Ray tasks, results in input order. An exception of a `keep_going`
        type is recorded; any other cancels the units not yet finished and is raised (the unit's own exception,
        not Ray's wrapper). `shared_budget`: `judge.runtime.max_cost_usd` counts every unit's spending."""
        if not calls:
            return []
        _connect(self.settings)
        remote = ray.remote(_unit).options(
            num_cpus=self.settings.num_cpus, max_retries=self.settings.max_retries, retry_exceptions=False
        )
        cwd, env = os.getcwd(), unit_environment()
        ledger = None
        if shared_budget:  # a cost bound is set: the units count their spending in one actor, on the driver's node
            ledger = _Ledger.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
            ).remote()
        refs = [remote.remote(cwd, env, ledger, fn, tuple(args)) for args in calls]
        index = {ref: i for i, ref in enumerate(refs)}
        out: list[UnitResult | None] = [None] * len(refs)
        pending = list(refs)
        nodes: set[str] = set()
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                ref = done[0]
                try:
                    kind, payload = ray.get(ref)
                except RayTaskError as exc:  # the task machinery failed (not the unit's own code)
                    raise exc.as_instanceof_cause() from None
                payload, node = payload
                nodes.add(node)
                if kind == "error":
                    if isinstance(payload, keep_going):
                        out[index[ref]] = UnitResult(error=payload)
                        continue
                    raise payload
                out[index[ref]] = UnitResult(value=payload)
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        log.info("ray: %d %s units ran on %d node(s)", len(refs), getattr(fn, "__name__", "?"), len(nodes))
        return [r for r in out if r is not None]


@ray.remote(num_cpus=0)
class _Ledger:
    """The dollars every unit of one `map` spent: `judge.runtime.max_cost_usd` bounds the stage, as in one process."""

    def __init__(self) -> None:
        self.spent_usd = 0.0

    def add(self, usd: float) -> float:
        self.spent_usd += usd
        return self.spent_usd

    def total(self) -> float:
        return self.spent_usd


class _SharedSpend(SpendLedger):
    """A unit's spend ledger that counts every unit's spending (the `_Ledger` actor) when a cost bound is set."""

    actor: Any = None

    def check(self, limit: float | None) -> None:
        if limit is not None and self.actor is not None:
            self.spent_usd = max(self.spent_usd, ray.get(self.actor.total.remote()))
        super().check(limit)

    def spend(self, cost: float | None, limit: float | None) -> None:
        super().spend(cost, limit)
        if cost is not None and limit is not None and self.actor is not None:
            self.spent_usd = ray.get(self.actor.add.remote(cost))


def _unit(
    cwd: str, env: dict[str, str], ledger: Any, fn: Callable[..., Any], args: tuple[Any, ...]
) -> tuple[str, Any]:
    """Runs on a worker: ("ok", (value, node id)) or ("error", (exception, node id)), so the driver re-raises the
    unit's own exception type (an IncompleteJudgeStage stays one) instead of Ray's wrapper."""
    BUDGET.reset()  # a reused worker process must not carry another unit's spending
    BUDGET.__class__ = _SharedSpend  # every reference to the process's ledger now counts the stage's spending
    BUDGET.actor = ledger  # type: ignore[attr-defined]
    node = ray.get_runtime_context().get_node_id()
    try:
        return "ok", (run_unit(cwd, env, fn, args), node)
    except Exception as exc:  # noqa: BLE001 - handed to the driver, which decides
        return "error", (exc, node)
    finally:
        BUDGET.__class__ = SpendLedger
        BUDGET.actor = None  # type: ignore[attr-defined]
