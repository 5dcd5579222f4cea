"""A quick subset of any release: `-S benchmarks.<b>.release.limit=N` keeps N of its M tasks (docs/scale.md).

Like lm-eval's and inspect's `--limit`, but the choice is not "the first N": the N tasks whose `sha256(task_id)`
(hex) is smallest, kept in the release's own order. Why hashed: the choice is a uniform sample over domains and
categories (the first N tasks of a source sorted by domain would all be one domain), it needs no seed, anyone can
recompute it from the ids alone, and it is stable when the source grows — a task stays chosen unless N newer ids
hash below it, and dropping unchosen tasks never changes it.

Why one generic step after the benchmark's own importer: every release table keys its rows by `task_id` (or `*`
for rows every task shares), so one filter serves all six benchmarks and none can forget a table. The corpus and
citation counts are kept whole: a retrieval system then sees the same pool it sees on the full release, so a
chosen task's result does not depend on the limit.

A subset release never passes for the full one: its name (and so its directory under data/releases/, metrics/
and the site) is `<name>-limit<N>`, its `release.json` carries `subset: {n, of, limit, rule, task_ids_of_full}`,
its card says so at the top, and every leaderboard shows "subset n of M, not comparable with full runs". So `dvc
metrics diff` between a subset run and a full run compares two different files (shown as added/deleted), never
one file's numbers. A limit of M or more keeps every task, with a note (still named `-limit<N>`: the name is
fixed before the source is read).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from typing import Any

from reportbench.errors import ConfigError

LIMIT_KEY = "limit"
RULE = "the N tasks with the smallest sha256(task_id) (hex digest of the UTF-8 id), in the release's task order"
NOT_COMPARABLE = "not comparable with full runs"


def release_limit(cfg: Mapping[str, Any] | None, where: str = "release") -> int | None:
    """The configured `limit` (None: the full release); anything but a positive integer is one error line."""
    value = (cfg or {}).get(LIMIT_KEY)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(
            f"{where}.{LIMIT_KEY}: {value!r} is not an integer; expected a positive integer (the number of tasks) "
            "or null for the full release"
        )
    if value <= 0:
        raise ConfigError(
            f"{where}.{LIMIT_KEY}: {value!r} is out of range; expected a positive integer (the number of tasks) "
            "or null for the full release"
        )
    return value


def release_dir_name(cfg: Mapping[str, Any], where: str = "release") -> str:
    """The release's name on disk (data/releases/<b>/<this>, metrics/<b>/<this>): `<name>-limit<N>` with a limit."""
    name = str(cfg.get("name"))
    limit = release_limit(cfg, where)
    return name if limit is None else f"{name}-limit{limit}"


def task_hash(task_id: str) -> str:
    """The sort key of the subset rule (RULE)."""
    return hashlib.sha256(task_id.encode("utf-8")).hexdigest()


def choose_tasks(task_ids: list[str], limit: int) -> list[str]:
    """The ids the rule keeps, in the given (release) order."""
    keep = set(sorted(task_ids, key=lambda t: (task_hash(t), t))[:limit])
    return [t for t in task_ids if t in keep]


def subset_release(release: Any, limit: int | None) -> Any:
    """The release restricted to the chosen tasks (a Release from reportbench.release.format), renamed
    `<name>-limit<N>` and carrying its `subset` record; `limit` None returns it unchanged."""
    if limit is None:
        return release
    all_ids = [t.task_id for t in release.tasks]
    chosen = choose_tasks(all_ids, limit)
    keep = set(chosen)
    record: dict[str, Any] = {
        "n": len(chosen),
        "of": len(all_ids),
        "limit": limit,
        "base_name": release.meta.name,
        "rule": RULE,
        # the full release's ids in its order: files named after another task of it are `outside_release`, not
        # unmapped, and a bare number that is a row of the full task list keeps meaning that row
        "task_ids_of_full": all_ids,
    }
    if limit >= len(all_ids):
        record["note"] = f"limit {limit} >= the release's {len(all_ids)} tasks: every task is kept (the full set)"

    def rows(table: list[Any]) -> list[Any]:
        return [r for r in table if getattr(r, "task_id", None) in keep or getattr(r, "task_id", None) == "*"]

    meta = dataclasses.replace(release.meta, name=f"{release.meta.name}-limit{limit}", subset=record)
    return dataclasses.replace(
        release,
        meta=meta,
        tasks=[t for t in release.tasks if t.task_id in keep],
        exemplar_ref_rows=rows(release.exemplar_ref_rows),
        nugget_rows=rows(release.nugget_rows),
        # no task_id: shared by every task, kept whole (see the module docstring)
        corpus=list(release.corpus),
        citation_counts=list(release.citation_counts),
        extra={name: (rows(t) if t and hasattr(t[0], "task_id") else list(t)) for name, t in release.extra.items()},
    )


def is_partial(subset: Mapping[str, Any] | None) -> bool:
    """True when a subset record keeps fewer tasks than the full release has."""
    return bool(subset) and int(subset.get("n", 0)) < int(subset.get("of", 0))  # type: ignore[union-attr]


def subset_line(subset: Mapping[str, Any] | None) -> str | None:
    """The one line every leaderboard and card shows for a subset release, or None for a full release."""
    if not subset:
        return None
    n, of, limit = subset.get("n"), subset.get("of"), subset.get("limit")
    if is_partial(subset):
        return f"subset {n} of {of} tasks (limit={limit}; {RULE}), {NOT_COMPARABLE}"
    return f"limit={limit} >= {of} tasks: the full set of {of} tasks (every task kept; named -limit{limit})"


def subset_card_line(subset: Mapping[str, Any]) -> str:
    """The line at the top of a subset release's CARD.md (and so of its README.md)."""
    base = str(subset.get("base_name") or "")
    of = f" of release `{base}`" if base else ""
    head = f"Quick subset{of}" if is_partial(subset) else f"Release `{base}` with a limit"
    return f"{head}: {subset_line(subset)}. Built with `-S benchmarks.<b>.release.limit=N` (docs/scale.md)."


def public_subset(subset: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The subset record without the full id list (what leaderboards and metrics files carry)."""
    if not subset:
        return None
    return {k: v for k, v in subset.items() if k != "task_ids_of_full"}


def full_task_ids(release: Any) -> list[str] | None:
    """The full release's task ids when `release` is a subset of it, else None."""
    subset = getattr(release.meta, "subset", None) or {}
    ids = subset.get("task_ids_of_full")
    return list(ids) if ids else None
