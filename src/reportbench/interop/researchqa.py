"""ResearchQA: the authors' released judgments in, their leaderboard table out (notebook cells 11-19).

In: per system, the coverage judge file `<provider>_judge_gpt4.1mini.json` (a list of `{corpusid_sectionid,
rubric_judges_gpt: [{score: "Not at all" | "Barely" | "Moderately" | "Mostly" | "Completely", ...}]}`), and the
pairwise verdicts per battle (`session_id, implementation_A, implementation_B, winner_judge,
winner_judge_swapped` with A/B): `ensemble_battles` scores each battle as cell 12 does (sum of 1-5 labels, plus
`vote_weight` per direct vote; equal = tie), giving the battles for `reportbench reproduce researchqa/table3-elo`
without re-judging. Out: the notebook's `summary_df` (mean, std, "mean ± std", sorted by mean) as CSV.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

LABEL_SCORE = {"Not at all": 1, "Barely": 2, "Moderately": 3, "Mostly": 4, "Completely": 5}


def read_coverage_judgments(path: str | Path) -> dict[str, int]:
    """{session id: sum of 1-5 rubric scores} of one system's released coverage judge file."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of judged answers")
    out = {}
    for i, item in enumerate(data):
        try:
            sid = str(item["corpusid_sectionid"])
            labels = [j["score"] for j in item["rubric_judges_gpt"]]
        except (KeyError, TypeError):
            raise ValueError(f"{path}: item {i}: needs corpusid_sectionid and rubric_judges_gpt[].score") from None
        unknown = [x for x in labels if x not in LABEL_SCORE]
        if unknown:
            raise ValueError(f"{path}: item {i} ({sid}): unknown label(s) {unknown}")
        out[sid] = sum(LABEL_SCORE[x] for x in labels)
    return out


def ensemble_battles(
    coverage: Mapping[str, Mapping[str, int]], pairwise: Iterable[Mapping[str, Any]], vote_weight: int = 5
) -> list[tuple[str, str, str]]:
    """(system A, system B, win|lose|tie) per battle, in input order, as leaderboard.ipynb cell 12 scores it.
    A verdict other than A/B is an error, as their assert is; a missing coverage sum names the battle."""
    out = []
    for i, row in enumerate(pairwise):
        sid, a, b = str(row["session_id"]), str(row["implementation_A"]), str(row["implementation_B"])
        try:
            score_a, score_b = coverage[a][sid], coverage[b][sid]
        except KeyError as exc:
            raise ValueError(f"battle {i} ({sid}, {a} vs {b}): no coverage judgment for {exc}") from None
        for verdict in (row["winner_judge"], row["winner_judge_swapped"]):
            if verdict not in ("A", "B"):
                raise ValueError(f"battle {i} ({sid}): verdict {verdict!r} is not A or B")
            if verdict == "A":
                score_a += vote_weight
            else:
                score_b += vote_weight
        out.append((a, b, "win" if score_a > score_b else "tie" if score_a == score_b else "lose"))
    return out


def write_leaderboard(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """The notebook's summary table: system, mean, std, 'mean ± std' ({:.0f}), sorted by mean descending."""
    ordered = sorted(rows, key=lambda r: -float(r["mean"]))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["system", "mean", "std", "mean ± std"])
        for r in ordered:
            m, s = float(r["mean"]), float(r["std"])
            w.writerow([r["system"], repr(m), repr(s), f"{m:.0f} ± {s:.0f}"])
    return path


def read_leaderboard(path: str | Path) -> dict[str, tuple[float, float]]:
    with Path(path).open(newline="", encoding="utf-8") as f:
        return {row["system"]: (float(row["mean"]), float(row["std"])) for row in csv.DictReader(f)}
