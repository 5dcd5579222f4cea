"""DeepResearch Bench's published tables for `reportbench reproduce deepresearch_bench/<table>` (the spec's
`reproduce` field; docs/deepresearch-bench.md).

What the authors released decides what runs offline:
- `race-claude37`: their per-task RACE results of one model (`results/race/claude-3-7-sonnet-latest/
  raw_results.jsonl`) re-averaged with this plug-in's aggregation and compared with the means they printed
  (`race_result.txt`). It checks the averaging only: none of the plug-in's RACE judging or scoring code runs.
- `fact-<model>`: their per-task FACT records (`results/fact/<model>/validated.jsonl`, the input of their
  `utils/stat.py`; their repository holds them for some models after the pinned commit, at the pin only the
  printed `fact_result.txt` of claude-3-7-sonnet-latest) counted into this plug-in's `fact.TaskFact` rows and
  summarised by `fact.summary` under `scoring.fact=code`, compared with their `fact_result.txt`.
- `table1` needs the Gemini judges and the Jina reader: commands, not an offline run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from reportbench.benchmarks import CannotRun, ReproducibleCell, ReproducibleTable
from reportbench_deepresearch_bench.fact import TaskFact, count_results, summary
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


FACT_LABELS = ("total_citations", "total_valid_citations", "valid_rate")


def fact_folder(args: Any) -> Path:
    """`--data`: `results/fact/<model>/` itself, or a checkout of their repository (the model from the table key)."""
    model = getattr(args, "table_param", None) or ""
    if not getattr(args, "data", None):
        raise CannotRun(
            f"needs the authors' per-task FACT records results/fact/{model or '<model>'}/validated.jsonl and its "
            "fact_result.txt (their run_benchmark.sh writes both): pass --data PATH (that folder or a checkout of "
            f"{REPO}); at {COMMIT[:7]} they published only fact_result.txt for {MODEL}"
        )
    d = Path(args.data)
    for c in (d, d / "results" / "fact" / model):
        if (c / "validated.jsonl").is_file() and (c / "fact_result.txt").is_file():
            return c
    raise CannotRun(f"{d}: no validated.jsonl + fact_result.txt (nor results/fact/{model}/ holding them)")


def read_fact_rows(path: Path) -> list[TaskFact]:
    """Their validated.jsonl -> one `TaskFact` per article, counted as their `utils/stat.py` reads it: an
    article whose `citations` is empty cites nothing; a URL whose `validate_error` is set is skipped; a verdict
    `unknown` is validated but neither supported nor unsupported."""
    rows = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}: line {i}"
        try:
            d = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if not isinstance(d, dict) or "id" not in d or "citations" not in d:
            raise ValueError(f"{where}: expected an object with fields 'id' and 'citations'")
        citations = d["citations"]
        if not citations:
            rows.append(TaskFact(str(d["id"]), 0, 0, 0))
            continue
        if not isinstance(citations, list):  # "extraction failed": their deduplicate step never writes it on
            raise ValueError(f"{where}: field 'citations' is {citations!r}, not a list of statement-URL pairs")
        groups = d.get("citations_deduped")
        if not isinstance(groups, dict):
            raise ValueError(f"{where}: field 'citations_deduped' missing or not an object")
        supported = unsupported = validated = 0
        for url, g in groups.items():
            if not isinstance(g, dict) or "validate_res" not in g or "validate_error" not in g:
                raise ValueError(f"{where}: citations_deduped[{url!r}] lacks validate_res / validate_error")
            if g["validate_error"] is not None:
                continue
            results = g["validate_res"]
            if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
                raise ValueError(f"{where}: citations_deduped[{url!r}].validate_res is not a list of objects")
            s, u = count_results(results)
            supported, unsupported, validated = supported + s, unsupported + u, validated + len(results)
        rows.append(TaskFact(str(d["id"]), supported, unsupported, len(citations), n_validated=validated))
    return rows


def run_fact(args: Any) -> list[ReproducibleCell]:
    folder = fact_folder(args)
    rows = read_fact_rows(folder / "validated.jsonl")
    ours = summary(rows, "code")
    theirs = read_race_result(folder / "fact_result.txt")
    n_cite = sum(1 for t in rows if t.n_citations)
    note = f"{len(rows)} articles, {n_cite} with citations"
    if ours.get("n_unchecked"):
        note += (f"; {ours['n_unchecked']} cite pages none of which was validated: left out here (evidence rule), "
                 "counted as 0 by their stat.py")
    return [
        ReproducibleCell(label, theirs.get(label), None if ours.get(label) is None else float(ours[label]),  # type: ignore[arg-type]
                         1e-9, note=note if i == 0 else "")
        for i, label in enumerate(FACT_LABELS)
    ]


CHECKOUT = f"../shared/authors/mirror/{REPO}/{COMMIT}"
# their utils/api.py: RACE and cleaning on Gemini 2.5 Pro (`Model`), FACT's three steps on Gemini 2.5 Flash
# (`FACT_Model`; the preview names they pinned are retired, the GA models are named), thinking_budget 16000 and
# nothing else (`judge.request=authors`)
_FLASH = "".join(f" -S '++judge.task_models.{t}=gemini/gemini-2.5-flash'"
                 for t in ("drb_fact_extract", "drb_fact_dedup", "drb_fact_validate"))
_PUBLISHED = (
    " -S judge.prompts=authors -S judge.request=authors" + _FLASH +
    " -S benchmarks.deepresearch_bench.scoring.race=code"
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
        f"DeepResearch Bench: the authors' released RACE means of {MODEL} (Overall 0.4218), re-averaged from "
        "their per-task rows (checks the averaging only; none of the plug-in's RACE judging or scoring runs)",
        "none",
        f"the authors' results/race/{MODEL}/ ({REPO}@{COMMIT[:7]}; --data or REPORTBENCH_AUTHORS_MIRROR)",
        True,
        run_race_claude37,
    ),
    ReproducibleTable(
        "fact-<model>",
        "DeepResearch Bench: the authors' printed FACT totals of one model (fact_result.txt), recounted from their "
        "per-task validated.jsonl with the plug-in's FACT counting and summary (scoring.fact=code)",
        "none",
        f"the authors' results/fact/<model>/ (validated.jsonl + fact_result.txt; in {REPO} for some models; "
        "--data PATH)",
        True,
        run_fact,
    ),
    ReproducibleTable(
        "table1",
        "DeepResearch Bench main table: RACE (4 dimensions + overall) and FACT (C.Acc, E.Cit) per system",
        "none",
        "the authors' 100 tasks and criteria (release=authors), each system's reports, a Gemini key (RACE: "
        "Gemini-2.5-Pro; FACT: Gemini-2.5-Flash) and a Jina key",
        False,
        commands=[
            "reportbench estimate -S judge=llm -S judge.model=gemini/gemini-2.5-pro" + _PUBLISHED,
            "dvc exp run -S judge=llm -S judge.model=gemini/gemini-2.5-pro" + _PUBLISHED,
        ],
    ),
)
