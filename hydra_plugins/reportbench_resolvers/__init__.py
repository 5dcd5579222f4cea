"""Loaded by Hydra's plugin scan when `dvc exp run` composes params.yaml (DVC adds the repository root to the
plugin path): registers reportbench's OmegaConf resolvers (`rb_plan`, `rb_judge_identity`, see
src/reportbench/plan.py), the dry-run shim of src/reportbench/dvc_compat.py (`dvc exp run --dry`) and the search
path of installed benchmarks' own config trees (src/reportbench/hydra_search.py: found by the scan as a member)."""

from reportbench.dvc_compat import patch_run_cache_missing_deps
from reportbench.hydra_search import BenchmarkConfSearchPath  # noqa: F401 - Hydra's scan registers it
from reportbench.plan import register_resolvers

register_resolvers()
patch_run_cache_missing_deps()
