"""Reading back the parsed reports our own `system@` stage wrote (`<run>/reports.jsonl`), cheaply.

Why: a parsed report is ~70 KB of JSON, two thirds of it `sentences` (each sentence's text and claim), and
validating all of it into ~140 `Sentence` models per report was most of the judge stage's cost outside the judge
(issue 36). Most judge steps never read the sentences (ResearchQA's coverage reads the body and the reference
list). So a stored report is validated now except for its sentences, which are validated the first time they
are read. The file is ours, not a system's: the untrusted input was validated when `system@` parsed it.

A hand-edited or corrupt file still stops with the file, line and field: the part validated up front is
validated in full (every field but `sentences`, unknown fields refused); a line that does not split as our
writer writes it (keys reordered, reformatted) is validated whole as before; and bad sentences raise, naming
file, line and field, when a step first reads them.

Reading a file our writer wrote, byte for byte (issue 36, the judge stage's overhead): `system@` registers the
sha256 of the `reports.jsonl` it wrote (`register_written`, `.reportbench/cache/written-reports.sqlite`); the
judge stage hashes every run folder for its unit keys anyway (`digest.memo_tree_digest`). When the file's sha256
found there is a registered one, its lines are the `model_dump_json` of validated reports, so their fields are
read with a JSON parser into the models directly (`_construct_report`: the same field values, order and fields
set as validation gives) instead of being validated again. A file changed in any way has another sha256 (its
stat changes, so it is hashed again): it is validated as above, and a hand-edited field stops with file, line
and field. Anything unexpected on the way (a line laid out otherwise, a key the models lack) is validated.
"""

from __future__ import annotations

import mmap
import os
import sqlite3
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import PrivateAttr, TypeAdapter, ValidationError

from reportbench.digest import MEMO_PATH, collector_paused, memoise_written, seen_sha256, speed_caches_writable
from reportbench.types import Report, Sentence, Source

WRITTEN_PATH = Path(".reportbench") / "cache" / "written-reports.sqlite"

# pydantic's compact JSON (Report.model_dump_json, what system@ writes) puts the fields in declaration order:
# ..., "body": "...", "sentences": [...], "sources": {...}, ...  Inside a JSON string a quote is always escaped,
# so `,"sentences":` and `,"sources":` (a comma right before an unescaped quote) only ever occur as these keys.
_SENTENCES_KEY = b',"sentences":'
_SOURCES_KEY = b',"sources":'
_SENTENCES = TypeAdapter(list[Sentence])


