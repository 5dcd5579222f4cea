"""Plain markdown reports: a body with `[n]`-style or link citations and an optional numbered reference list.

This is the fallback format and the shared core of the other markdown-based adapters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from reportbench.bounds import check_body
from reportbench.reports.base import (
    DEFAULT_MAX_BYTES,
    MARKDOWN_SUFFIXES,
    ReportAdapter,
    ReportParseError,
    build_report,
    read_report_text,
    register_adapter,
    visible_files,
)
from reportbench.reports.references import sources_from_section, split_reference_section
from reportbench.types import Report, Source

# `[1]: https://...` link-reference definitions and `[^1]: ...` footnotes may sit anywhere in a markdown file.
_DEFINITION_LINE_RE = re.compile(r"^[ \t]*\[(?:\^[^\]\s]+|\d{1,5})\]:[ \t]+\S.*$", re.MULTILINE)
_TRAILING_RULES_RE = re.compile(
    r"(?:\n[ \t]*(?:[-*_][ \t]*){3,}[ \t]*)+\s*$"
)  # '---' left above a removed list
# what a _TRAILING_RULES_RE match is made of (its blanks, line breaks and rule characters; `\s` as `re` reads it)
_TAIL_OF_RULES_RE = re.compile(r"[\s*_-]*")
_FORMAT_MARKER_RE = re.compile(r"</?(?:answer|think|tool_calls?)>", re.IGNORECASE)
PREFERRED_NAMES = ("report.md", "output.md", "final_report.md", "answer.md")
NO_REFERENCE_LIST = "no reference list found"


@dataclass
class MarkdownParts:
    """A markdown report cut into the judged body and its reference list (already turned into sources)."""

    body: str
    sources: dict[str, Source] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    reference_section: str | None = None

    def drop_missing_list_warning(self) -> None:
        """Forget that the reference list is missing (formats whose list is optional or comes from elsewhere)."""
        self.warnings = [w for w in self.warnings if w != NO_REFERENCE_LIST]

    def to_report(
        self, fmt: str, task_id: str, system: str, path: Path, *, sources: dict[str, Source] | None = None
    ) -> Report:
        """The Report of this body with `self.warnings`, resolved through `sources` (default: `self.sources`)."""
        return build_report(
            body=self.body,
            sources=self.sources if sources is None else sources,
            fmt=fmt,
            task_id=task_id,
            system=system,
            path=path,
            warnings=self.warnings,
        )


def split_markdown_report(text: str) -> MarkdownParts:
    """Body = text before the reference list, minus scattered `[n]:`/`[^n]:` definitions (now sources).

    Judge-directed text (reportbench.injection) is cut from the whole text first, so reference entries are
    parsed as if it had never been written; a warning carries the flags.
    """
    from reportbench.injection import describe, neutralize  # lazy: +16 ms to import (python -X importtime)

    check_body(text, paragraphs=False)  # size bounds before any pattern runs over the whole text
    text, findings = neutralize(text)
    body, section = split_reference_section(text)
    definitions = _DEFINITION_LINE_RE.findall(body) if "]:" in body else []  # what every match holds
    if definitions:
        body = _DEFINITION_LINE_RE.sub("", body).rstrip()
        section = "\n".join([*(section.splitlines() if section else []), *definitions])
    sources, warnings = sources_from_section(section)
    if section is None:
        warnings.append(NO_REFERENCE_LIST)
    body = strip_trailing_rules("\n" + body.strip("\n")).strip("\n")
    if findings:
        warnings.append(describe(findings, where="the report"))
    return MarkdownParts(body=body, sources=sources, warnings=warnings, reference_section=section)


def strip_trailing_rules(text: str) -> str:
    """`_TRAILING_RULES_RE.sub("", text)`, searched only in the text's tail of blanks and rule characters.

    A match runs to the end of the text (`\\s*$`) and holds nothing else, so it starts inside that tail (found in
    one pass over the reversed text), and there is at most one: the pattern (no literal it could skip to) is not
    tried at every position of the report."""
    tail = _TAIL_OF_RULES_RE.match(text[::-1])
    start = len(text) - (tail.end() if tail else 0)
    m = _TRAILING_RULES_RE.search(text, start)
    return text if m is None else text[: m.start()] + text[m.end() :]


def pick_markdown_file(path: Path) -> Path:
    """The report file of `path`: the file itself, or the single/conventionally named markdown of a folder."""
    if path.is_file():
        return path
    mds = [p for p in visible_files(path) if p.suffix.lower() in MARKDOWN_SUFFIXES]
    for name in PREFERRED_NAMES:
        for p in mds:
            if p.name.lower() == name:
                return p
    if len(mds) == 1:
        return mds[0]
    if not mds:
        raise ReportParseError(path, "folder holds no markdown file")
    raise ReportParseError(
        path,
        f"folder holds several markdown files, cannot tell which is the report: {[p.name for p in mds][:5]}",
    )


class MarkdownAdapter(ReportAdapter):
    """Any markdown file (or a folder with one markdown file)."""

    name = "markdown"

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return path.suffix.lower() in MARKDOWN_SUFFIXES
        try:
            pick_markdown_file(path)
        except ReportParseError:
            return False
        return True

    def load(self, path: Path, task_id: str, system: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Report:
        md = pick_markdown_file(path)
        text, read_warnings = read_report_text(md, max_bytes)
        parts = split_markdown_report(text)
        parts.warnings.extend(read_warnings)
        if _FORMAT_MARKER_RE.search(text):  # ambiguous: say why it was still read as plain markdown
            parts.warnings.append(
                "mentions transcript tags (<think>/<answer>/<tool_calls>) only inside prose, not as blocks: "
                "read as markdown"
            )
        return parts.to_report(self.name, task_id, system, md)


register_adapter(MarkdownAdapter())
