"""Releases load as their cards say (issue 24, item 2): `datasets.load_dataset(<release folder>, "tasks")` returns
that release's own, current rows, even when every demo folder is called `demo` and all five share one cache.

Each card's configs carry a description naming the benchmark, release and table hash
(src/reportbench/release/card.py `release_fingerprints`); without it `datasets` keyed its cache by folder name,
config name and card configs only, and returned DEER's tasks for three other demos."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from reportbench.config import load_params
from reportbench.pipeline import build_release

pytestmark = pytest.mark.core

BENCHMARKS = ["deer", "deepscholar", "liveresearchbench", "researcherbench", "researchqa"]


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory, repo_root: Path) -> dict[str, Path]:
    params = load_params(repo_root / "params.yaml")
    root = tmp_path_factory.mktemp("releases")
    out = {}
    for b in BENCHMARKS:
        if b not in (params.get("benchmarks") or {}):
            pytest.skip(f"{b} is not configured in params.yaml")
        build_release(params, b, root / b / "demo")  # every folder is named `demo`, as in data/releases
        out[b] = root / b / "demo"
    return out


def _load(datasets, folder: Path, cache: Path) -> pl.DataFrame:  # type: ignore[no-untyped-def]
    ds = datasets.load_dataset(str(folder), "tasks", split="test", cache_dir=str(cache))
    return ds.to_polars()


def _assert_same_rows(got: pl.DataFrame, want: pl.DataFrame, what: str) -> None:
    assert got.columns == want.columns, what
    assert got.height == want.height, what
    for g, w in zip(got.iter_rows(named=True), want.iter_rows(named=True), strict=True):
        assert g == w, f"{what}: {g.get('task_id')} != {w.get('task_id')}"


def test_five_demo_releases_load_their_own_rows(
    demos: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    cache = tmp_path / "hf"  # one cache for all five, in one process: the case that collided
    seen = set()
    for b, folder in demos.items():
        got = _load(datasets, folder, cache)
        want = pl.read_parquet(folder / "tasks.parquet")
        _assert_same_rows(got, want, b)
        seen.add(tuple(want["task_id"].to_list()))
    assert len(seen) == len(demos)  # the five demos really differ (else the test proves nothing)


def test_rewritten_release_loads_current_rows(
    demos: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same folder, rewritten with other content (its tables and card together, as the release stage does),
    loads the new rows, not the cached old ones."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    cache = tmp_path / "hf"
    folder = tmp_path / "x" / "demo"
    shutil.copytree(demos["deer"], folder)
    _assert_same_rows(_load(datasets, folder, cache), pl.read_parquet(folder / "tasks.parquet"), "before")
    shutil.rmtree(folder)
    shutil.copytree(demos["researcherbench"], folder)
    want = pl.read_parquet(folder / "tasks.parquet")
    _assert_same_rows(_load(datasets, folder, cache), want, "after the rewrite")
