"""Prices from litellm's local cost map, read as JSON (no litellm import, no network).

Why not `litellm.completion_cost`: importing litellm costs ~3.5 s per process, and the fast path, the batch
path and `reportbench estimate` must not pay that just to multiply tokens by a price. The map shipped inside
the installed litellm wheel (`model_prices_and_context_window_backup.json`) is the same file litellm reads with
`LITELLM_LOCAL_MODEL_COST_MAP=True`; a price configured on the judge (`input_cost_per_token`, ...) wins.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Price:
    """USD per token, online and batch (batch None when the map has no batch price for the model)."""

    model: str
    input: float
    output: float
    batch_input: float | None
    batch_output: float | None
    source: str

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None, *, batch: bool = False) -> float:
        """Dollars for one call; batch without a known batch price falls back to the online price."""
        pin = self.batch_input if batch and self.batch_input is not None else self.input
        pout = self.batch_output if batch and self.batch_output is not None else self.output
        return (prompt_tokens or 0) * pin + (completion_tokens or 0) * pout


@functools.lru_cache(maxsize=1)
def cost_map() -> dict[str, Any]:
    """litellm's bundled model cost map (empty when litellm is not installed)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(next(iter(spec.submodule_search_locations))) / "model_prices_and_context_window_backup.json"
    if not path.is_file():
        return {}
    return dict(json.loads(path.read_text(encoding="utf-8")))


@functools.lru_cache(maxsize=1)
def o200k_tokenizer() -> Any:
    """tiktoken's o200k_base from the tokenizer files the litellm wheel ships (never downloaded); None when
    unavailable (callers then count 4 characters per token). Shared by `reportbench estimate` and the stub."""
    spec = importlib.util.find_spec("litellm")
    if spec is not None and spec.submodule_search_locations and "TIKTOKEN_CACHE_DIR" not in os.environ:
        root = Path(next(iter(spec.submodule_search_locations)))
        os.environ["TIKTOKEN_CACHE_DIR"] = str(root / "litellm_core_utils" / "tokenizers")
    try:
        import tiktoken

        return tiktoken.get_encoding("o200k_base")
    except Exception:  # noqa: BLE001 - no tokenizer offline: 4 characters per token
        return None


def _candidates(model: str) -> list[str]:
    out = [model]
    if "/" in model:
        out.append(model.split("/", 1)[1])
    return out


def price_for(
    model: str,
    *,
    input_cost_per_token: float | None = None,
    output_cost_per_token: float | None = None,
) -> Price | None:
    """The price of `model` (any litellm model string); None when neither the config nor the map knows it."""
    if input_cost_per_token is not None and output_cost_per_token is not None:
        return Price(
            model, float(input_cost_per_token), float(output_cost_per_token), None, None, "judge config"
        )
    table = cost_map()
    for name in _candidates(model):
        entry = table.get(name)
        if not isinstance(entry, dict) or "input_cost_per_token" not in entry:
            continue
        return Price(
            model=name,
            input=float(entry.get("input_cost_per_token") or 0.0),
            output=float(entry.get("output_cost_per_token") or 0.0),
            batch_input=_opt(entry.get("input_cost_per_token_batches")),
            batch_output=_opt(entry.get("output_cost_per_token_batches")),
            source="litellm cost map",
        )
    return None


def _opt(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None
