"""Every fee a commercial deep-research API bills, from the versioned table `provider_prices.yaml` (one row per
model, each with its source and the date it was read). Tokens alone undercount these APIs: OpenAI bills each web
search call, Perplexity bills citation and reasoning tokens and each search query, Gemini each Google search."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from reportbench.yamlio import safe_load

TABLE = Path(__file__).with_name("provider_prices.yaml")


@dataclass(frozen=True)
class ProviderPrice:
    model: str
    input_per_mtok: float
    output_per_mtok: float
    search_per_1k: float = 0.0
    citation_per_mtok: float | None = None  # None: billed as input
    reasoning_per_mtok: float | None = None  # None: billed as output
    source: str = ""
    as_of: str = ""
    version: str = ""

    def usd(
        self, *, input: int = 0, output: int = 0, reasoning: int = 0, citation: int = 0, searches: int = 0
    ) -> float:
        """Dollars for one response's usage (`reasoning`/`citation`: tokens the provider bills separately)."""
        cit = self.citation_per_mtok if self.citation_per_mtok is not None else self.input_per_mtok
        rea = self.reasoning_per_mtok if self.reasoning_per_mtok is not None else self.output_per_mtok
        return (
            input * self.input_per_mtok + output * self.output_per_mtok + reasoning * rea + citation * cit
        ) / 1e6 + searches * self.search_per_1k / 1000


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    data = safe_load(TABLE.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise ValueError(f"{TABLE}: expected a mapping with `version` and `models`")
    return data


def table_version() -> str:
    return str(_table().get("version") or "")


def lookup(model: str) -> ProviderPrice | None:
    """The row of `model` (a litellm-style `provider/name`, or a dated snapshot `name-2025-06-26`); None if absent."""
    data = _table()
    bare = model.split("/", 1)[1] if "/" in model else model
    rows: dict[str, Any] = data["models"]
    name = bare if bare in rows else next((k for k in sorted(rows, key=len, reverse=True) if bare.startswith(k)), None)
    if name is None:
        return None
    row = rows[name]
    try:
        return ProviderPrice(
            model=name,
            input_per_mtok=float(row["input_per_mtok"]),
            output_per_mtok=float(row["output_per_mtok"]),
            search_per_1k=float(row.get("search_per_1k") or 0.0),
            citation_per_mtok=None if row.get("citation_per_mtok") is None else float(row["citation_per_mtok"]),
            reasoning_per_mtok=None if row.get("reasoning_per_mtok") is None else float(row["reasoning_per_mtok"]),
            source=str(row.get("source") or ""),
            as_of=str(row.get("as_of") or ""),
            version=str(data.get("version") or ""),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{TABLE}: models.{name}: {exc}") from None
