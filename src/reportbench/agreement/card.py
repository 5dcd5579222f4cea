"""The judge card: agreement figures as a small table document (JSON for the scorecard site, markdown to read).

Schema (the scorecard site renders exactly this): {"benchmark": str, "release": str, "summary": str,
"sections": [{"title": str, "note": str, "columns": [str], "rows": [[str | number | null]]}]}.
Numbers are rounded to 4 decimals; NaN becomes null (undefined, not zero).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reportbench.agreement.compare import TaskAgreement
from reportbench.jsonio import write_json

AGREEMENT_COLUMNS = [
    "judge task", "scale", "items", "failed (excluded)", "accuracy", "accuracy lo", "accuracy hi",
    "kappa", "kappa weights", "kappa lo", "kappa hi", "macro-F1", "majority floor", "Spearman rho",
    "systems", "Kendall tau (systems)", "tau lo", "tau hi",
]  # fmt: skip


def num(x: float | int | None) -> float | int | None:
    """4-decimal rounding; NaN/None -> None."""
    if x is None:
        return None
    if isinstance(x, int):
        return x
    return None if math.isnan(x) or math.isinf(x) else round(float(x), 4)


@dataclass
class Section:
    title: str
    note: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "note": self.note, "columns": self.columns, "rows": self.rows}


def agreement_section(candidate: str, reference: str, results: Sequence[TaskAgreement], note: str) -> Section:
    rows = []
    for r in results:
        rows.append(
            [
                r.task,
                r.scale,
                r.n_items,
                r.n_failed,
                num(r.accuracy),
                num(r.accuracy_ci[0]),
                num(r.accuracy_ci[1]),
                num(r.kappa),
                r.kappa_weights if r.n_labels else None,
                num(r.kappa_ci[0]),
                num(r.kappa_ci[1]),
                num(r.macro_f1),
                num(r.majority_floor),
                num(r.spearman),
                r.n_systems,
                num(r.kendall_tau),
                num(r.kendall_ci[0]),
                num(r.kendall_ci[1]),
            ]  # fmt: skip
        )
    return Section(f"{candidate} vs {reference}", note, list(AGREEMENT_COLUMNS), rows)


def confusion_section(pairs: Sequence[tuple[str, str, Sequence[TaskAgreement]]]) -> Section:
    rows: list[list[Any]] = []
    for candidate, reference, results in pairs:
        for r in results:
            for i, la in enumerate(r.labels):
                for j, lb in enumerate(r.labels):
                    if r.confusion and r.confusion[i][j]:
                        rows.append([f"{candidate} vs {reference}", r.task, la, lb, r.confusion[i][j]])
    return Section(
        "Confusion matrices",
        "Counts of (candidate label, reference label) per judge task; empty cells omitted.",
        ["pair", "judge task", "candidate label", "reference label", "items"],
        rows,
    )


def system_means_section(pairs: Sequence[tuple[str, str, Sequence[TaskAgreement]]]) -> Section:
    rows: list[list[Any]] = []
    for candidate, reference, results in pairs:
        for r in results:
            for system, (ma, mb) in sorted(r.system_means.items()):
                rows.append([f"{candidate} vs {reference}", r.task, system, num(ma), num(mb)])
    return Section(
        "System means behind Kendall tau",
        "Mean verdict value per system over the items both judges answered; each judge's ranking of systems "
        "is the order of its column.",
        ["pair", "judge task", "system", "candidate mean", "reference mean"],
        rows,
    )


def position_section(per_judge: Mapping[str, Mapping[str, tuple[int, int]]]) -> Section:
    rows = [
        [judge, task, n, consistent, num(consistent / n if n else math.nan)]
        for judge, tasks in sorted(per_judge.items())
        for task, (n, consistent) in sorted(tasks.items())
    ]
    return Section(
        "Position consistency (pairwise judges)",
        "Share of report pairs judged in both orders (A/B swapped) whose preferred side did not change.",
        ["judge", "judge task", "pairs in both orders", "consistent", "rate"],
        rows,
    )


def self_consistency_section(
    per_judge: Mapping[str, Mapping[str, tuple[int, int, float, float]]], note: str
) -> Section:
    rows = [
        [judge, task, k, n, num(flip), num(dis)]
        for judge, tasks in sorted(per_judge.items())
        for task, (k, n, flip, dis) in sorted(tasks.items())
    ]
    return Section(
        "Self-consistency (k re-samples of one judge)",
        note,
        ["judge", "judge task", "samples k", "items", "flip rate (items changed in any sample)", "mean disagreement"],
        rows,
    )


def build_card(benchmark: str, release: str, summary: str, sections: Sequence[Section]) -> dict[str, Any]:
    return {"benchmark": benchmark, "release": release, "summary": summary, "sections": [s.to_dict() for s in sections]}


def validate_card(card: Mapping[str, Any]) -> None:
    """Raise ValueError when the card does not match the schema the site renders."""
    for key, kind in (("benchmark", str), ("release", str), ("summary", str), ("sections", list)):
        if not isinstance(card.get(key), kind):
            raise ValueError(f"judge card: {key!r} must be {kind.__name__}")
    for i, s in enumerate(card["sections"]):
        for key, kind in (("title", str), ("note", str), ("columns", list), ("rows", list)):
            if not isinstance(s.get(key), kind):
                raise ValueError(f"judge card: sections[{i}].{key} must be {kind.__name__}")
        for j, row in enumerate(s["rows"]):
            if len(row) != len(s["columns"]):
                raise ValueError(
                    f"judge card: sections[{i}].rows[{j}] has {len(row)} cells, {len(s['columns'])} columns"
                )
            for cell in row:
                if cell is not None and not isinstance(cell, str | int | float) or isinstance(cell, bool):
                    raise ValueError(f"judge card: sections[{i}].rows[{j}] holds a {type(cell).__name__}")


def card_markdown(card: Mapping[str, Any]) -> str:
    lines = [f"# Judge card: {card['benchmark']} / {card['release']}", "", card["summary"], ""]
    for s in card["sections"]:
        lines += [f"## {s['title']}", "", s["note"], ""]
        if not s["rows"]:
            lines += ["(no rows)", ""]
            continue
        lines.append("| " + " | ".join(s["columns"]) + " |")
        lines.append("|" + "---|" * len(s["columns"]))
        for row in s["rows"]:
            cells = ["–" if c is None else str(c).replace("|", "\\|") for c in row]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def write_card(card: Mapping[str, Any], metrics_dir: Path) -> tuple[Path, Path]:
    validate_card(card)
    metrics_dir = Path(metrics_dir)
    js = write_json(metrics_dir / "judge_card.json", card)
    md = metrics_dir / "judge_card.md"
    md.write_text(card_markdown(card), encoding="utf-8")
    return js, md
