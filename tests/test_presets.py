"""Per-benchmark presets (issue 22 §1): each composes, sets what its file says, names a source for every switch,
and `reportbench ls presets` shows them; the authors' parsing a preset selects is reachable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from reportbench.presets import presets

pytestmark = pytest.mark.core

BENCHMARKS = ("deepscholar", "researcherbench", "deer", "researchqa", "liveresearchbench")


def _get(tree: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        tree = tree[part]
    return tree


@pytest.fixture(scope="module")
def all_presets(repo_root: Path) -> dict:
    return presets(repo_root / "conf")


def test_every_benchmark_has_the_three_presets_and_every_switch_a_source(all_presets: dict) -> None:
    assert set(all_presets) == set(BENCHMARKS)
    for b, by_name in all_presets.items():
        assert {"defaults", "paper", "published"} <= set(by_name), b
        assert by_name["defaults"].switches == []
        assert by_name["published"].switches, b
        for p in by_name.values():
            assert p.unsourced == [], (b, p.name, p.unsourced)
            # its own benchmark, or the shared page fetcher (root `fetch` group: what the authors fetched with)
            assert all(s.path.startswith((f"benchmarks.{b}.", "fetch.")) for s in p.switches), (b, p.name)


def test_each_preset_composes_and_sets_its_switches(repo_root: Path, all_presets: dict, monkeypatch) -> None:
    from reportbench.config import composed_params

    monkeypatch.chdir(repo_root)
    base = composed_params([])
    for b, by_name in all_presets.items():
        for name, p in by_name.items():
            params = composed_params([f"{b}/preset={name}"])
            for s in p.switches:
                assert _get(params, s.path) == yaml.safe_load(s.value), (b, name, s.path)
            if name == "defaults":
                assert params["benchmarks"] == base["benchmarks"], b
            # a preset touches only its own benchmark
            others = {k: v for k, v in params["benchmarks"].items() if k != b}
            assert others == {k: v for k, v in base["benchmarks"].items() if k != b}, (b, name)


def test_published_presets_select_the_authors_settings(repo_root: Path, monkeypatch) -> None:
    from reportbench.config import composed_params

    monkeypatch.chdir(repo_root)
    rqa = composed_params(["researchqa/preset=published"])["benchmarks"]["researchqa"]["scoring"]
    assert rqa["ensemble"]["mode"] == "code" and rqa["rating"]["ties"] == "duplicate"
    assert rqa["rating"]["report"] == "mean" and rqa["rating"]["order"] == "factorize"
    assert rqa["rating"]["std_ddof"] == 1 and rqa["rating"]["solver"] == "per_round"
    deer = composed_params(["deer/preset=published"])["benchmarks"]["deer"]
    assert deer["scoring"]["mode"] == "code" and deer["judges"]["main"]["prompts"] == "authors"
    rb = composed_params(["researcherbench/preset=published"])["benchmarks"]["researcherbench"]["judging"]
    assert rb["rubric"]["compat_authors_parsing"] is True
    assert rb["extraction"]["reference_split"] == "authors_fixed"


def test_ls_presets_shows_every_switch_with_its_source(repo_root: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "reportbench.cli", "ls", "presets", "--conf", str(repo_root / "conf")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "researchqa/preset=published" in out
    assert "benchmarks.researchqa.scoring.rating.order = factorize    [leaderboard.ipynb cell 18" in out
    assert "NO SOURCE" not in out
    assert "fetch.backend = reader    [hanjanghoon/DEER@f81bd9c info_verification web_downloader" in out


def test_researcherbench_compat_parsing_is_the_authors_rule_under_their_prompts() -> None:
    """'Yes.' and '**Yes**' are covered under the authors' parsing, as in their evaluator; the strict parser
    (default) still refuses them."""
    from reportbench.benchmarks import get_benchmark
    from reportbench.judges.base import ParseError
    from reportbench.judges.tasks import get_task
    from reportbench.prompt_packs.judging import AuthorsPrompt, resolve_step

    get_benchmark("researcherbench")
    compat = get_task("researcherbench_rubric_compat")
    ap = AuthorsPrompt(compat, resolve_step(compat))
    assert ap.parse("Yes.", None).covered and ap.parse("**Yes** - covered", None).covered
    assert not ap.parse("No: the response omits it", None).covered
    assert ap.parse("The answer eyes it", None).covered  # their substring fallback, warts included
    strict = get_task("researcherbench_rubric")
    with pytest.raises(ParseError):
        AuthorsPrompt(strict, resolve_step(strict)).parse("Yes.", None)


@pytest.mark.integration
def test_researchqa_published_preset_runs_offline_end_to_end(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo under the published preset (offline judge): the leaderboard's Elo is the bootstrap mean of the
    duplicated-rows fit; under the defaults it is the median of the half-tie fit."""
    import json

    from spine_helpers import benchmark_params, run_benchmark

    monkeypatch.chdir(repo_root)
    runs = {}
    for preset in ("published", "defaults"):
        params = benchmark_params(repo_root, "researchqa", f"researchqa/preset={preset}")
        params["benchmarks"]["researchqa"]["scoring"]["rating"]["rounds"] = 50
        root = run_benchmark(params, "researchqa", tmp_path / preset)
        runs[preset] = root
    for preset, (ties, key) in {"published": ("duplicate", "boot_mean"), "defaults": ("half", "boot_median")}.items():
        extra = json.loads((runs[preset] / "metrics" / "extra.json").read_text())["ratings"]
        systems = json.loads((runs[preset] / "metrics" / "systems.json").read_text())
        assert extra["reported"] == ties
        table = {row["system"]: row for row in extra["tables"][ties]}
        assert table and all(systems[s]["metrics"]["elo"]["mean"] == row[key] for s, row in table.items())
