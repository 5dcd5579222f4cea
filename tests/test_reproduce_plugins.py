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
