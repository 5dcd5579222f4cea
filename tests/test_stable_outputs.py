"""Outputs that must be byte-identical on every machine (issue 23): the ResearchQA Elo table.

The Bradley–Terry fit used to differ in the 10th significant digit between BLAS kernels (a matmul in the
gradient, and L-BFGS-B's own BLAS calls): a fresh clone's `dvc repro` then rewrote tracked metrics on another
machine. OpenBLAS builds with DYNAMIC_ARCH pick their kernel from `OPENBLAS_CORETYPE`, and numpy's SIMD loops
can be switched off with `NPY_DISABLE_CPU_FEATURES`, so one machine can play several.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

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

# OpenBLAS core types (DYNAMIC_ARCH kernels) and the /proc/cpuinfo flags their kernels execute. OpenBLAS forces a
# named core without checking the CPU, so a kernel the CPU lacks dies with SIGILL (issue 32: SkylakeX on an AMD
# EPYC without AVX-512): only the cores whose flags the CPU has are played. Prescott (SSE3) is the x86-64 floor.
BLAS_CORES: dict[str, frozenset[str]] = {
    "Prescott": frozenset({"pni"}),
    "Haswell": frozenset({"avx2", "fma"}),
    "SkylakeX": frozenset({"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}),
}


def cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The `flags` of /proc/cpuinfo's first processor."""
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def numpy_simd_on() -> list[str]:
    """numpy's dispatched SIMD targets this CPU runs (switching off one it lacks or does not dispatch is ignored)."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # numpy 1.x
        from numpy.core import _multiarray_umath as umath  # type: ignore[no-redef]
    return [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]


def machines(flags: frozenset[str], simd: list[str]) -> dict[str, dict[str, str]]:
    """The kernels this CPU can play, each a "machine"; the floor also with numpy's SIMD loops off and 2 threads."""
    out = {core.lower(): {"OPENBLAS_CORETYPE": core} for core, need in BLAS_CORES.items() if need <= flags}
    if "prescott" in out:
        out["prescott-no-simd-two-threads"] = {
            "OPENBLAS_CORETYPE": "Prescott",
            "OPENBLAS_NUM_THREADS": "2",
            "NPY_DISABLE_CPU_FEATURES": " ".join(simd),
        }
    return out


def _table(env: dict[str, str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], env={**os.environ, **env}, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, (env, proc.returncode, proc.stderr[-2000:])
    return proc.stdout


@pytest.mark.core
def test_only_kernels_the_cpu_has_are_forced() -> None:
    zen2 = frozenset("fpu sse2 pni ssse3 sse4_1 sse4_2 avx avx2 fma bmi2".split())  # an AMD EPYC without AVX-512
    assert set(machines(zen2, ["X86_V3"])) == {"prescott", "haswell", "prescott-no-simd-two-threads"}
    x86_64_v1 = frozenset("fpu sse sse2 pni".split())
    assert set(machines(x86_64_v1, [])) == {"prescott", "prescott-no-simd-two-threads"}
    skx = zen2 | {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}
    assert machines(skx, ["X86_V3", "X86_V4"])["skylakex"] == {"OPENBLAS_CORETYPE": "SkylakeX"}
    assert cpu_flags("processor\t: 0\nflags\t\t: fpu pni avx2\n\nprocessor\t: 1\n") == {"fpu", "pni", "avx2"}


def test_researchqa_elo_table_is_identical_across_blas_kernels_and_simd() -> None:
    if platform.machine() not in ("x86_64", "AMD64") or not Path("/proc/cpuinfo").is_file():
        pytest.skip("OpenBLAS core types are x86-64's, read from /proc/cpuinfo (Linux)")
    flags = cpu_flags(Path("/proc/cpuinfo").read_text())
    played = machines(flags, numpy_simd_on())
    assert len(played) >= 2, (sorted(flags), played)  # at least the floor kernel with and without SIMD
    tables = {name: _table(env) for name, env in played.items()}
    reference = tables.pop("prescott")
    assert reference.count("\n") == 2 and '"boot_median"' in reference
    for name, table in tables.items():
        assert table == reference, f"{name}: the Elo table differs from Prescott's"
