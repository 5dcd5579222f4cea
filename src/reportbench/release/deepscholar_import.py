"""Import the public DeepScholar-bench dataset into a reportbench `Release`.

Expected layout (the authors' repository, `guestrin-lab/deepscholar-bench`):

    <root>/dataset/papers_with_related_works.csv   63 papers, file-id order (0 = 2506.02838v1 TaxAgent)
    <root>/dataset/citations.csv                   exemplar references, first-appearance order per paper
    <root>/dataset/recovered_citations.csv         (hashed for provenance only; see below)
    <root>/dataset/important_citations.csv         optional: absent from the public snapshot
    <root>/dataset/gt_nuggets_outputs/**/res.json  exemplar nuggets; the folder layout is scrambled

Decisions, and why:
- Task order = papers_with_related_works.csv row order, because the authors' baselines and nugget folders use
  that row index as the file id (their README's related_works_combined.csv maps file 0 to the wrong paper).
- Nuggets are indexed by `res.json["qid"]` from a recursive walk. Opening `<dir>/<file_id>/res.json` (what the
  authors' eval does) finds only 43 of 63 papers: 20 sit in nested folders named after an older 66-row set.
- The exemplar is `clean_latex_related_works` as shipped (comments kept): the paper's statistics use it.
- arXiv ids come only from the pipeline's `cited_paper_arxiv_link` (version stripped). The Tavily/arXiv
  recovery in recovered_citations.csv is not used for ids, so the arXiv target set matches the authors'
  Reference Coverage.
- Titles are whitespace-collapsed (44 paper titles and 418 reference titles carry arXiv line wraps);
  abstracts are kept byte-exact because the task prompt embeds them.
- `created_at` and `source` default to constants (the snapshot date and the public URL), not the wall clock
  or the local path, so importing the same files anywhere yields byte-identical releases; exact input hashes
  are recorded in the manifest's provenance.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from reportbench.release.format import CorpusDoc, Release, ReleaseMeta, corpus_doc_id, write_release
from reportbench.types import ExemplarRef, Nugget, Task, strip_arxiv_version

DEEPSCHOLAR_REPO = "https://github.com/guestrin-lab/deepscholar-bench"
DEEPSCHOLAR_LICENCE = "MIT (DeepScholar-bench Team, 2025)"
DEEPSCHOLAR_SNAPSHOT_DATE = "2025-09-01"  # date of the public HEAD 6ff05aa the spec studied
NUGGETS_DIR = "gt_nuggets_outputs"

# §3.8 arXiv-constrained task prompt (DeepScholar-base / SearchAI runs). The final "." after {abstract} is
# part of the prompt the authors sent: helper_data.json's query ends with the abstract's "." plus this one.
ARXIV_TASK_PROMPT = (
    "Your task is to write a Related Works section for an academic paper given the paper's abstract. "
    "Your response should provide the Related Works section and references. "
    "Only include references from arXiv that are published before {published_date}. "
    "Mention them in a separate, numbered reference list at the end and use the reference numbers to provide "
    "in-line citations in the Related Works section for all claims referring to a source "
    "(e.g., description of source [3]. Further details [6][7][8][9][10].) "
    "Each in-line citation must consist of a single reference number within a pair of brackets. "
    "Do not use any other citation format. Do not exceed 600 words for the related works section. "
    "Here is the paper abstract:\n{abstract}."
)

_PAPER_COLUMNS = (
    "arxiv_id",
    "title",
    "abstract",
    "categories",
    "published_date",
    "clean_latex_related_works",
)
_CITATION_COLUMNS = (
    "parent_paper_arxiv_id",
    "citation_shorthand",
    "cited_paper_title",
    "cited_paper_arxiv_link",
)


class DeepScholarImportError(ValueError):
    """The source files do not have the expected layout or content; the message names file and field."""


def render_task_prompt(published_date: str, abstract: str) -> str:
    """The exact prompt DeepScholar gave systems: published_date as in papers.csv (ISO, 'T'), raw abstract."""
    return ARXIV_TASK_PROMPT.format(published_date=published_date, abstract=abstract)


def _collapse(text: str | None) -> str | None:
    return " ".join(text.split()) if text is not None else None


def _dataset_dir(root: str | Path) -> Path:
    root = Path(root)
    d = root / "dataset" if (root / "dataset").is_dir() else root
    if not (d / "papers_with_related_works.csv").is_file():
        raise DeepScholarImportError(
            f"{d}/papers_with_related_works.csv: not found (expected <root>/dataset/...)"
        )
    return d


def _read_csv(path: Path, required: Iterable[str]) -> pl.DataFrame:
    """Read a DeepScholar CSV with every column as text (no type guessing); check the columns we rely on."""
    if not path.is_file():
        raise DeepScholarImportError(f"{path}: not found")
    df = pl.read_csv(path, infer_schema=False)
    for col in required:
        if col not in df.columns:
            raise DeepScholarImportError(f"{path}: missing column '{col}'")
    return df


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ----------------------------------------------------------------------------------------------- tasks


def load_tasks(dataset_dir: Path, max_tasks: int | None = None) -> list[Task]:
    """Tasks in file-id order (row order of papers_with_related_works.csv)."""
    path = dataset_dir / "papers_with_related_works.csv"
    df = _read_csv(path, _PAPER_COLUMNS)
    if max_tasks is not None:
        df = df.head(max_tasks)
    tasks: list[Task] = []
    for i, row in enumerate(df.iter_rows(named=True)):
        for col in _PAPER_COLUMNS:
            if not isinstance(row[col], str) or not row[col].strip():
                raise DeepScholarImportError(f"{path}: row {i} field '{col}' is empty")
        tasks.append(
            Task(
                task_id=row["arxiv_id"].strip(),
                title=_collapse(row["title"]) or "",
                abstract=row["abstract"],
                published_date=row["published_date"].strip(),
                categories=[c.strip() for c in row["categories"].split(",") if c.strip()],
                task_prompt=render_task_prompt(row["published_date"].strip(), row["abstract"]),
                exemplar=row["clean_latex_related_works"],
                exemplar_raw=row.get("raw_latex_related_works"),
            )
        )
    return tasks


# ------------------------------------------------------------------------------------------ references


def arxiv_id_from_link(link: str | None) -> str | None:
    """'http://arxiv.org/abs/2004.13332v1' -> '2004.13332'; old-style 'cs/0302025v2' kept with its archive."""
    if not link or not link.strip():
        return None
    link = link.strip()
    for marker in ("/abs/", "/pdf/", "/html/"):
        if marker in link:
            ident = link.split(marker, 1)[1].removesuffix(".pdf").strip("/")
            return strip_arxiv_version(ident)
    return None


def _parse_year(value: str | None, path: Path, row: int) -> int | None:
    """bib_paper_year is written as a float ('2015.0'); empty means unknown."""
    if value is None or not value.strip():
        return None
    try:
        return int(float(value))
    except ValueError as exc:
        raise DeepScholarImportError(
            f"{path}: row {row} field 'bib_paper_year' is not a year: {value!r}"
        ) from exc


def load_important_keys(dataset_dir: Path, task_ids: set[str]) -> set[tuple[str, str]] | None:
    """(task_id, cite key) pairs labelled important, or None when important_citations.csv is absent."""
    path = dataset_dir / "important_citations.csv"
    if not path.is_file():
        return None
    df = _read_csv(path, ("parent_paper_arxiv_id", "citation_shorthand"))
    return {
        (r["parent_paper_arxiv_id"], r["citation_shorthand"])
        for r in df.iter_rows(named=True)
        if r["parent_paper_arxiv_id"] in task_ids
    }


def load_exemplar_refs(dataset_dir: Path, task_ids: list[str]) -> list[ExemplarRef]:
    """One ExemplarRef per citations.csv row of the selected tasks; position = 0-based order in the paper."""
    path = dataset_dir / "citations.csv"
    df = _read_csv(path, _CITATION_COLUMNS)
    wanted = set(task_ids)
    important = load_important_keys(dataset_dir, wanted)
    refs: list[ExemplarRef] = []
    next_pos: dict[str, int] = {}
    for i, r in enumerate(df.iter_rows(named=True)):
        tid = r["parent_paper_arxiv_id"]
        if tid not in wanted:
            continue
        key = r["citation_shorthand"]
        if not isinstance(key, str) or not key.strip():
            raise DeepScholarImportError(f"{path}: row {i} field 'citation_shorthand' is empty")
        pos = next_pos.get(tid, 0)
        next_pos[tid] = pos + 1
        year = r.get("bib_paper_year")
        link = r["cited_paper_arxiv_link"]
        arxiv_id = arxiv_id_from_link(link)
        if link and not arxiv_id:
            raise DeepScholarImportError(
                f"{path}: row {i} field 'cited_paper_arxiv_link' has no arXiv id: {link!r}"
            )
        refs.append(
            ExemplarRef(
                task_id=tid,
                ref_key=key,
                position=pos,
                title=_collapse(r["cited_paper_title"]),
                arxiv_id=arxiv_id,
                abstract=r.get("cited_paper_abstract"),
                authors=r.get("bib_paper_authors"),
                year=_parse_year(year, path, i),
                doi=r.get("bib_paper_doi"),
                url=r.get("bib_paper_url") or (f"https://arxiv.org/abs/{arxiv_id}" if arxiv_id else None),
                is_important=None if important is None else (tid, key) in important,
            )
        )
    if important is not None:
        known = {(r.task_id, r.ref_key) for r in refs}
        stray = sorted(important - known)
        if stray:
            raise DeepScholarImportError(
                f"{dataset_dir / 'important_citations.csv'}: field 'citation_shorthand' {stray[0][1]!r} "
                f"(paper {stray[0][0]}) matches no citations.csv row ({len(stray)} such rows)"
            )
    return refs


def build_corpus(refs: Iterable[ExemplarRef]) -> list[CorpusDoc]:
    """Reference pool = union of exemplar references; arXiv papers deduplicated by id, others by title."""
    docs: dict[str, CorpusDoc] = {}
    for r in refs:
        if not r.title:
            continue
        doc_id = corpus_doc_id(r.arxiv_id, r.title)
        cur = docs.get(doc_id)
        if cur is None:
            docs[doc_id] = CorpusDoc(
                doc_id=doc_id,
                arxiv_id=r.arxiv_id,
                title=r.title,
                abstract=r.abstract,
                authors=r.authors,
                published_date=None,  # not in the source data; arXiv-id yymm is the only date signal
                categories=[],
                url=f"https://arxiv.org/abs/{r.arxiv_id}" if r.arxiv_id else r.url,
            )
        elif cur.abstract is None and r.abstract:
            docs[doc_id] = cur.model_copy(update={"abstract": r.abstract})
    return [docs[k] for k in sorted(docs)]


# --------------------------------------------------------------------------------------------- nuggets


def load_nugget_files(nuggets_dir: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    """qid -> (res.json path, content), from a recursive walk; never relies on the scrambled folder names."""
    if not nuggets_dir.is_dir():
        raise DeepScholarImportError(f"{nuggets_dir}: not found")
    out: dict[str, tuple[Path, dict[str, Any]]] = {}
    for path in sorted(nuggets_dir.rglob("res.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DeepScholarImportError(f"{path}: not valid JSON ({exc})") from exc
        qid = data.get("qid") if isinstance(data, dict) else None
        if not isinstance(qid, str) or not qid.strip():
            raise DeepScholarImportError(f"{path}: field 'qid' is missing or empty")
        if qid in out:
            raise DeepScholarImportError(f"{path}: field 'qid' {qid!r} also appears in {out[qid][0]}")
        if not isinstance(data.get("nuggets"), list):
            raise DeepScholarImportError(f"{path}: field 'nuggets' is missing or not a list")
        out[qid] = (path, data)
    return out


def nuggets_from_res(task_id: str, path: Path, data: dict[str, Any]) -> list[Nugget]:
    """Stored order is kept (vital first); `self_assignment` is the stored assignment against the exemplar."""
    nuggets: list[Nugget] = []
    for i, n in enumerate(data["nuggets"]):
        text = n.get("text") if isinstance(n, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise DeepScholarImportError(f"{path}: nuggets[{i}] field 'text' is empty")
        imp = n.get("importance")
        if imp not in ("vital", "okay"):
            raise DeepScholarImportError(f"{path}: nuggets[{i}] field 'importance' is {imp!r}")
        asg = n.get("assignment")
        if asg not in (None, "support", "partial_support", "not_support", "failed"):
            raise DeepScholarImportError(f"{path}: nuggets[{i}] field 'assignment' is {asg!r}")
        nuggets.append(Nugget(task_id=task_id, index=i, text=text, importance=imp, self_assignment=asg))
    return nuggets


# --------------------------------------------------------------------------------------------- release


def import_deepscholar(
    root: str | Path,
    *,
    max_tasks: int | None = None,
    name: str = "deepscholar",
    created_at: str = DEEPSCHOLAR_SNAPSHOT_DATE,
    source: str = DEEPSCHOLAR_REPO,
    require_nuggets: bool = True,
) -> Release:
    """Build a Release from a local DeepScholar-bench checkout (`root` or `root/dataset`).

    `max_tasks` keeps the first N papers (file-id order) and only their refs, nuggets and corpus documents.
    """
    d = _dataset_dir(root)
    if max_tasks is not None and max_tasks < 1:
        raise DeepScholarImportError(f"max_tasks must be >= 1, got {max_tasks}")
    tasks = load_tasks(d, max_tasks)
    task_ids = [t.task_id for t in tasks]
    refs = load_exemplar_refs(d, task_ids)
    nugget_files = load_nugget_files(d / NUGGETS_DIR)
    nuggets: list[Nugget] = []
    missing = [tid for tid in task_ids if tid not in nugget_files]
    if missing and require_nuggets:
        raise DeepScholarImportError(
            f"{d / NUGGETS_DIR}: no res.json with field 'qid' == {missing[0]!r} "
            f"({len(missing)} tasks lack nuggets)"
        )
    for tid in task_ids:
        if tid in nugget_files:
            nuggets.extend(nuggets_from_res(tid, *nugget_files[tid]))

    provenance = {
        f"dataset/{f}": _sha256(d / f)
        for f in (
            "papers_with_related_works.csv",
            "citations.csv",
            "recovered_citations.csv",
            "important_citations.csv",
        )
        if (d / f).is_file()
    }
    nug = hashlib.sha256()
    for p in sorted(nugget_files.values(), key=lambda v: v[0].relative_to(d).as_posix()):
        nug.update(f"{p[0].relative_to(d).as_posix()}\0{_sha256(p[0])}\n".encode())
    provenance[f"dataset/{NUGGETS_DIR}/**/res.json"] = nug.hexdigest()

    subset = f" (first {len(tasks)} tasks)" if max_tasks is not None else ""
    return Release(
        meta=ReleaseMeta(
            name=name,
            created_at=created_at,
            source=source,
            licence=DEEPSCHOLAR_LICENCE,
            synthetic=False,
            benchmark="deepscholar",
            description=(
                f"DeepScholar-bench{subset}: write the related-work section of a recent arXiv paper from its "
                "abstract, using only arXiv papers published before it. "
                "Imported from the authors' public data; "
                "important-reference labels are "
                + (
                    "included."
                    if any(r.is_important is not None for r in refs)
                    else "not in the public snapshot."
                )
            ),
            provenance=provenance,
        ),
        tasks=tasks,
        exemplar_ref_rows=refs,
        nugget_rows=nuggets,
        corpus=build_corpus(refs),
        citation_counts=[],
    )


# ---------------------------------------------------------------------------------- network (optional)

_GITHUB_TREE = "https://api.github.com/repos/guestrin-lab/deepscholar-bench/git/trees/{ref}?recursive=1"
_GITHUB_RAW = "https://raw.githubusercontent.com/guestrin-lab/deepscholar-bench/{ref}/{path}"
_FETCH_FILES = (
    "dataset/papers_with_related_works.csv",
    "dataset/citations.csv",
    "dataset/recovered_citations.csv",
    "dataset/important_citations.csv",
)


def fetch_deepscholar(dest: str | Path, *, ref: str = "main", timeout: float = 30.0) -> Path:
    """Download the dataset files from GitHub into `dest` (same layout) and return `dest`.

    Needs network; never used by tests. Pin `ref` to a commit sha for reproducible releases. Files absent
    upstream (important_citations.csv today) are skipped.
    """
    import requests  # local import: the offline path must not depend on it

    dest = Path(dest)
    resp = requests.get(_GITHUB_TREE.format(ref=ref), timeout=timeout)
    resp.raise_for_status()
    listed = {e["path"] for e in resp.json().get("tree", []) if e.get("type") == "blob"}
    wanted = [p for p in _FETCH_FILES if p in listed]
    wanted += sorted(p for p in listed if p.startswith(f"dataset/{NUGGETS_DIR}/") and p.endswith("/res.json"))
    for rel in wanted:
        if ".." in Path(rel).parts:
            raise DeepScholarImportError(f"refusing suspicious path from the GitHub tree: {rel!r}")
        r = requests.get(_GITHUB_RAW.format(ref=ref, path=rel), timeout=timeout)
        r.raise_for_status()
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(r.content)
    return dest


def main(argv: list[str] | None = None) -> int:
    """`python -m reportbench.release.deepscholar_import ROOT OUT_DIR [--max-tasks N] [--name NAME]`."""
    import argparse


    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument(
        "root", type=Path, help="local checkout of guestrin-lab/deepscholar-bench (or its dataset/)"
    )
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--max-tasks", type=int, default=None)
    ap.add_argument("--name", default="deepscholar")
    args = ap.parse_args(argv)
    release = import_deepscholar(args.root, max_tasks=args.max_tasks, name=args.name)
    manifest = write_release(release, args.out_dir)
    print(f"wrote {args.out_dir}: {manifest['counts']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
