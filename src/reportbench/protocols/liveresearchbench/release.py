"""LiveResearchBench release: the public tasks and their coverage checklists, with one frozen evaluation date.

Why a frozen date: the authors fill `{{current_year}}`, `{{last_year}}` and `{{date}}` from the wall clock at
three different moments (queries, checklists, prompts), so two runs on different days grade different texts.
Here one configured `eval_date` fills every placeholder (questions for systems, checklists for judges, "today"
in prompts) and is recorded in the release manifest; `placeholders: static` uses the dataset's
`*_no_placeholder` texts instead (the authors' README default).

Sources: the shared checklist CSV (one row per checklist item: qid, question, category, checklist_id, checklist
[, question_no_placeholder, checklist_no_placeholder]) or the gated HF dataset at a pinned revision.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reportbench.release.format import Release, ReleaseMeta
from reportbench.types import RubricItem, Task

NAME = "liveresearchbench"
HF_DATASET = "Salesforce/LiveResearchBench"
HF_CONFIG = "question_with_checklist"
DATE_FORMAT = "%B %d, %Y"  # the authors' format, e.g. "November 12, 2025"
PLACEHOLDER_RE = re.compile(r"\{\{\s*([A-Za-z_]+)\s*\}\}")
KNOWN_PLACEHOLDERS = ("current_year", "last_year", "date", "current_date")
ITEM_ID_RE = re.compile(r"^q(\d+)$")

# The ten presentation criteria shared by every task (task_id "*"), in our own words. Same ids as the
# authors (p1..p10) so per-criterion breakdowns line up with the paper's figure.
PRESENTATION_CRITERIA: tuple[tuple[str, str], ...] = (
    ("p1", "The report has a clear structure whose order of sections follows the logic of the question it answers."),
    ("p2", "The text has no spelling or grammar mistakes."),
    ("p3", "Every entry of the reference list is cited somewhere in the body."),
    ("p4", "Every citation in the body points to an entry of the reference list."),
    ("p5", "There is exactly one reference section (References, Bibliography or Sources), ordered by one rule."),
    ("p6", "Citations use one style throughout the report."),
    ("p7", "Citation markers sit at the end of a clause or sentence and do not break its grammar."),
    ("p8", "Every table or figure shows complete data or a usable visual; a report without any passes."),
    ("p9", "Markdown is well formed: real headings, and tables that render correctly."),
    ("p10", "Citation numbers skip no value and are not duplicated (one number per source, one source per number)."),
)


class ReleaseConfigError(ValueError):
    """The release config or its source data cannot produce a release; the message names the problem."""


# ------------------------------------------------------------------------------------------- placeholders
def parse_eval_date(value: Any) -> dt.date:
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError as exc:
        raise ReleaseConfigError(f"eval_date must be an ISO date (YYYY-MM-DD), got {value!r}") from exc


def format_date(date: dt.date) -> str:
    """The authors' '%B %d, %Y' (zero-padded day, English month names regardless of locale)."""
    months = ("January February March April May June July August September October November December").split()
    return f"{months[date.month - 1]} {date.day:02d}, {date.year}"


def placeholder_values(date: dt.date) -> dict[str, str]:
    """What each placeholder becomes for one evaluation date (`{{current_date}}` too, unlike the authors)."""
    text = format_date(date)
    return {"current_year": str(date.year), "last_year": str(date.year - 1), "date": text, "current_date": text}


def fill_placeholders(text: str, date: dt.date) -> str:
    """Fill every `{{name}}`; an unknown placeholder is an error (never sent to a system or judge unfilled)."""
    values = placeholder_values(date)

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in values:
            raise ReleaseConfigError(f"unknown placeholder {{{{{name}}}}} in {text[:80]!r}")
        return values[name]

    return PLACEHOLDER_RE.sub(sub, text)


def has_placeholders(text: str) -> bool:
    return bool(PLACEHOLDER_RE.search(text))


