"""`reportbench board` (issue 32, "tables still too wide"): every installed benchmark's leaderboard fits 160 columns
with three more systems added, as docs/reading-scores.md documents it, every system and every metric present;
unknown benchmarks exit 2 naming the enabled ones."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reportbench.site.board import render_board

pytestmark = pytest.mark.core

EXTRA = ["my_deep_research_agent_v2", "open_deep_research_gpt41_mini", "storm"]  # one over MAX_SYSTEM


def _with_extra_systems(lb: dict) -> dict:
    """The committed leaderboard plus three systems: one with a failed task and one with an undefined metric."""
    lb = copy.deepcopy(lb)
    for k, name in enumerate(EXTRA):
        row = copy.deepcopy(lb["rows"][0])
        row.update({"system": name, "rank": None, "unranked_reason": "2/3 tasks: 1 failed (exit code 2)"})
        if k == 0:
            row.update({"n_failed_tasks": 1, "n_answered": row.get("n_tasks", 3) - 1, "partial": True,
                        "first_failure": {"task_id": "q3", "status": "failed", "reason": "exit code 2; stderr: x"}})
        if k == 1:
            m = lb["metrics"][0]
            row["metrics"][m] = None
            row.setdefault("undefined_reason", {})[m] = "not_identifiable"  # the longest reason code
        lb["rows"].append(row)
    return lb


def _committed(repo_root: Path) -> dict[str, tuple[str, Path]]:
    from reportbench.config import load_params

    plan = load_params(repo_root / "params.yaml")["plan"]["benchmarks"]
    out = {b: (str(e["release"]), repo_root / "metrics" / b / str(e["release"]) / "leaderboard.json")
           for b, e in plan.items()}  # fmt: skip
    missing = [str(p) for _, p in out.values() if not p.is_file()]
    if missing:
        pytest.skip(f"no committed leaderboard: {missing} (run `dvc repro`)")
    return out


def test_every_benchmark_fits_160_columns_with_three_more_systems(repo_root: Path) -> None:
    widths = {}
    for b, (release, path) in _committed(repo_root).items():
        lb = _with_extra_systems(json.loads(path.read_text()))
        text = render_board(lb, b, release)
        widths[b] = max(len(line) for line in text.splitlines())
        for name in EXTRA:
            assert name[:27] in text, (b, name)
        for r in lb["rows"]:
            assert str(r["system"])[:27] in text
        labels = [str((lb["metric_info"].get(m) or {}).get("label") or m)[:15] for m in lb["metrics"]]
        assert all(label in text for label in labels), (b, labels)  # every metric, in blocks when needed
        assert "— not_identifiable" in text and "failed, first q3: exit code 2" in text
    assert max(widths.values()) <= 160, widths
    print(widths)


def test_the_documented_command_runs_as_written(repo_root: Path, tmp_path: Path) -> None:
    """`reportbench board -b researcherbench` and `reportbench board` from a repository root, as docs show them."""
    doc = (repo_root / "docs" / "reading-scores.md").read_text()
    assert "reportbench board -b researcherbench" in doc and "\nreportbench board " in doc
    committed = _committed(repo_root)
    shutil.copy(repo_root / "params.yaml", tmp_path / "params.yaml")
    for b, (release, path) in committed.items():
        dest = tmp_path / "metrics" / b / release
        dest.mkdir(parents=True)
        dest.joinpath("leaderboard.json").write_text(json.dumps(_with_extra_systems(json.loads(path.read_text()))))
    exe = [sys.executable, "-m", "reportbench.cli"]
    one = subprocess.run([*exe, "board", "-b", "researcherbench"], cwd=tmp_path, capture_output=True, text=True)
    assert one.returncode == 0, one.stderr
    assert one.stdout.startswith("researcherbench · demo") and "storm" in one.stdout and "deer ·" not in one.stdout
    every = subprocess.run([*exe, "board"], cwd=tmp_path, capture_output=True, text=True)
    assert every.returncode == 0 and all(f"{b} · " in every.stdout for b in committed), every.stderr
    assert max(len(line) for line in every.stdout.splitlines()) <= 160
    bad = subprocess.run([*exe, "board", "-b", "nope"], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown benchmark 'nope'; choices: " in bad.stderr  # benchmark_arg's one line
    assert "researcherbench" in bad.stderr
