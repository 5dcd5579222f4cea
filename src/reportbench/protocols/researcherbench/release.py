"""ResearcherBench release: the authors' layout (`questions.json`, `rubric.json`) -> our release format.

Tasks keep the canonical question text from questions.json (the response files carry mojibake copies for
ids 8/11/27), the category (`categories[0]`) and the subject (`categories[1]`). Rubric items become
`RubricItem` rows (item_id = 1-based index within the question, integer weight 1-3 stored as a float).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reportbench.release.format import Release, ReleaseError, ReleaseMeta
from reportbench.types import RubricItem, Task

NAME = "researcherbench"
CATEGORIES = ("Open Consulting", "Literature Review", "Technical Details")
REPO = "GAIR-NLP/ResearcherBench"
REPO_COMMIT = "a95807decfb044c496e6e78d95d6977ed5240cb0"
REPO_FILES = {"questions.json": "data/eval_data/questions.json", "rubric.json": "data/eval_data/rubric.json"}
DEMO_DIR = "data/demo/researcherbench"


def task_id_for(qid: int) -> str:
    """`q<id>`: never a bare integer, which folder discovery would read as a row index."""
    return f"q{int(qid)}"


def qid_of(task_id: str) -> int:
    return int(task_id.lstrip("q"))


def category_of(task: Task) -> str | None:
    return task.categories[0] if task.categories else None


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ReleaseError([f"{path}: cannot read ({exc})"]) from exc


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def import_authors_layout(
    questions: Any, rubric: Any, *, where: str = "<researcherbench>"
) -> tuple[list[Task], list[RubricItem]]:
    """Validate and convert the authors' two lists. Raises ReleaseError naming every problem."""
    errors: list[str] = []
    if not isinstance(questions, list) or not isinstance(rubric, list):
        raise ReleaseError([f"{where}: questions.json and rubric.json must each be a JSON list"])
    tasks: list[Task] = []
    seen: set[int] = set()
    for i, q in enumerate(questions):
        if not isinstance(q, dict) or not {"id", "question", "category"} <= set(q):
            errors.append(f"questions.json[{i}]: needs id, question, category")
            continue
        qid = int(q["id"])
        if qid in seen:
            errors.append(f"questions.json[{i}]: duplicate id {qid}")
        seen.add(qid)
        if q["category"] not in CATEGORIES:
            errors.append(f"questions.json[{i}]: unknown category {q['category']!r}")
        text = str(q["question"]).strip()
        cats = [str(q["category"])] + ([str(q["Subject"])] if q.get("Subject") else [])
        title = text if len(text) <= 120 else text[:117].rstrip() + "..."
        tasks.append(Task(task_id=task_id_for(qid), title=title, categories=cats, task_prompt=text))
    items: list[RubricItem] = []
    rubric_ids: set[int] = set()
    canonical = {task_id_for(int(q["id"])): str(q["question"]).strip() for q in questions if isinstance(q, dict)}
    for i, entry in enumerate(rubric):
        if not isinstance(entry, dict) or "id" not in entry or not isinstance(entry.get("rubric"), list):
            errors.append(f"rubric.json[{i}]: needs id and a rubric list")
            continue
        qid = int(entry["id"])
        tid = task_id_for(qid)
        if qid not in seen:
            errors.append(f"rubric.json[{i}]: id {qid} has no question")
        if qid in rubric_ids:
            errors.append(f"rubric.json[{i}]: duplicate id {qid}")
        rubric_ids.add(qid)
        if "question" in entry and str(entry["question"]).strip() != canonical.get(tid):
            errors.append(f"rubric.json[{i}]: question text differs from questions.json for id {qid}")
        for j, point in enumerate(entry["rubric"]):
            if not isinstance(point, dict) or not isinstance(point.get("point"), str) or not point["point"].strip():
                errors.append(f"rubric.json[{i}].rubric[{j}]: needs a non-empty 'point'")
                continue
            w = point.get("weight", 1)  # the authors' code defaults a missing weight to 1
            if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= 3:
                errors.append(f"rubric.json[{i}].rubric[{j}]: weight {w!r} is not an integer 1-3")
                continue
            items.append(
                RubricItem(task_id=tid, item_id=str(j + 1), index=j, text=point["point"].strip(), weight=float(w))
            )
    missing = seen - rubric_ids
    if missing:
        errors.append(f"questions without a rubric: {sorted(missing)}")
    if errors:
        raise ReleaseError([f"{where}: {e}" for e in errors])
    tasks.sort(key=lambda t: qid_of(t.task_id))
    return tasks, items


