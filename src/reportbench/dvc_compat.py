"""A shim for one DVC crash: `dvc exp run --dry -S ...` on a pipeline whose stages read other stages' outputs.

DVC runs a dry experiment in a temporary copy of the repository without checking any data out (DVC issue
treeverse/dvc#9817 made `--dry` imply `--temp`). A stage that would run is first looked up in DVC's run-cache,
whose key hashes every dependency (`dvc.stage.cache._can_hash`); a dependency that is another stage's output
does not exist in that copy, and hashing it raised FileNotFoundError, so `dvc exp run --dry --allow-missing
-S judge=...` died on the first judge stage instead of listing what would run. A missing dependency simply
cannot be hashed, so the run-cache cannot answer for that stage: this shim returns False for it (DVC then
prints the command, as a dry run should). Nothing changes for a stage whose dependencies exist, i.e. for every
real run. Applied by `hydra_plugins/reportbench_resolvers` (loaded by `dvc exp run` when it composes
params.yaml); a DVC without `_can_hash` is left alone.
"""

from __future__ import annotations

from typing import Any


def patch_run_cache_missing_deps() -> bool:
    """Install the shim (idempotent); False when this DVC has no `_can_hash` to wrap."""
    try:
        from dvc.stage import cache as stage_cache
    except ImportError:
        return False
    original = getattr(stage_cache, "_can_hash", None)
    if original is None or getattr(original, "_reportbench_shim", False):
        return original is not None

    def _can_hash(stage: Any) -> bool:
        for dep in getattr(stage, "deps", ()):
            if getattr(dep, "protocol", None) == "local" and dep.def_path and not dep.exists:
                return False  # a missing dependency cannot be hashed: no run-cache entry can match
        return original(stage)

    _can_hash._reportbench_shim = True  # type: ignore[attr-defined]
    stage_cache._can_hash = _can_hash
    return True
