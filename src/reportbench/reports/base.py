"""Report adapters: a registry of format readers and the one entry point `load_report`.

An adapter turns one system's output (a file or a folder) into a typed `Report`. Adapters never execute
anything from the output; they read at most `max_bytes` per file, decode with errors="replace", and resolve
inline citations only through the report's own reference list or links.

Auto-detection tries adapters in `AUTO_DETECT_ORDER`: layouts with distinctive side files first (STORM's
url_to_info.json, DeepScholar-base's intro.md + paper.csv), then JSON-keyed formats (OpenScholar,
DeepResearcher, SearchAI), then OpenAI Deep Research markers, and plain markdown last as the fallback.
"""

from __future__ import annotations

import csv
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from reportbench.reports.citations import Marker, scan_citations
from reportbench.reports.sentences import build_sentences
from reportbench.types import Report, Source

DEFAULT_MAX_BYTES = 5 * 1024 * 1024
AUTO_DETECT_ORDER: tuple[str, ...] = (
    "storm",
    "deepscholar_base",
    "openscholar",
    "deepresearcher",
    "searchai",
    "openai_deep_research",
    "markdown",
)
MARKDOWN_SUFFIXES = (".md", ".markdown", ".txt")


class ReportParseError(ValueError):
    """A report could not be read; the message names the file and what is wrong with it."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class ReportAdapter(ABC):
    """Reads one output format. Subclasses set `name` and implement `detect` and `load`."""

    name: ClassVar[str]

    @abstractmethod
    def detect(self, path: Path) -> bool:
        """Cheap check: does `path` (a file or a folder) look like this format? Must not raise."""

    @abstractmethod
    def load(self, path: Path, task_id: str, system: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Report:
        """Parse `path` into a Report; raise ReportParseError when it cannot."""


_REGISTRY: dict[str, ReportAdapter] = {}


def register_adapter(adapter: ReportAdapter) -> ReportAdapter:
    """Add an adapter under its name (later registrations replace earlier ones)."""
    _REGISTRY[adapter.name] = adapter
    return adapter


def _ensure_builtin_adapters() -> None:
    import reportbench.reports.formats  # noqa: F401  (registers the built-in adapters on import)


def get_adapter(name: str) -> ReportAdapter:
    """The adapter registered as `name`; ValueError lists the known names."""
    _ensure_builtin_adapters()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown report format {name!r}; known: {', '.join(list_formats())}") from None


def list_formats() -> list[str]:
    """Registered adapter names in auto-detection order (unlisted extras last, alphabetically)."""
    _ensure_builtin_adapters()
    ordered = [n for n in AUTO_DETECT_ORDER if n in _REGISTRY]
    return ordered + sorted(n for n in _REGISTRY if n not in AUTO_DETECT_ORDER)


def detect_format(path: Path | str) -> str | None:
    """Name of the first adapter (in auto-detection order) that recognises `path`, or None."""
    path = Path(path)
    for name in list_formats():
        try:
            if _REGISTRY[name].detect(path):
                return name
        except (OSError, ValueError):
            continue
    return None


def load_report(
    path: Path | str,
    fmt: str = "auto",
    *,
    task_id: str | None = None,
    system: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Report:
    """Parse one system output into a Report.

    `task_id` defaults to the file stem / folder name and `system` to the parent folder's name, which fits the
    `<system>/<task>/...` layout. `fmt="auto"` uses the first adapter whose detect() accepts the path.
    """
    path = Path(path)
    if not path.exists():
        raise ReportParseError(path, "no such file or folder")
    if fmt == "auto":
        detected = detect_format(path)
        if detected is None:
            raise ReportParseError(
                path, f"no adapter recognises this output (tried {', '.join(list_formats())})"
            )
        fmt = detected
    adapter = get_adapter(fmt)
    task_id = task_id or (path.stem if path.is_file() else path.name)
    system = system or path.resolve().parent.name or "unknown"
    return adapter.load(path, task_id, system, max_bytes=max_bytes)


# ---------------------------------------------------------------- reading untrusted files


def read_text(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """File contents as text, refusing files larger than `max_bytes`; undecodable bytes become U+FFFD."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ReportParseError(path, f"cannot stat: {exc.strerror or exc}") from exc
    if size > max_bytes:
        raise ReportParseError(path, f"file is {size} bytes, over the {max_bytes}-byte limit")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReportParseError(path, f"cannot read: {exc.strerror or exc}") from exc
    return data.decode("utf-8-sig", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def read_json(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """Parsed JSON (data only; nothing is evaluated)."""
    try:
        return json.loads(read_text(path, max_bytes))
    except json.JSONDecodeError as exc:
        raise ReportParseError(
            path, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc


def read_json_object(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """Like read_json, but the top level must be an object."""
    data = read_json(path, max_bytes)
    if not isinstance(data, dict):
        raise ReportParseError(path, f"expected a JSON object at the top level, got {type(data).__name__}")
    return data


def read_csv_rows(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> list[dict[str, str]]:
    """CSV rows as dicts. Long fields (whole reports inside a cell) are allowed up to `max_bytes`."""
    text = read_text(path, max_bytes)
    old_limit = csv.field_size_limit()
    csv.field_size_limit(max(old_limit, max_bytes))
    try:
        return [dict(row) for row in csv.DictReader(text.splitlines(keepends=True))]
    except csv.Error as exc:
        raise ReportParseError(path, f"invalid CSV: {exc}") from exc
    finally:
        csv.field_size_limit(old_limit)


def peek_json_keys(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> frozenset[str]:
    """Top-level keys of a JSON object file, or an empty set if it is not one (for detect(): never raises).

    Cached per (path, size, mtime) because several adapters' detect() look at the same file.
    """
    if path.suffix.lower() != ".json" or not path.is_file():
        return frozenset()
    try:
        stat = path.stat()
    except OSError:
        return frozenset()
    return _json_keys_cached(str(path.resolve()), stat.st_size, stat.st_mtime_ns, max_bytes)


@lru_cache(maxsize=256)
def _json_keys_cached(path: str, size: int, mtime_ns: int, max_bytes: int) -> frozenset[str]:
    try:
        data = read_json(Path(path), max_bytes)
    except ReportParseError:
        return frozenset()
    return frozenset(data) if isinstance(data, dict) else frozenset()


def first_file(folder: Path, names: Iterable[str]) -> Path | None:
    """`folder / name` for the first of `names` that is a file in `folder`, or None."""
    return next((folder / n for n in names if (folder / n).is_file()), None)


def visible_files(folder: Path) -> list[Path]:
    """Non-hidden files directly inside `folder`, sorted by name."""
    try:
        return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    except OSError:
        return []


def find_pair(path: Path) -> tuple[Path | None, Path | None]:
    """(markdown, json) of a `<stem>.md` + `<stem>.json` output given either file or their folder.

    With several markdown files in a folder, the one whose stem has a JSON twin wins; ambiguity is an error.
    """
    if path.is_file():
        if path.suffix.lower() == ".json":
            md = next((path.with_suffix(s) for s in MARKDOWN_SUFFIXES if path.with_suffix(s).is_file()), None)
            return md, path
        twin = path.with_suffix(".json")
        return path, twin if twin.is_file() else None
    files = visible_files(path)
    mds = [p for p in files if p.suffix.lower() in MARKDOWN_SUFFIXES]
    jsons = [p for p in files if p.suffix.lower() == ".json"]
    paired = [m for m in mds if m.with_suffix(".json") in jsons]
    if len(paired) == 1:
        return paired[0], paired[0].with_suffix(".json")
    if len(paired) > 1:
        raise ReportParseError(path, f"several markdown/JSON pairs: {[p.name for p in paired]}")
    md = mds[0] if len(mds) == 1 else None
    js = jsons[0] if len(jsons) == 1 else None
    return md, js


def peek_pair(path: Path) -> tuple[Path | None, Path | None]:
    """Like find_pair, but (None, None) where it would raise (for detect(): never raises)."""
    try:
        return find_pair(path)
    except ReportParseError:
        return None, None


def read_pair_output(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[str, Path, dict[str, Any]]:
    """(report text, the file it came from, the JSON object or {}) of a markdown + JSON pair (see find_pair).

    The markdown file is the report; without one, the JSON's string `output` is.
    """
    md, js = find_pair(path)
    data = read_json_object(js, max_bytes) if js else {}
    if md is not None:
        return read_text(md, max_bytes), md, data
    if isinstance(data.get("output"), str) and js is not None:
        return data["output"], js, data
    raise ReportParseError(path, "no markdown report and no string 'output' in the JSON")


# ---------------------------------------------------------------- assembling a Report

_TRUNCATION_OK_END = re.compile(r"[.!?)\]\"'”’*|`>:]\s*$")


def build_report(
    *,
    body: str,
    sources: Mapping[str, Source],
    fmt: str,
    task_id: str,
    system: str,
    path: Path | None,
    warnings: Iterable[str] = (),
    markers: list[Marker] | None = None,
) -> Report:
    """Scan citations (unless `markers` are given), split sentences and record what did not resolve.

    `Sentence.citation_keys` keep unresolved keys too (a citation to nothing is still a citation, and Cite-P
    must count it as unsupported); they are listed once more in `Report.unresolved_citations`.
    """
    all_warnings = list(warnings)
    all_sources = dict(sources)
    if markers is None:
        scan = scan_citations(body, sources)
        markers = scan.markers
        all_warnings.extend(scan.warnings)
        for key, src in scan.link_sources.items():
            all_sources.setdefault(key, src)
    sentences = build_sentences(body, markers)
    cited: dict[str, None] = {}
    for sent in sentences:
        for key in sent.citation_keys:
            cited.setdefault(key, None)
    unresolved = [k for k in cited if k not in all_sources]
    if not body.strip():
        all_warnings.append("empty report body")
    elif not _TRUNCATION_OK_END.search(body.rstrip()):
        all_warnings.append(f"body ends mid-sentence (truncated output?): ...{body.rstrip()[-40:]!r}")
    if unresolved:
        all_warnings.append(f"{len(unresolved)} cited key(s) match no reference entry: {unresolved}")
    return Report(
        report_id=f"{system}/{task_id}",
        task_id=task_id,
        system=system,
        format=fmt,
        path=str(path) if path is not None else None,
        body=body,
        sentences=sentences,
        sources=all_sources,
        unresolved_citations=unresolved,
        warnings=all_warnings,
    )
