"""Shared pytest fixtures. Tests never touch the network; data from ../shared is optional."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.register_assert_rewrite("dvc_helpers")  # its checks report like the tests' own asserts

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _shared_dir() -> Path | None:
    env = os.environ.get("REPORTBENCH_SHARED")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared")
    for c in candidates:
        if (c / "data").is_dir():
            return c
    return None


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared (benchmark authors' public data). Skips the test cleanly when it is absent."""
    d = _shared_dir()
    if d is None:
        pytest.skip("../shared is not present (public benchmark data); skipping")
    return d


@pytest.fixture(scope="session")
def deepscholar_data(shared_dir: Path) -> Path:
    d = shared_dir / "data" / "deepscholar-bench"
    if not d.is_dir():
        pytest.skip("../shared/data/deepscholar-bench is not present")
    return d
