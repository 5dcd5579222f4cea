"""DeepResearcher outputs: `<n>_<abstract prefix>.md` (= the JSON `output`) + `.json`.

The raw output is a ReAct transcript. File 0 holds a complete draft with "### References", then `</think>`,
a `<tool_calls>` block and a final `<answer>` that is cut off mid-word and has no reference list. File 1 wraps
the report in `<Related Works>...</Related Works>` followed by `<references>[n] http://arxiv.org/abs/ID`.

Rules: the judged body is the last `<answer>` block when there is one (else the output without think/tool
blocks); the reference list is the answer's own, else the last one earlier in the same output (a warning says
so). DeepScholar-bench's parser never set the text (it judged ""), and used all ctxs as documents.
"""

from __future__ import annotations

import re
from pathlib import Path

from reportbench.reports.base import (
    DEFAULT_MAX_BYTES,
    ReportAdapter,
    ReportParseError,
    peek_json_keys,
    peek_pair,
    read_pair_output,
    read_text,
    register_adapter,
)
from reportbench.reports.formats.markdown import split_markdown_report
from reportbench.reports.formats.searchai import enrich_from_contexts
from reportbench.reports.references import split_reference_section
from reportbench.types import Report

_ANSWER_RE = re.compile(r"<answer>(.*?)(?:</answer>|\Z)", re.DOTALL | re.IGNORECASE)
_BLOCK_RES = (
    re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE),
    re.compile(r"<tool_calls?>.*?(?:</tool_calls?>|\Z)", re.DOTALL | re.IGNORECASE),
    re.compile(r"<tool_response>.*?(?:</tool_response>|\Z)", re.DOTALL | re.IGNORECASE),
)
_TRANSCRIPT_TAG_RE = re.compile(r"</?(?:answer|think|tool_calls?|references)>", re.IGNORECASE)
# Detection needs a transcript tag that opens a line (a block), not one that prose merely mentions mid-line.
_TRANSCRIPT_BLOCK_RE = re.compile(r"^[ \t]*</?(?:answer|think|tool_calls?|references)>", re.IGNORECASE | re.MULTILINE)


def extract_answer(output: str) -> tuple[str, str, list[str]]:
    """(answer text, text before the answer, warnings) of a ReAct transcript."""
    answers = list(_ANSWER_RE.finditer(output))
    if answers:
        last = answers[-1]
        before = output[: last.start()]
        warnings = [] if "</answer>" in output[last.start() :].lower() else ["<answer> block is not closed"]
        return last.group(1), before, warnings
    cleaned = output
    for block_re in _BLOCK_RES:
        cleaned = block_re.sub("", cleaned)
    cleaned = re.sub(r"^\s*</think>\s*$", "", cleaned, flags=re.MULTILINE)
    return cleaned, "", []


def _tidy_tags(text: str) -> str:
    """Tag-only lines: `<Related Works>` becomes a '## Related Works' heading; other tags go, except the
    `<references>` pair, which delimits the reference list."""
    lines = []
    for line in text.splitlines():
        tag = re.fullmatch(r"\s*<(/?)([A-Za-z][\w -]*)>\s*", line)
        if tag is None or tag.group(2).strip().lower() == "references":
            lines.append(line)  # <references> ... </references> delimit the reference list
        elif not tag.group(1) and not _TRANSCRIPT_TAG_RE.fullmatch(f"<{tag.group(2)}>"):
            lines.append(f"## {tag.group(2).strip()}")
    return "\n".join(lines)


class DeepResearcherAdapter(ReportAdapter):
    """DeepResearcher markdown + JSON pair (or either alone)."""

    name = "deepresearcher"

    def detect(self, path: Path) -> bool:
        md, js = peek_pair(path)
        if js is not None:
            keys = peek_json_keys(js)
            if {"messages", "question", "output"} <= keys:
                return True
        if md is not None and md.is_file():
            try:
                head = read_text(md)
            except ReportParseError:
                return False
            return "<" in head and bool(_TRANSCRIPT_BLOCK_RE.search(head))  # ('^' is tried on every line)
        return False

    def load(self, path: Path, task_id: str, system: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Report:
        output, where, data, read_warnings = read_pair_output(path, max_bytes)
        answer, before, warnings = extract_answer(output)
        parts = split_markdown_report(_tidy_tags(answer))
        parts.warnings.extend(read_warnings)
        if not parts.sources and before:
            draft = _tidy_tags(extract_answer(before)[0])
            if split_reference_section(draft)[1]:
                parts.sources = split_markdown_report(draft).sources
                parts.drop_missing_list_warning()
                warnings.append(
                    "the final <answer> has no reference list; used the one from the draft before it"
                )
        parts.warnings.extend(warnings)
        parts.warnings.extend(
            enrich_from_contexts(parts.sources, data.get("ctxs"), system_label="DeepResearcher")
        )
        return parts.to_report(self.name, task_id, system, where)


register_adapter(DeepResearcherAdapter())
