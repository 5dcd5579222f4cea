"""Progress bars with an ETA for long stages (tqdm on stderr), shared by system and judge stages.

`progress_bar(total)` shows done/total, rate and time remaining. Its label defaults to the stage being run
(`stage_label("system@<b>.<S>")`, set by the stage function), so call sites need no extra argument. Set
`REPORTBENCH_PROGRESS=0` to turn bars off (CI logs); an empty run shows none.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from tqdm import tqdm

_LABEL: ContextVar[str] = ContextVar("reportbench_progress_label", default="tasks")


def progress_enabled() -> bool:
    return os.environ.get("REPORTBENCH_PROGRESS", "1").strip().lower() not in ("0", "false", "no", "off")


@contextmanager
def stage_label(label: str) -> Iterator[None]:
    """Name the bars created inside this block (e.g. `system@deepscholar.my_agent`)."""
    token = _LABEL.set(label)
    try:
        yield
    finally:
        _LABEL.reset(token)


def progress_bar(total: int, desc: str | None = None, unit: str = "task", enabled: bool | None = None) -> tqdm:
    """A tqdm bar on stderr: `label: 40%|####  | 2/5 [00:31<00:47, 15.5s/task]` (elapsed < remaining)."""
    show = progress_enabled() if enabled is None else enabled
    return tqdm(
        total=total,
        desc=desc or _LABEL.get(),
        unit=unit,
        file=sys.stderr,
        disable=not show or total == 0,
        dynamic_ncols=True,
        mininterval=0.5,
        smoothing=0.1,
    )
