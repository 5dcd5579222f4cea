"""STORM outputs: `<run>/storm_gen_article.md` + `<run>/url_to_info.json`.

`url_to_info.json` = {url_to_unified_index: {url: n}, url_to_info: {url: {title, description, snippets}}}.
Inline `[n]` resolves through `url_to_unified_index` (n -> url), which is what STORM itself uses. The
article's own "## References" block is not reliable (file 1 lists "[2] (reference 1 from collected
information)"), so it is kept only as `Source.raw`. The DeepScholar-bench parser used url_to_info in dict
order instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reportbench.reports.arxiv_ids import arxiv_id_from_url
from reportbench.reports.base import (
    DEFAULT_MAX_BYTES,
    ReportAdapter,
    ReportParseError,
    first_file,
    parse_json_text,
    read_report_text,
    read_text,
    register_adapter,
)
from reportbench.reports.formats.markdown import split_markdown_report
from reportbench.reports.references import parse_reference_entries
from reportbench.reports.schemas import StormInfo, validate_json
from reportbench.types import Report, Source

ARTICLE_NAMES = ("storm_gen_article.md", "storm_gen_article_polished.md")
INFO_NAME = "url_to_info.json"


def find_run_dir(path: Path) -> Path | None:
    """The STORM run folder: `path`, its only run subfolder (`<task>/<time>_<topic>/`), or a file's folder."""
    if path.is_file():
        return path.parent if path.name in (*ARTICLE_NAMES, INFO_NAME) else None
    if not path.is_dir():
        return None

    def is_run(d: Path) -> bool:
        return first_file(d, (*ARTICLE_NAMES, INFO_NAME)) is not None

    if is_run(path):
        return path
    subdirs = [d for d in sorted(path.iterdir()) if d.is_dir() and not d.name.startswith(".")]
    runs = [d for d in subdirs if is_run(d)]
    return runs[0] if len(runs) == 1 else None


def _abstract(info: dict[str, Any]) -> str | None:
    description = info.get("description")
    if isinstance(description, str) and description.strip():
        return description.strip()
    snippets = info.get("snippets")
    if isinstance(snippets, list):
        joined = "\n".join(s.strip() for s in snippets if isinstance(s, str) and s.strip())
        return joined or None
    return None


def sources_from_url_to_info(
    data: dict[str, Any], article_refs: dict[str, str]
) -> tuple[dict[str, Source], list[str]]:
    """Sources keyed by STORM's unified index n, from url_to_unified_index + url_to_info."""
    index = data.get("url_to_unified_index")
    infos = data.get("url_to_info") if isinstance(data.get("url_to_info"), dict) else {}
    if not isinstance(index, dict):
        raise ValueError("url_to_unified_index is missing or not an object")
    sources: dict[str, Source] = {}
    warnings: list[str] = []
    for url, n in index.items():
        if not isinstance(n, int | str) or not str(n).isdigit():
            warnings.append(f"url_to_unified_index[{url!r}] = {n!r} is not a number; skipped")
            continue
        key = str(int(n))
        info = infos.get(url) if isinstance(infos.get(url), dict) else {}
        title = info.get("title") if isinstance(info.get("title"), str) else None
        if key in sources:
            warnings.append(f"unified index {key} maps to several URLs; kept {sources[key].url}")
            continue
        sources[key] = Source(
            key=key,
            url=url,
            title=title.strip() if title else None,
            arxiv_id=arxiv_id_from_url(url),
            abstract=_abstract(info),
            raw=article_refs.get(key),
        )
    return sources, warnings


class StormAdapter(ReportAdapter):
    """STORM run folder (or a task folder holding exactly one run folder)."""

    name = "storm"

    def detect(self, path: Path) -> bool:
        return find_run_dir(path) is not None

    def load(self, path: Path, task_id: str, system: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Report:
        run = find_run_dir(path)
        if run is None:
            raise ReportParseError(
                path,
                "not a STORM run folder (no storm_gen_article.md / url_to_info.json), or several run folders",
            )
        article = first_file(run, ARTICLE_NAMES)
        if path.is_file() and path.name in ARTICLE_NAMES:
            article = path
        if article is None:
            raise ReportParseError(run, "no storm_gen_article.md or storm_gen_article_polished.md")
        text, read_warnings = read_report_text(article, max_bytes)
        parts = split_markdown_report(text)
        parts.warnings.extend(read_warnings)
        parts.drop_missing_list_warning()
        if article.name != ARTICLE_NAMES[0]:
            parts.warnings.append(f"using {article.name} (no {ARTICLE_NAMES[0]})")
        entries, _ = parse_reference_entries(parts.reference_section or "")
        article_refs = {e.label: e.text for e in entries if e.label}
        info_path = run / INFO_NAME
        if info_path.is_file():
            try:
                info_text = read_text(info_path, max_bytes)
                info = parse_json_text(info_path, info_text)
                validate_json(
                    info_path, info, StormInfo, info_text, "an object with a 'url_to_unified_index' object"
                )
                sources, info_warnings = sources_from_url_to_info(info, article_refs)
            except ValueError as exc:
                if isinstance(exc, ReportParseError):
                    raise
                raise ReportParseError(info_path, str(exc)) from exc
            parts.warnings.extend(info_warnings)
        else:
            sources = parts.sources
            parts.warnings.append(f"no {INFO_NAME}; citations resolved through the article's reference list")
        return parts.to_report(self.name, task_id, system, article, sources=sources)


register_adapter(StormAdapter())
