"""The header line a leaderboard shows about its release (a quick subset, docs/scale.md), kept apart from the
ranking and row logic so every output (json, md, csv, html, site) reads one value.

`mark_release(lb, release)` puts the subset record and its line into the leaderboard's `meta` (`meta.subset`,
`meta.notice`); the renderers only print `meta.notice`, so none can word it differently."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reportbench.release.subset import public_subset, subset_line


def mark_release(meta: dict[str, Any], release: Any) -> None:
    """Record a subset release in a leaderboard's meta: `subset` {n, of, limit, rule, ...} and the `notice` line."""
    record = getattr(release.meta, "subset", None)
    if record:
        meta["subset"] = public_subset(record)
        meta["notice"] = subset_line(record)


def notice(meta: Mapping[str, Any] | None) -> str | None:
    """The line to print above a leaderboard, or None (a full release)."""
    text = (meta or {}).get("notice")
    return str(text) if text else None
