"""CLI for judging at scale (docs/scale.md): `reportbench estimate`, `reportbench batch status|retry`,
`reportbench cache export|import`. One module so cli.py carries one line for all of them; each command's
code is imported only when it runs (litellm never is)."""

from __future__ import annotations

from typing import Any


def register(subparsers: Any) -> None:
    from reportbench.judges.batch import register as register_batch  # lazy: +113 ms to import (python -X importtime)
    from reportbench.judges.cache_io import register as register_cache  # lazy: +26 ms to import (python -X importtime)

    register_batch(subparsers)
    register_cache(subparsers)
    try:
        from reportbench.estimate import register as register_estimate  # lazy: +33 ms to import (python -X importtime)
    except ImportError:  # pragma: no cover - estimate lands in the same branch
        return
    register_estimate(subparsers)
