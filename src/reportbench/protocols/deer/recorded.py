"""DEER's fact side from the authors' recorded fact records (`judging.recorded_fact: {<system>: <folder>}`).

Why: the authors' released `fact/<NNNN>.json` keep each claim's type and verdict but not which claim cites which
URL, so their claim verifications cannot be rebuilt as our claim and verification records without guessing a
mapping (never done). What they do keep are their code's raw metrics (counts and ratios). This compute step of
the judge stage imports those raw metrics as recorded judgments for the named system's reports, and the score
stage then uses them instead of the metrics computed from claim records (docs/presets.md). Any other system is
judged as usual; a report of the named system without a recorded file is a fact-side failure with that reason.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from reportbench.config import ConfigError
from reportbench.protocols.deer.release import task_id_for

RECORDED_FACT_SCHEMA = {
    "task_id": pl.String,
    "report_id": pl.String,
    "raw": pl.String,  # JSON: the code's raw metrics (names as in protocols.deer.scoring.fact_subdimensions)
    "source": pl.String,  # the authors' file the metrics were read from
    "error": pl.String,  # why there is no record ("" when there is)
}


class RecordedFormatError(ValueError):
    """A recorded file that is not in the authors' format; the message names the file and the field."""


def _field(data: Any, path: Path, *keys: str) -> Any:
    node = data
    for i, k in enumerate(keys):
        if not isinstance(node, dict) or k not in node:
            raise RecordedFormatError(f"{path}: missing field {'.'.join(keys[: i + 1])}")
        node = node[k]
    return node


def fact_raw_metrics(fact: dict[str, Any], path: Path) -> dict[str, Any]:
    """fact/<NNNN>.json -> the code's raw metrics (names as in reportbench.protocols.deer.scoring)."""
    integ = ("raw", "integrity")
    suff = ("raw", "sufficiency")
    return {
        "external_claim_accuracy": _field(fact, path, *integ, "claim_factuality", "external_claim_accuracy"),
        "citation_accuracy": _field(fact, path, *integ, "citation_validity", "citation_accuracy"),
        "supported_per_shown": _field(fact, path, *integ, "reference_accuracy", "supported_per_shown"),
        "reproducibility": _field(fact, path, *integ, "reference_quality", "reproducibility"),
        "reliability": _field(fact, path, *integ, "reference_quality", "reliability"),
        "diversity": _field(fact, path, *integ, "reference_diversity", "diversity_hhi"),
        "source_support": _field(fact, path, *suff, "source_support", "externally_verifiable_claims_ratio"),
        "information": _field(fact, path, *suff, "information"),
        "citations": _field(fact, path, *suff, "citations"),
        "references": _field(fact, path, *suff, "references"),
    }


def recorded_files(folder: Path) -> dict[str, Path]:
    """{our task id: fact/<NNNN>.json} of an authors' output folder `<domain folder>/<system>/` (the domain folder
    is the parent's name, as in their `output/<domain>/<prefix>/`; csai/1 -> ai-1)."""
    domain = folder.resolve().parent.name
    out = {}
    for p in sorted((folder / "fact").glob("*.json")):
        if re.fullmatch(r"\d{4}", p.stem):
            out[task_id_for(domain, int(p.stem))] = p
    return out


def recorded_fact_rows(folder: Path, reports: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """One row per (report_id, task_id): the recorded raw metrics, or an error naming what is missing."""
    if not (folder / "fact").is_dir():
        raise RecordedFormatError(f"benchmarks.deer.judging.recorded_fact: {folder}/fact is not a folder")
    files = recorded_files(folder)
    rows = []
    for report_id, task_id in reports:
        path = files.get(task_id)
        if path is None:
            rows.append({"task_id": task_id, "report_id": report_id, "raw": None, "source": None,
                         "error": f"no recorded fact record for {task_id} in {folder}/fact"})
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            raw = fact_raw_metrics(data, path)
        except (OSError, json.JSONDecodeError, RecordedFormatError) as exc:
            rows.append({"task_id": task_id, "report_id": report_id, "raw": None, "source": str(path),
                         "error": f"{path}: {exc}"})
            continue
        rows.append({"task_id": task_id, "report_id": report_id, "raw": json.dumps(raw), "source": str(path),
                     "error": ""})
    return rows


def recorded_fact_table(ctx: Any) -> pl.DataFrame:
    """Compute step `fact_recorded`: the recorded fact side of this system's reports (empty when not asked)."""
    given = (ctx.params.get("judging") or {}).get("recorded_fact") or {}
    if not isinstance(given, dict):
        raise ConfigError("benchmarks.deer.judging.recorded_fact must map a system name to an authors' output folder")
    folder = given.get(ctx.system)
    rows = [] if not folder else recorded_fact_rows(Path(str(folder)), [(r.report_id, r.task_id) for r in ctx.reports])
    return pl.DataFrame(rows, schema=RECORDED_FACT_SCHEMA, orient="row")


def recorded_fact(report_id: str, table: pl.DataFrame | None) -> dict[str, Any] | None:
    """The recorded fact side of one report ({"raw": ..., "error": ...}), or None when it has none."""
    if table is None or table.height == 0:
        return None
    mine = table.filter(pl.col("report_id") == report_id)
    if mine.height == 0:
        return None
    row = mine.row(0, named=True)
    return {"raw": json.loads(row["raw"]) if row["raw"] else None, "error": row["error"], "source": row["source"]}
