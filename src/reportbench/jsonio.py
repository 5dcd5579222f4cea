"""Strict, diff-friendly JSON for metric files and records, shared by every module that writes them."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def json_safe(obj: Any) -> Any:
    """NaN/inf -> null so the file is strict JSON (DVC and browsers reject NaN literals)."""
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    if isinstance(obj, Mapping):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj


def dumps_strict(data: Any) -> str:
    """Sorted, indented, strict JSON text with a trailing newline (byte-stable for the same data)."""
    return json.dumps(json_safe(data), indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n"


def write_json(path: str | Path, data: Any) -> Path:
    """Write strict sorted JSON (NaN -> null), creating parent folders, atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(dumps_strict(data), encoding="utf-8")
    tmp.replace(path)
    return path