def release_from_dir(
    folder: Path, *, name: str, synthetic: bool, source: str, licence: str, max_tasks: int | None = None
) -> Release:
    """Read `questions.json` + `rubric.json` from a folder (the authors' `data/eval_data/` or the demo)."""
    qp, rp = folder / "questions.json", folder / "rubric.json"
    for p in (qp, rp):
        if not p.is_file():
            raise ReleaseError([f"{p}: missing (expected the authors' layout: questions.json + rubric.json)"])
    tasks, items = import_authors_layout(_load(qp), _load(rp), where=str(folder))
    if max_tasks:
        tasks = tasks[: int(max_tasks)]
        keep = {t.task_id for t in tasks}
        items = [r for r in items if r.task_id in keep]
    meta = ReleaseMeta(
        name=name,
        created_at="2025-08-01" if not synthetic else "2026-01-01",
        source=source,
        licence=licence,
        synthetic=synthetic,
        benchmark=NAME,
        description="ResearcherBench: frontier AI-research questions with expert weighted rubrics",
        provenance={"questions.json": _sha(qp), "rubric.json": _sha(rp)},
    )
    return Release(meta=meta, tasks=tasks, extra={"rubric_items": items})


def _download(cache: Path) -> Path:
    """Fetch the two files from the public repository at the pinned commit (only when the network is there)."""
    import httpx

    cache.mkdir(parents=True, exist_ok=True)
    for local, remote in REPO_FILES.items():
        target = cache / local
        if target.is_file():
            continue
        url = f"https://raw.githubusercontent.com/{REPO}/{REPO_COMMIT}/{remote}"
        try:
            resp = httpx.get(url, timeout=60, follow_redirects=True)
            resp.raise_for_status()
        except httpx.HTTPError as exc:
            raise ReleaseError([f"cannot download {url}: {exc} (use kind: path with a local copy)"]) from exc
        target.write_bytes(resp.content)
    return cache


def build_release(cfg: Mapping[str, Any]) -> Release:
    """`kind: demo` (data/demo/researcherbench), `path` (`source`: a local copy of the authors' files) or `github`
    (downloaded at the pinned commit into `cache_dir`)."""
    kind = str(cfg.get("kind", "demo"))
    name = str(cfg.get("name") or kind)
    max_tasks = cfg.get("max_tasks")
    if kind == "demo":
        folder = Path(str(cfg.get("source") or DEMO_DIR))
        return release_from_dir(
            folder,
            name=name,
            synthetic=True,
            source=str(folder),
            licence="CC0 (self-authored synthetic demo data)",
            max_tasks=max_tasks,
        )
    if kind == "path":
        path = cfg.get("path") or cfg.get("source")  # `source` is also the release stage's DVC dependency
        if not path:
            raise ReleaseError(["benchmarks.researcherbench.release.source: required for kind: path"])
        folder = Path(str(path))
        if (folder / "data" / "eval_data").is_dir():
            folder = folder / "data" / "eval_data"
        return release_from_dir(
            folder,
            name=name,
            synthetic=False,
            source=f"{REPO}@{REPO_COMMIT[:7]} (local copy: {folder})",
            licence="none stated by the authors",
            max_tasks=max_tasks,
        )
    if kind == "github":
        folder = _download(Path(str(cfg.get("cache_dir") or ".reportbench/cache/researcherbench")))
        return release_from_dir(
            folder,
            name=name,
            synthetic=False,
            source=f"{REPO}@{REPO_COMMIT[:7]}",
            licence="none stated by the authors",
            max_tasks=max_tasks,
        )
    raise ReleaseError([f"benchmarks.researcherbench.release.kind: unknown {kind!r} (demo | path | github)"])
