"""DeepScholar-base outputs (`deepscholar_base_gpt_4.1/` and the older all-Llama `deepscholar-base/`).

Folder: `intro.md` (the evaluated report; citations are links `\\[[Author' YYYY-MM-DD](http://arxiv.org/abs/ID)\\]`,
sometimes followed by a `**References**` / `## References` list of the same links) and `paper.csv`
(id, title, url, snippet, ...) for the retrieved papers. Each source is keyed by its link URL; titles and
snippets come from paper.csv matched by version-stripped arXiv id.
"""

from __future__ import annotations

from pathlib import Path

from reportbench.reports.arxiv_ids import arxiv_id_from_url
from reportbench.reports.base import (
    DEFAULT_MAX_BYTES,
    ReportAdapter,
    ReportParseError,
    first_file,
    read_csv_rows,
    read_report_text,
    register_adapter,
)
from reportbench.reports.formats.markdown import split_markdown_report
from reportbench.types import Report, Source, strip_arxiv_version

REPORT_NAMES = ("intro.md", "final_report.md")
PAPERS_NAME = "paper.csv"


def _report_file(path: Path) -> Path | None:
    if path.is_file():
        return path if path.name in REPORT_NAMES and (path.parent / PAPERS_NAME).is_file() else None
    return first_file(path, REPORT_NAMES)


def enrich_from_papers(sources: dict[str, Source], rows: list[dict[str, str]]) -> int:
    """Add titles/snippets from paper.csv rows by arXiv id; returns how many sources were matched."""
    by_id: dict[str, dict[str, str]] = {}
    for row in rows:
        raw_id = (row.get("id") or "").strip()
        arxiv_id = strip_arxiv_version(raw_id) if raw_id else arxiv_id_from_url(row.get("url"))
        if arxiv_id:
            by_id.setdefault(arxiv_id, row)
    matched = 0
    for src in sources.values():
        row = by_id.get(src.arxiv_id or "")
        if row is None:
            continue
        matched += 1
        title = (row.get("title") or "").strip()
        if title:
            src.title = title  # paper.csv holds the arXiv title; the report's copy may be shortened
        snippet = (row.get("snippet") or "").strip()
        if snippet and not src.abstract:
            src.abstract = snippet
    return matched


def read_papers(papers: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> list[dict[str, str]]:
    """paper.csv rows; a binary file or one without a title and an id/url column is an error, not ignored."""
    rows = read_csv_rows(papers, max_bytes)  # binary / non-UTF-8: refused by the sniffer
    header = list(rows[0]) if rows else []
    if rows and ("title" not in header or not ({"id", "url"} & set(header))):
        raise ReportParseError(
            papers,
            f"line 1: columns {header[:8]} lack 'title' and an 'id' or 'url' column "
            "(DeepScholar-base writes id,title,url,snippet,...)",
        )
    return rows


class DeepScholarBaseAdapter(ReportAdapter):
    """DeepScholar-base run folder (`intro.md` + `paper.csv`)."""

    name = "deepscholar_base"

    def detect(self, path: Path) -> bool:
        report = _report_file(path)
        return report is not None and (report.parent / PAPERS_NAME).is_file()

    def load(self, path: Path, task_id: str, system: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Report:
        report = _report_file(path)
        if report is None:
            raise ReportParseError(path, f"no {' or '.join(REPORT_NAMES)} found")
        text, read_warnings = read_report_text(report, max_bytes)
        parts = split_markdown_report(text)
        parts.warnings.extend(read_warnings)
        parts.drop_missing_list_warning()
        # list entries are unnumbered links, so they are keyed by URL and body links resolve to them by URL
        report_obj = parts.to_report(self.name, task_id, system, report)
        papers = report.parent / PAPERS_NAME
        if papers.is_file():
            enrich_from_papers(report_obj.sources, read_papers(papers, max_bytes))
        else:
            report_obj.warnings.append(f"no {PAPERS_NAME}; titles come from the report only")
        return report_obj


register_adapter(DeepScholarBaseAdapter())
