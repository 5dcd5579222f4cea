"""ResearchQA release: the importer of the public dataset (JSON or parquet), the split rules, the task prompt.

Public dataset `realliyifei/ResearchQA` (HF; splits test 3,750, valid 703, full 21,414, test_mini 776).
Sources, in order of preference:
- `kind: path`: a local file (`.json`, `.jsonl`, `.parquet`) or a folder holding `<split>.json|.jsonl|.parquet`;
- `kind: hub`: the same JSON files the authors' downloader fetches, over plain HTTPS with `requests` at a
  pinned `revision` and cached under `cache_dir`. Why not `datasets`: it is a heavy dependency (pyarrow,
  fsspec) for three JSON files, and it would re-shape the nested rubric; the raw files are the authors' own
  loader's input, so reading them ourselves keeps field shapes exactly as released.

Rows keep what the data says: categories general_domain -> subdomain -> field (never a hard-coded list),
dates normalised to YYYY-MM-DD, up to 8 rubric items with their type labels (a list) and citation metadata
(stored as JSON in `RubricItem.meta`). `full` contains test and valid: `split: train` is full minus both, by id.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from reportbench.release.format import Release, ReleaseMeta
from reportbench.types import RubricItem, Task

log = logging.getLogger(__name__)

NAME = "researchqa"
HUB_REPO = "realliyifei/ResearchQA"
HUB_URL = "https://huggingface.co/datasets/{repo}/resolve/{revision}/{split}.json"
SPLITS = ("test", "valid", "full", "test_mini", "train")
MAX_RUBRIC_ITEMS = 8
WORD_LIMIT = 250


class ResearchQAImportError(ValueError):
    """The data is not where the config says, or a row does not have the released shape."""


# ------------------------------------------------------------------------------------------ task prompt
def task_prompt(query: str, date: str | None, word_limit: int | None = WORD_LIMIT) -> str:
    """The prompt systems get. OUR reconstruction: the authors' answer prompt is not public (spec §2.1, P13).

    It carries what the paper says the systems got: the query, "(Date: D)", a word limit (None turns it
    off: the paper's ¬L ablation), citations, and a reference list with paper titles, which the coverage
    judge needs to grade the rubric's citation items.
    """
    parts = [query.strip() + (f" (Date: {date})" if date else "")]
    limit = f" in at most {int(word_limit)} words" if word_limit else ""
    parts.append(
        f"Answer the question above{limit}, as a concise, well-organised research answer. Support your claims "
        "with citations to the scientific literature using numbered markers like [1], and only use work "
        "published on or before the date given."
    )
    parts.append(
        "End with a reference list under the heading 'References', one entry per line as '[n] Paper title "
        "(Year)', giving the full title of every paper you cite."
    )
    return "\n\n".join(parts)


# ------------------------------------------------------------------------------------------------ dates
def normalise_date(value: Any) -> str | None:
    """YYYY-MM-DD from a JSON string, a parquet timestamp (datetime / epoch ns, ms or s) or a date."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, int | float) and not isinstance(value, bool):
        v = float(value)
        seconds = v / 1e9 if abs(v) >= 1e15 else v / 1e3 if abs(v) >= 1e11 else v
        return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).date().isoformat()
    text = str(value).strip()
    for candidate in (text[:10], text):
        try:
            return dt.date.fromisoformat(candidate).isoformat()
        except ValueError:
            pass
    for fmt in ("%Y/%m/%d", "%d/%m/%Y", "%B %d, %Y", "%b %d, %Y", "%Y%m%d"):
        try:
            return dt.datetime.strptime(text, fmt).date().isoformat()
        except ValueError:
            continue
    raise ResearchQAImportError(f"unreadable date {value!r}")


# --------------------------------------------------------------------------------------------- reading
def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of one split file: a JSON list (or {"data": [...]}/{"rows": [...]}), JSONL, or parquet."""
    p = Path(path)
    if not p.is_file():
        raise ResearchQAImportError(f"ResearchQA: no file {p}")
    if p.suffix == ".parquet":
        import polars as pl

        return pl.read_parquet(p, glob=False).to_dicts()
    text = p.read_text(encoding="utf-8")
    if p.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    data = json.loads(text)
    if isinstance(data, Mapping):
        for key in ("data", "rows", "items"):
            if isinstance(data.get(key), list):
                return list(data[key])
        raise ResearchQAImportError(f"{p}: a JSON object without a data/rows list")
    if not isinstance(data, list):
        raise ResearchQAImportError(f"{p}: expected a JSON list of rows")
    return list(data)


def split_file(folder: Path, split: str) -> Path:
    for ext in (".json", ".jsonl", ".parquet"):
        cand = folder / f"{split}{ext}"
        if cand.is_file():
            return cand
    raise ResearchQAImportError(f"ResearchQA: no {split}.json|.jsonl|.parquet in {folder}")


def hub_file(split: str, revision: str, cache_dir: str | Path, repo: str = HUB_REPO) -> Path:
    """The split's JSON from the hub at a pinned revision (cached; the network only when not cached)."""
    if split not in ("test", "valid", "full"):
        raise ResearchQAImportError(f"the hub's JSON files are test/valid/full, not {split!r} (use kind: path)")
    out = Path(cache_dir) / repo.replace("/", "+") / revision / f"{split}.json"
    if out.is_file():
        return out
    import requests

    url = HUB_URL.format(repo=repo, revision=revision, split=split)
    resp = requests.get(url, timeout=60)
    resp.raise_for_status()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(resp.content)
    return out


def dedupe_by_id(rows: Iterable[Mapping[str, Any]], exclude: set[str] | None = None) -> list[dict[str, Any]]:
    """First row per id, minus ids in `exclude` (train = full minus test and valid)."""
    seen: set[str] = set(exclude or ())
    out = []
    for r in rows:
        rid = str(r["id"])
        if rid in seen:
            continue
        seen.add(rid)
        out.append(dict(r))
    return out


