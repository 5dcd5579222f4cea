"""`reportbench reproduce deepresearch_bench/fact-<model> --data PATH` (issue 34): the authors' per-task FACT
records (`results/fact/<model>/validated.jsonl`, the input of their `utils/stat.py`) counted by the plug-in's
FACT code give their printed `fact_result.txt`. The fixture is self-authored in their format (an article that
cites nothing, an `unknown` verdict, a URL whose validation failed, a zh article); where the pinned mirror is
present, their own `stat.py` recomputes the fixture's `fact_result.txt`. race-claude37's title says what it
exercises."""

from __future__ import annotations

import argparse
import json
import runpy
import shutil
import sys
import types
from pathlib import Path

import pytest

from reportbench.reproduce import all_tables, format_list, run_table

pytestmark = pytest.mark.core

FIXTURE = Path(__file__).parent / "fixtures" / "drb_fact" / "selfmade-model"


@pytest.fixture(autouse=True)
def _plugin() -> None:
    from reportbench.benchmarks import installed_benchmarks

    if "deepresearch_bench" not in installed_benchmarks():
        pytest.skip("the deepresearch_bench plug-in is not installed")


def _args(data: Path | None) -> argparse.Namespace:
    return argparse.Namespace(data=None if data is None else str(data))


def test_fact_totals_from_their_per_task_records() -> None:
    code, lines = run_table("deepresearch_bench/fact-selfmade-model", _args(FIXTURE))
    assert code == 0, "\n".join(lines)
    assert any("4 articles, 3 with citations" in ln for ln in lines)
    # a checkout layout (results/fact/<model>/) is found from the model in the table key
    code, lines = run_table("deepresearch_bench/fact-selfmade-model", _args(FIXTURE.parents[1]))
    assert code == 2  # tests/fixtures is not a checkout: says what it looked for


def test_fact_finds_the_model_folder_of_a_checkout(tmp_path: Path) -> None:
    shutil.copytree(FIXTURE, tmp_path / "results" / "fact" / "selfmade-model")
    assert run_table("deepresearch_bench/fact-selfmade-model", _args(tmp_path))[0] == 0


def test_fact_counts_are_theirs_not_a_copy_of_the_printed_totals(tmp_path: Path) -> None:
    """One verdict flipped in the records moves the recount outside their printed totals (exit 1)."""
    rows = [json.loads(ln) for ln in (FIXTURE / "validated.jsonl").read_text(encoding="utf-8").splitlines()]
    rows[1]["citations_deduped"]["https://example.org/a"]["validate_res"][1]["result"] = "supported"
    (tmp_path / "validated.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    shutil.copy(FIXTURE / "fact_result.txt", tmp_path / "fact_result.txt")
    code, lines = run_table("deepresearch_bench/fact-selfmade-model", _args(tmp_path))
    assert code == 1 and any(ln.startswith("total_valid_citations") and "OUTSIDE" in ln for ln in lines)


def test_fact_without_data_or_with_a_bad_record_says_what_and_where(tmp_path: Path) -> None:
    code, lines = run_table("deepresearch_bench/fact-claude-3-7-sonnet-latest", _args(None))
    assert code == 2 and any("--data PATH" in ln and "validated.jsonl" in ln for ln in lines)
    (tmp_path / "validated.jsonl").write_text('{"id": 7, "citations": [{"fact": "x", "url": "u"}]}\n')
    shutil.copy(FIXTURE / "fact_result.txt", tmp_path / "fact_result.txt")
    code, lines = run_table("deepresearch_bench/fact-m", _args(tmp_path))
    assert code == 2 and any("validated.jsonl: line 1" in ln and "citations_deduped" in ln for ln in lines)


def test_fixture_totals_are_what_their_stat_py_prints(authors_mirror: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Their utils/stat.py at the pin, run on the fixture (its `utils` package import replaced by a loader
    of the same three lines: their utils/__init__ needs a Gemini and a Jina key), prints the fixture's totals."""
    from reportbench_deepresearch_bench.pack import COMMIT, REPO

    stat = authors_mirror / REPO / COMMIT / "utils" / "stat.py"
    if not stat.is_file():
        pytest.skip(f"{stat} is not in the mirror")
    utils = types.ModuleType("utils")
    utils.load_jsonl = lambda p: [json.loads(ln.strip()) for ln in open(p, encoding="utf-8").readlines()]  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "utils", utils)
    out = tmp_path / "fact_result.txt"
    monkeypatch.setattr(sys, "argv", ["stat.py", "--input_path", str(FIXTURE / "validated.jsonl"),
                                      "--output_path", str(out)])
    runpy.run_path(str(stat), run_name="__main__")
    assert out.read_text() == (FIXTURE / "fact_result.txt").read_text()


def test_listed_titles_say_what_each_table_exercises() -> None:
    tables = all_tables()
    assert "deepresearch_bench/fact-<model>" in tables
    race = tables["deepresearch_bench/race-claude37"].title
    assert "re-averaged" in race and "none of the plug-in's RACE judging or scoring runs" in race
    assert any(ln.startswith("deepresearch_bench/fact-<model>") for ln in format_list())
