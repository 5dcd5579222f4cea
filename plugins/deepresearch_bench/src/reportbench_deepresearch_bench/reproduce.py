"""DeepResearch Bench's published tables for `reportbench reproduce deepresearch_bench/<table>` (the spec's
`reproduce` field; docs/deepresearch-bench.md).

What the authors released decides what runs offline: their per-task RACE results of one model
(`results/race/claude-3-7-sonnet-latest/raw_results.jsonl`) with the means they printed (`race_result.txt`),
so `race-claude37` re-aggregates the first with this plug-in's exporter and compares with the second. FACT has
only the printed totals (`fact_result.txt`, no per-task records), and the paper's main table needs the Gemini
judges and the Jina reader: those are commands, not offline runs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from reportbench.benchmarks import CannotRun, ReproducibleCell, ReproducibleTable
from reportbench_deepresearch_bench.pack import COMMIT, REPO

MODEL = "claude-3-7-sonnet-latest"
RACE_LABELS = ("Comprehensiveness", "Insight", "Instruction Following", "Readability", "Overall Score")
_DIMS = ("comprehensiveness", "insight", "instruction_following", "readability")


def race_folder(args: Any) -> Path:
    """`--data` (the folder itself or a checkout of their repo), else the pinned mirror
    ($REPORTBENCH_AUTHORS_MIRROR/<owner>/<repo>/<commit>/)."""
    cands = []
    if getattr(args, "data", None):
        d = Path(args.data)
        cands += [d, d / "results" / "race" / MODEL]
    if os.environ.get("REPORTBENCH_AUTHORS_MIRROR"):
        cands.append(Path(os.environ["REPORTBENCH_AUTHORS_MIRROR"]) / REPO / COMMIT / "results" / "race" / MODEL)
    for c in cands:
        if (c / "raw_results.jsonl").is_file() and (c / "race_result.txt").is_file():
            return c
    raise CannotRun(
        f"needs the authors' results/race/{MODEL}/ (raw_results.jsonl + race_result.txt) of {REPO}@{COMMIT[:7]}: "
        "pass --data PATH (that folder or a checkout) or set REPORTBENCH_AUTHORS_MIRROR to a mirror holding it"
    )


def read_race_rows(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Their raw_results.jsonl -> (our per-task metric rows of the successfully scored tasks, failed rows)."""
    ok, failed = [], 0
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: line {i}: {exc}") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}: line {i}: expected a JSON object")
        if "error" in row:  # their script writes the failure and leaves it out of the means
            failed += 1
            continue
        try:
            ok.append({"race_overall": float(row["overall_score"]), **{f"race_{d}": float(row[d]) for d in _DIMS}})
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: line {i}: field {exc} missing or not a number") from None
    return ok, failed


def read_race_result(path: Path) -> dict[str, float]:
    """race_result.txt (`Label: 0.1234` lines)."""
    out = {}
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            label, sep, value = line.partition(":")
            try:
                out[label.strip()] = float(value)
            except ValueError:
                raise ValueError(f"{path}: line {i}: {line!r} is not 'Label: number'") from None
            if not sep:
                raise ValueError(f"{path}: line {i}: {line!r} is not 'Label: number'")
    return out


def run_race_claude37(args: Any) -> list[ReproducibleCell]:
    from reportbench_deepresearch_bench.benchmark import _authors_race

    folder = race_folder(args)
    ok, failed = read_race_rows(folder / "raw_results.jsonl")
    ours = _authors_race(ok) or {}
    theirs = read_race_result(folder / "race_result.txt")
    note = f"{len(ok)} scored tasks" + (f", {failed} failed (left out, as their script does)" if failed else "")
    return [
        ReproducibleCell(f"RACE {label}", theirs.get(label), ours.get(label), 5e-5, note=note if i == 0 else "")
        for i, label in enumerate(RACE_LABELS)
    ]


CHECKOUT = f"../shared/authors/mirror/{REPO}/{COMMIT}"
_PUBLISHED = (
    " -S judge.prompts=authors -S benchmarks.deepresearch_bench.scoring.race=code"
    " -S benchmarks.deepresearch_bench.scoring.fact=code -S benchmarks.deepresearch_bench.judging.race.parser=authors"
    " -S benchmarks.deepresearch_bench.judging.fact.dedup_failure=keep_all"
    " -S benchmarks.deepresearch_bench.judging.fact.fetch_failure=judge"
    # a checkout of their repo at the pin: here the authors' mirror beside the clone (../shared/authors/mirror)
    f" -S deepresearch_bench/release=authors -S benchmarks.deepresearch_bench.release.path={CHECKOUT}"
    " -S fetch.backend=reader -S fetch.mode=use"
)

TABLES = (
    ReproducibleTable(
        "race-claude37",
        f"DeepResearch Bench: the authors' released RACE means of {MODEL} (Overall 0.4218), re-aggregated "
        "from their per-task results",
        "none",
        f"the authors' results/race/{MODEL}/ ({REPO}@{COMMIT[:7]}; --data or REPORTBENCH_AUTHORS_MIRROR)",
        True,
        run_race_claude37,
    ),
    ReproducibleTable(
        "table1",
        "DeepResearch Bench main table: RACE (4 dimensions + overall) and FACT (C.Acc, E.Cit) per system",
        "none",
        "the authors' 100 tasks and criteria (release=authors), each system's reports, a Gemini key (RACE: "
        "Gemini-2.5-Pro; FACT: Gemini-2.5-Flash) and a Jina key; FACT's per-task records are not released",
        False,
        commands=[
            "reportbench estimate -S judge=llm -S judge.model=gemini/gemini-2.5-pro" + _PUBLISHED,
            "dvc exp run -S judge=llm -S judge.model=gemini/gemini-2.5-pro" + _PUBLISHED,
        ],
    ),
)
