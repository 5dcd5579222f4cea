"""Build the synthetic demo release from the hand-written sources in `data/demo/deepscholar/`.

The demo exists so that every stage (systems, judges, metrics, leaderboard) can run end to end, offline, in
seconds, on data anyone may redistribute. All of it is self-authored and labelled synthetic: invented papers
with month-13 arXiv ids (`2513.00087`) that can never be real. The sources are YAML/LaTeX so a reviewer can
read and edit them; this module only checks them and turns them into a `Release`:

- exemplar reference positions come from the `\\cite{...}` order in the `.tex` file, and the YAML list must
  match it exactly (the same invariant DeepScholar's citations.csv satisfies);
- reference titles/abstracts/authors come from `corpus.yaml`, the single source of truth;
- exemplar references must predate the task (the distractors published later are there to test leakage).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import yaml

from reportbench import yamlio
from reportbench.release.deepscholar_import import render_task_prompt
from reportbench.release.format import (
    CitationCount,
    CorpusDoc,
    Release,
    ReleaseMeta,
    corpus_doc_id,
    write_release,
)
from reportbench.types import ExemplarRef, Nugget, Task

DEFAULT_DEMO_DIR = Path(__file__).resolve().parents[3] / "data" / "demo" / "deepscholar"

CITE_RE = re.compile(r"\\cite[^{}]*\{([^}]+)\}")


class DemoSourceError(ValueError):
    """A demo source file is inconsistent; the message names the file and field."""


def _load_yaml(path: Path) -> Any:
    if not path.is_file():
        raise DemoSourceError(f"{path}: not found")
    try:
        return yamlio.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DemoSourceError(f"{path}: not valid YAML ({exc})") from exc


def _need(data: dict[str, Any], key: str, path: Path, where: str = "") -> Any:
    val = data.get(key)
    if val is None or (isinstance(val, str) and not val.strip()):
        raise DemoSourceError(f"{path}: {where}field '{key}' is missing or empty")
    return val


def cite_keys(latex: str) -> list[str]:
    """Ordered unique `\\cite` keys, ignoring `%` comments (escape-aware), like the DeepScholar pipeline."""
    lines = []
    for line in latex.splitlines():
        m = re.search(r"(?<!\\)(?:\\\\)*%", line)
        lines.append(line[: m.start()] if m else line)
    keys: dict[str, None] = {}
    for group in CITE_RE.findall("\n".join(lines)):
        for k in group.split(","):
            if k.strip():
                keys.setdefault(k.strip(), None)
    return list(keys)


def _load_corpus(
    path: Path,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    data = _load_yaml(path)
    papers = data.get("papers") if isinstance(data, dict) else None
    if not isinstance(papers, list) or not papers:
        raise DemoSourceError(f"{path}: field 'papers' is missing or empty")
    by_arxiv: dict[str, dict[str, Any]] = {}
    by_title: dict[str, dict[str, Any]] = {}
    for i, p in enumerate(papers):
        where = f"papers[{i}] "
        for key in ("title", "authors", "published", "abstract", "cited_by"):
            _need(p, key, path, where)
        arxiv = p.get("arxiv_id")
        if arxiv is not None:
            if not re.fullmatch(r"\d{2}13\.\d{5}", str(arxiv)):
                raise DemoSourceError(
                    f"{path}: {where}field 'arxiv_id' {arxiv!r} must be a month-13 id (YY13.NNNNN)"
                )
            if arxiv in by_arxiv:
                raise DemoSourceError(f"{path}: {where}field 'arxiv_id' {arxiv!r} is duplicated")
            by_arxiv[str(arxiv)] = p
        if p["title"] in by_title:
            raise DemoSourceError(f"{path}: {where}field 'title' {p['title']!r} is duplicated")
        by_title[p["title"]] = p
    return papers, by_arxiv, by_title


def _corpus_doc(p: dict[str, Any]) -> CorpusDoc:
    arxiv = p.get("arxiv_id")
    return CorpusDoc(
        doc_id=corpus_doc_id(arxiv, p["title"]),
        arxiv_id=arxiv,
        title=p["title"],
        abstract=p["abstract"],
        authors=p["authors"],
        published_date=str(p["published"]),
        categories=list(p.get("categories") or []),
        url=f"https://arxiv.org/abs/{arxiv}" if arxiv else None,
    )


def _load_task(
    path: Path, by_arxiv: dict[str, dict[str, Any]], by_title: dict[str, dict[str, Any]]
) -> tuple[Task, list[ExemplarRef], list[Nugget]]:
    data = _load_yaml(path)
    if not isinstance(data, dict):
        raise DemoSourceError(f"{path}: expected a mapping")
    task_id = _need(data, "task_id", path)
    published = str(_need(data, "published_date", path))
    abstract = str(_need(data, "abstract", path)).strip()
    tex_path = path.parent / str(_need(data, "exemplar_file", path))
    if not tex_path.is_file():
        raise DemoSourceError(f"{path}: field 'exemplar_file' points to missing {tex_path}")
    exemplar = tex_path.read_text(encoding="utf-8").strip()
    task = Task(
        task_id=task_id,
        title=str(_need(data, "title", path)),
        abstract=abstract,
        published_date=published,
        categories=list(data.get("categories") or []),
        task_prompt=render_task_prompt(published, abstract),
        exemplar=exemplar,
        exemplar_raw=exemplar,
    )

    refs_in = _need(data, "references", path)
    keys_yaml = [str(_need(r, "key", path, f"references[{i}] ")) for i, r in enumerate(refs_in)]
    keys_tex = cite_keys(exemplar)
    if keys_yaml != keys_tex:
        raise DemoSourceError(
            f"{path}: field 'references' keys {keys_yaml} must equal the \\cite keys of {tex_path.name} "
            f"in first-appearance order {keys_tex}"
        )
    refs: list[ExemplarRef] = []
    for i, r in enumerate(refs_in):
        where = f"references[{i}] "
        if r.get("arxiv_id") is not None:
            paper = by_arxiv.get(str(r["arxiv_id"]))
            if paper is None:
                raise DemoSourceError(
                    f"{path}: {where}field 'arxiv_id' {r['arxiv_id']!r} is not in corpus.yaml"
                )
        else:
            paper = by_title.get(str(_need(r, "title", path, where)))
            if paper is None:
                raise DemoSourceError(f"{path}: {where}field 'title' {r['title']!r} is not in corpus.yaml")
        if str(paper["published"]) >= published[:10]:
            raise DemoSourceError(
                f"{path}: {where}field 'key' {r['key']!r} cites a paper published {paper['published']}, "
                f"not before the task date {published[:10]}"
            )
        if not isinstance(r.get("important"), bool):
            raise DemoSourceError(f"{path}: {where}field 'important' must be true or false")
        arxiv = paper.get("arxiv_id")
        refs.append(
            ExemplarRef(
                task_id=task_id,
                ref_key=r["key"],
                position=i,
                title=paper["title"],
                arxiv_id=arxiv,
                abstract=paper["abstract"],
                authors=paper["authors"],
                year=int(str(paper["published"])[:4]),
                url=f"https://arxiv.org/abs/{arxiv}" if arxiv else None,
                is_important=r["important"],
            )
        )

    nuggets: list[Nugget] = []
    seen_okay = False
    for i, n in enumerate(_need(data, "nuggets", path)):
        where = f"nuggets[{i}] "
        imp = _need(n, "importance", path, where)
        if imp == "okay":
            seen_okay = True
        elif seen_okay:
            raise DemoSourceError(
                f"{path}: {where}field 'importance' is vital after an okay nugget (vital first)"
            )
        try:
            nuggets.append(
                Nugget(
                    task_id=task_id,
                    index=i,
                    text=str(_need(n, "text", path, where)),
                    importance=imp,
                    self_assignment=n.get("self_assignment"),
                )
            )
        except ValueError as exc:
            raise DemoSourceError(f"{path}: {where}{exc}") from exc
    return task, refs, nuggets


def build_demo_release(demo_dir: str | Path = DEFAULT_DEMO_DIR, max_tasks: int | None = None) -> Release:
    """Read data/demo/deepscholar (release.yaml, corpus.yaml, tasks/*.yaml + .tex) into a validated-on-write Release."""
    d = Path(demo_dir)
    manifest_path = d / "release.yaml"
    m = _load_yaml(manifest_path)
    if not isinstance(m, dict):
        raise DemoSourceError(f"{manifest_path}: expected a mapping")
    _papers, by_arxiv, by_title = _load_corpus(d / "corpus.yaml")

    task_files = list(_need(m, "tasks", manifest_path))
    if max_tasks is not None:
        task_files = task_files[:max_tasks]
    tasks: list[Task] = []
    refs: list[ExemplarRef] = []
    nuggets: list[Nugget] = []
    for rel in task_files:
        t, r, n = _load_task(d / rel, by_arxiv, by_title)
        tasks.append(t)
        refs.extend(r)
        nuggets.extend(n)

    counts_cfg = _need(m, "citation_counts", manifest_path)
    fetched_at = str(_need(counts_cfg, "fetched_at", manifest_path, "citation_counts."))
    source = str(_need(counts_cfg, "source", manifest_path, "citation_counts."))
    corpus = [_corpus_doc(p) for p in _papers]
    counts = [
        CitationCount(
            arxiv_id=p.get("arxiv_id"),
            title=p["title"],
            cited_by_count=int(p["cited_by"]),
            fetched_at=fetched_at,
            source=source,
        )
        for p in _papers
    ]
    return Release(
        meta=ReleaseMeta(
            name=str(_need(m, "name", manifest_path)),
            created_at=str(_need(m, "created_at", manifest_path)),
            source=str(_need(m, "source", manifest_path)),
            licence=str(_need(m, "licence", manifest_path)),
            synthetic=True,
            benchmark=str(m.get("benchmark") or "deepscholar"),
            description=" ".join(str(m.get("description") or "").split()),
        ),
        tasks=tasks,
        exemplar_ref_rows=refs,
        nugget_rows=nuggets,
        corpus=corpus,
        citation_counts=counts,
    )


def main(argv: list[str] | None = None) -> int:
    """`python -m reportbench.release.demo OUT_DIR [--demo-dir data/demo/deepscholar]`: write the demo release."""
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--demo-dir", type=Path, default=DEFAULT_DEMO_DIR)
    ap.add_argument("--max-tasks", type=int, default=None)
    args = ap.parse_args(argv)
    manifest = write_release(build_demo_release(args.demo_dir, args.max_tasks), args.out_dir)
    print(f"wrote {args.out_dir}: {manifest['counts']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