# --------------------------------------------------------------------------------------------- rows
def item_number(item_id: str) -> int:
    """'q10' -> 10; the checklist order is numeric (q2 before q10), never lexical."""
    m = ITEM_ID_RE.match(item_id.strip())
    if not m:
        raise ReleaseConfigError(f"checklist_id {item_id!r} is not of the form q<N>")
    return int(m.group(1))


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    need = {"qid", "question", "category", "checklist_id", "checklist"}
    if rows and not need <= set(rows[0]):
        raise ReleaseConfigError(f"{path}: columns {sorted(rows[0])} lack {sorted(need - set(rows[0]))}")
    return rows


def _text(row: Mapping[str, str], field: str, mode: str, date: dt.date, where: str) -> str:
    """The question/checklist text for the placeholder mode: live fills, static reads `<field>_no_placeholder`."""
    raw = row[field]
    if mode == "live":
        return fill_placeholders(raw, date)
    static = row.get(f"{field}_no_placeholder")
    if static is not None and static != "":
        return static
    if has_placeholders(raw):
        raise ReleaseConfigError(f"{where}: static mode but {field!r} has placeholders and no *_no_placeholder text")
    return raw


def build_from_rows(
    rows: Sequence[Mapping[str, str]],
    *,
    name: str,
    source: str,
    eval_date: dt.date,
    mode: str = "live",
    dedupe: bool = True,
    max_tasks: int | None = None,
    synthetic: bool = False,
    licence: str = "CC BY-NC 4.0 (dataset, per the authors' README)",
    provenance: Mapping[str, str] | None = None,
) -> Release:
    """Group item rows by qid (first-appearance task order), sort each checklist numerically, fill dates."""
    if mode not in ("live", "static"):
        raise ReleaseConfigError(f"placeholders must be 'live' or 'static', got {mode!r}")
    by_qid: dict[str, list[Mapping[str, str]]] = {}
    for row in rows:
        by_qid.setdefault(row["qid"].strip(), []).append(row)
    qids = list(by_qid)[: max_tasks if max_tasks else None]
    tasks: list[Task] = []
    items: list[RubricItem] = []
    dropped: list[str] = []
    for qid in qids:
        group = by_qid[qid]
        first = group[0]
        questions = {r["question"] for r in group}
        if len(questions) > 1:
            raise ReleaseConfigError(f"task {qid}: rows disagree on the question text")
        question = _text(first, "question", mode, eval_date, qid)
        tasks.append(
            Task(
                task_id=qid,
                title=_title(question),
                categories=[first["category"].strip()],
                task_prompt=question,
            )
        )
        seen_ids: set[str] = set()
        seen_text: set[str] = set()
        for r in sorted(group, key=lambda r: item_number(r["checklist_id"])):
            iid = r["checklist_id"].strip()
            if iid in seen_ids:
                raise ReleaseConfigError(f"task {qid}: checklist id {iid} appears twice")
            seen_ids.add(iid)
            text = _text(r, "checklist", mode, eval_date, f"{qid}/{iid}")
            if dedupe and text.strip() in seen_text:
                dropped.append(f"{qid}/{iid}")
                continue
            seen_text.add(text.strip())
            meta = {"template": r["checklist"]} if has_placeholders(r["checklist"]) else None
            items.append(
                RubricItem(
                    task_id=qid,
                    item_id=iid,
                    index=item_number(iid),
                    text=text,
                    kind="coverage",
                    meta=json.dumps(meta, ensure_ascii=False) if meta else None,
                )
            )
    items.extend(presentation_items())
    prov = dict(provenance or {})
    prov.update(
        {
            "eval_date": eval_date.isoformat(),
            "eval_date_text": format_date(eval_date),
            "placeholders": mode,
            "dedupe_checklist": str(dedupe).lower(),
            "dropped_duplicate_items": ",".join(dropped),
        }
    )
    meta = ReleaseMeta(
        name=name,
        created_at=eval_date.isoformat(),
        source=source,
        licence=licence,
        synthetic=synthetic,
        benchmark=NAME,
        description=(
            f"LiveResearchBench tasks with coverage checklists; evaluation date {format_date(eval_date)} "
            f"({mode} placeholders)."
        ),
        provenance=prov,
    )
    return Release(meta=meta, tasks=tasks, extra={"rubric_items": items})


