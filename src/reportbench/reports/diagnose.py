"""Why no adapter recognises an output: one precise reason instead of "no adapter recognises this output".

Called by `load_report(fmt="auto")` only after every adapter's detect() said no, so it may read the file
fully; it always raises (EmptyReportError for an empty file or folder, ReportParseError otherwise).
"""

from __future__ import annotations

from pathlib import Path

from reportbench.reports.base import (
    DEFAULT_MAX_BYTES,
    MARKDOWN_SUFFIXES,
    EmptyReportError,
    ReportParseError,
    outside_root,
    parse_json_text,
    read_bytes,
    read_report_text,
    read_text,
)
from reportbench.reports.schemas import describe_json

JSON_EXPECTED = (
    "an object with 'output' was expected: a Responses API result {'output': [..., {'type': 'message'}]} "
    "or an OpenScholar/SearchAI/DeepResearcher twin {'output': '...', 'ctxs': [...]}"
)
KNOWN_LAYOUTS = (
    "a .md/.markdown/.txt report, a Responses API .json, a STORM run (storm_gen_article.md + url_to_info.json), "
    "DeepScholar-base (intro.md + paper.csv) or a markdown + JSON pair"
)


def diagnose(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Raise the most specific reason `path` is not a readable report."""
    refused = outside_root(path)
    if refused:
        raise ReportParseError(path, refused)
    if path.is_dir():
        _diagnose_folder(path, max_bytes)
    suffix = path.suffix.lower()
    if suffix == ".json":
        _diagnose_json(path, max_bytes)
    if suffix in MARKDOWN_SUFFIXES:
        read_report_text(path, max_bytes)  # raises for empty / binary / HTML / LaTeX
        raise ReportParseError(path, "a text file that no adapter accepted")
    data = read_bytes(path, max_bytes)
    if not data.strip():
        raise EmptyReportError(path, "empty report: the file holds no text")
    read_report_text(path, max_bytes)  # binary, encoding, HTML, LaTeX: each says so
    raise ReportParseError(
        path, f"unsupported file type {suffix or '(no suffix)'!r}: expected {KNOWN_LAYOUTS}"
    )


def _diagnose_json(path: Path, max_bytes: int) -> None:
    text = read_text(path, max_bytes)
    if not text.strip():
        raise EmptyReportError(path, "empty report: the JSON file holds no text")
    data = parse_json_text(path, text)  # invalid JSON / too deep: precise
    line = text[: len(text) - len(text.lstrip())].count("\n") + 1
    if not isinstance(data, dict):
        raise ReportParseError(path, f"line {line}: JSON {describe_json(data)} where {JSON_EXPECTED}")
    keys = sorted(data)[:8]
    output = data.get("output")
    if "output" not in data:
        raise ReportParseError(path, f"JSON object with keys {keys} and no 'output': {JSON_EXPECTED}")
    raise ReportParseError(
        path,
        f"'output' is a JSON {describe_json(output)} but no format matches: a Responses API result needs an "
        "'output' array with a {'type': 'message'} item; a markdown twin needs a string 'output' and a "
        "'ctxs' array (OpenScholar also one of id_mapping/ranked_results/final_passages/initial_result)",
    )


def _diagnose_folder(path: Path, max_bytes: int) -> None:
    try:
        children = sorted(p for p in path.iterdir() if not p.name.startswith("."))
    except OSError as exc:
        raise ReportParseError(path, f"cannot list the folder: {exc.strerror or exc}") from exc
    if not children:
        raise EmptyReportError(path, "empty report: the folder is empty")
    files = [p for p in children if p.is_file()]
    reports = [p for p in files if p.suffix.lower() in MARKDOWN_SUFFIXES or p.suffix.lower() == ".json"]
    if len(reports) == 1:
        diagnose(reports[0], max_bytes)
    if not reports:
        names = [p.name + ("/" if p.is_dir() else "") for p in children][:8]
        raise ReportParseError(path, f"folder holds no report file (found {names}); expected {KNOWN_LAYOUTS}")
    raise ReportParseError(
        path,
        f"folder holds several candidate reports {[p.name for p in reports][:8]} and no known layout; "
        "keep one report.md (or name it report.md / output.md)",
    )
