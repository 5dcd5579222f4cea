"""Stage 6 of the live builder: write the release, its card, its statistics and a `datasets`-style export.

* the release: `live/releases/<name>/` in the spine's release format (`write_release`; readable by the root
  pipeline with `-S release=path -S release.source=live/releases/<name>`);
* the card: the format's CARD.md plus a "Live build" section (window, categories, filters, counts and drop
  reasons, recovery methods, licences, tool versions, requests per reference);
* statistics: `metrics/live/release.json` (a DVC metric, `cache: false`, fixed path) so that
  `dvc metrics diff <tag-a> <tag-b>` shows how two monthly releases differ;
* an export: one folder per table of `<config>/test-00000-of-00001.parquet` files plus a README whose YAML
  header declares the configs. Polars reads the files directly; Hugging Face `datasets` loads it with
  `load_dataset("parquet", data_files={"test": ".../papers/*.parquet"})` or `load_dataset(<dir>, "papers")`.

Everything here is a pure function of the previous stages' outputs (no wall clock), so rebuilding the same
release gives byte-identical files.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import platform
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from reportbench.citations import normalise_title
from reportbench.live_builder.filter import KeptPaper
from reportbench.live_builder.latex import extract_cite_keys, remove_comments
from reportbench.live_builder.live_config import LiveConfig
from reportbench.live_builder.recover import RecoveredRef
from reportbench.live_builder.stage_io import DROP_SCHEMA, DropRecord, dump_json, fresh_dir, write_parquet
from reportbench.release.card import render_export_card, write_release_card
from reportbench.release.deepscholar_import import render_task_prompt
from reportbench.release.format import (
    CARD_FILE,
    CitationCount,
    CorpusDoc,
    Release,
    ReleaseMeta,
    corpus_doc_id,
    write_release,
)
from reportbench.types import ExemplarRef, Nugget, Task

EXPORT_SPLIT = "test"
EXPORT_FILE = f"{EXPORT_SPLIT}-00000-of-00001.parquet"
DEFAULT_LICENCE = (
    "mixed: arXiv metadata CC0; each exemplar section and abstract under its paper's own arXiv licence "
    "(check https://arxiv.org/abs/<id> before redistributing); OpenAlex data CC0"
)
# Every reason a paper can leave the pipeline, by stage: metrics keep all keys (0 when unused) so that
# `dvc metrics diff` can compare any two releases key by key.
DROP_REASONS: dict[str, tuple[str, ...]] = {
    "list": ("bad_entry", "outside_window", "not_v1", "venue_filter"),
    "sources": ("not_downloaded", "download_failed", "no_source", "extract_failed"),
    "filter": (
        "no_tex",
        "no_section",
        "no_citations",
        "no_bibliography",
        "too_many_words",
        "too_few_citations",
        "unresolved_keys",
        "untitled_refs",
    ),
    "label": ("label_failed", "no_nuggets"),
}
TOOLS = ("reportbench", "arxiv", "pyalex", "polars", "rapidfuzz", "bibtexparser", "requests", "dvc")


def tool_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in TOOLS:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


# ------------------------------------------------------------------------------------------------ release


def _ref_authors(r: RecoveredRef) -> str | None:
    return ", ".join(r.arxiv_authors or r.bib_authors) or None


def _ref_year(r: RecoveredRef) -> int | None:
    if r.bib_year:
        return r.bib_year
    for date in (r.arxiv_published, r.openalex_publication_date):
        if date and date[:4].isdigit():
            return int(date[:4])
    return None


def _ref_url(r: RecoveredRef) -> str | None:
    if r.arxiv_id:
        return f"https://arxiv.org/abs/{r.arxiv_id}"
    if r.bib_url:
        return r.bib_url
    return f"https://doi.org/{r.doi}" if r.doi else None


def _iso_date(value: str | None) -> str | None:
    if not value:
        return None
    try:
        dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return value


def build_release(
    cfg: LiveConfig,
    kept: Sequence[KeptPaper],
    refs: Sequence[RecoveredRef],
    important: Sequence[Mapping[str, Any]],
    nuggets: Sequence[Mapping[str, Any]],
    label_dropped: Iterable[str],
    *,
    labelled_important: bool,
    provenance: Mapping[str, str] | None = None,
) -> Release:
    """Assemble the Release: tasks in arXiv-id order; refs, nuggets, corpus and counts of published tasks only."""
    gone = set(label_dropped)
    papers = sorted((kp for kp in kept if kp.listing.arxiv_id not in gone), key=lambda kp: kp.listing.arxiv_id)
    task_ids = {kp.listing.arxiv_id for kp in papers}
    tasks = [
        Task(
            task_id=kp.listing.arxiv_id,
            title=kp.listing.title,
            abstract=kp.listing.abstract,
            published_date=kp.listing.published,
            categories=list(kp.listing.categories),
            task_prompt=render_task_prompt(kp.listing.published, kp.listing.abstract),
            exemplar=kp.extracted.clean_section or "",
            exemplar_raw=kp.extracted.raw_section,
        )
        for kp in papers
    ]
    flags = {(r["task_id"], r["ref_key"]): bool(r["is_important"]) for r in important}
    rank = {t.task_id: i for i, t in enumerate(tasks)}
    pub_refs = sorted((r for r in refs if r.task_id in task_ids), key=lambda r: (rank[r.task_id], r.position))
    ex_rows = [
        ExemplarRef(
            task_id=r.task_id,
            ref_key=r.ref_key,
            position=r.position,
            title=r.title,
            arxiv_id=r.arxiv_id,
            abstract=r.abstract,
            authors=_ref_authors(r),
            year=_ref_year(r),
            doi=r.doi,
            url=_ref_url(r),
            is_important=flags.get((r.task_id, r.ref_key)) if labelled_important else None,
        )
        for r in pub_refs
    ]
    nugget_rows = [
        Nugget(
            task_id=n["task_id"],
            index=int(n["index"]),
            text=n["text"],
            importance=n["importance"],
            self_assignment=n["self_assignment"],
        )
        for n in nuggets
        if n["task_id"] in task_ids
    ]
    meta = ReleaseMeta(
        name=cfg.name,
        created_at=cfg.release_date,
        source="arXiv API + arXiv e-prints + OpenAlex (reportbench live builder, live/dvc.yaml)",
        licence=cfg.licence if cfg.licence != "mixed; see CARD.md" else DEFAULT_LICENCE,
        synthetic=False,
        description=cfg.description
        or (
            f"Live DeepScholar-style release: {len(tasks)} arXiv papers in {', '.join(cfg.categories)} submitted "
            f"{cfg.window.start}..{cfg.window.end}; exemplar = each paper's related-work section."
        ),
        provenance=dict(provenance or {}),
    )
    return Release(
        meta=meta,
        tasks=tasks,
        exemplar_ref_rows=ex_rows,
        nugget_rows=nugget_rows,
        corpus=corpus_docs(pub_refs),
        citation_counts=citation_count_rows(pub_refs),
    )


def corpus_docs(refs: Iterable[RecoveredRef]) -> list[CorpusDoc]:
    """One document per distinct reference with a title (arXiv id, else normalised-title hash)."""
    docs: dict[str, CorpusDoc] = {}
    for r in refs:
        title = r.title
        if not title or not title.strip():
            continue
        doc_id = corpus_doc_id(r.arxiv_id, title)
        if doc_id in docs:
            continue
        docs[doc_id] = CorpusDoc(
            doc_id=doc_id,
            arxiv_id=r.arxiv_id,
            title=title,
            abstract=r.abstract,
            authors=_ref_authors(r),
            published_date=_iso_date(r.arxiv_published if r.arxiv_id else r.openalex_publication_date),
            categories=list(r.arxiv_categories),
            url=_ref_url(r),
        )
    return list(docs.values())


def citation_count_rows(refs: Iterable[RecoveredRef]) -> list[CitationCount]:
    """Found OpenAlex counts with their fetch dates, one row per arXiv id or per normalised title."""
    rows: dict[tuple[str, str], CitationCount] = {}
    for r in refs:
        if r.cited_by_count is None or not r.count_fetched_at:
            continue
        key = ("arxiv", r.arxiv_id) if r.arxiv_id else ("title", normalise_title(r.title))
        if not key[1] or key in rows:
            continue
        rows[key] = CitationCount(
            arxiv_id=r.arxiv_id,
            title=r.title if not r.arxiv_id else (r.arxiv_title or r.title),
            cited_by_count=r.cited_by_count,
            fetched_at=r.count_fetched_at,
            source="openalex",
        )
    return list(rows.values())


# -------------------------------------------------------------------------------------------------- stats


def _mean(xs: Sequence[float]) -> float | None:
    return round(statistics.fmean(xs), 4) if xs else None


def _median(xs: Sequence[float]) -> float | None:
    return round(float(statistics.median(xs)), 4) if xs else None


_CITE_CMD_RE = re.compile(r"\\cite[^{}]*\{([^}]+)\}")  # the authors' cite regex (spec §1.6, §5)


def section_stats(text: str, raw: str | None) -> dict[str, float]:
    """Per-section numbers comparable with the paper's Table 6 (spec §5)."""
    from reportbench.reports.sentences import split_sentences  # lazy: +125 ms to import (python -X importtime)

    body = remove_comments(raw if raw is not None else text)
    occurrences = sum(len([k for k in g.split(",") if k.strip()]) for g in _CITE_CMD_RE.findall(body))
    return {
        "chars": float(len(text)),
        "words": float(len(text.split())),
        "sentences": float(len(split_sentences(text))),
        "unique_refs": float(len(extract_cite_keys(raw if raw is not None else text))),
        "cite_commands": float(len(_CITE_CMD_RE.findall(body))),
        "inline_citations": float(occurrences),
    }


