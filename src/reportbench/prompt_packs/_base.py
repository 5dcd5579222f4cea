"""What every authors' pack does the same way: read its pinned files once, and take the step's inputs by name.

Why here: each pack used to carry its own copy of these three helpers; a pack is now its pinned files, its
extraction, its renderers and its strict parsers, nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from reportbench.prompt_packs.sources import SourceRef, read_ref


@lru_cache(maxsize=64)
def source_text(ref: SourceRef) -> str:
    """Checked source text, read once per pinned file (the bytes cannot change without failing the sha check)."""
    return read_ref(ref)


def norm_inputs(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Input names may carry a note in parentheses (goldens.json does): 'query (res.json ...)' -> 'query'."""
    return {str(k).split(" (", 1)[0].strip(): v for k, v in inputs.items()}


def need(inp: Mapping[str, Any], *names: str) -> list[Any]:
    """The named inputs in order; a missing one is a KeyError naming what is there."""
    missing = [n for n in names if n not in inp]
    if missing:
        raise KeyError(f"missing input(s) {missing}; have {sorted(inp)}")
    return [inp[n] for n in names]
