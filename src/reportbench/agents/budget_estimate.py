"""What an agent system may spend, from its budget: the worst case `reportbench estimate` prints before any run.

An agent's real usage depends on what it decides to do, so the only honest figure before a run is the ceiling the
budget proxy enforces: tasks × per-task limits. A limit the config leaves open is unbounded ("—"), never 0; dollars
come from `budget.usd` (the proxy's own dollar limit), not from a guess at the agent's token use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reportbench.agents.protocol import AGENT_KINDS, AgentSystemConfig


def is_agent(spec: Mapping[str, Any] | None) -> bool:
    return bool(spec) and spec.get("kind") in AGENT_KINDS  # type: ignore[union-attr]


def budget_row(stage: str, spec: Mapping[str, Any], n_tasks: int) -> dict[str, Any]:
    """One row: tasks × each per-task limit (None where the budget sets no limit)."""
    cfg = AgentSystemConfig.model_validate(dict(spec))
    b = cfg.budget

    def times(x: float | None) -> float | None:
        return None if x is None else round(x * n_tasks, 4)

    return {
        "stage": stage,
        "kind": cfg.kind,
        "model": cfg.model,
        "tasks": n_tasks,
        "max_llm_calls": times(b.llm_calls),
        "max_search_calls": times(b.search_calls),
        "max_tokens": times(b.tokens),
        "max_usd": times(b.usd),
        "max_wall_s": round(b.wall_s * n_tasks / cfg.concurrency, 1),
    }


def format_rows(rows: list[dict[str, Any]]) -> str:
    """The agents' table under the judges' one."""
    if not rows:
        return ""

    def cell(x: Any) -> str:
        return "—" if x is None else (f"{x:,.2f}" if isinstance(x, float) else f"{x:,}")

    head = (
        f"{'agent stage (worst case from budget)':<52} {'kind':<24} {'model':<28} {'tasks':>6} {'LLM calls':>10} "
        f"{'searches':>9} {'tokens':>11} {'$ max':>9} {'wall s':>9}"
    )
    lines = ["", head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['stage'][:52]:<52} {r['kind'][:24]:<24} {r['model'][:28]:<28} {r['tasks']:>6} "
            f"{cell(r['max_llm_calls']):>10} {cell(r['max_search_calls']):>9} {cell(r['max_tokens']):>11} "
            f"{cell(r['max_usd']):>9} {cell(r['max_wall_s']):>9}"
        )
    lines.append(
        "note: — = no limit in the system's budget (unbounded); judge calls on agent reports are estimated "
        "once the agent has run"
    )
    return "\n".join(lines)
