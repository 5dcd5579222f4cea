"""`reportbench reproduce` (issue 22 §4): --list covers the five papers' headline tables; the offline ones pass
(DEER csai/1 MEAN 6.16 from the authors' judgments, the DeepScholar exemplar's Table 6 row, ResearchQA Elo from
a battles file); a cell outside its tolerance exits 1; a table that needs a key says so and exits 2."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import pytest

from reportbench.presets import presets
from reportbench.reproduce import TABLES, format_list, run_table
from test_reproduce_researchqa import EXPECTED, ROUNDS, tournament

pytestmark = pytest.mark.core


def _args(**kw: object) -> argparse.Namespace:
    base = {"data": None, "battles": None, "judgments": None, "expected": None, "rounds": None}
    return argparse.Namespace(**{**base, **kw})


def test_list_covers_every_benchmark_with_needs_and_offline_flag(repo_root: Path) -> None:
    have = presets(repo_root / "conf")
    assert {k.split("/")[0] for k in TABLES} == {
        "deepscholar", "researcherbench", "deer", "researchqa", "liveresearchbench"
    }
    for key, t in TABLES.items():
        b = key.split("/")[0]
        assert t.preset in have[b], key
        assert t.needs and (t.run is not None or t.commands), key
        assert t.offline == (t.run is not None and not t.unreleased), key
    text = "\n".join(format_list())
    assert "deer/csai-1" in text and "researchqa/table3-elo" in text and "needs:" in text


def test_a_table_that_needs_a_key_says_how_and_exits_2() -> None:
    code, lines = run_table("liveresearchbench/table1", _args())
    assert code == 2 and any("reportbench estimate" in ln for ln in lines)
    assert run_table("nope/table", _args())[0] == 2


@pytest.mark.parametrize("with_pack", [True, False], ids=["as-configured", "no-pack"])
def test_deer_csai1_mean_616_from_the_authors_judgments(shared_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                        repo_root: Path, tmp_path: Path, with_pack: bool) -> None:
    if not (shared_dir / "data" / "deer" / "csai" / "gpt5.2_fast" / "others" / "0001.json").is_file():
        pytest.skip("../shared/data/deer is not present")
    monkeypatch.chdir(repo_root)
    monkeypatch.setenv("REPORTBENCH_SHARED", str(shared_dir))
    if not with_pack:  # a user without the authors' pack (no mirror, an empty cache)
        monkeypatch.setenv("REPORTBENCH_AUTHORS_MIRROR", str(tmp_path / "no-mirror"))
        monkeypatch.setenv("REPORTBENCH_AUTHORS_CACHE", str(tmp_path / "no-cache"))
    code, lines = run_table("deer/csai-1", _args())
    assert code == 0, "\n".join(lines)
    mean = next(ln for ln in lines if ln.startswith("MEAN"))
    assert "6.1600" in mean and "6.160000" in mean and "  ok" in mean and "OUTSIDE" not in mean
    if "pack is not here" in mean:  # says what ran instead, and the fix
        assert "replayed against our prompts" in mean and "REPORTBENCH_AUTHORS_MIRROR" in mean
    # the same from the scoring functions alone (no judge stage)
    from reportbench.reproduce import run_deer_csai1

    assert all(c.ok for c in run_deer_csai1(_args()))


@pytest.mark.integration
def test_deepscholar_exemplar_table6_row(deepscholar_data: Path, monkeypatch: pytest.MonkeyPatch,
                                         repo_root: Path) -> None:
    monkeypatch.chdir(repo_root)
    code, lines = run_table("deepscholar/table6-exemplar", _args(data=str(deepscholar_data)))
    assert code == 0, "\n".join(lines)
    assert any("not checked" in ln and "sentences" in ln for ln in lines)  # a known difference is shown, not hidden


def _battles_csv(path: Path) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["session_id", "general_domain", "implementation_A", "implementation_B", "leaderboard_status"])
        for i, (a, b, s) in enumerate(tournament()):
            w.writerow([f"s{i}", "d", a, b, s])
    return path


def test_researchqa_elo_from_a_battles_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repo_root: Path) -> None:
    """The published preset's rating on a self-authored battles file equals the notebook's table (1e-6)."""
    monkeypatch.chdir(repo_root)
    battles = _battles_csv(tmp_path / "leaderboard_winner_df.csv")
    code, lines = run_table("researchqa/table3-elo", _args(battles=str(battles), expected=str(EXPECTED), rounds=ROUNDS))
    assert code == 0, "\n".join(lines)
    # one cell moved by more than the tolerance: outside, exit 1
    data = json.loads(EXPECTED.read_text())
    first = next(iter(data["table"]))
    data["table"][first]["mean"] += 0.01
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps(data))
    code, lines = run_table("researchqa/table3-elo", _args(battles=str(battles), expected=str(moved), rounds=ROUNDS))
    assert code == 1 and any("OUTSIDE" in ln and first in ln for ln in lines)
    assert run_table("researchqa/table3-elo", _args())[0] == 2  # no battles: says what it needs


def test_researchqa_battles_file_errors_name_the_line(tmp_path: Path, monkeypatch, repo_root: Path) -> None:
    monkeypatch.chdir(repo_root)
    bad = tmp_path / "b.csv"
    bad.write_text("implementation_A,implementation_B,leaderboard_status\nx,y,draw\n")
    code, lines = run_table("researchqa/table3-elo", _args(battles=str(bad)))
    assert code == 2 and "line 2" in lines[-1] and "draw" in lines[-1]


def test_researchqa_elo_from_released_judgments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                repo_root: Path) -> None:
    """Released judgments in the authors' format (self-authored) -> battles -> the same ratings as the battles."""
    monkeypatch.chdir(repo_root)
    battles = tournament()
    (tmp_path / "coverage").mkdir()
    systems = sorted({s for a, b, _ in battles for s in (a, b)})
    # coverage sums equal for every answer, so the two direct votes decide: a win = both votes for A, a loss =
    # both for B, a tie = one vote each (5 + 5)
    for system in systems:
        items = [{"corpusid_sectionid": f"s{i}", "rubric_judges_gpt": [{"score": "Mostly"}]} for i in range(420)]
        (tmp_path / "coverage" / f"{system}.json").write_text(json.dumps(items))
    votes = {"win": ("A", "A"), "lose": ("B", "B"), "tie": ("A", "B")}
    with (tmp_path / "pairwise.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["session_id", "implementation_A", "implementation_B", "winner_judge", "winner_judge_swapped"])
        for i, (a, b, s) in enumerate(battles):
            w.writerow([f"s{i}", a, b, *votes[s]])
    args = _args(judgments=str(tmp_path), expected=str(EXPECTED), rounds=ROUNDS)
    code, lines = run_table("researchqa/table3-elo", args)
    assert code == 0, "\n".join(lines)


def test_the_printed_commands_name_existing_config_choices(repo_root: Path) -> None:
    import re

    for t in TABLES.values():
        for cmd in t.commands:
            for group, option in re.findall(r"-S ([a-z_]+/[a-z_]+)=([A-Za-z0-9_]+)", cmd):
                assert (repo_root / "conf" / group / f"{option}.yaml").is_file(), (t.key, group, option)


def test_list_marks_tables_whose_input_was_never_released() -> None:
    """Issue 34: researchqa/table3-elo's battles were never released, so it is not offline-runnable."""
    lines = format_list()
    row = next(ln for ln in lines if ln.startswith("researchqa/table3-elo "))
    assert row.split()[1] == "unreleased", row
    for key in ("researcherbench/table3", "researchqa/table4-length"):
        assert next(ln for ln in lines if ln.startswith(key + " ")).split()[1] == "unreleased", key
    assert next(ln for ln in lines if ln.startswith("deer/csai-1 ")).split()[1] == "yes"
    assert any("never released by the authors: the tournament's battles" in ln for ln in lines)


def test_elo_runs_after_composing_a_subset_without_researchqa(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              repo_root: Path) -> None:
    """`reportbench compose 'benchmarks=[deer]'` remembers a subset; reproducing researchqa/table3-elo then
    composes its own published preset (it used to die: researchqa is not selected / no such key)."""
    import shutil

    from reportbench.cli import main

    work = tmp_path / "checkout"
    work.mkdir()
    shutil.copytree(repo_root / "conf", work / "conf")
    monkeypatch.chdir(work)
    assert main(["compose", "benchmarks=[deer]"]) == 0
    assert (work / "overrides.yaml").is_file()
    battles = _battles_csv(tmp_path / "leaderboard_winner_df.csv")
    code, lines = run_table("researchqa/table3-elo", _args(battles=str(battles), expected=str(EXPECTED), rounds=ROUNDS))
    assert code == 0, "\n".join(lines)
    empty = tmp_path / "empty.csv"
    empty.write_text("implementation_A,implementation_B,leaderboard_status\n")
    code, lines = run_table("researchqa/table3-elo", _args(battles=str(empty)))
    assert code == 2 and any("no battles" in ln for ln in lines), lines
