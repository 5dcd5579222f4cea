"""Loaded by Hydra's plugin scan when `dvc exp run` composes params.yaml (DVC adds the repository root to the
plugin path): registers reportbench's OmegaConf resolvers (`rb_plan`, see src/reportbench/plan.py)."""

from reportbench.plan import register_resolvers

register_resolvers()