def release_stats(
    release: Release,
    refs: Sequence[RecoveredRef],
    drops: Sequence[DropRecord],
    n_listed: int,
    requests: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """The DVC metrics of a release: counts, drop reasons, reference/section statistics, traffic."""
    tasks = release.tasks
    n = len(tasks)
    task_ids = {t.task_id for t in tasks}
    pub_refs = [r for r in refs if r.task_id in task_ids]
    per_task = Counter(r.task_id for r in pub_refs)
    arxiv_per_task = Counter(r.task_id for r in pub_refs if r.arxiv_id)
    sec = [section_stats(t.exemplar, t.exemplar_raw) for t in tasks]
    important = [r for r in release.exemplar_ref_rows if r.is_important]
    imp_per_task = Counter(r.task_id for r in important)
    imp_arxiv_per_task = Counter(r.task_id for r in important if r.arxiv_id)
    arxiv_counts = [c.cited_by_count for c in release.citation_counts if c.arxiv_id and c.cited_by_count is not None]
    n_refs = len(pub_refs)
    methods = Counter(r.method for r in pub_refs)
    total_requests = sum(int(v.get("requests", 0)) for v in requests.values())
    refs_all = len(refs)  # every reference looked up (labelling may drop papers afterwards)
    recover_requests = int(requests.get("recover", {}).get("requests", 0))
    by_stage = Counter(d.stage for d in drops)
    by_reason = Counter(d.reason_code for d in drops)
    return {
        "name": release.meta.name,
        "papers": {
            "listed": n_listed + sum(1 for d in drops if d.stage == "list"),
            "after_listing_filters": n_listed,
            "published": n,
            "dropped": len(drops),
        },
        "dropped_by_stage": {st: by_stage.get(st, 0) for st in sorted({*DROP_REASONS, *by_stage})},
        "dropped_by_reason": {
            code: by_reason.get(code, 0)
            for code in sorted({c for cs in DROP_REASONS.values() for c in cs} | set(by_reason))
        },
        "categories": {
            "distinct_primary": len({t.categories[0] for t in tasks if t.categories}),
            "distinct_any": len({c for t in tasks for c in t.categories}),
        },
        "references": {
            "total": n_refs,
            "per_paper_mean": _mean([per_task[t] for t in task_ids]),
            "per_paper_median": _median([per_task[t] for t in task_ids]),
            "arxiv_per_paper_mean": _mean([arxiv_per_task[t] for t in task_ids]),
            "share_on_arxiv": round(sum(1 for r in pub_refs if r.arxiv_id) / n_refs, 4) if n_refs else None,
            "share_with_count": round(sum(1 for r in pub_refs if r.cited_by_count is not None) / n_refs, 4)
            if n_refs
            else None,
            "by_method": {
                m: methods.get(m, 0)
                for m in ("bib_arxiv", "bib_doi", "openalex_doi", "arxiv_title", "openalex_title", "none")
            },
        },
        "section": {
            "chars_mean": _mean([s["chars"] for s in sec]),
            "words_mean": _mean([s["words"] for s in sec]),
            "words_max": max((s["words"] for s in sec), default=None),
            "sentences_mean": _mean([s["sentences"] for s in sec]),
            "unique_refs_mean": _mean([s["unique_refs"] for s in sec]),
            "unique_refs_median": _median([s["unique_refs"] for s in sec]),
            "cite_commands_mean": _mean([s["cite_commands"] for s in sec]),
            "inline_citations_mean": _mean([s["inline_citations"] for s in sec]),
        },
        "important_refs": {
            "labelled": release.has_important_refs,
            "per_paper_mean": _mean([imp_per_task[t] for t in task_ids]) if release.has_important_refs else None,
            "arxiv_per_paper_mean": _mean([imp_arxiv_per_task[t] for t in task_ids])
            if release.has_important_refs
            else None,
        },
        "nuggets": {
            "per_paper_mean": _mean([len(release.nuggets(t)) for t in task_ids]),
            "vital_share": round(
                sum(1 for x in release.nugget_rows if x.importance == "vital") / len(release.nugget_rows), 4
            )
            if release.nugget_rows
            else None,
        },
        "citation_counts": {
            "arxiv_refs_with_count": len(arxiv_counts),
            "arxiv_median": _median(arxiv_counts),
            "arxiv_mean": _mean(arxiv_counts),
        },
        "requests": {
            "total": total_requests,
            "by_stage": {k: int(v.get("requests", 0)) for k, v in sorted(requests.items())},
            "cache_hits": sum(int(v.get("cache_hits", 0)) for v in requests.values()),
            "per_cited_reference": round(total_requests / refs_all, 4) if refs_all else None,
            "recover_per_cited_reference": round(recover_requests / refs_all, 4) if refs_all else None,
        },
    }


# --------------------------------------------------------------------------------------------------- card


def _yn(flag: bool) -> str:
    return "yes" if flag else "no"


def live_card_section(
    cfg: LiveConfig,
    stats: Mapping[str, Any],
    versions: Mapping[str, str],
    judge: Mapping[str, Any],
) -> str:
    """Markdown appended to CARD.md: how this release was built, from what, with what, and what was left out.

    Request counts stay out (they are metrics): a cached rebuild must write a byte-identical release."""
    refs = stats["references"]
    lines = [
        "## Live build",
        "",
        f"- arXiv categories: {', '.join(f'`{c}`' for c in cfg.categories)}",
        f"- submission window (UTC, inclusive): {cfg.window.start} .. {cfg.window.end}",
        f"- per-category cap: {cfg.max_per_category if cfg.max_per_category is not None else 'none'}",
        f"- v1 only: {'yes' if cfg.v1_only else 'no'}",
        "- accepted-at-venue filter: "
        + (
            f"on (comment matches one of {', '.join(f'`{p}`' for p in cfg.venue_filter.patterns)})"
            if cfg.venue_filter.enabled
            else "off"
        ),
        f"- section titles: {', '.join(cfg.latex.section_titles or []) or 'defaults'}; "
        f"comments kept: {_yn(cfg.latex.keep_comments)}",
        f"- filter: at most {cfg.filter.max_words} words; at least {cfg.filter.min_citations} cite keys; "
        f"every key resolved: {'yes' if cfg.filter.require_all_keys_resolved else 'no'}; "
        f"every entry titled: {'yes' if cfg.filter.require_titles else 'no'}",
        f"- title matches accepted at rapidfuzz ratio >= {cfg.recover.title_threshold}",
        f"- labels: judge `{judge.get('name')}` (backend `{judge.get('backend')}`, model `{judge.get('model')}`); "
        f"important refs: {_yn(cfg.label.important_refs)}; nuggets: {_yn(cfg.label.nuggets)}",
        "",
        "### Counts",
        "",
        f"- papers listed: {stats['papers']['listed']}; published: {stats['papers']['published']}; "
        f"dropped: {stats['papers']['dropped']}",
        "- dropped by reason: " + (", ".join(f"{k} {v}" for k, v in stats["dropped_by_reason"].items() if v) or "none"),
        f"- references: {refs['total']} ({refs['per_paper_mean']} per paper), on arXiv: {refs['share_on_arxiv']}, "
        f"with an OpenAlex count: {refs['share_with_count']}",
        "- identified by: " + ", ".join(f"{k} {v}" for k, v in refs["by_method"].items()),
        "",
        "Every dropped paper and its reason is in the export's `dropped` table.",
        "",
        "### Licences",
        "",
        "- arXiv metadata (titles, abstracts as listed, ids): CC0 (arXiv API terms).",
        "- Exemplar related-work sections are excerpts of each paper's LaTeX source; each paper keeps its own",
        "  arXiv licence. Check it (https://arxiv.org/abs/<id>) before redistributing this release.",
        "- OpenAlex data (citation counts, abstracts reconstructed from inverted indexes): CC0.",
        "",
        "### Tool versions",
        "",
        *[f"- {k}: {v}" for k, v in sorted(versions.items())],
        "",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------- export


def export_tables(
    release: Release, kept: Sequence[KeptPaper], refs: Sequence[RecoveredRef], drops: Sequence[DropRecord]
) -> dict[str, pl.DataFrame]:
    """Flat tables (no structs) in the shape of the authors' CSVs: papers, citations, important_citations,
    nuggets, dropped."""
    by_id = {kp.listing.arxiv_id: kp for kp in kept}
    task_ids = [t.task_id for t in release.tasks]
    papers = []
    for tid in task_ids:
        kp = by_id[tid]
        lst, ex = kp.listing, kp.extracted
        papers.append(
            {
                "arxiv_id": lst.arxiv_id,
                "title": lst.title,
                "authors": list(lst.authors),
                "abstract": lst.abstract,
                "categories": list(lst.categories),
                "primary_category": lst.primary_category,
                "published_date": lst.published,
                "updated_date": lst.updated,
                "comment": lst.comment,
                "journal_ref": lst.journal_ref,
                "abs_url": f"https://arxiv.org/abs/{lst.arxiv_id}",
                "raw_latex_related_works": ex.raw_section,
                "clean_latex_related_works": ex.clean_section,
                "section_title": ex.section_title,
                "word_count": ex.word_count,
                "n_cite_keys": len(ex.cite_keys),
            }
        )
    flags = {(r.task_id, r.ref_key): r.is_important for r in release.exemplar_ref_rows}
    citations = []
    for r in refs:
        if r.task_id not in by_id or r.task_id not in set(task_ids):
            continue
        citations.append(
            {
                "parent_paper_arxiv_id": r.task_id,
                "citation_key": r.ref_key,
                "position": r.position,
                "bib_title": r.bib_title,
                "bib_authors": ", ".join(r.bib_authors) or None,
                "bib_year": r.bib_year,
                "bib_venue": r.bib_venue,
                "bib_doi": r.bib_doi,
                "bib_url": r.bib_url,
                "cited_paper_title": r.title,
                "cited_paper_arxiv_id": r.arxiv_id,
                "cited_paper_abstract": r.abstract,
                "doi": r.doi,
                "method": r.method,
                "match_score": r.match_score,
                "openalex_id": r.openalex_id,
                "cited_by_count": r.cited_by_count,
                "count_fetched_at": r.count_fetched_at,
                "is_important": flags.get((r.task_id, r.ref_key)),
            }
        )
    citations.sort(key=lambda c: (task_ids.index(c["parent_paper_arxiv_id"]), c["position"]))
    nuggets = [n.model_dump() for n in release.nugget_rows]
    nuggets.sort(key=lambda n: (task_ids.index(n["task_id"]), n["index"]))
    return {
        "papers": pl.DataFrame(papers, schema=_PAPER_SCHEMA),
        "citations": pl.DataFrame(citations, schema=_CITATION_SCHEMA),
        "important_citations": pl.DataFrame([c for c in citations if c["is_important"]], schema=_CITATION_SCHEMA),
        "nuggets": pl.DataFrame(nuggets, schema=_NUGGET_SCHEMA),
        "dropped": pl.DataFrame(
            sorted((d.model_dump() for d in drops), key=lambda d: (d["arxiv_id"], d["stage"])), schema=DROP_SCHEMA
        ),
    }


_PAPER_SCHEMA: dict[str, Any] = {
    "arxiv_id": pl.String,
    "title": pl.String,
    "authors": pl.List(pl.String),
    "abstract": pl.String,
    "categories": pl.List(pl.String),
    "primary_category": pl.String,
    "published_date": pl.String,
    "updated_date": pl.String,
    "comment": pl.String,
    "journal_ref": pl.String,
    "abs_url": pl.String,
    "raw_latex_related_works": pl.String,
    "clean_latex_related_works": pl.String,
    "section_title": pl.String,
    "word_count": pl.Int64,
    "n_cite_keys": pl.Int64,
}
_CITATION_SCHEMA: dict[str, Any] = {
    "parent_paper_arxiv_id": pl.String,
    "citation_key": pl.String,
    "position": pl.Int64,
    "bib_title": pl.String,
    "bib_authors": pl.String,
    "bib_year": pl.Int64,
    "bib_venue": pl.String,
    "bib_doi": pl.String,
    "bib_url": pl.String,
    "cited_paper_title": pl.String,
    "cited_paper_arxiv_id": pl.String,
    "cited_paper_abstract": pl.String,
    "doi": pl.String,
    "method": pl.String,
    "match_score": pl.Float64,
    "openalex_id": pl.String,
    "cited_by_count": pl.Int64,
    "count_fetched_at": pl.String,
    "is_important": pl.Boolean,
}
_NUGGET_SCHEMA: dict[str, Any] = {
    "task_id": pl.String,
    "index": pl.Int64,
    "text": pl.String,
    "importance": pl.String,
    "self_assignment": pl.String,
}


def export_readme(name: str, tables: Mapping[str, pl.DataFrame], licence: str) -> str:
    """HF dataset-card README: the YAML `configs` header is what `load_dataset(<dir>, <config>)` reads."""
    header = ["---", f"pretty_name: {name}", "license: other", "configs:"]
    for cfg in tables:
        header += [
            f"- config_name: {cfg}",
            "  data_files:",
            f"  - split: {EXPORT_SPLIT}",
            f"    path: {cfg}/{EXPORT_SPLIT}-*.parquet",
        ]
    header.append("---")
    body = [
        "",
        f"# {name}",
        "",
        "Export of a reportbench live release (the release format proper is `live/releases/<name>/`).",
        "",
        "```python",
        "import polars as pl",
        f'papers = pl.read_parquet("papers/{EXPORT_FILE}")',
        "# Hugging Face datasets (not a reportbench dependency):",
        '# datasets.load_dataset("parquet", data_files={"test": "papers/*.parquet"})',
        '# datasets.load_dataset("<this folder>", "papers")',
        "```",
        "",
        "| config | rows |",
        "|---|---|",
        *[f"| `{k}` | {v.height} |" for k, v in tables.items()],
        "",
        f"Licence: {licence}",
        "",
    ]
    return "\n".join(header + body)


def write_export(out_dir: Path, name: str, tables: Mapping[str, pl.DataFrame], licence: str) -> None:
    fresh_dir(out_dir)
    for cfg, df in tables.items():
        write_parquet(out_dir / cfg / EXPORT_FILE, df)

    intro = f"Export of the reportbench live release `{name}` (the release format proper is `live/releases/{name}/`)."
    card = render_export_card(name, tables, licence, out_dir, intro=intro)
    (out_dir / "README.md").write_text(card, encoding="utf-8")


def publish(
    release: Release,
    release_dir: Path,
    export_dir: Path,
    stats_path: Path,
    card_extra: str,
    tables: Mapping[str, pl.DataFrame],
    stats: Mapping[str, Any],
) -> dict[str, Any]:
    """Write the release (validated), append the live card section, write the export and the metrics file."""
    fresh_dir(release_dir)
    manifest = write_release(release, release_dir)
    card = release_dir / CARD_FILE
    card.write_text(card.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + card_extra, encoding="utf-8")

    write_release_card(release_dir, release, manifest)  # README.md again, now with the live section
    write_export(export_dir, release.meta.name, tables, release.meta.licence)
    stats_path.parent.mkdir(parents=True, exist_ok=True)
    stats_path.write_text(dump_json(stats), encoding="utf-8")
    return manifest
