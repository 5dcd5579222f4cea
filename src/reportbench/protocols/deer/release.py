"""DEER releases: an importer for a user-supplied folder in the authors' layout, and the synthetic demo.

The authors distribute the 50 tasks and their Expert Evaluation Guidance (EG) on request only, and the EG's
licence forbids redistribution. So nothing of them ships here: the importer reads the user's copy, the EG goes
into the `deer_guidance` table marked licence-restricted (the dataset card never quotes it), and it is only
ever sent to the judge. The demo (data/demo/deer) uses the same layout with self-authored, synthetic text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from reportbench.config import ConfigError
from reportbench.protocols.deer.rubric import rubric_items
from reportbench.release.format import Release, ReleaseMeta, TableSpec, register_table
from reportbench.types import Record, Task

NAME = "deer"
SCRATCH_DIRS = frozenset({"temp"})  # the authors' scratch duplicates (csai/temp = csai/5, physics/temp = physics/9)
CSAI_SPLIT = 5  # csai tasks 1-5 are AI, 6-10 are CS: 13 domains (visualize/make_tableandchart.py)


class DeerGuidance(Record):
    """One task's Expert Evaluation Guidance (licence-restricted: never quoted, logged or put in git)."""

    task_id: str
    text: str = Field(description="the EG markdown, verbatim")
    sha256: str = Field(description="of the text; what logs and manifests may show instead of it")


def _check_guidance(release: Release, rows: Sequence[Record], path: str, errors: list[str]) -> None:
    ids = {t.task_id for t in release.tasks}
    for i, r in enumerate(rows):
        if r.task_id not in ids:  # type: ignore[attr-defined]
            errors.append(f"{path}: row {i} field 'task_id' {r.task_id!r} is not a task of this release")  # type: ignore[attr-defined]


GUIDANCE = register_table(
    TableSpec("deer_guidance", DeerGuidance, ("task_id",)),
    order=lambda r: r.task_id,
    check=_check_guidance,
    licence_restricted=True,
)


def domain_of(folder: str, n: int) -> str:
    if folder == "csai":
        return "ai" if n <= CSAI_SPLIT else "cs"
    return folder


def task_id_for(folder: str, n: int) -> str:
    return f"{domain_of(folder, n)}-{n}"


def _title(query: str) -> str:
    first = next((ln.strip("# ").strip() for ln in query.splitlines() if ln.strip()), "")
    return first[:120] if len(first) <= 120 else first[:117] + "..."


def import_folder(
    root: Path,
    *,
    name: str,
    synthetic: bool,
    licence: str,
    source: str,
    max_tasks: int | None = None,
    domains: Sequence[str] | None = None,
) -> Release:
    """`<root>/<domain folder>/<n>/query.md` (+ `core_criteria.md`) -> Release; `temp/` folders are skipped."""
    if not root.is_dir():
        raise ConfigError(
            f"benchmarks.deer.release.source: {root} is not a folder (the DEER data is given out by "
            "its authors on request; point this at your copy)"
        )
    tasks: list[Task] = []
    guidance: list[DeerGuidance] = []
    provenance: dict[str, str] = {}
    for dom_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        task_dirs = [p for p in dom_dir.iterdir() if p.is_dir() and p.name not in SCRATCH_DIRS]
        for tdir in sorted((p for p in task_dirs if re.fullmatch(r"\d+", p.name)), key=lambda p: int(p.name)):
            query_path = tdir / "query.md"
            if not query_path.is_file():
                continue
            n = int(tdir.name)
            dom = domain_of(dom_dir.name, n)
            if domains and dom not in domains:
                continue
            query = query_path.read_text(encoding="utf-8")
            tid = task_id_for(dom_dir.name, n)
            tasks.append(Task(task_id=tid, title=_title(query), task_prompt=query.strip(), categories=[dom]))
            provenance[f"{dom_dir.name}/{n}/query.md"] = hashlib.sha256(query.encode()).hexdigest()
            eg_path = tdir / "core_criteria.md"
            if eg_path.is_file():
                eg = eg_path.read_text(encoding="utf-8")
                digest = hashlib.sha256(eg.encode()).hexdigest()
                guidance.append(DeerGuidance(task_id=tid, text=eg.strip(), sha256=digest))
                provenance[f"{dom_dir.name}/{n}/core_criteria.md"] = digest
    if max_tasks is not None:
        tasks = tasks[: int(max_tasks)]
        keep = {t.task_id for t in tasks}
        guidance = [g for g in guidance if g.task_id in keep]
    if not tasks:
        raise ConfigError(f"benchmarks.deer.release.source: no <domain>/<n>/query.md under {root}")
    meta = ReleaseMeta(
        name=name,
        created_at="2025-12-19",  # arXiv 2512.17776 v1; fixed so a rebuild is byte-identical
        source=source,
        licence=licence,
        synthetic=synthetic,
        benchmark=NAME,
        description=(
            "DEER tasks (query.md) with the Expert Evaluation Guidance in the licence-restricted table "
            "`deer_guidance` (not quoted here). Domains: csai split into ai (1-5) and cs (6-10)."
        ),
        provenance=provenance,
    )
    return Release(meta=meta, tasks=tasks, extra={"rubric_items": list(rubric_items()), "deer_guidance": guidance})


def build_release(cfg: Mapping[str, Any]) -> Release:
    """`release.kind`: demo (data/demo/deer, synthetic) | folder (a user's copy in the authors' layout)."""
    kind = cfg.get("kind", "demo")
    source = cfg.get("source")
    if not source:
        raise ConfigError("benchmarks.deer.release.source is required (a folder in the authors' layout)")
    if kind == "demo":
        return import_folder(
            Path(str(source)) / "tasks",
            name=str(cfg.get("name", "demo")),
            synthetic=True,
            licence="CC0-1.0 (self-authored synthetic demo)",
            source=str(source),
            max_tasks=cfg.get("max_tasks"),
        )
    if kind == "folder":
        return import_folder(
            Path(str(source)),
            name=str(cfg.get("name", "deer")),
            synthetic=False,
            licence="CC BY-NC 4.0; core_criteria.md (EG) may not be redistributed",
            source="DEER data from its authors (user-supplied path)",
            max_tasks=cfg.get("max_tasks"),
            domains=cfg.get("domains"),
        )
    raise ConfigError(f"benchmarks.deer.release.kind {kind!r} is not one of demo, folder")


def guidance_by_task(release: Release) -> dict[str, str]:
    return {g.task_id: g.text for g in release.table("deer_guidance")}  # type: ignore[attr-defined]
