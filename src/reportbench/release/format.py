"""The release format: what a benchmark release is on disk, and how to write and read it reproducibly.

A release directory holds one parquet file per table, a `release.json` manifest and a `CARD.md` dataset card:

| file | rows | key |
|---|---|---|
| tasks.parquet | `Task` | task_id; rows keep the release's canonical task order (DeepScholar: file id) |
| exemplar_refs.parquet | `ExemplarRef` | (task_id, ref_key); sorted by task order, then position |
| nuggets.parquet | `Nugget` | (task_id, index); sorted by task order, then index |
| important_refs.parquet | `ImportantRef` | (task_id, ref_key); derived from `ExemplarRef.is_important` |
| corpus.parquet | `CorpusDoc` | doc_id; sorted by doc_id |
| citation_counts.parquet | `CitationCount` | (arxiv_id, title); sorted; may be empty |

Why this shape: DVC hashes the directory, so every byte must be a function of the content alone. Tables
have fixed schemas derived from the pydantic records, rows are sorted by their key, parquet carries no
timestamps (polars writes none), `created_at` comes from the source/config, and JSON is written with sorted
keys. Writing the same `Release` twice gives identical bytes. Every validation error names the file and the
field, so a broken release points at the row to fix, e.g.
`data/releases/x/tasks.parquet: row 3 field 'abstract' is empty`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import polars as pl
from pydantic import Field, TypeAdapter, ValidationError

from reportbench.release.card import CARD_FILE, write_release_card
from reportbench.release.subset import subset_card_line
from reportbench.types import ExemplarRef, Nugget, Record, RubricItem, Task, strip_arxiv_version

SCHEMA_VERSION = 2
# v1 (DeepScholar only): every Task text field required, the six built-in tables. v2: optional Task fields
# (abstract, published_date, exemplar), registered extra tables. v1 releases read unchanged (a v1 table set
# is a valid v2 one); anything newer is rejected with a message naming the file and the version.
READABLE_SCHEMA_VERSIONS = (1, 2)
# Task fields a benchmark's releases must fill (the importers check them too); keyed by manifest benchmark.
REQUIRED_TASK_FIELDS: dict[str, tuple[str, ...]] = {"deepscholar": ("abstract", "published_date", "exemplar")}
MANIFEST_FILE = "release.json"
PARQUET_COMPRESSION: Literal["zstd"] = "zstd"
PARQUET_COMPRESSION_LEVEL = 9  # fixed, so a polars default change cannot silently change the bytes
MAX_REPORTED_ERRORS = 25

# New-style (2513.00017) or old-style (cs/0302025, cmp-lg/9407020, math.AG/0601001) arXiv ids, no version.
ARXIV_ID_RE = re.compile(r"^(\d{4}\.\d{4,5}|[a-z][a-z\-]*(\.[A-Z]{2})?/\d{7})$")


class ReleaseError(ValueError):
    """A release that fails validation; `errors` lists each problem as "<file>: row N field 'f' <problem>"."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = list(errors)
        shown = self.errors[:MAX_REPORTED_ERRORS]
        more = len(self.errors) - len(shown)
        text = "\n".join(shown) + (f"\n... and {more} more" if more > 0 else "")
        super().__init__(text)


# --------------------------------------------------------------------------------------------- records


class ImportantRef(Record):
    """An exemplar reference labelled important (DeepScholar important_citations.csv; Ref. Coverage's E)."""

    task_id: str
    ref_key: str
    arxiv_id: str | None = Field(default=None, description="version-stripped")
    title: str | None = None


class CorpusDoc(Record):
    """A document systems may retrieve: the reference pool (exemplar refs, plus distractors in the demo)."""

    doc_id: str = Field(description="'arxiv:<id>' for arXiv papers, 'ref:<hash>' otherwise")
    arxiv_id: str | None = Field(default=None, description="version-stripped")
    title: str
    abstract: str | None = None
    authors: str | None = Field(default=None, description="', '-joined (or as written in the source bib)")
    published_date: str | None = Field(default=None, description="ISO 8601; None when the source lacks it")
    categories: list[str] = Field(default_factory=list)
    url: str | None = None


