"""`reportbench export -b deepresearch_bench`: RACE results in the authors' files (their deepresearch_bench_race.py
writes `raw_results.jsonl`, one row per task, and `race_result.txt`, the means). Registered as the plug-in's
`BenchmarkSpec.export` hook, so the spine's exporter never names this benchmark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# our metric -> (their raw_results.jsonl field, their race_result.txt label)
RACE_FIELDS = {
    "race_comprehensiveness": ("comprehensiveness", "Comprehensiveness"),
    "race_insight": ("insight", "Insight"),
    "race_instruction_following": ("instruction_following", "Instruction Following"),
    "race_readability": ("readability", "Readability"),
    "race_overall": ("overall_score", "Overall Score"),
}


def export_race(
    scores: dict[str, Any], failures: dict[tuple[str, str, str], str], out: Path
) -> list[Path]:
    """Per system: `<S>/raw_results.jsonl` (scored tasks; a failed one as their `error` row, never a 0) and
    `<S>/race_result.txt` (means over scored tasks, 4 decimals, their labels)."""
    written: list[Path] = []
    for system, tasks in scores.items():
        written += _race_results(system, tasks, failures, out / system)
    return written


def _race_results(
    system: str, tasks: dict[str, dict[str, float | None]], failures: dict[tuple[str, str, str], str], folder: Path
) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    lines, scored = [], []
    for task_id, m in sorted(tasks.items()):
        tid: int | str = int(task_id) if task_id.isdigit() else task_id  # their ids are numbers
        if m.get("race_overall") is not None:
            row = {field: m.get(metric) for metric, (field, _) in RACE_FIELDS.items()}
            lines.append(json.dumps({"id": tid, **row}, ensure_ascii=False))
            scored.append(row)
        elif (system, task_id, "race_overall") in failures:
            lines.append(json.dumps({"id": tid, "error": failures[(system, task_id, "race_overall")]}))
    raw = folder / "raw_results.jsonl"
    raw.write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
    written = [raw]
    if scored:
        means = []
        for field, label in RACE_FIELDS.values():
            vals = [r[field] for r in scored if r[field] is not None]
            if vals:  # a dimension left undefined on every task is not written (their reader reads what is there)
                means.append(f"{label}: {sum(vals) / len(vals):.4f}\n")
        (folder / "race_result.txt").write_text("".join(means), encoding="utf-8")
        written.append(folder / "race_result.txt")
    return written
