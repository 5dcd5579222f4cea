"""FACT arithmetic (pure): citation accuracy and average effective citations from judged statement-URL pairs.

Paper (§3.2): C.Acc = supported pairs / judged pairs (over all tasks), E.Cit = supported pairs / number of
tasks. The authors' `utils/stat.py`: a pair judged `unknown` is not counted; a URL whose validation call
failed is skipped; an article with no citations at all is skipped entirely (not in the task count: switch
`effective_denominator`), an article whose extraction failed never reaches the statistics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

Denominator = Literal["paper", "code"]


@dataclass(frozen=True)
class TaskFact:
    """One task's FACT counts: pairs judged supported / unsupported, and whether it had any citation."""

    task_id: str
    supported: int
    unsupported: int
    n_citations: int  # extracted statement-URL pairs before validation (0: the article cites nothing)
    failed: bool = False  # extraction or a validation call failed: not a count, a failure
    # statements the validator gave a verdict on (supported, unsupported or unknown); None: every pair counted
    # was validated (callers that only know the two counts). 0 with citations: nothing was checked.
    n_validated: int | None = None

    @property
    def validated(self) -> int:
        return self.supported + self.unsupported if self.n_validated is None else self.n_validated

    @property
    def unchecked(self) -> bool:
        """It cites something, yet no statement of it was validated (pages unfetched): no evidence, no value."""
        return self.n_citations > 0 and self.validated == 0


def citation_accuracy(supported: int, unsupported: int) -> float | None:
    """supported / (supported + unsupported); undefined (None), not 0, when nothing was judged."""
    n = supported + unsupported
    return supported / n if n else None


def effective_citations(task: TaskFact, denominator: Denominator = "paper") -> float | None:
    """A task's effective citations: its supported pairs. Paper: every task with a report counts (0 if it
    cites nothing); code: a task without citations is left out (None, excluded from the mean). A task whose
    citations were never validated (no page fetched) has no value: 0 supported of nothing checked is not 0."""
    if task.failed or task.unchecked:
        return None
    if task.n_citations == 0 and denominator == "code":
        return None
    return float(task.supported)


def summary(tasks: Iterable[TaskFact], denominator: Denominator = "paper") -> dict[str, float | int | str | None]:
    """The authors' fact_result.txt numbers: pooled accuracy, mean pairs and mean supported pairs per task.

    Tasks whose citations were never validated are left out (`n_unchecked`); when no task's statements were
    validated at all, the totals are None with `reason` (a 0.0 from tasks that cite nothing is not a total)."""
    rows = [t for t in tasks if not t.failed]
    unchecked = [t for t in rows if t.unchecked]
    counted = [t for t in rows if not t.unchecked and (t.n_citations > 0 or denominator == "paper")]
    sup = sum(t.supported for t in counted)
    judged = sum(t.supported + t.unsupported for t in counted)
    n = len(counted)
    out: dict[str, float | int | str | None] = {
        "total_citations": judged / n if n else None,
        "total_valid_citations": sup / n if n else None,
        "valid_rate": citation_accuracy(sup, judged - sup),
        "n_tasks": n,
    }
    if unchecked:
        out["n_unchecked"] = len(unchecked)
    if unchecked and not any(t.n_citations > 0 for t in counted):
        out["total_citations"] = out["total_valid_citations"] = None
        out["reason"] = f"no_pages: no statement of {len(unchecked)} citing task(s) was validated"
    return out


def count_results(results: Iterable[Mapping[str, object]]) -> tuple[int, int]:
    """(supported, unsupported) among validation results; `unknown` (and anything else) is not counted."""
    s = u = 0
    for r in results:
        if r.get("result") == "supported":
            s += 1
        elif r.get("result") == "unsupported":
            u += 1
    return s, u
