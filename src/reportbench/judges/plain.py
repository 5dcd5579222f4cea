"""`to_plain`: a judge config group (OmegaConf or nested Mappings) as plain dicts and lists.

Its own module, below both the client and `settings.JudgeSettings`: the stage parses an offline judge's config
without importing the litellm client (~150 ms), and the client re-exports it (`client.to_plain`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def to_plain(cfg: Any) -> Any:
    """OmegaConf DictConfig / nested Mappings -> plain dicts and lists."""
    if type(cfg).__module__.startswith("omegaconf"):
        from omegaconf import OmegaConf

        return OmegaConf.to_container(cfg, resolve=True)
    if isinstance(cfg, Mapping):
        return {str(k): to_plain(v) for k, v in cfg.items()}
    if isinstance(cfg, list | tuple):
        return [to_plain(v) for v in cfg]
    return cfg
