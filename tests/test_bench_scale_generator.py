"""bench/scale.py's synthetic LiveResearchBench data passes the default shift check at every N (issue 36: at
N = 2,000 the shift check stopped `system@`, 1,486 of 2,000 reports "matching" another task).

Why it failed: every synthetic report used the whole ~130-word filler vocabulary, so a question made of filler
words scored the same on every report; past `STATS_ROWS` reports the check estimates each task's spread on a
sample, and a task whose own report is not in the sample had a spread of ~0, i.e. a z-score of float noise
times 1e9 for every report. Real reports differ in vocabulary; the generator now draws each report's filler
from its own part of the vocabulary. Reproduced here at N = 200 with the sample cut to 50 reports (the same
regime as N = 2,000 with 1,000)."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from reportbench.reports import check, shift_index

REPO = Path(__file__).resolve().parent.parent


def _scale() -> object:
    spec = importlib.util.spec_from_file_location("bench_scale", REPO / "bench" / "scale.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_scale"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_synthetic_lrb_reports_pass_the_shift_check_when_its_stats_are_sampled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reportbench.protocols.liveresearchbench.release import _title
    from reportbench.reports.shift_index import TaskIndex

    scale = _scale()
    n = 200
    monkeypatch.setattr(shift_index, "STATS_ROWS", 50)
    folders = scale.make_liveresearchbench(tmp_path, n, 2000)  # type: ignore[attr-defined]
    import csv

    questions: dict[str, str] = {}
    with open(tmp_path / "tasks.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            questions.setdefault(row["qid"], row["question"])
    assert len(questions) == n
    tasks = [SimpleNamespace(task_id=q, title=_title(t), task_prompt=t) for q, t in questions.items()]
    index = TaskIndex([check.task_text(t) for t in tasks])
    for system, folder in folders.items():
        bodies = [(folder / f"qid_{t.task_id}_report.md").read_text(encoding="utf-8") for t in tasks]
        result = check.shift_verdict(tasks, index, [t.task_id for t in tasks], index.query_matrix(bodies), None)
        assert result.checked == n
        assert result.error is None, (system, result.error)
        assert not result.mismatched, (system, len(result.mismatched))


def test_each_synthetic_report_uses_its_own_part_of_the_filler_vocabulary() -> None:
    scale = _scale()
    rng = random.Random(0)
    seen = [set(scale.synthetic_report(rng, "t", 2000, 40, False, vocabulary=scale.report_vocabulary(rng)).lower()  # type: ignore[attr-defined]
                .split()) & set(scale._WORDS) for _ in range(3)]  # type: ignore[attr-defined]
    assert all(len(s) < len(scale._WORDS) for s in seen)  # type: ignore[attr-defined]
    assert len({frozenset(s) for s in seen}) == 3
