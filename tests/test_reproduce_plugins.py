"""The reproduce boundary: a benchmark (built-in or plug-in) declares its published tables on its spec
(`BenchmarkSpec.reproduce`), and `reportbench reproduce --list` and `reproduce <benchmark>/<table>` include them
next to the built-in ones, with the same exit codes (0 inside, 1 outside, 2 cannot run here)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import pytest

import reportbench.benchmarks as benchmarks
from reportbench.benchmarks import CannotRun, ReproducibleCell, ReproducibleTable, get_benchmark
from reportbench.reproduce import TABLES, all_tables, format_list, run_table

pytestmark = pytest.mark.core


def _cells(args: Any) -> list[ReproducibleCell]:
    return [ReproducibleCell("overall", 0.5, float(args.obtained), 0.01)]


def _missing(args: Any) -> list[ReproducibleCell]:
    raise CannotRun("needs the authors' per-task results: pass --data PATH")


@pytest.fixture
def declared(monkeypatch: pytest.MonkeyPatch) -> str:
    """A benchmark spec (a copy of DEER's, renamed) that declares three tables, installed for this test."""
    spec = dataclasses.replace(
        get_benchmark("deer"),
        name="fakebench",
        reproduce=(
            ReproducibleTable("t1", "Fake Table 1", "published", "nothing", True, _cells),
            ReproducibleTable("t2", "Fake Table 2", "published", "their data", True, _missing),
            ReproducibleTable("t3", "Fake Table 3", "published", "a key", False, commands=["dvc exp run ..."]),
        ),
    )
    benchmarks.register_benchmark(spec, replace=True)
    real = benchmarks.installed_benchmarks
    monkeypatch.setattr(benchmarks, "installed_benchmarks", lambda: [*real(), "fakebench"])
    yield "fakebench"
    benchmarks._BENCHMARKS.pop("fakebench", None)
    benchmarks._MODULES.pop("fakebench", None)


def test_declared_tables_are_listed_and_run(declared: str) -> None:
    tables = all_tables()
    assert set(TABLES) <= set(tables)
    assert {"fakebench/t1", "fakebench/t2", "fakebench/t3"} <= set(tables)
    assert "fakebench/t1" in "\n".join(format_list())
    assert run_table("fakebench/t1", argparse.Namespace(obtained=0.505))[0] == 0
    code, lines = run_table("fakebench/t1", argparse.Namespace(obtained=0.6))
    assert code == 1 and any("OUTSIDE" in ln for ln in lines)
    code, lines = run_table("fakebench/t2", argparse.Namespace())
    assert code == 2 and any("pass --data PATH" in ln for ln in lines)
    code, lines = run_table("fakebench/t3", argparse.Namespace())
    assert code == 2 and any("dvc exp run" in ln for ln in lines)


def test_the_builtin_benchmarks_declare_none_twice() -> None:
    keys = list(all_tables())
    assert len(keys) == len(set(keys))


# ------------------------------------------------------------------------------------------------ the plug-in
def _plugin() -> None:
    from reportbench.benchmarks import installed_benchmarks

    if "deepresearch_bench" not in installed_benchmarks():
        pytest.skip("the deepresearch_bench plug-in is not installed")


def _their_results(folder: Any, overall_printed: str) -> None:
    """Self-authored, in their format: raw_results.jsonl (one failed task) + race_result.txt."""
    import json

    folder.mkdir(parents=True)
    rows = [
        {"id": 1, "prompt": "q1", "comprehensiveness": 0.40, "insight": 0.30, "instruction_following": 0.50,
         "readability": 0.45, "overall_score": 0.41},
        {"id": 2, "prompt": "q2", "comprehensiveness": 0.50, "insight": 0.40, "instruction_following": 0.40,
         "readability": 0.55, "overall_score": 0.46},
        {"id": 3, "prompt": "q3", "error": "judge failed"},
    ]
    (folder / "raw_results.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (folder / "race_result.txt").write_text(
        "Comprehensiveness: 0.4500\nInsight: 0.3500\nInstruction Following: 0.4500\nReadability: 0.5000\n"
        f"Overall Score: {overall_printed}\n"
    )


def test_plugin_tables_are_listed_and_race_reaggregates_their_format(tmp_path: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _plugin()
    monkeypatch.delenv("REPORTBENCH_AUTHORS_MIRROR", raising=False)
    tables = all_tables()
    assert {"deepresearch_bench/race-claude37", "deepresearch_bench/table1"} <= set(tables)
    assert tables["deepresearch_bench/race-claude37"].offline and not tables["deepresearch_bench/table1"].offline
    good, bad = tmp_path / "good", tmp_path / "bad"
    _their_results(good, "0.4350")
    _their_results(bad, "0.4400")
    code, lines = run_table("deepresearch_bench/race-claude37", argparse.Namespace(data=str(good)))
    assert code == 0, lines
    assert any("2 scored tasks, 1 failed" in ln for ln in lines)
    code, lines = run_table("deepresearch_bench/race-claude37", argparse.Namespace(data=str(bad)))
    assert code == 1 and any(ln.startswith("RACE Overall Score") and "OUTSIDE" in ln for ln in lines)
    code, lines = run_table("deepresearch_bench/race-claude37", argparse.Namespace(data=str(tmp_path / "none")))
    assert code == 2 and any("REPORTBENCH_AUTHORS_MIRROR" in ln for ln in lines)


def test_plugin_race_means_equal_the_authors_published_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """Their released raw_results.jsonl re-aggregated gives their race_result.txt (Overall 0.4218); needs the
    pinned mirror in REPORTBENCH_AUTHORS_MIRROR."""
    _plugin()
    import os
    from pathlib import Path

    from reportbench_deepresearch_bench.pack import COMMIT, REPO

    base = os.environ.get("REPORTBENCH_AUTHORS_MIRROR")
    if not base or not (Path(base) / REPO / COMMIT / "results" / "race").is_dir():
        pytest.skip("REPORTBENCH_AUTHORS_MIRROR does not hold the authors' results/race/")
    code, lines = run_table("deepresearch_bench/race-claude37", argparse.Namespace(data=None))
    assert code == 0, lines
    assert any(ln.startswith("RACE Overall Score") and "0.4218" in ln and "ok" in ln for ln in lines)
