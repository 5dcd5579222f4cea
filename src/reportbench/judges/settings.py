"""`JudgeSettings`: one judge step's `judge:` group, parsed once at the stage boundary (as inspect_ai's
`GenerateConfig` or lm-eval's `TaskConfig`) and handed down typed.

Before, the group travelled as a raw mapping and each layer re-parsed it on its way to the client (`to_plain`, then
`ClientConfig.from_mapping` in the judge, the client factory and the preflight). Now the stage parses it once: the
plain data (`to_plain` once), the failure bounds and budget it enforces, validated with one-line errors, and for the
litellm backend the typed `ClientConfig`. It is still a read-only Mapping over the plain data, so code that reads
`cfg.get(...)` (protocols, the agreement stage) takes it unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from reportbench.errors import ConfigError
from reportbench.judges import plain

if TYPE_CHECKING:
    from reportbench.judges.client import ClientConfig

_BOUNDS = {"max_failure_rate": 0.1, "max_call_failure_rate": 0.0}


class JudgeSettings(Mapping[str, Any]):
    """The parsed `judge:` group of one step: typed fields, plus read-only mapping access to the plain data."""

    __slots__ = ("_data", "backend", "name", "model", "max_failure_rate", "max_call_failure_rate", "max_cost_usd")

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        self.backend: str = str(data.get("backend", "offline"))
        self.name: str | None = data.get("name")
        self.model: str | None = data.get("model")
        runtime = data.get("runtime") or {}
        if not isinstance(runtime, Mapping):
            raise ConfigError(f"params.yaml: judge.runtime must be a mapping, got {runtime!r}")
        bounds = []
        for key, default in _BOUNDS.items():
            value = runtime.get(key, default)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
                raise ConfigError(f"params.yaml: judge.runtime.{key} must be a number in [0, 1], got {value!r}")
            bounds.append(float(value))
        self.max_failure_rate, self.max_call_failure_rate = bounds
        cost = runtime.get("max_cost_usd")
        if cost is not None and (isinstance(cost, bool) or not isinstance(cost, int | float) or cost < 0):
            raise ConfigError(f"params.yaml: judge.runtime.max_cost_usd must be a number >= 0, got {cost!r}")
        self.max_cost_usd: float | None = None if cost is None else float(cost)

    @classmethod
    def parse(cls, cfg: Mapping[str, Any] | JudgeSettings) -> JudgeSettings:
        """Once per step at the stage boundary; a JudgeSettings passes through untouched."""
        if isinstance(cfg, JudgeSettings):
            return cfg
        return cls(plain.to_plain(cfg))

    def plain(self) -> dict[str, Any]:
        """The plain data (already plain: no second `to_plain`); callers must not mutate it."""
        return self._data

    def client_config(self, overrides: Mapping[str, Any] | None = None) -> ClientConfig:
        """The typed client config of this step (validated once; `overrides` e.g. the step's output budget)."""
        from reportbench.judges.client import ClientConfig  # lazy: +152 ms to import (python -X importtime)

        data = {**self._data, **overrides} if overrides else self._data
        return ClientConfig.from_plain({k: v for k, v in data.items() if k != "prompts"})

    # -- Mapping over the plain data -------------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"JudgeSettings(backend={self.backend!r}, name={self.name!r}, model={self.model!r})"