# ------------------------------------------------------------------------------------------ conversion
def _types(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(x) for x in value]


def row_to_records(row: Mapping[str, Any], word_limit: int | None) -> tuple[Task, list[RubricItem]]:
    """One released row -> our Task and its rubric items (type list and citation metadata kept)."""
    try:
        rid, query = str(row["id"]), str(row["query"])
        cats = [str(row["general_domain"]), str(row["subdomain"]), str(row["field"])]
        rubric = row.get("rubric") or []
    except KeyError as exc:
        raise ResearchQAImportError(f"row {row.get('id')!r} lacks field {exc}") from None
    date = normalise_date(row.get("date"))
    if len(rubric) > MAX_RUBRIC_ITEMS:
        raise ResearchQAImportError(f"row {rid}: {len(rubric)} rubric items (the release has at most 8)")
    task = Task(
        task_id=rid, title=query, published_date=date, categories=cats, task_prompt=task_prompt(query, date, word_limit)
    )
    items = []
    for i, r in enumerate(rubric):
        types = _types(r.get("type"))
        meta = {"type": types, "citation_metadata": r.get("citation_metadata")}
        items.append(
            RubricItem(
                task_id=rid,
                item_id=f"r{i}",
                index=i,
                text=str(r["rubric_item"]),
                kind=",".join(types) or None,
                meta=json.dumps(meta, sort_keys=True, ensure_ascii=False, default=str),
            )
        )
    return task, items


def load_split_rows(cfg: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The configured split's rows and the provenance (file -> sha256)."""
    split = str(cfg.get("split", "test"))
    if split not in SPLITS:
        raise ResearchQAImportError(f"benchmarks.researchqa.release.split must be one of {SPLITS}, got {split!r}")
    kind = str(cfg.get("kind", "path"))

    def locate(s: str) -> Path:
        if kind == "hub":
            return hub_file(s, str(cfg.get("revision") or "main"), cfg.get("cache_dir") or ".reportbench/cache/hf")
        base = Path(str(cfg.get("path") or ""))
        if base.is_file():
            if s != split:
                raise ResearchQAImportError(f"split {split!r} needs the folder with {s}.json, not one file")
            return base
        if base.is_dir():
            return split_file(base, s)
        raise ResearchQAImportError(
            f"ResearchQA data not found at {base!s} (benchmarks.researchqa.release.path: a split file or a folder)"
        )

    provenance: dict[str, str] = {}

    def rows_of(s: str) -> list[dict[str, Any]]:
        p = locate(s)
        provenance[p.name] = hashlib.sha256(p.read_bytes()).hexdigest()
        return read_rows(p)

    if split == "train":
        held = {str(r["id"]) for s in ("test", "valid") for r in rows_of(s)}
        return dedupe_by_id(rows_of("full"), exclude=held), provenance
    return dedupe_by_id(rows_of(split)), provenance


def build_release(cfg: Mapping[str, Any]) -> Release:
    """benchmarks.researchqa.release -> Release (tasks + `rubric_items`)."""
    rows, provenance = load_split_rows(cfg)
    rows.sort(key=lambda r: str(r["id"]))
    if cfg.get("max_tasks"):
        rows = rows[: int(cfg["max_tasks"])]
    word_limit = cfg.get("word_limit", WORD_LIMIT)
    tasks, items = [], []
    for row in rows:
        t, its = row_to_records(row, int(word_limit) if word_limit else None)
        tasks.append(t)
        items.extend(its)
    synthetic = bool(cfg.get("synthetic", False))
    meta = ReleaseMeta(
        name=str(cfg["name"]),
        created_at=str(cfg.get("created_at") or "2025-05-01"),
        source=str(cfg.get("source") or (HUB_REPO if cfg.get("kind") == "hub" else cfg.get("path"))),
        licence=str(cfg.get("licence") or "MIT (dataset card)"),
        synthetic=synthetic,
        benchmark=NAME,
        description=str(cfg.get("description") or f"ResearchQA split {cfg.get('split', 'test')}"),
        provenance=provenance,
    )
    return Release(meta=meta, tasks=tasks, extra={"rubric_items": items})


# ------------------------------------------------------------------------------------------------ splits
def split_sizes(field_sizes: Mapping[str, int], test_per_field: int = 50, valid_per_field: int = 10) -> dict[str, int]:
    """The paper's split arithmetic (§2.5): fields with >= 50 queries; 50 test each, then up to 10 valid."""
    kept = {f: n for f, n in field_sizes.items() if n >= test_per_field}
    test = test_per_field * len(kept)
    valid = sum(min(valid_per_field, n - test_per_field) for n in kept.values())
    total = sum(kept.values())
    return {"fields": len(kept), "test": test, "valid": valid, "train": total - test - valid, "total": total}


def assign_splits(
    ids: Sequence[str], fields: Sequence[str], *, seed: int = 0, test_per_field: int = 50, valid_per_field: int = 10
) -> dict[str, str]:
    """id -> test|valid|train by the paper's rule (seeded shuffle within each field); fields under 50 dropped."""
    by_field: dict[str, list[str]] = {}
    for i, f in zip(ids, fields, strict=True):
        by_field.setdefault(f, []).append(i)
    out: dict[str, str] = {}
    rng = np.random.default_rng(seed)
    for f in sorted(by_field):
        members = sorted(by_field[f])
        if len(members) < test_per_field:
            continue
        shuffled = [members[k] for k in rng.permutation(len(members))]
        for k, i in enumerate(shuffled):
            out[i] = "test" if k < test_per_field else "valid" if k < test_per_field + valid_per_field else "train"
    return out
