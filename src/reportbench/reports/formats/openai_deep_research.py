"""OpenAI Deep Research outputs, in the two shapes people actually save.

1. Markdown copied/exported from ChatGPT: inline parenthesised links `([arxiv.org](https://...?utm_source=chatgpt.com))`,
   footnotes `[^3]` with `[^3]: Title. URL` definitions, or browse markers `【3†source】` with a numbered
   sources list. Each source is keyed by its URL (links) or its label (footnotes, numbered entries).
2. A Responses API result (`{"object": "response", "output": [..., {"type": "message", "content":
   [{"type": "output_text", "text": ..., "annotations": [{"type": "url_citation", "start_index", "end_index",
   "url", "title"}]}]}]}`). The annotations are the citations: an annotation whose span is an inline link
   counts once; one whose span covers claim text becomes a citation at the end of that span.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from reportbench.bounds import InputTooLargeError, check_body, current_limits
from reportbench.reports.arxiv_ids import arxiv_id_from_url
from reportbench.reports.base import (
    DEFAULT_MAX_BYTES,
    MARKDOWN_SUFFIXES,
    ReportAdapter,
    ReportParseError,
    build_report,
    parse_json_text,
    read_json_object,
    read_report_text,
    read_text,
    register_adapter,
)
from reportbench.reports.citations import Marker, clean_url, normalize_url, scan_citations
from reportbench.reports.formats.markdown import pick_markdown_file, split_markdown_report
from reportbench.reports.references import sources_from_section, split_reference_section
from reportbench.reports.schemas import ContentPart, MessageItem, ResponsesResult, validate_json
from reportbench.types import Report, Source

MAX_ANNOTATIONS = 5000  # merging is quadratic in the worst case; real reports carry a few hundred
_CHATGPT_SIGNAL_RE = re.compile(r"utm_source=(?:chatgpt\.com|openai)|【\d+(?::\d+)?†")


def _is_response_json(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    output = data.get("output")
    return isinstance(output, list) and any(
        isinstance(i, dict) and i.get("type") == "message" for i in output
    )


def response_text_and_annotations(data: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """Text of the last assistant message and its url_citation annotations (indices relative to that text)."""
    messages = [i for i in data.get("output", []) if isinstance(i, dict) and i.get("type") == "message"]
    if not messages:
        return "", []
    text_parts: list[str] = []
    annotations: list[dict[str, Any]] = []
    offset = 0
    for part in messages[-1].get("content") or []:
        if (
            not isinstance(part, dict)
            or part.get("type") != "output_text"
            or not isinstance(part.get("text"), str)
        ):
            continue
        for ann in part.get("annotations") or []:
            if (
                isinstance(ann, dict)
                and ann.get("type") == "url_citation"
                and isinstance(ann.get("url"), str)
            ):
                start, end = ann.get("start_index"), ann.get("end_index")
                if isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(part["text"]):
                    annotations.append({**ann, "start_index": start + offset, "end_index": end + offset})
        text_parts.append(part["text"])
        offset += len(part["text"])
    return "".join(text_parts), annotations


def markers_from_annotations(
    body: str, annotations: list[dict[str, Any]], sources: dict[str, Source]
) -> tuple[list[Marker], dict[str, Source], list[str]]:
    """Merge scanned inline citations with API annotations into one sorted, non-overlapping marker list (the scan
    stops past max_citations: InputTooLargeError)."""
    scan = scan_citations(body, sources, max_markers=current_limits()[0].max_citations)
    all_sources = {**sources, **scan.link_sources}
    by_url = {normalize_url(s.url): k for k, s in all_sources.items() if s.url}
    markers = list(scan.markers)
    warnings = list(scan.warnings)
    dropped = 0
    if len(annotations) > MAX_ANNOTATIONS:
        warnings.append(f"{len(annotations)} annotations; only the first {MAX_ANNOTATIONS} were used")
        annotations = annotations[:MAX_ANNOTATIONS]
    for ann in annotations:
        start, end = ann["start_index"], ann["end_index"]
        if start >= len(body):
            dropped += 1  # the annotation points into the reference list, which is not judged
            continue
        url = clean_url(ann["url"])
        key = by_url.get(normalize_url(url))
        if key is None:
            title = ann.get("title") if isinstance(ann.get("title"), str) else None
            all_sources[url] = Source(key=url, url=url, title=title, arxiv_id=arxiv_id_from_url(url))
            by_url[normalize_url(url)] = key = url
        elif not all_sources[key].title and isinstance(ann.get("title"), str):
            all_sources[key].title = ann["title"]
        inside = [m for m in markers if m.end > m.start and start <= m.start and m.end <= max(end, start + 1)]
        if any(key in m.keys for m in inside):
            continue  # the annotation is the inline link itself, already a marker
        pos = min(end, len(body))
        for m in markers:
            if m.start < pos < m.end:
                pos = m.end  # never cut a marker in two
        same = next((i for i, m in enumerate(markers) if m.start == m.end == pos), None)
        if same is None:
            markers.append(Marker(pos, pos, (key,)))
        elif key not in markers[same].keys:
            markers[same] = Marker(pos, pos, (*markers[same].keys, key))
    if dropped:
        warnings.append(f"{dropped} annotation(s) point past the judged body and were ignored")
    markers.sort(key=lambda m: (m.start, m.end))
    return markers, all_sources, warnings


RESPONSES_EXPECTED = "an object with 'output' (a Responses API result)"


def validate_response_json(target: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """A Responses API result, validated where this adapter reads it (schemas.ResponsesResult and friends):
    message items' `content` is a list of objects, an output_text part has a string `text` and a list of
    annotation objects. Anything else is a ReportParseError naming the line and JSON path."""
    raw = read_text(target, max_bytes)
    data = parse_json_text(target, raw)
    doc = validate_json(target, data, ResponsesResult, raw, RESPONSES_EXPECTED)
    for i, item in enumerate(doc.output):
        if item.get("type") != "message":
            continue
        msg = validate_json(target, item, MessageItem, raw, "a message item", prefix=("output", i))
        for j, part in enumerate(msg.content or []):
            if part.get("type") == "output_text":
                validate_json(
                    target, part, ContentPart, raw, "an output_text part", prefix=("output", i, "content", j)
                )
    if not _is_response_json(data):
        raise ReportParseError(target, "not a Responses API result: no 'output' list with a 'message' item")
    return data


class OpenAIDeepResearchAdapter(ReportAdapter):
    """ChatGPT Deep Research markdown exports and Responses API JSON."""

    name = "openai_deep_research"

    def detect(self, path: Path) -> bool:
        try:
            target = self._target(path)
        except ReportParseError:
            return False
        if target is None:
            return False
        try:
            if target.suffix.lower() == ".json":
                return _is_response_json(read_json_object(target))
            text = read_text(target)
            # every match holds one of these literals: a plain report is not searched position by position
            return ("utm_source=" in text or "【" in text) and bool(_CHATGPT_SIGNAL_RE.search(text))
        except ReportParseError:
            return False

    @staticmethod
    def _target(path: Path) -> Path | None:
        if path.is_file():
            return path if path.suffix.lower() in (*MARKDOWN_SUFFIXES, ".json") else None
        jsons = [p for p in path.iterdir() if p.is_file() and p.suffix.lower() == ".json"]
        if len(jsons) == 1 and not any(p.suffix.lower() in MARKDOWN_SUFFIXES for p in path.iterdir()):
            return jsons[0]
        return pick_markdown_file(path)

    def load(self, path: Path, task_id: str, system: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Report:
        target = self._target(path)
        if target is None:
            raise ReportParseError(path, "expected a markdown file or a Responses API JSON file")
        if target.suffix.lower() != ".json":
            md_text, read_warnings = read_report_text(target, max_bytes)
            parts = split_markdown_report(md_text)
            parts.warnings.extend(read_warnings)
            parts.drop_missing_list_warning()
            return parts.to_report(self.name, task_id, system, target)
        data = validate_response_json(target, max_bytes)
        text, annotations = response_text_and_annotations(data)
        body, section = split_reference_section(text)
        sources, warnings = sources_from_section(section)
        try:
            check_body(body)  # size bounds before the citation scan, as build_report does
            markers, all_sources, marker_warnings = markers_from_annotations(body, annotations, sources)
        except InputTooLargeError as exc:
            raise ReportParseError(target, str(exc)) from exc
        warnings.extend(marker_warnings)
        if data.get("status") not in (None, "completed"):
            warnings.append(f"response status is {data.get('status')!r}, not 'completed'")
        return build_report(
            body=body,
            sources=all_sources,
            fmt=self.name,
            task_id=task_id,
            system=system,
            path=target,
            warnings=warnings,
            markers=markers,
        )


register_adapter(OpenAIDeepResearchAdapter())
