"""Moved to `reportbench.http_cache`: the fetch stage, the DeepScholar source fetcher and both release builders
share it, so it sits in the bottom layer (docs/architecture.md, "Layers"). This name stays importable."""

from reportbench.http_cache import *  # noqa: F403
