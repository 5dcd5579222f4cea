"""YAML reading through libyaml's C loader when PyYAML was built with it (same values as `yaml.safe_load`).

Why: every stage process reads params.yaml (22 KB) and its prompt files; the pure-Python loader took ~35 ms for
params.yaml alone, the C loader ~4 ms, paid in each of the pipeline's 40-odd stage processes.
"""

from __future__ import annotations

from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """`yaml.safe_load(text)`, through the C loader when available."""
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader (CSafeLoader or SafeLoader)