class CitationCount(Record):
    """A citation count for a document (Document Importance input), with where and when it was obtained."""

    arxiv_id: str | None = Field(default=None, description="version-stripped")
    title: str | None = None
    cited_by_count: int | None = Field(default=None, description="None = looked up, not found")
    fetched_at: str = Field(description="ISO 8601 date of the lookup (or of the synthetic data)")
    source: str = Field(description="'openalex', 'synthetic', ...")


# ---------------------------------------------------------------------------------------------- schema


def _polars_dtype(annotation: Any, where: str) -> pl.DataType:
    """Map a record field annotation to the parquet column type, so the schema follows types.py exactly."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is str or origin is Literal:
        return pl.String()
    if annotation is bool:
        return pl.Boolean()
    if annotation is int:
        return pl.Int64()
    if annotation is float:
        return pl.Float64()
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _polars_dtype(inner[0], where)
    if origin is list and len(args) == 1:
        return pl.List(_polars_dtype(args[0], where))
    raise TypeError(f"{where}: no parquet column type for annotation {annotation!r}")


def _required_text_fields(model: type[Record]) -> tuple[str, ...]:
    """Fields annotated plain `str`: they must be present AND non-blank (pydantic accepts '')."""
    return tuple(name for name, f in model.model_fields.items() if f.annotation is str)


@dataclass(frozen=True)
class TableSpec:
    """One table of a release: file name, row record, unique key, and whether the file may be absent."""

    name: str
    model: type[Record]
    key: tuple[str, ...]
    optional: bool = False

    @property
    def file(self) -> str:
        return f"{self.name}.parquet"

    @cached_property
    def schema(self) -> dict[str, pl.DataType]:
        return {
            n: _polars_dtype(f.annotation, f"{self.model.__name__}.{n}")
            for n, f in self.model.model_fields.items()
        }


TABLES: tuple[TableSpec, ...] = (
    TableSpec("tasks", Task, ("task_id",)),
    TableSpec("exemplar_refs", ExemplarRef, ("task_id", "ref_key")),
    TableSpec("nuggets", Nugget, ("task_id", "index")),
    TableSpec("important_refs", ImportantRef, ("task_id", "ref_key"), optional=True),
    TableSpec("corpus", CorpusDoc, ("doc_id",)),
    TableSpec("citation_counts", CitationCount, ("arxiv_id", "title"), optional=True),
)
TABLE_BY_NAME = {t.name: t for t in TABLES}


@dataclass(frozen=True)
class ExtraTable:
    """A table a benchmark adds to its releases (rubric items, guidance, checklists) without editing this module.

    `order` gives each row's sort key (after the task order, when rows have a task_id), so the bytes are a
    function of the content; `check` adds cross-table problems as "<file>: row N field 'f' <problem>".
    """

    spec: TableSpec
    order: Callable[[Any], Any]
    check: Callable[[Release, Sequence[Record], str, list[str]], None] | None = None
    licence_restricted: bool = False  # e.g. DEER's guidance: the card never quotes it


EXTRA_TABLES: dict[str, ExtraTable] = {}


def register_table(
    spec: TableSpec,
    order: Callable[[Any], Any],
    check: Callable[[Release, Sequence[Record], str, list[str]], None] | None = None,
    *,
    licence_restricted: bool = False,
    replace: bool = False,
) -> ExtraTable:
    """Register an extra release table (idempotent for the same spec)."""
    if spec.name in TABLE_BY_NAME:
        raise ValueError(f"table {spec.name!r} is a built-in release table")
    old = EXTRA_TABLES.get(spec.name)
    if old is not None and old.spec != spec and not replace:
        raise ValueError(f"release table {spec.name!r} is already registered with another schema")
    entry = ExtraTable(spec, order, check, licence_restricted)
    EXTRA_TABLES[spec.name] = entry
    return entry


def _check_rubric(release: Release, rows: Sequence[Record], path: str, errors: list[str]) -> None:
    task_ids = {t.task_id for t in release.tasks} | {"*"}
    for i, r in enumerate(rows):
        if r.task_id not in task_ids:  # type: ignore[attr-defined]
            errors.append(_fmt(path, i, "task_id", f"{r.task_id!r} is not a task of this release"))  # type: ignore[attr-defined]
        if not r.weight == r.weight or r.weight < 0:  # type: ignore[attr-defined]
            errors.append(_fmt(path, i, "weight", f"{r.weight!r} is not a non-negative number"))  # type: ignore[attr-defined]


RUBRIC_ITEMS = register_table(
    TableSpec("rubric_items", RubricItem, ("task_id", "item_id")),
    order=lambda r: (r.index, r.item_id),
    check=_check_rubric,
)


# --------------------------------------------------------------------------------------------- release


@dataclass(frozen=True)
class ReleaseMeta:
    """Manifest fields a builder chooses. Counts, hashes and flags are derived when writing, not typed in."""

    name: str
    created_at: str  # from the source/config, NOT the wall clock: rebuilding must be byte-identical
    source: str
    licence: str
    synthetic: bool
    benchmark: str = "deepscholar"
    description: str = ""
    provenance: dict[str, str] = field(default_factory=dict)  # e.g. source file -> sha256
    # set only on a subset release (release/subset.py, `limit`): {n, of, limit, rule, task_ids_of_full[, note]}
    subset: dict[str, Any] | None = None


@dataclass
class Release:
    """A benchmark release in memory. Treat it as immutable once built: the per-task indexes are cached."""

    meta: ReleaseMeta
    tasks: list[Task]
    exemplar_ref_rows: list[ExemplarRef] = field(default_factory=list)
    nugget_rows: list[Nugget] = field(default_factory=list)
    corpus: list[CorpusDoc] = field(default_factory=list)
    citation_counts: list[CitationCount] = field(default_factory=list)
    extra: dict[str, list[Record]] = field(default_factory=dict)  # registered extra tables (EXTRA_TABLES)

    # -- indexes
    @cached_property
    def _task_index(self) -> dict[str, int]:
        return {t.task_id: i for i, t in enumerate(self.tasks)}

    @cached_property
    def _refs_by_task(self) -> dict[str, list[ExemplarRef]]:
        return _group(self.exemplar_ref_rows, lambda r: r.task_id, lambda r: (r.position, r.ref_key))

    @cached_property
    def _nuggets_by_task(self) -> dict[str, list[Nugget]]:
        return _group(self.nugget_rows, lambda n: n.task_id, lambda n: n.index)

    @cached_property
    def _rubric_by_task(self) -> dict[str, list[Any]]:
        return _group(self.extra.get("rubric_items", []), lambda r: r.task_id, lambda r: (r.index, r.item_id))

    @cached_property
    def _corpus_by_id(self) -> dict[str, CorpusDoc]:
        return {d.doc_id: d for d in self.corpus}

    @cached_property
    def _corpus_by_arxiv(self) -> dict[str, CorpusDoc]:
        return {d.arxiv_id: d for d in self.corpus if d.arxiv_id}

    @cached_property
    def _counts_by_arxiv(self) -> dict[str, CitationCount]:
        return {c.arxiv_id: c for c in self.citation_counts if c.arxiv_id}

    # -- accessors
    def table_specs(self) -> list[TableSpec]:
        """The built-in tables, then the registered extra tables this release carries (the card lists them)."""
        return [*TABLES, *(EXTRA_TABLES[n].spec for n in sorted(self.extra))]

    @property
    def task_ids(self) -> list[str]:
        return [t.task_id for t in self.tasks]

    def task(self, task_id: str) -> Task:
        try:
            return self.tasks[self._task_index[task_id]]
        except KeyError:
            raise KeyError(f"release {self.meta.name!r} has no task {task_id!r}") from None

    def task_index(self, task_id: str) -> int:
        """Position in the canonical task order (DeepScholar: the baselines' file id)."""
        self.task(task_id)
        return self._task_index[task_id]

    def exemplar_refs(self, task_id: str) -> list[ExemplarRef]:
        """The exemplar's references in first-appearance order."""
        self.task(task_id)
        return list(self._refs_by_task.get(task_id, []))

    def nuggets(self, task_id: str) -> list[Nugget]:
        """The exemplar's nuggets in stored order (vital first)."""
        self.task(task_id)
        return list(self._nuggets_by_task.get(task_id, []))

    @property
    def has_important_refs(self) -> bool:
        """True when every exemplar ref carries an importance label (False for public DeepScholar data)."""
        return bool(self.exemplar_ref_rows) and all(
            r.is_important is not None for r in self.exemplar_ref_rows
        )

    def important_refs(self, task_id: str) -> list[ImportantRef]:
        """The exemplar refs labelled important, in exemplar order; [] when the release has no labels."""
        return [
            ImportantRef(task_id=r.task_id, ref_key=r.ref_key, arxiv_id=r.arxiv_id, title=r.title)
            for r in self.exemplar_refs(task_id)
            if r.is_important
        ]

    def corpus_doc(self, doc_id: str) -> CorpusDoc:
        try:
            return self._corpus_by_id[doc_id]
        except KeyError:
            raise KeyError(f"release {self.meta.name!r} corpus has no doc {doc_id!r}") from None

    def corpus_by_arxiv(self, arxiv_id: str) -> CorpusDoc | None:
        """Corpus document for an arXiv id (any version suffix is stripped first)."""
        return self._corpus_by_arxiv.get(strip_arxiv_version(arxiv_id))

    def citation_count(self, arxiv_id: str) -> CitationCount | None:
        return self._counts_by_arxiv.get(strip_arxiv_version(arxiv_id))

    def table(self, name: str) -> list[Record]:
        """Rows of a registered extra table ([] when the release does not carry it)."""
        return list(self.extra.get(name, []))

    def rubric(self, task_id: str) -> list[RubricItem]:
        """The task's rubric items in order, followed by the items every task shares (task_id '*'). From an index
        built once per release: a scan of every rubric row per task made the judge stage, the site and the viewer
        quadratic in tasks (issue 36)."""
        shared = self._rubric_by_task.get("*", []) if task_id != "*" else []
        return [*self._rubric_by_task.get(task_id, []), *shared]


def _group(
    rows: Iterable[Any], key: Callable[[Any], str], order: Callable[[Any], Any]
) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for r in rows:
        out.setdefault(key(r), []).append(r)
    for v in out.values():
        v.sort(key=order)
    return out


def corpus_doc_id(arxiv_id: str | None, title: str) -> str:
    """Stable corpus id: 'arxiv:<id>' for arXiv papers, else 'ref:' + a hash of the normalised title."""
    if arxiv_id:
        return f"arxiv:{strip_arxiv_version(arxiv_id)}"
    norm = " ".join(re.sub(r"[^\w\s]", " ", title.lower()).split())
    return "ref:" + hashlib.sha256(norm.encode()).hexdigest()[:16]


def important_ref_rows(release: Release) -> list[ImportantRef]:
    """All important refs, in table order (task order, then exemplar position)."""
    return [ir for t in release.tasks for ir in release.important_refs(t.task_id)]


# ------------------------------------------------------------------------------------------ validation


def _fmt(path: str, row: int | None, fld: str | None, problem: str) -> str:
    where = path
    if row is not None:
        where += f": row {row}"
    if fld is not None:
        where += f"{'' if row is not None else ':'} field '{fld}'"
    return f"{where} {problem}"


def _has_attribute(model: type[Record], name: str) -> bool:
    """Whether rows of `model` can have attribute `name` (a field, or a property or class attribute)."""
    return name in model.model_fields or hasattr(model, name)


def _check_rows(spec: TableSpec, path: str, rows: Sequence[Record], errors: list[str]) -> None:
    """Per-row checks shared by write and read: non-blank text, arXiv id shape, ISO dates, unique key."""
    text_fields = _required_text_fields(spec.model)
    # which optional checks apply, asked of the model once: getattr(row, absent, None) raises and catches an
    # AttributeError inside pydantic for every row (most of a large release's read time)
    has_arxiv = _has_attribute(spec.model, "arxiv_id")
    date_fields = [f for f in ("published_date", "fetched_at") if _has_attribute(spec.model, f)]
    seen: dict[tuple[Any, ...], int] = {}
    for i, r in enumerate(rows):
        for f in text_fields:
            v = getattr(r, f)
            if not isinstance(v, str) or not v.strip():
                errors.append(_fmt(path, i, f, "is empty"))
        arxiv = getattr(r, "arxiv_id", None) if has_arxiv else None
        if arxiv is not None and not ARXIV_ID_RE.match(arxiv):
            errors.append(_fmt(path, i, "arxiv_id", f"{arxiv!r} is not a version-stripped arXiv id"))
        for f in date_fields:
            v = getattr(r, f, None)
            if isinstance(v, str) and v.strip():
                try:
                    datetime.fromisoformat(v)
                except ValueError:
                    errors.append(_fmt(path, i, f, f"{v!r} is not an ISO 8601 date"))
        k = tuple(getattr(r, f) for f in spec.key)
        if k in seen:
            errors.append(_fmt(path, i, spec.key[-1], f"duplicate key {k} (first at row {seen[k]})"))
        else:
            seen[k] = i


def builtin_rows(release: Release) -> dict[str, Sequence[Record]]:
    """The six built-in tables' rows, by table name (what validation checks and writing writes)."""
    return {
        "tasks": release.tasks,
        "exemplar_refs": release.exemplar_ref_rows,
        "nuggets": release.nugget_rows,
        "important_refs": important_ref_rows(release),
        "corpus": release.corpus,
        "citation_counts": release.citation_counts,
    }


def validate_release(release: Release, where: str | Path = "<release>") -> None:
    """Raise ReleaseError listing every problem; file paths are `where/<table>.parquet`."""
    base = str(where).rstrip("/")
    p = {t.name: f"{base}/{t.file}" for t in TABLES}
    errors: list[str] = []
    tables = builtin_rows(release)
    for name, rows in tables.items():
        spec = TABLE_BY_NAME[name]
        wrong = [
            _fmt(p[name], i, None, f"is a {type(r).__name__}, expected {spec.model.__name__}")
            for i, r in enumerate(rows)
            if not isinstance(r, spec.model)
        ]
        if wrong:  # the checks below assume the right record type
            raise ReleaseError(errors + wrong)
        _check_rows(spec, p[name], _sorted_rows(release, name, rows), errors)
    for name, rows in sorted(release.extra.items()):
        entry = EXTRA_TABLES.get(name)
        path = f"{base}/{name}.parquet"
        if entry is None:
            errors.append(f"{path}: table {name!r} is not registered (is its benchmark's protocol installed?)")
            continue
        wrong = [i for i, r in enumerate(rows) if not isinstance(r, entry.spec.model)]
        if wrong:
            raise ReleaseError(errors + [_fmt(path, wrong[0], None, f"is not a {entry.spec.model.__name__}")])
        ordered = _sorted_extra(release, entry, rows)
        _check_rows(entry.spec, path, ordered, errors)
        if entry.check is not None:
            entry.check(release, ordered, path, errors)
    for f in REQUIRED_TASK_FIELDS.get(release.meta.benchmark, ()):
        for i, t in enumerate(release.tasks):
            v = getattr(t, f)
            if not isinstance(v, str) or not v.strip():
                errors.append(_fmt(p["tasks"], i, f, f"is empty (required for {release.meta.benchmark} releases)"))
    if not release.tasks:
        errors.append(f"{p['tasks']}: the release has no tasks")
    _check_links(release, p, errors)
    if errors:
        raise ReleaseError(errors)


def _check_links(release: Release, p: dict[str, str], errors: list[str]) -> None:
    """Cross-table checks: child rows point at a task; positions/indexes are 0..n-1; labels all-or-none."""
    task_ids = {t.task_id for t in release.tasks}
    for name, rows, seq_field in (
        ("exemplar_refs", _sorted_rows(release, "exemplar_refs", release.exemplar_ref_rows), "position"),
        ("nuggets", _sorted_rows(release, "nuggets", release.nugget_rows), "index"),
    ):
        expected: dict[str, int] = {}
        for i, r in enumerate(rows):
            tid = r.task_id  # type: ignore[attr-defined]
            if tid not in task_ids:
                errors.append(_fmt(p[name], i, "task_id", f"{tid!r} is not a task of this release"))
                continue
            want = expected.get(tid, 0)
            got = getattr(r, seq_field)
            if got != want:
                errors.append(_fmt(p[name], i, seq_field, f"is {got}, expected {want} (0..n-1 per task)"))
            expected[tid] = got + 1
    labelled = [r.is_important is not None for r in release.exemplar_ref_rows]
    if any(labelled) and not all(labelled):
        rows = _sorted_rows(release, "exemplar_refs", release.exemplar_ref_rows)
        first = next(i for i, r in enumerate(rows) if r.is_important is None)  # type: ignore[attr-defined]
        errors.append(
            _fmt(
                p["exemplar_refs"], first, "is_important", "is null but other rows are labelled (all or none)"
            )
        )


# --------------------------------------------------------------------------------------------- writing


def _sorted_rows(release: Release, name: str, rows: Sequence[Record]) -> list[Record]:
    """Rows in on-disk order. Tasks keep the canonical order; other tables sort by task order then key."""
    if name == "tasks":
        return list(rows)
    rank = {t.task_id: i for i, t in enumerate(release.tasks)}
    unknown = len(rank)

    def task_rank(r: Any) -> tuple[int, str]:
        return (rank.get(r.task_id, unknown), r.task_id)

    if name == "exemplar_refs":
        return sorted(rows, key=lambda r: (task_rank(r), r.position, r.ref_key))  # type: ignore[attr-defined]
    if name == "important_refs":
        pos = {(r.task_id, r.ref_key): r.position for r in release.exemplar_ref_rows}
        return sorted(
            rows,
            key=lambda r: (task_rank(r), pos.get((r.task_id, r.ref_key), 0), r.ref_key),  # type: ignore[attr-defined]
        )
    if name == "nuggets":
        return sorted(rows, key=lambda r: (task_rank(r), r.index))  # type: ignore[attr-defined]
    if name == "corpus":
        return sorted(rows, key=lambda r: r.doc_id)  # type: ignore[attr-defined]
    if name == "citation_counts":
        return sorted(rows, key=lambda r: (r.arxiv_id or "", r.title or ""))  # type: ignore[attr-defined]
    raise KeyError(name)


def _sorted_extra(release: Release, entry: ExtraTable, rows: Sequence[Record]) -> list[Record]:
    rank = {t.task_id: i for i, t in enumerate(release.tasks)}

    def key(r: Any) -> tuple[Any, ...]:
        tid = getattr(r, "task_id", None)
        return (rank.get(tid, len(rank)) if tid is not None else -1, tid or "", entry.order(r))

    return sorted(rows, key=key)


def _frame(spec: TableSpec, rows: Sequence[Record]) -> pl.DataFrame:
    cols = list(spec.schema)
    dumped = [r.model_dump() for r in rows]
    data = {c: [d[c] for d in dumped] for c in cols}
    return pl.DataFrame(data, schema=spec.schema)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _dump_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_release(release: Release, out_dir: str | Path) -> dict[str, Any]:
    """Validate, then write all six tables, `release.json` and `CARD.md` into out_dir. Returns the manifest.

    Every table file is always written (empty with its schema when there are no rows), so a DVC `outs`
    directory has the same file list for every release.
    """
    out = Path(out_dir)
    validate_release(release, out)
    out.mkdir(parents=True, exist_ok=True)
    rows_by_table = builtin_rows(release)
    table_info: dict[str, dict[str, Any]] = {}
    for spec in TABLES:
        rows = _sorted_rows(release, spec.name, rows_by_table[spec.name])
        path = out / spec.file
        _frame(spec, rows).write_parquet(
            path,
            compression=PARQUET_COMPRESSION,
            compression_level=PARQUET_COMPRESSION_LEVEL,
            statistics=True,
        )
        table_info[spec.name] = {"file": spec.file, "rows": len(rows), "sha256": _sha256(path)}
    for name in sorted(release.extra):
        entry = EXTRA_TABLES[name]
        rows = _sorted_extra(release, entry, release.extra[name])
        path = out / entry.spec.file
        _frame(entry.spec, rows).write_parquet(
            path, compression=PARQUET_COMPRESSION, compression_level=PARQUET_COMPRESSION_LEVEL, statistics=True
        )
        table_info[name] = {"file": entry.spec.file, "rows": len(rows), "sha256": _sha256(path)}
    manifest = build_manifest(release, table_info)
    (out / MANIFEST_FILE).write_text(_dump_json(manifest), encoding="utf-8")
    (out / CARD_FILE).write_text(render_card(release, manifest), encoding="utf-8")
    write_release_card(out, release, manifest)  # README.md: the Hugging Face-style card
    return manifest


def build_manifest(release: Release, table_info: dict[str, dict[str, Any]]) -> dict[str, Any]:
    m = release.meta
    return {
        "name": m.name,
        "schema_version": SCHEMA_VERSION,
        "benchmark": m.benchmark,
        "created_at": m.created_at,
        "source": m.source,
        "licence": m.licence,
        "synthetic": m.synthetic,
        "description": m.description,
        "provenance": dict(sorted(m.provenance.items())),
        "has_important_refs": release.has_important_refs,
        "has_citation_counts": bool(release.citation_counts),
        "counts": {name: info["rows"] for name, info in table_info.items()},
        "tables": table_info,
        # only on a subset release: a full release's manifest keeps its bytes (release/subset.py)
        **({"subset": m.subset} if m.subset else {}),
    }


def render_card(release: Release, manifest: dict[str, Any]) -> str:
    """A human-readable dataset card, a pure function of the release (so it is deterministic too)."""
    m = release.meta
    counts = manifest["counts"]
    n_tasks = max(counts["tasks"], 1)
    vital = sum(1 for n in release.nugget_rows if n.importance == "vital")
    arxiv_refs = sum(1 for r in release.exemplar_ref_rows if r.arxiv_id)
    lines = [f"# {m.name}", ""]
    if m.subset:
        lines += [f"> **{subset_card_line(m.subset)}**", ""]
    if m.synthetic:
        lines += [
            "> **SYNTHETIC DATA.** Every paper, arXiv id, abstract, nugget, citation count and report",
            "> in this release is self-authored and invented for testing. None of it describes real work.",
            "> The arXiv ids use month 13 (e.g. `2513.00017`) so they can never collide with real ones.",
            "",
        ]
    if m.description:
        lines += [m.description, ""]
    lines += [
        f"- benchmark: `{m.benchmark}`",
        f"- schema version: {SCHEMA_VERSION}",
        f"- created at: {m.created_at}",
        f"- source: {m.source}",
        f"- licence: {m.licence}",
        f"- important-reference labels: {'yes' if manifest['has_important_refs'] else 'no'}",
        f"- citation counts: {'yes' if manifest['has_citation_counts'] else 'no'}",
        "",
        "## Contents",
        "",
        "| table | rows |",
        "|---|---|",
        *[f"| `{spec.file}` | {counts[spec.name]} |" for spec in TABLES],
        *[f"| `{EXTRA_TABLES[n].spec.file}` | {counts[n]} |" for n in sorted(release.extra)],
        "",
        f"- exemplar references per task: {counts['exemplar_refs'] / n_tasks:.2f} "
        f"({arxiv_refs} of {counts['exemplar_refs']} on arXiv)",
        f"- nuggets per task: {counts['nuggets'] / n_tasks:.2f} ({vital} vital)",
        "",
        "## Schemas",
        "",
    ]
    for spec in TABLES:
        cols = ", ".join(f"`{c}` {dt}" for c, dt in spec.schema.items())
        lines += [f"- `{spec.file}`: {cols}"]
    lines += ["", "Integrity: `release.json` lists the sha256 of every table file.", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- reading


@functools.cache
def _rows_adapter(model: type[Record]) -> TypeAdapter[list[Record]]:
    return TypeAdapter(list[model])  # type: ignore[valid-type]


def _read_table(spec: TableSpec, path: Path, shown: str, errors: list[str]) -> list[Record]:
    """Read one parquet table into records; schema and row problems are appended to errors."""
    try:
        df = pl.read_parquet(path, glob=False)
    except Exception as exc:  # polars raises several exception types for corrupt files
        errors.append(f"{shown}: cannot read parquet ({type(exc).__name__}: {exc})")
        return []
    ok = True
    for col, dtype in spec.schema.items():
        if col not in df.columns:
            errors.append(_fmt(shown, None, col, "is missing (column not in file)"))
            ok = False
        elif df.schema[col] != dtype:
            errors.append(_fmt(shown, None, col, f"has type {df.schema[col]}, expected {dtype}"))
            ok = False
    for col in df.columns:
        if col not in spec.schema:
            errors.append(_fmt(shown, None, col, "is not part of the schema (unexpected column)"))
            ok = False
    if not ok:
        return []
    rows = df.select(list(spec.schema)).to_dicts()
    try:  # all rows in one call (pydantic's loop, not ours); on an error, row by row below for the messages
        return list(_rows_adapter(spec.model).validate_python(rows))
    except ValidationError:
        pass
    records: list[Record] = []
    for i, row in enumerate(rows):
        try:
            records.append(spec.model.model_validate(row))
        except ValidationError as exc:
            for e in exc.errors():
                fld = str(e["loc"][0]) if e["loc"] else None
                errors.append(_fmt(shown, i, fld, e["msg"]))
    return records


def read_release(release_dir: str | Path, verify_hashes: bool = True) -> Release:
    """Read and validate a release directory. Hash mismatches against release.json are errors by default."""
    d = Path(release_dir)
    mpath = d / MANIFEST_FILE
    if not mpath.is_file():
        raise ReleaseError([f"{mpath}: not found (not a release directory?)"])
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ReleaseError([f"{mpath}: not valid JSON ({exc})"]) from exc
    errors: list[str] = []
    for key in ("name", "schema_version", "created_at", "source", "licence", "synthetic", "tables"):
        if key not in manifest:
            errors.append(_fmt(str(mpath), None, key, "is missing"))
    if errors:
        raise ReleaseError(errors)
    if manifest["schema_version"] not in READABLE_SCHEMA_VERSIONS:
        raise ReleaseError(
            [
                _fmt(
                    str(mpath),
                    None,
                    "schema_version",
                    f"is {manifest['schema_version']}; this reportbench reads {list(READABLE_SCHEMA_VERSIONS)} "
                    "(upgrade reportbench, or rebuild the release with this version)",
                )
            ]
        )
    data: dict[str, list[Record]] = {}
    for spec in TABLES:
        path = d / spec.file
        shown = str(path)
        if not path.is_file():
            if not spec.optional:
                errors.append(f"{shown}: not found")
            data[spec.name] = []
            continue
        info = manifest["tables"].get(spec.name)
        if verify_hashes and info is not None and info.get("sha256") != _sha256(path):
            errors.append(
                f"{shown}: sha256 differs from {MANIFEST_FILE} (file changed after the release was written)"
            )
        data[spec.name] = _read_table(spec, path, shown, errors)
    extra: dict[str, list[Record]] = {}
    builtin = {t.name for t in TABLES}
    for name in sorted(set(manifest["tables"]) - builtin):
        entry = EXTRA_TABLES.get(name)
        path = d / f"{name}.parquet"
        if entry is None:
            errors.append(
                f"{path}: table {name!r} is not registered (is its benchmark's protocol installed?); "
                f"registered: {sorted(EXTRA_TABLES)}"
            )
            continue
        info = manifest["tables"][name]
        if not path.is_file():
            errors.append(f"{path}: not found (listed in {MANIFEST_FILE})")
            continue
        if verify_hashes and info.get("sha256") != _sha256(path):
            errors.append(f"{path}: sha256 differs from {MANIFEST_FILE} (file changed after the release was written)")
        extra[name] = _read_table(entry.spec, path, str(path), errors)
    if errors:
        raise ReleaseError(errors)
    m = manifest
    release = Release(
        meta=ReleaseMeta(
            name=m["name"],
            created_at=m["created_at"],
            source=m["source"],
            licence=m["licence"],
            synthetic=bool(m["synthetic"]),
            benchmark=m.get("benchmark", "deepscholar"),
            description=m.get("description", ""),
            provenance=dict(m.get("provenance", {})),
            subset=m.get("subset") or None,
        ),
        tasks=data["tasks"],  # type: ignore[arg-type]
        exemplar_ref_rows=data["exemplar_refs"],  # type: ignore[arg-type]
        nugget_rows=data["nuggets"],  # type: ignore[arg-type]
        corpus=data["corpus"],  # type: ignore[arg-type]
        citation_counts=data["citation_counts"],  # type: ignore[arg-type]
        extra=extra,
    )
    validate_release(release, d)
    _check_important_table(release, data["important_refs"], d, errors)  # type: ignore[arg-type]
    flag = manifest.get("has_important_refs")
    if flag is not None and bool(flag) != release.has_important_refs:
        errors.append(
            _fmt(
                str(mpath),
                None,
                "has_important_refs",
                f"is {flag} but the exemplar_refs labels say otherwise",
            )
        )
    if errors:
        raise ReleaseError(errors)
    return release


def _check_important_table(release: Release, rows: list[ImportantRef], d: Path, errors: list[str]) -> None:
    """important_refs.parquet is derived data: it must equal the is_important labels of exemplar_refs."""
    shown = str(d / TABLE_BY_NAME["important_refs"].file)
    expected = important_ref_rows(release)
    if [r.model_dump() for r in rows] == [r.model_dump() for r in expected]:
        return
    want = {(r.task_id, r.ref_key) for r in expected}
    for i, r in enumerate(rows):
        if (r.task_id, r.ref_key) not in want:
            errors.append(
                _fmt(shown, i, "ref_key", f"{r.ref_key!r} is not an exemplar ref labelled important")
            )
            return
    errors.append(f"{shown}: rows differ from the exemplar_refs rows with is_important == true")
