"""Report adapters: a registry of format readers and the one entry point `load_report`.

An adapter turns one system's output (a file or a folder) into a typed `Report`. Adapters never execute
anything from the output; they read at most `max_bytes` per file, decode with errors="replace", and resolve
inline citations only through the report's own reference list or links.

Auto-detection tries adapters in `AUTO_DETECT_ORDER`: layouts with distinctive side files first (STORM's
url_to_info.json, DeepScholar-base's intro.md + paper.csv), then JSON-keyed formats (OpenScholar,
DeepResearcher, SearchAI), then OpenAI Deep Research markers, and plain markdown last as the fallback.
"""

from __future__ import annotations

import contextlib
import contextvars
import csv
import gc
import json
import os
import re
import stat
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from reportbench.bounds import InputTooLargeError, check_body, check_counts, current_limits
from reportbench.reports.citations import Marker, scan_citations
from reportbench.reports.errors import EmptyReportError, ReportParseError
from reportbench.reports.schemas import PairJson, describe_json, validate_json
from reportbench.reports.sentences import build_sentences
from reportbench.reports.sniff import Decoded, check_report_text, decode_bytes
from reportbench.types import Report, Source

DEFAULT_MAX_BYTES = 5 * 1024 * 1024
MAX_JSON_DEPTH = 64  # real outputs nest < 10 levels; json.loads recurses and dies on ~100,000
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


# ---------------------------------------------------------------- containment (a systems folder is untrusted)

_ROOT: contextvars.ContextVar[Path | None] = contextvars.ContextVar("reportbench_report_root", default=None)


@contextlib.contextmanager
def confined_to(root: Path | str) -> Iterator[Path]:
    """Within this block every report file read must resolve inside `root` (symlinks to elsewhere refused)."""
    resolved = Path(root).resolve()
    token = _ROOT.set(resolved)
    try:
        yield resolved
    finally:
        _ROOT.reset(token)


def outside_root(path: Path, root: Path | None = None) -> str | None:
    """Why `path` may not be read under the current root (a symlink out of it, a special file), or None."""
    root = root if root is not None else _ROOT.get()
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: symlink loop on older Pythons
        return f"cannot resolve: {exc}"
    if root is not None and not resolved.is_relative_to(root):
        return f"symlink to {resolved}, outside {root} (the folder being read): refused"
    try:
        st = os.stat(resolved)
    except OSError as exc:
        return f"cannot stat: {exc.strerror or exc}"
    mode = st.st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return f"{_special_kind(mode)}, not a regular file or folder: refused"
    if root is not None and stat.S_ISREG(mode) and st.st_nlink > 1:
        # a hard link's other name may be anywhere on the device (another user's run, a secret): the path
        # cannot tell, so a file with several names is not read from an untrusted folder
        return f"hard link ({st.st_nlink} names for one file; the others may be outside {root}): refused; copy it in"
    return None


def _special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