class StoredReport(Report):
    """A `Report` read from a run folder: `sentences` validated when first read (then kept like any field)."""

    _raw_sentences: Any = PrivateAttr(default=None)  # (the file, offset, length) of the sentences' JSON array
    _where: str = PrivateAttr(default="")

    def __getattr__(self, name: str) -> Any:
        if name == "sentences":
            return self._load_sentences()
        return super().__getattr__(name)  # type: ignore[misc]

    def read_sentences(self) -> list[Sentence]:
        """The sentences, not kept on the report when not read before: validated from the file again at each call.

        Why: a step that reads every report's sentences once (LiveResearchBench's claims) otherwise keeps them all
        on the unit's reports until the unit ends: ~190 KB per report (issue 36, tracemalloc of the LRB-shaped judge
        stage at 200 tasks), the stage's largest per-task cost. The same list `sentences` gives, the same error."""
        if "sentences" in self.__dict__:
            return self.__dict__["sentences"]  # type: ignore[no-any-return]
        return self._validated_sentences()

    def _validated_sentences(self) -> list[Sentence]:
        try:
            source, offset, length = self._raw_sentences  # type: ignore[misc]
            return _SENTENCES.validate_json(source.read(offset, length))
        except ValidationError as exc:  # raised again at every read: never an empty list in its place
            err = exc.errors(include_url=False)[0]
            loc = ".".join(str(p) for p in ("sentences", *err["loc"]))
            raise ValueError(f"{self._where} is not a valid Report: {loc}: {err['msg']}") from None

    def _load_sentences(self) -> list[Sentence]:
        sentences = self._validated_sentences()
        self._raw_sentences = None
        fields = self.__dict__  # in Report's field order, as a validated Report has them (its JSON's key order)
        ordered = {name: sentences if name == "sentences" else fields[name] for name in Report.model_fields}
        fields.clear()
        fields.update(ordered)
        return sentences

    def _complete(self) -> StoredReport:
        if "sentences" not in self.__dict__:
            self._load_sentences()
        return self

    # what reads the fields' dict directly sees the sentences too
    def model_dump(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return super(StoredReport, self._complete()).model_dump(*args, **kwargs)

    def model_dump_json(self, *args: Any, **kwargs: Any) -> str:
        return super(StoredReport, self._complete()).model_dump_json(*args, **kwargs)

    def model_copy(self, *args: Any, **kwargs: Any) -> Any:
        return super(StoredReport, self._complete()).model_copy(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        """Equal to the `Report` validated from the same line (pydantic's own __eq__ also compares the class)."""
        if not isinstance(other, Report):
            return NotImplemented
        if isinstance(other, StoredReport):
            other._complete()
        self._complete()
        return self.__dict__ == other.__dict__ and self.__pydantic_extra__ == other.__pydantic_extra__

    __hash__ = None  # type: ignore[assignment]  # as BaseModel's

    def __iter__(self) -> Any:
        return super(StoredReport, self._complete()).__iter__()

    def __repr_args__(self) -> Any:
        return super(StoredReport, self._complete()).__repr_args__()

    def __getstate__(self) -> dict[Any, Any]:
        return super(StoredReport, self._complete()).__getstate__()


def read_stored_reports(run_dir: Path | str) -> list[Report]:
    """The reports of `<run_dir>/reports.jsonl` (what `systems.read_reports` returns), sentences validated lazily.

    An invalid line raises ValueError naming the file, the line and the field, as `read_reports` does. The file
    is mapped, not read (a file `system@` registered with its layout: each line's head read at its offsets):
    only each line's fields but the sentences are copied out; the sentences are read from the file when first
    asked for (it is checked to be the same file then)."""
    with collector_paused():
        return list(_stored_reports(run_dir, laid_out=True))


def iter_stored_reports(run_dir: Path | str) -> Iterator[Report]:
    """`read_stored_reports` one report at a time, in file order (a judge stage that streams its reports holds
    one at a time: pipeline.StreamedReports). Always by the scan: the stored layout's reader checks every line's
    head before it hands out the first report, so it holds them all."""
    return _stored_reports(run_dir, laid_out=False)


def _stored_reports(run_dir: Path | str, laid_out: bool) -> Iterator[Report]:
    path = Path(run_dir) / "reports.jsonl"
    with open(path, "rb") as f:
        stat = os.fstat(f.fileno())
        if stat.st_size == 0:
            return
        sha = seen_sha256(path, (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns))
        ours, layout = _registered(sha) if sha is not None else (False, None)
        READS["constructed" if ours else "validated"] += 1
        source = _Source(path, (stat.st_ino, stat.st_size, stat.st_mtime_ns))
        if layout is not None and laid_out:
            got = _read_laid_out(f.fileno(), layout, stat.st_size, source, ours)
            if got is not None:
                READS["laid_out"] += 1  # the same lines as the scan below finds, without scanning ~70 KB each
                yield from got
                return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            pos, lineno, mapped = 0, 0, 0
            while pos < stat.st_size:
                if pos - mapped >= MAPPED_WINDOW:  # the lines read so far leave this process's resident pages
                    mapped = release_mapped(data, mapped, pos)
                end = data.find(b"\n", pos)
                end = stat.st_size if end < 0 else end
                start, stop, pos, lineno = pos, end, end + 1, lineno + 1
                if data[stop - 1 : stop] == b"\r":
                    stop -= 1
                if data[start : start + 1] != b"{" and not data[start:stop].strip():
                    continue
                report = _head(data, start, stop, source, lineno, ours)
                # not laid out as our writer writes it: validated whole, with its message
                yield report if report is not None else _whole(data, start, stop, path, lineno)


def _whole(data: mmap.mmap, start: int, stop: int, path: Path, lineno: int) -> Report:
    try:
        return Report.model_validate_json(data[start:stop])
    except ValueError as exc:
        raise ValueError(f"{path}: line {lineno} is not a valid Report: {exc}") from exc


def _read_laid_out(fd: int, layout: array, size: int, source: _Source, ours: bool) -> list[Report] | None:
    """The reports of a file our writer wrote, each line's head read at the offsets `system@` stored (`_layout`):
    two reads per line of only its head, nothing else of the file touched (mapping it faulted in every page a
    scan passed). The stored layout is keyed by the file's sha256, so it fits; what is read is checked anyway (a
    damaged registry row is never trusted): each head's ends must be the keys and brackets, each line must end at
    a newline or the file's end, the lines must follow each other. None when anything does not fit."""
    reports: list[Report] = []
    n_sent, n_src = len(_SENTENCES_KEY), len(_SOURCES_KEY)
    expected = 0
    for i in range(0, len(layout), 4):
        start, a, b, stop = layout[i : i + 4]
        if start != expected or not start < a < b < stop <= size:
            return None
        part1 = os.pread(fd, a + n_sent + 1 - start, start)  # the fields up to `,"sentences":[`
        part2 = os.pread(fd, stop + 1 - b + 1, b - 1)  # `]` then `,"sources":` up to the line's end and newline
        if part1[-n_sent - 1 : -1] != _SENTENCES_KEY or part1[-1:] != b"[" or part1[:1] != b"{":
            return None
        if part2[:1] != b"]" or part2[1 : 1 + n_src] != _SOURCES_KEY:
            return None
        tail = part2[stop - b + 1 :]  # what follows the line: its newline (after a `\r`), or nothing at the end
        if stop == size and tail:
            return None
        if stop < size and tail not in (b"\n", b"\r"):
            return None
        expected = stop + (1 if tail == b"\n" else 2)
        with memoryview(part1) as p1, memoryview(part2) as p2:
            head = b"".join((p1[: -n_sent - 1], p2[1 : stop - b + 1]))
        first = a + n_sent
        report = _from_head(head, source, i // 4 + 1, (first, b - first), ours)
        if report is None:
            return None
        reports.append(report)
    if expected < size and os.pread(fd, 1, expected):  # lines after the stored ones
        return None
    return reports


# Every page of the mapped file that was read counts in the process's resident memory until it is unmapped (~74 KB
# a LiveResearchBench-shaped report: 372 MB at 5,000, issue 36): the pages behind the lines already read are handed
# back every MAPPED_WINDOW (MADV_DONTNEED: a read-only file mapping reads them from the page cache if touched again)
MAPPED_WINDOW = 8 << 20


def release_mapped(data: mmap.mmap, start: int, pos: int) -> int:
    """Hand back the mapped pages in [start, pos) (start page-aligned); the new page-aligned start. Any reader
    passing once over a large mapped file (partial_reuse.iter_line_heads too) calls it every MAPPED_WINDOW."""
    end = pos - pos % mmap.PAGESIZE
    if end > start and hasattr(data, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
        data.madvise(mmap.MADV_DONTNEED, start, end - start)
    return end


class _Source:
    """The file a report was read from and its identity then (inode, size, mtime): its sentences are read later."""

    def __init__(self, path: Path, identity: tuple[int, int, int]) -> None:
        self.path, self.identity = path, identity

    def read(self, offset: int, length: int) -> bytes:
        with open(self.path, "rb") as f:
            st = os.fstat(f.fileno())
            if (st.st_ino, st.st_size, st.st_mtime_ns) != self.identity:
                raise ValueError(f"{self.path} changed after its reports were read: read them again")
            f.seek(offset)
            return f.read(length)


def _head(
    data: mmap.mmap,
    start: int,
    stop: int,
    source: _Source,
    lineno: int,
    ours: bool = False,
    keys: tuple[int, int] | None = None,
) -> StoredReport | None:
    """The report of one line with its sentences left in the file, or None when the line is not laid out as our
    writer lays it out (or its fields but the sentences do not validate: the caller validates it whole).
    `ours`: the file is one `system@` registered as written (`register_written`): its fields are constructed.
    `keys`: where the sentences and sources keys are (the registered layout), else found by scanning."""
    if keys is None:
        a = data.find(_SENTENCES_KEY, start, stop)
        if a < 0:
            return None
        b = data.rfind(_SOURCES_KEY, a, stop)  # the same key as the first one after the sentences: it occurs once
    else:
        a, b = keys
    first = a + len(_SENTENCES_KEY)
    if b < first + 2 or data[first : first + 1] != b"[" or data[b - 1 : b] != b"]":
        return None
    with memoryview(data) as view:  # one copy of the line's head, not three
        head = b"".join((view[start:a], view[b:stop]))
    return _from_head(head, source, lineno, (first, b - first), ours)


def _from_head(
    head: bytes, source: _Source, lineno: int, sentences: tuple[int, int], ours: bool
) -> StoredReport | None:
    """The report of a line's head (the line without its sentences, which stay in the file at `sentences`:
    offset, length), or None when its fields but the sentences do not validate."""
    where = f"{source.path}: line {lineno}"
    private = {"_raw_sentences": (source, *sentences), "_where": where}
    report = _construct_report(head, private) if ours else None
    if report is not None:
        return report
    try:  # every field but the sentences (absent: their default, replaced below), unknown ones refused
        report = StoredReport.model_validate_json(head)
    except ValidationError:
        return None
    del report.__dict__["sentences"]  # read from the file when first asked for
    report.__pydantic_fields_set__.add("sentences")
    report._raw_sentences = private["_raw_sentences"]
    report._where = where
    return report


# --------------------------------------------------------------------------------- files our writer wrote
READS = {"constructed": 0, "validated": 0, "laid_out": 0}  # files read each way in this process (tests count them)


def register_written(path: Path | str, registry: Path | str = WRITTEN_PATH, memo: Path | str = MEMO_PATH) -> None:
    """Record that `path` (a run folder's reports.jsonl, as `system@` just wrote it from validated reports) holds
    exactly what our writer wrote: its sha256 goes to the registry, with where each line's sentences and sources
    start (`_layout`: the reader then finds neither a line's end nor its keys by scanning ~70 KB per report). And
    the run folder's files, just written, are memoised with their sha256 (`digest.memoise_written`, sound although
    they are racily new: argued there), so the judge stage's first run does not hash them again. A cache: when it
    cannot be written, the judge stage hashes and validates the file as before (also while the speed caches are
    read-only: `reportbench estimate`)."""
    if not speed_caches_writable():
        return
    path = Path(path)
    try:
        sha = memoise_written(path.parent, memo).get(path.name)
        if sha is None:
            return
        layout = _layout(path)
        Path(registry).parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(str(registry), timeout=5)
        try:
            with db:
                db.execute("CREATE TABLE IF NOT EXISTS written (sha256 TEXT PRIMARY KEY)")
                db.execute("CREATE TABLE IF NOT EXISTS layout (sha256 TEXT PRIMARY KEY, offsets BLOB)")
                db.execute("INSERT OR IGNORE INTO written VALUES (?)", (sha,))
                if layout is not None:
                    db.execute("INSERT OR REPLACE INTO layout VALUES (?, ?)", (sha, layout.tobytes()))
        finally:
            db.close()
    except (OSError, sqlite3.Error):
        pass


def _layout(path: Path) -> array | None:
    """(line start, `,"sentences":` key, `,"sources":` key, line end) of every line, as `read_stored_reports`
    finds them by scanning; None when a line is not laid out as our writer lays it out (it is read by scanning)."""
    offsets = array("Q")
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return offsets
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            pos = 0
            while pos < size:
                end = data.find(b"\n", pos)
                end = size if end < 0 else end
                start, stop, pos = pos, end, end + 1
                if data[stop - 1 : stop] == b"\r":
                    stop -= 1
                a = data.find(_SENTENCES_KEY, start, stop)
                b = data.rfind(_SOURCES_KEY, a, stop) if a >= 0 else -1
                if data[start : start + 1] != b"{" or a < 0 or b < 0:
                    return None  # a blank or foreign line: the reader scans the file
                offsets.extend((start, a, b, stop))
    return offsets


def _registered(sha: str, registry: Path | str = WRITTEN_PATH) -> tuple[bool, array | None]:
    """(whether `system@` registered this sha256 as written by us, the lines' layout when it stored one)."""
    if not Path(registry).is_file():
        return False, None
    try:
        db = sqlite3.connect(f"file:{Path(registry).resolve()}?mode=ro", uri=True, timeout=5)
        try:
            if db.execute("SELECT 1 FROM written WHERE sha256 = ?", (sha,)).fetchone() is None:
                return False, None
            try:
                row = db.execute("SELECT offsets FROM layout WHERE sha256 = ?", (sha,)).fetchone()
            except sqlite3.Error:  # a registry from before the layouts
                row = None
        finally:
            db.close()
    except sqlite3.Error:
        return False, None
    if row is None or len(row[0]) % 32:
        return True, None
    offsets = array("Q")
    offsets.frombytes(row[0])
    return True, offsets


def _is_registered(sha: str, registry: Path | str = WRITTEN_PATH) -> bool:
    return _registered(sha, registry)[0]


_REPORT_FIELDS = tuple(name for name in Report.model_fields if name != "sentences")
_SOURCE_FIELDS = tuple(Source.model_fields)
_REPORT_KEYS = frozenset(_REPORT_FIELDS)
_SOURCE_KEYS = frozenset(_SOURCE_FIELDS)
_DEFAULTS = {
    model: {name: f for name, f in model.model_fields.items() if not f.is_required()} for model in (Report, Source)
}
_set = object.__setattr__
_new = object.__new__


def _fields(model: type[Report] | type[Source], data: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """`data` as validation leaves a model's __dict__: every field in declaration order, defaults filled in."""
    if tuple(data) == names:  # as our writer writes it: every field, in order
        return data
    defaults = _DEFAULTS[model]
    return {n: data[n] if n in data else defaults[n].get_default(call_default_factory=True) for n in names}


def _construct_report(head: bytes, private: dict[str, Any]) -> StoredReport | None:
    """A line's fields but the sentences, from a file our writer wrote (`register_written`): parsed and put in
    the models as validation puts them, without validating them again. None when anything is not as our writer
    writes it, e.g. a required field missing (the caller validates the line then)."""
    try:
        data = orjson.loads(head)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not _REPORT_REQUIRED <= set(data) <= _REPORT_KEYS:
        return None
    sources = data.get("sources") or {}
    if not isinstance(sources, dict):
        return None
    built = {}
    for key, entry in sources.items():
        if not isinstance(entry, dict):
            return None
        names = tuple(entry)
        fields = entry
        if names != _SOURCE_FIELDS:  # not every field in order (as our writer writes them): checked, completed
            if not _SOURCE_REQUIRED <= entry.keys() <= _SOURCE_KEYS:
                return None
            fields = _fields(Source, entry, _SOURCE_FIELDS)
        src = _new(Source)
        _set(src, "__pydantic_fields_set__", set(names))
        _set(src, "__dict__", fields)
        _set(src, "__pydantic_extra__", None)
        _set(src, "__pydantic_private__", None)
        built[key] = src
    if "sources" in data:
        data["sources"] = built
    report = _new(StoredReport)
    _set(report, "__pydantic_fields_set__", {*data, "sentences"})
    _set(report, "__dict__", _fields(Report, data, _REPORT_FIELDS))
    _set(report, "__pydantic_extra__", None)
    _set(report, "__pydantic_private__", private)
    return report


_REPORT_REQUIRED = frozenset(n for n, f in Report.model_fields.items() if f.is_required())
_SOURCE_REQUIRED = frozenset(n for n, f in Source.model_fields.items() if f.is_required())
