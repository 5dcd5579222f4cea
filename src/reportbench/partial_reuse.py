"""Per-system partial results of the stages that read every system (`cross@`, `score@`, `site`), reused by key
(issue 36, "incremental is incremental at any size").

DVC reruns `cross@<b>`, `score@<b>` and `site` whole when one system's run changes. Most of their work is per
system: parsing that system's reports (~1–3 ms each) to take from them what a metric needs (its tasks, the answer
text a battle shows), rendering its pages. That work is a function of exactly what it reads: the code, the
benchmark's package, and the one file of the system's run it derives from. So it is keyed by a hash of those and
stored under `.reportbench/cache/partials/` (outside DVC's outs: DVC still owns the stages); a later run whose key
matches reads the stored result instead of parsing. What is genuinely cross-system (battles, ratings, the
leaderboard) is computed from these partials every time. `REPORTBENCH_UNIT_REUSE=0` turns it off (the same switch
as the judge units, reportbench.unit_reuse). A partial is stored only once computed without an error: a failure
raises before anything is written, so it is computed again next time.

Stored values are JSON (what a partial holds is small: task ids, answer texts), one version per (system, name):
the cache does not grow with reruns."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import reportbench
from reportbench.digest import tree_digest

CACHE_DIR = Path(".reportbench") / "cache" / "partials"
ENV = "REPORTBENCH_UNIT_REUSE"  # the judge units' switch too (unit_reuse.ENV): one variable turns every reuse off


def enabled() -> bool:
    """`REPORTBENCH_UNIT_REUSE=0` (or false/no) turns every reuse off, as for the judge units."""
    return os.environ.get(ENV, "1") not in ("0", "false", "no")


_FILE_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes ("-" when absent), remembered per (path, size, mtime) within a process: the
    stages that key several partials on one run's reports.jsonl hash it once."""
    path = Path(path)
    try:
        st = path.stat()
    except OSError:
        return "-"
    memo = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if memo not in _FILE_DIGESTS:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _FILE_DIGESTS[memo] = h.hexdigest()
    return _FILE_DIGESTS[memo]


def dir_digest(path: Path) -> str:
    """sha256 over the relative path and content digest of every file under `path` ("-" when absent), each file
    streamed (`file_digest`): a run folder's reports.jsonl (~235 MB at 5,000 tasks) is never held in memory, as
    `digest.tree_digest` (bytes read whole) would."""
    path = Path(path)
    if not path.exists():
        return "-"
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(path.parent).as_posix().encode() + b"\0" + file_digest(f).encode() + b"\0")
    return h.hexdigest()


@cache
def code_digest(benchmark: str) -> str:
    """src/reportbench and the benchmark's own package (a plug-in's code lives outside src/reportbench)."""
    from reportbench.benchmarks import benchmark_files  # lazy: +210 ms to import (python -X importtime)

    return tree_digest([Path(reportbench.__file__).parent], length=64) + tree_digest(
        [benchmark_files(benchmark).code], length=64
    )


