"""Outputs that must be byte-identical on every machine (issue 23): the ResearchQA Elo table.

The Bradley–Terry fit used to differ in the 10th significant digit between BLAS kernels (a matmul in the
gradient, and L-BFGS-B's own BLAS calls): a fresh clone's `dvc repro` then rewrote tracked metrics on another
machine. OpenBLAS builds with DYNAMIC_ARCH pick their kernel from `OPENBLAS_CORETYPE`, and numpy's SIMD loops
can be switched off with `NPY_DISABLE_CPU_FEATURES`, so one machine can play several.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

PROBE = """
import json, random
from reportbench.protocols.researchqa.rating import ELO_DECIMALS, bootstrap_bt
rng = random.Random(3)
systems = [f"s{i}" for i in range(6)]
a, b, y = [], [], []
for _ in range(400):
    i, j = rng.sample(systems, 2)
    a.append(i); b.append(j); y.append(rng.choice([0.0, 0.5, 1.0, 1.0]))
for ties in ("half", "duplicate"):
    print(json.dumps(bootstrap_bt(a, b, y, rounds=200, seed=0, ties=ties).table(decimals=ELO_DECIMALS), sort_keys=True))
"""

MACHINES = {
    "haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "skylakex": {"OPENBLAS_CORETYPE": "SkylakeX"},
    "prescott-no-simd-two-threads": {
        "OPENBLAS_CORETYPE": "Prescott",
        "OPENBLAS_NUM_THREADS": "2",
        "NPY_DISABLE_CPU_FEATURES": "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX2 FMA3",
    },
}


def _table(env: dict[str, str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], env={**os.environ, **env}, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_researchqa_elo_table_is_identical_across_blas_kernels_and_simd() -> None:
    tables = {name: _table(env) for name, env in MACHINES.items()}
    reference = tables.pop("haswell")
    assert reference.count("\n") == 2 and '"boot_median"' in reference
    for name, table in tables.items():
        assert table == reference, f"{name}: the Elo table differs from Haswell's"