class ReportAdapter(ABC):
    """Reads one output format. Subclasses set `name` and implement `detect` and `load`."""

    name: ClassVar[str]

    @abstractmethod
    def detect(self, path: Path) -> bool:
        """Cheap check: does `path` (a file or a folder) look like this format? Must not raise."""

    @abstractmethod
    def load(self, path: Path, task_id: str, system: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Report:
        """Parse `path` into a Report; raise ReportParseError when it cannot."""


# Filled by the adapters as they are imported: reportbench.reports (the package) imports reportbench.reports.formats,
# and a package runs before any of its modules is handed out, so the built-ins are always registered here.
_REGISTRY: dict[str, ReportAdapter] = {}


def register_adapter(adapter: ReportAdapter) -> ReportAdapter:
    """Add an adapter under its name (later registrations replace earlier ones)."""
    _REGISTRY[adapter.name] = adapter
    return adapter


def get_adapter(name: str) -> ReportAdapter:
    """The adapter registered as `name`; ValueError lists the known names."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown report format {name!r}; known: {', '.join(list_formats())}") from None


def list_formats() -> list[str]:
    """Registered adapter names in auto-detection order (unlisted extras last, alphabetically)."""
    ordered = [n for n in AUTO_DETECT_ORDER if n in _REGISTRY]
    return ordered + sorted(n for n in _REGISTRY if n not in AUTO_DETECT_ORDER)


def detect_format(path: Path | str) -> str | None:
    """Name of the first adapter (in auto-detection order) that recognises `path`, or None."""
    path = Path(path)
    for name in list_formats():
        try:
            if _REGISTRY[name].detect(path):
                return name
        except Exception:  # noqa: BLE001 - detect() must not raise; a bug in one adapter never stops discovery
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
    if not path.exists() and not path.is_symlink():
        raise ReportParseError(path, "no such file or folder")
    refused = outside_root(path)
    if refused:
        raise ReportParseError(path, refused)
    token = _READS.set({})  # detect() and load() read the same file: it is read and decoded once
    # The cyclic collector paused while the report is built (as digest.collector_paused does; importing it here
    # would add sqlite3, +11 ms): a parse allocates ~10,000 objects and forms no cycle, yet every collection they
    # triggered walked the process's whole heap (~5 % of a report's parse). Reference counting frees as before.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _load_detected(path, fmt, task_id, system, max_bytes)
    finally:
        _READS.reset(token)
        if collecting:
            gc.enable()


def _load_detected(path: Path, fmt: str, task_id: str | None, system: str | None, max_bytes: int) -> Report:
    if fmt == "auto":
        detected = detect_format(path)
        if detected is None:
            diagnose(path, max_bytes)  # raises the precise reason
            raise ReportParseError(path, f"no adapter recognises this output (tried {', '.join(list_formats())})")
        fmt = detected
    adapter = get_adapter(fmt)
    task_id = task_id or (path.stem if path.is_file() else path.name)
    system = system or path.resolve().parent.name or "unknown"
    try:
        return adapter.load(path, task_id, system, max_bytes=max_bytes)
    except ReportParseError:
        raise
    except InputTooLargeError as exc:  # a size bound checked inside an adapter (reportbench.bounds)
        raise ReportParseError(path, str(exc)) from exc
    except RecursionError as exc:
        raise ReportParseError(path, f"{fmt} adapter: input nested too deeply to parse") from exc
    except Exception as exc:  # noqa: BLE001 - per-report isolation: a bug or odd shape is this report's error
        raise ReportParseError(path, f"{fmt} adapter could not read it: {type(exc).__name__}: {exc}"[:600]) from exc


# ---------------------------------------------------------------- reading untrusted files


# Within one load_report call: path -> [its bytes, their Decoded or None]. A file read once (checked, at most
# max_bytes) gives the same bytes to every later read in the call whose limit they fit; only successes are kept.
# (peek_pair keeps its answers here too, under keys no file path can have.)
_READS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("reportbench_reads", default=None)


def read_bytes(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """A regular file's bytes (at most `max_bytes`, else an error), never following a link out of the root."""
    reads = _READS.get()
    if reads is not None:
        known = reads.get(str(path))
        if known is not None and len(known[0]) <= max_bytes:
            return known[0]  # type: ignore[no-any-return]
    data = _read_bytes(path, max_bytes)
    if reads is not None:
        reads[str(path)] = [data, None]
    return data


def _read_bytes(path: Path, max_bytes: int) -> bytes:
    refused = outside_root(path)
    if refused:
        raise ReportParseError(path, refused)
    if Path(path).is_dir():
        raise ReportParseError(path, "is a folder, expected a file")
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise ReportParseError(path, f"cannot read: {exc.strerror or exc}") from exc
    if len(data) > max_bytes:
        key = f"systems.{current_limits()[1]}.limits.max_bytes"
        raise ReportParseError(path, f"too large: file is over the {max_bytes}-byte limit (max_bytes; raise {key})")
    return data


def read_text(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """File contents as text (reports.sniff: binary and non-UTF-8 files are refused with a diagnosis)."""

    return _decoded(path, max_bytes).text


def read_report_text(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[str, list[str]]:
    """A markdown report's text and decoding warnings; empty, HTML and LaTeX files are refused precisely."""
    decoded = check_report_text(path, _decoded(path, max_bytes))
    return decoded.text, list(decoded.warnings)


def _decoded(path: Path, max_bytes: int) -> Decoded:
    """`decode_bytes(path, read_bytes(path, max_bytes))`, decoded once per load_report call."""
    data = read_bytes(path, max_bytes)
    reads = _READS.get()
    known = reads.get(str(path)) if reads is not None else None
    if known is None or known[0] is not data:
        return decode_bytes(path, data)
    if known[1] is None:
        known[1] = decode_bytes(path, data)
    return known[1]  # type: ignore[no-any-return]


def json_too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> int | None:
    """The 1-based line where JSON nesting first exceeds `limit`, or None (strings are skipped)."""
    if text.count("[") + text.count("{") <= limit:
        return None
    depth = 0
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > limit:
                return text.count("\n", 0, m.start()) + 1
        elif c in "]}":
            depth -= 1
    return None


def parse_json_text(path: Path, text: str) -> Any:
    """Parsed JSON with precise errors: invalid JSON (line, column), nesting beyond MAX_JSON_DEPTH."""
    line = json_too_deep(text)
    if line is not None:
        raise ReportParseError(path, f"line {line}: JSON nested deeper than {MAX_JSON_DEPTH} levels; refused")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportParseError(path, f"line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}") from exc
    except RecursionError as exc:  # belt and braces: the depth check above should make this unreachable
        raise ReportParseError(path, "JSON nested too deeply to parse; refused") from exc


def read_json(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """Parsed JSON (data only; nothing is evaluated)."""
    return parse_json_text(path, read_text(path, max_bytes))


def read_json_object(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """Like read_json, but the top level must be an object."""
    text = read_text(path, max_bytes)
    data = parse_json_text(path, text)
    if not isinstance(data, dict):
        line = text[: len(text) - len(text.lstrip())].count("\n") + 1
        raise ReportParseError(path, f"line {line}: JSON {describe_json(data)} where an object was expected")
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
    except Exception:  # noqa: BLE001 - for detect(): never raises; load() reports the precise reason
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
    """Like find_pair, but (None, None) where it would raise (for detect(): never raises). Within one load_report
    call the answer is looked up once (three adapters' detect() ask it of the same path)."""
    reads = _READS.get()
    key = f"\0pair:{path}"  # (no file path holds a NUL: never a read's key)
    if reads is not None and key in reads:
        return reads[key]  # type: ignore[no-any-return]
    try:
        pair = find_pair(path)
    except ReportParseError:
        pair = None, None
    if reads is not None:
        reads[key] = pair
    return pair


def read_pair_output(
    path: Path, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[str, Path, dict[str, Any], list[str]]:
    """(report text, the file it came from, the JSON object or {}, decoding warnings) of a markdown + JSON
    pair (see find_pair). The markdown file is the report; without one, the JSON's string `output` is.
    The JSON is validated (schemas.PairJson): `output` a string, `ctxs` a list of objects.
    """

    md, js = find_pair(path)
    data: dict[str, Any] = {}
    if js is not None:
        text = read_text(js, max_bytes)
        data = parse_json_text(js, text)
        validate_json(js, data, PairJson, text, "an object with a string 'output' and a 'ctxs' array of objects")
    if md is not None:
        body, warnings = read_report_text(md, max_bytes)
        return body, md, data, warnings
    if isinstance(data.get("output"), str) and js is not None:
        if not data["output"].strip():
            raise EmptyReportError(js, "empty report: the JSON 'output' is empty")
        return data["output"], js, data, []
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

    Judge-directed text (reportbench.injection) is removed from the body and from every source's title,
    abstract and raw entry first, with a warning that carries the flags; no judge ever sees it.

    `Sentence.citation_keys` keep unresolved keys too (a citation to nothing is still a citation, and Cite-P
    must count it as unsupported); they are listed once more in `Report.unresolved_citations`.
    """

    where = path or f"{system}/{task_id}"
    try:
        check_body(body)  # size bounds before any regex or the sentence splitter sees the text
    except InputTooLargeError as exc:
        raise ReportParseError(where, str(exc)) from exc
    all_warnings = list(warnings)
    all_sources = dict(sources)
    body, markers, injection_warnings = _without_injections(body, markers, all_sources)
    all_warnings.extend(injection_warnings)
    limits, _ = current_limits()
    try:  # both counts stop one past their limit: the work never grows with a hostile body's size
        if markers is None:
            scan = scan_citations(body, sources, max_markers=limits.max_citations)
            markers = scan.markers
            all_warnings.extend(scan.warnings)
            for key, src in scan.link_sources.items():
                all_sources.setdefault(key, src)
        check_counts(0, len(markers))
        sentences = build_sentences(body, markers, max_sentences=limits.max_sentences)
        check_counts(len(sentences), len(markers))
    except InputTooLargeError as exc:
        raise ReportParseError(where, str(exc)) from exc
    cited: dict[str, None] = {}
    for sent in sentences:
        for key in sent.citation_keys:
            cited.setdefault(key, None)
    unresolved = [k for k in cited if k not in all_sources]
    if not body.strip():
        raise EmptyReportError(where, "empty report: no body text (at most a reference list)")
    if not _ends_a_sentence(body):
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


def _ends_a_sentence(body: str) -> bool:
    """`_TRUNCATION_OK_END.search(body.rstrip())`: the stripped body has no trailing blank, so a match (a closing
    character, then only blanks to the end) can only be its last character; tried there, not at every position."""
    text = body.rstrip()
    return bool(text) and _TRUNCATION_OK_END.match(text, len(text) - 1) is not None


def _without_injections(
    body: str, markers: list[Marker] | None, sources: dict[str, Source]
) -> tuple[str, list[Marker] | None, list[str]]:
    """The body and sources with judge-directed spans cut (markers, when given, shifted to match)."""
    # lazy: +21 ms to import (python -X importtime)
    from reportbench.injection import Finding, cut, describe, neutralize, neutralize_all, removal_spans, scan, shift

    warnings: list[str] = []
    findings = scan(body)
    if findings:
        if markers is None:
            body, _ = neutralize(body)
        else:
            spans = removal_spans(body, findings)
            body = cut(body, spans)
            markers = [
                Marker(shift(m.start, spans), max(shift(m.start, spans), shift(m.end, spans)), m.keys, m.replacement)
                for m in markers
            ]
        warnings.append(describe(findings, where="the body"))
    if len({id(src) for src in sources.values()}) < len(sources):
        # one Source under two keys: the second sees what cleaning the first left (field by field, as always)
        for key, src in sources.items():
            removed_here: list[Finding] = []
            for field_name in ("title", "abstract", "raw"):
                value = getattr(src, field_name)
                if isinstance(value, str) and value:
                    cleaned, found = neutralize(value)
                    if found:
                        setattr(src, field_name, cleaned.strip() or None)
                        removed_here.extend(found)
            if removed_here:
                warnings.append(describe(removed_here, where=f"reference {key!r}"))
        return body, markers, warnings
    # every source's fields at once: the ones no scan can flag are picked out in one pass (fields_to_scan)
    fields = [
        (key, src, field_name, value)
        for key, src in sources.items()
        for field_name in ("title", "abstract", "raw")
        if isinstance(value := getattr(src, field_name), str) and value
    ]
    results = neutralize_all([value for _, _, _, value in fields])
    removed: dict[str, list[Finding]] = {}
    for (key, src, field_name, _), (cleaned, found) in zip(fields, results, strict=True):
        if found:
            setattr(src, field_name, cleaned.strip() or None)
            removed.setdefault(key, []).extend(found)
    for key, found in removed.items():  # (in the sources' order, as fields are)
        warnings.append(describe(found, where=f"reference {key!r}"))
    return body, markers, warnings


# ---------------------------------------------------------------- why no adapter recognises an output
# (moved from diagnose.py, which re-exports it: load_report calls it, and it reads files like the rest of here)
# Called by `load_report(fmt="auto")` only after every adapter's detect() said no, so it may read the file fully;
# it always raises (EmptyReportError for an empty file or folder, ReportParseError otherwise).

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