def key_of(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


def load_or_compute(
    benchmark: str, system: str, name: str, key: str, compute: Callable[[], Any], cache_dir: Path | None = None
) -> tuple[Any, bool]:
    """(the partial, whether it was reused): the stored JSON value when `key` matches, else `compute()`, stored
    under `key` once it returned (an exception stores nothing). Off with REPORTBENCH_UNIT_REUSE=0."""
    if not enabled():
        return compute(), False
    found, value = read_stored(benchmark, system, name, key, cache_dir)
    if found:
        return value, True
    value = compute()
    write_stored(benchmark, system, name, key, value, cache_dir)
    return value, False


def read_stored(
    benchmark: str, system: str, name: str, key: str, cache_dir: Path | None = None
) -> tuple[bool, Any]:
    """(whether a value is stored under `key`, the value): a damaged entry reads as none (computed again)."""
    stored = Path(cache_dir or CACHE_DIR) / benchmark / system / name / f"{key}.json"
    if stored.is_file():
        try:
            return True, json.loads(stored.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
    return False, None


def write_stored(benchmark: str, system: str, name: str, key: str, value: Any, cache_dir: Path | None = None) -> None:
    """Store `value` under `key`, replacing the (system, name)'s previous version (atomic)."""
    entry = Path(cache_dir or CACHE_DIR) / benchmark / system / name
    stored = entry / f"{key}.json"
    entry.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=entry)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(value, f, ensure_ascii=False, separators=(",", ":"))
        for old in entry.glob("*.json"):  # one stored version per (system, name)
            old.unlink(missing_ok=True)
        os.replace(tmp, stored)
    finally:
        Path(tmp).unlink(missing_ok=True)


def iter_reports(run_dir: Path) -> Iterator[Any]:
    """A run's parsed reports one at a time (reports.jsonl, as `systems.read_reports` reads it): a value derived
    report by report holds one ~200 KB parsed report in memory, not a system's (~1 GB at 5,000 tasks)."""
    from reportbench.types import Report  # lazy: +60 ms to import (python -X importtime)

    path = Path(run_dir) / "reports.jsonl"
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield Report.model_validate_json(line)
                except ValueError as exc:
                    raise ValueError(f"{path}: line {lineno} is not a valid Report: {exc}") from exc


class SystemPartials:
    """Per-system values derived from a system's reports, streamed, and keyed by the reports file and the code.

    `get(system, name, fn)` is `fn(the system's reports, one at a time)`. With `store` (the DVC stages, unless
    REPORTBENCH_UNIT_REUSE=0) it is read from the partial cache when neither the system's `reports.jsonl` nor the
    code changed, and computed and stored otherwise. `fn` must take an iterable (one pass), return a JSON value and
    depend on nothing but the reports (and the code)."""

    def __init__(self, benchmark: str, run_dirs: Mapping[str, Path], *, store: bool) -> None:
        self.benchmark = benchmark
        self._dirs = dict(run_dirs)
        self.store = store and enabled()
        self.reused: list[tuple[str, str]] = []  # (system, name) read from the cache
        self.computed: list[tuple[str, str]] = []

    def run_dir(self, system: str) -> Path:
        return self._dirs[system]

    def get(self, system: str, name: str, fn: Callable[[Iterable[Any]], Any]) -> Any:
        run_dir = self._dirs[system]
        if not self.store:
            self.computed.append((system, name))
            return fn(iter_reports(run_dir))
        key = key_of(code_digest(self.benchmark), name, file_digest(run_dir / "reports.jsonl"))
        value, reused = load_or_compute(self.benchmark, system, name, key, lambda: fn(iter_reports(run_dir)))
        (self.reused if reused else self.computed).append((system, name))
        return value


    def stored(self, system: str, name: str, parts: Any) -> tuple[str, Any]:
        """(key, the stored value or None) of a value that reads more than one system's run (LRB's depth judgments
        of a system against the reference), keyed by the code and `parts`: the caller names in `parts` everything
        the value depends on. ("", None) when the stage stores no partials. Store it with `put`."""
        if not self.store:
            return "", None
        key = key_of(code_digest(self.benchmark), name, parts)
        found, value = read_stored(self.benchmark, system, name, key)
        if found:
            self.reused.append((system, name))
            return key, value
        return key, None

    def put(self, system: str, name: str, key: str, value: Any) -> None:
        """Store what `stored` did not have (nothing when the stage stores no partials)."""
        self.computed.append((system, name))
        if self.store and key:
            write_stored(self.benchmark, system, name, key, value)


_BODY_KEY = b',"body":'


def line_head(raw: bytes) -> dict[str, Any] | None:
    """The fields a reports.jsonl line holds before its body (ids, format, path), without decoding the body: the
    first `,"body":` of a line `model_dump_json` wrote is the top-level key (a quote inside a string is escaped).
    Any other line is decoded whole. None for a line that is not a JSON object with a string task_id."""
    obj: Any = None
    cut = raw.find(_BODY_KEY)
    if raw.startswith(b"{") and cut > 0:
        try:
            obj = json.loads(raw[:cut] + b"}")
        except ValueError:
            obj = None
    if not isinstance(obj, dict) or "task_id" not in obj:
        try:
            obj = json.loads(raw) if raw.strip() else None
        except ValueError:
            return None
        if isinstance(obj, dict):
            obj = {k: v for k, v in obj.items() if k in ("report_id", "task_id", "system", "format", "path")}
    if not isinstance(obj, dict) or not isinstance(obj.get("task_id"), str):
        return None
    return obj


_HEAD_BYTES = 8192  # a line's ids and path fit well within this; a longer head is read whole


def iter_line_heads(path: Path) -> Iterator[tuple[int, int, int, bytes, dict[str, Any] | None]]:
    """(line number, offset, length, the line or its first bytes, its head) of every non-blank line of a
    reports.jsonl, reading only each line's first bytes (mmap: a 2,000-word report's body is never copied)."""
    import mmap

    # the pages read leave resident memory; lazy: +260 ms to import (python -X importtime)
    from reportbench.reports.stored import MAPPED_WINDOW, release_mapped

    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            pos, lineno, size, mapped = 0, 0, len(m), 0
            while pos < size:
                if pos - mapped >= MAPPED_WINDOW:
                    mapped = release_mapped(m, mapped, pos)
                lineno += 1
                end = m.find(b"\n", pos)
                end = size if end < 0 else end + 1
                first = m[pos : min(end, pos + _HEAD_BYTES)]
                if first.strip():
                    head = line_head(first) if first.find(_BODY_KEY) > 0 else None
                    if head is None:  # no body key in the first bytes: decode the whole line
                        first = m[pos:end]
                        head = line_head(first)
                    yield lineno, pos, end - pos, first, head
                pos = end


def report_task_ids(run_dir: Path) -> list[str]:
    """The task of every report of a run, in file order, from each line's head (no report parsed: ~25 µs a line
    instead of 1–3 ms); a line that is not a report's raises, naming the file and line, as reading it would."""
    path = Path(run_dir) / "reports.jsonl"
    out = []
    for lineno, _, _, _, head in iter_line_heads(path):
        if head is None:
            raise ValueError(f"{path}: line {lineno} is not a valid Report (not a JSON object with a task_id)")
        out.append(str(head["task_id"]))
    return out


def report_ids(run_dir: Path) -> list[tuple[str, str]]:
    """(task, report id) of every report of a run, in file order, from each line's head (no report parsed); a
    line without a string task_id and report_id raises, naming the file and line, as reading it would."""
    path = Path(run_dir) / "reports.jsonl"
    out = []
    for lineno, _, _, _, head in iter_line_heads(path):
        if head is None or not isinstance(head.get("report_id"), str):
            raise ValueError(f"{path}: line {lineno} is not a valid Report (no string task_id and report_id)")
        out.append((str(head["task_id"]), head["report_id"]))
    return out


def reported_ids(ctx: Any, system: str) -> list[tuple[str, str]]:
    """(task, report id) of a system's reports in file order: from the line heads when the stage gave the context
    partials, else from `ctx.reports`."""
    if getattr(ctx, "partials", None) is None:
        return [(str(r.task_id), str(r.report_id)) for r in ctx.reports[system]]
    return report_ids(ctx.partials.run_dir(system))


def reported_tasks(ctx: Any, system: str) -> list[str]:
    """The tasks a system has a report for, in file order: read from the line heads when the stage gave the
    context partials (`cross_stage`/`score_stage`), else from `ctx.reports`."""
    if getattr(ctx, "partials", None) is None:
        return [str(r.task_id) for r in ctx.reports[system]]
    return report_task_ids(ctx.partials.run_dir(system))


def per_system(ctx: Any, system: str, name: str, fn: Callable[[Iterable[Any]], Any]) -> Any:
    """`fn(the system's reports)`: streamed and through the partial cache when the stage gave the context one
    (`cross_stage`/`score_stage` do); else `fn(ctx.reports[system])`."""
    partials = getattr(ctx, "partials", None)
    if partials is None:
        return fn(ctx.reports[system])
    return partials.get(system, name, fn)


