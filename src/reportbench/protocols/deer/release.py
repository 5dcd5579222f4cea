"""DEER releases: an importer for a user-supplied folder in the authors' layout, and the synthetic demo.

The authors distribute the 50 tasks and their Expert Evaluation Guidance (EG) on request only, and the EG's
licence forbids redistribution. So nothing of them ships here: the importer reads the user's copy, the EG goes
into `rubric_items` rows of kind "EG" marked licence-restricted (the dataset card never quotes it), and it is only
ever sent to the judge. The demo (data/demo/deer) uses the same layout with self-authored, synthetic text.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reportbench.config import ConfigError
from reportbench.protocols.deer.rubric import rubric_items
from reportbench.release.format import Release, ReleaseMeta
from reportbench.types import RubricItem, Task

NAME = "deer"
SCRATCH_DIRS = frozenset({"temp"})  # the authors' scratch duplicates (csai/temp = csai/5, physics/temp = physics/9)
CSAI_SPLIT = 5  # csai tasks 1-5 are AI, 6-10 are CS: 13 domains (visualize/make_tableandchart.py)


EG_KIND = "EG"  # rubric_items rows of this kind carry a task's Expert Evaluation Guidance


def guidance_row(task_id: str, text: str) -> RubricItem:
    """One task's EG as a `rubric_items` row (kind "EG", marked licence-restricted in `meta`).

    Why not a table of its own: the spine's system stage reads the release without importing the benchmark's
    protocol, so a DEER-only table would not be registered there; `rubric_items` is always registered. The
    dataset card lists only row counts, and the manifest keeps only hashes, so the text is never quoted.
    """
    digest = hashlib.sha256(text.encode()).hexdigest()
    return RubricItem(
        task_id=task_id,
        item_id=EG_KIND,
        index=-1,
        text=text,
        kind=EG_KIND,
        group=["expert_evaluation_guidance"],
        meta=json.dumps({"licence_restricted": True, "sha256": digest}, sort_keys=True),
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
    guidance: list[RubricItem] = []
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
                guidance.append(guidance_row(tid, eg.strip()))
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
            "DEER tasks (query.md). The Expert Evaluation Guidance is licence-restricted: it is kept in "
            "`rubric_items` rows of kind EG (meta licence_restricted) and never quoted here. Domains: csai split "
            "into ai (1-5) and cs (6-10)."
        ),
        provenance=provenance,
    )
    return Release(meta=meta, tasks=tasks, extra={"rubric_items": [*rubric_items(), *guidance]})


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
    return {r.task_id: r.text for r in release.table("rubric_items") if r.kind == EG_KIND}  # type: ignore[attr-defined]


def is_licence_restricted(row: RubricItem) -> bool:
    return bool(row.meta and json.loads(row.meta).get("licence_restricted"))
