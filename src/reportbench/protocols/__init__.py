"""Benchmark protocols: which items each judge task must see, and how judgments become metric values.

A protocol package (e.g. `deepscholar`) has two halves, with the judge in between:

- `items`: pure functions (task, report, release context, params) -> `JudgeItem`s. Item ids are
  deterministic and derived from content, so reruns hit the judge cache and metrics that need the same
  judgment (e.g. Cite-P and Claim Coverage) share it.
- `metrics`: judgments keyed by item id -> `MetricResult`s, recomputing the same item plan so the two
  halves cannot drift apart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, eq=False)
class JudgeItem:
    """One thing to judge: the judge task name, a stable id, the task's input fields, and provenance ids."""

    task: str
    item_id: str
    inputs: Mapping[str, Any]
    input_ids: Mapping[str, str] = field(default_factory=dict)

    def typed(self) -> Any:
        """The judge task's typed input (`get_task(task).input_model(**inputs)`); imported lazily."""
        from reportbench.judges.tasks import get_task  # lazy: +215 ms to import (python -X importtime)

        return get_task(self.task).input_model(**self.inputs)


def content_hash(*parts: str, n: int = 16) -> str:
    """sha256 over the parts joined by a unit separator, first `n` hex chars.

    The first part is hashed as it is encoded, the rest joined after it: the same bytes as hashing the joined
    text, without a joined copy of the first part (a ~20 KB answer per ResearchQA coverage item, issue 36)."""
    if not parts:
        return hashlib.sha256(b"").hexdigest()[:n]
    digest = hashlib.sha256(parts[0].encode("utf-8"))
    if len(parts) > 1:
        digest.update("\x1f".join(("", *parts[1:])).encode("utf-8"))
    return digest.hexdigest()[:n]


__all__ = ["JudgeItem", "content_hash"]