def presentation_items() -> list[RubricItem]:
    return [
        RubricItem(task_id="*", item_id=pid, index=i, text=text, kind="presentation")
        for i, (pid, text) in enumerate(PRESENTATION_CRITERIA, start=1)
    ]


def _title(question: str, limit: int = 100) -> str:
    first = re.split(r"(?<=[?.!])\s", question.strip(), maxsplit=1)[0]
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------------- entry point
def eval_date_of(release: Release) -> dt.date:
    """The frozen evaluation date recorded in the release (what prompts call "today")."""
    return parse_eval_date(release.meta.provenance["eval_date"])


def coverage_items(release: Release, task_id: str) -> list[RubricItem]:
    """The task's coverage checklist: `release.rubric(task_id)`'s coverage rows."""
    return [r for r in release.rubric(task_id) if r.kind == "coverage"]


def presentation_criteria(release: Release) -> list[RubricItem]:
    return [r for r in release.rubric(release.tasks[0].task_id) if r.kind == "presentation"] if release.tasks else []


def build_release(cfg: Mapping[str, Any]) -> Release:
    """`benchmarks.liveresearchbench.release` -> Release. Kinds: csv (shared CSV or the demo) | hf (gated)."""
    kind = str(cfg.get("kind", "csv"))
    name = str(cfg.get("name") or "liveresearchbench")
    date = parse_eval_date(cfg.get("eval_date") or "")
    mode = str(cfg.get("placeholders", "live"))
    common = {
        "name": name,
        "eval_date": date,
        "mode": mode,
        "dedupe": bool(cfg.get("dedupe_checklist", True)),
        "max_tasks": cfg.get("max_tasks"),
    }
    if kind in ("csv", "demo"):
        path = Path(str(cfg.get("path") or cfg.get("source") or ""))
        if path.is_dir():
            path = path / "tasks.csv"
        if not path.is_file():
            raise ReleaseConfigError(f"benchmarks.{NAME}.release.path: no checklist CSV at {path}")
        rows = read_csv_rows(path)
        extra: dict[str, Any] = {}
        if kind == "demo":
            extra = {"synthetic": True, "licence": "CC0 (self-authored synthetic demo)"}
        return build_from_rows(rows, source=str(path), provenance={path.name: _sha256(path)}, **common, **extra)
    if kind == "hf":
        return build_from_rows(_hf_rows(cfg), source=f"hf:{HF_DATASET}@{cfg.get('revision')}", **common)
    raise ReleaseConfigError(f"benchmarks.{NAME}.release.kind must be csv | demo | hf, got {kind!r}")


def _hf_rows(cfg: Mapping[str, Any]) -> list[dict[str, str]]:
    """The gated dataset at a pinned revision (needs HF_TOKEN, access and network; parquet via huggingface_hub)."""
    revision = cfg.get("revision")
    if not revision:
        raise ReleaseConfigError(f"benchmarks.{NAME}.release.revision must pin the HF dataset revision")
    try:
        import polars as pl
        from huggingface_hub import HfApi, hf_hub_download
    except ImportError as exc:  # pragma: no cover - optional dependency
        raise ReleaseConfigError("kind: hf needs huggingface_hub") from exc
    repo = str(cfg.get("dataset") or HF_DATASET)
    files = [
        f
        for f in HfApi().list_repo_files(repo, repo_type="dataset", revision=str(revision))
        if f.endswith(".parquet") and HF_CONFIG in f
    ]
    if not files:
        raise ReleaseConfigError(f"{repo}@{revision}: no parquet file for config {HF_CONFIG}")
    frames = [
        pl.read_parquet(hf_hub_download(repo, f, repo_type="dataset", revision=str(revision)), glob=False)
        for f in sorted(files)
    ]
    return [{k: "" if v is None else str(v) for k, v in r.items()} for r in pl.concat(frames).iter_rows(named=True)]
