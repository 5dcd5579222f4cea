"""Errors that many layers raise, at the bottom of the import graph (docs/architecture.md, "Layers")."""

from __future__ import annotations


class ConfigError(ValueError):
    """A params file or config entry is missing or malformed; the message names file and key."""
