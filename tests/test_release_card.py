"""Hugging Face-style dataset cards: every release directory and export gets a README.md whose YAML header
`datasets` reads (configs, licence, size category), with the paper's citation, field descriptions and byte sizes;
the directory loads with polars and with `datasets` (a test-only extra; skipped when it is not installed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from reportbench import pipeline
from reportbench.config import load_params
from reportbench.release.card import hub_licence, size_category
from reportbench.release.demo import build_demo_release
from reportbench.release.format import write_release

pytestmark = pytest.mark.core


def header(readme: str) -> dict[str, Any]:
    assert readme.startswith("---\n")
    return yaml.safe_load(readme.split("---\n", 2)[1])


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rel") / "demo"
    write_release(build_demo_release(), out)
    return out


@pytest.fixture(scope="module")
def rubric_dir(tmp_path_factory: pytest.TempPathFactory, repo_root: Path) -> Path:
    """A release with an extra (registered) table: ResearcherBench's demo release, built as the stage does."""
    out = tmp_path_factory.mktemp("rel") / "researcherbench"
    params = load_params(repo_root / "params.yaml")
    if "researcherbench" not in (params.get("benchmarks") or {}):
        pytest.skip("researcherbench not configured")
    import os

    cwd = os.getcwd()
    os.chdir(repo_root)  # release sources in params are repo-relative
    try:
        pipeline.build_release(params, "researcherbench", out)
    finally:
        os.chdir(cwd)
    return out


def test_release_card_header_and_body(demo_dir: Path) -> None:
    readme = (demo_dir / "README.md").read_text()
    h = header(readme)
    import json

    counts = json.loads((demo_dir / "release.json").read_text())["counts"]
    assert sorted(c["config_name"] for c in h["configs"]) == sorted(t for t, n in counts.items() if n > 0)
    assert next(c for c in h["configs"] if c["config_name"] == "tasks").get("default") is True
    assert all(c["data_files"][0]["path"] == f"{c['config_name']}.parquet" for c in h["configs"])
    assert h["license"] == "apache-2.0" and h["size_categories"] == ["n<1K"] and "synthetic" in h["tags"]
    assert "arXiv:2508.20033" in readme and "@article{patel2025deepscholar" in readme  # the paper's citation
    assert "| `task_prompt` | String | the exact prompt given to systems |" in readme  # field descriptions
    size = (demo_dir / "tasks.parquet").stat().st_size
    assert f"| `tasks` | `tasks.parquet` | 3 | {size} (" in readme  # byte sizes, read from disk
    assert "## reportbench release card" in readme and "SYNTHETIC DATA" in readme  # CARD.md kept inside


def test_release_card_is_deterministic(tmp_path: Path) -> None:
    rel = build_demo_release()
    write_release(rel, tmp_path / "a")
    write_release(rel, tmp_path / "b")
    assert (tmp_path / "a" / "README.md").read_bytes() == (tmp_path / "b" / "README.md").read_bytes()


def test_release_with_extra_tables_lists_them(rubric_dir: Path) -> None:
    h = header((rubric_dir / "README.md").read_text())
    assert "rubric_items" in {c["config_name"] for c in h["configs"]}


@pytest.mark.parametrize("which", ["demo_dir", "rubric_dir"])
def test_release_loads_with_polars_by_the_card(which: str, request: pytest.FixtureRequest) -> None:
    d: Path = request.getfixturevalue(which)
    import json

    counts = json.loads((d / "release.json").read_text())["counts"]
    for cfg in header((d / "README.md").read_text())["configs"]:
        df = pl.read_parquet(d / cfg["data_files"][0]["path"])
        assert df.height == counts[cfg["config_name"]]


@pytest.mark.parametrize("which", ["demo_dir", "rubric_dir"])
def test_release_loads_with_datasets(
    which: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    d: Path = request.getfixturevalue(which)
    import json

    counts = json.loads((d / "release.json").read_text())["counts"]
    loaded = 0
    for cfg in header((d / "README.md").read_text())["configs"]:
        name = cfg["config_name"]
        ds = datasets.load_dataset(str(d), name, split="test", cache_dir=str(tmp_path / "hf"))
        assert ds.num_rows == counts[name]
        loaded += 1
    assert loaded == sum(1 for n in counts.values() if n > 0) >= 2  # every non-empty table is a config
    tasks = datasets.load_dataset(str(d), split="test", cache_dir=str(tmp_path / "hf"))  # default config: tasks
    assert tasks["task_id"] == pl.read_parquet(d / "tasks.parquet")["task_id"].to_list()


def test_export_card_loads_with_datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reportbench.live_builder.publish import write_export

    tables = {
        "papers": pl.DataFrame({"arxiv_id": ["2513.00101v1", "2513.00102v1"], "title": ["A", "B"]}),
        "nuggets": pl.DataFrame({"task_id": ["2513.00101v1"], "index": [0], "text": ["n"]}),
    }
    out = tmp_path / "export"
    write_export(out, "live-x", tables, "CC BY 4.0 (metadata); see CARD.md")
    readme = (out / "README.md").read_text()
    h = header(readme)
    assert h["license"] == "cc-by-4.0" and [c["config_name"] for c in h["configs"]] == ["papers", "nuggets"]
    assert "path: papers/test-*.parquet" in readme and "@article{patel2025deepscholar" in readme
    assert pl.read_parquet(out / "papers" / "*.parquet").height == 2
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    ds = datasets.load_dataset(str(out), "papers", split="test", cache_dir=str(tmp_path / "hf"))
    assert ds["arxiv_id"] == ["2513.00101v1", "2513.00102v1"]


def test_licence_and_size_mapping() -> None:
    assert hub_licence("MIT (dataset card)") == "mit"
    assert hub_licence("CC BY-NC 4.0") == "cc-by-nc-4.0"
    assert hub_licence("mixed; see CARD.md") == "other"
    assert [size_category(n) for n in (0, 999, 1000, 65_000, 2_000_000)] == [
        "n<1K",
        "n<1K",
        "1K<n<10K",
        "10K<n<100K",
        "1M<n<10M",
    ]
