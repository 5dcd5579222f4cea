"""`kind: folder` — existing reports in any supported adapter format, mapped onto tasks by the benchmark's
declared naming rules (reports.task_names; docs/mapping.md).

Options: `path` (a folder, or one answer file), `format`, `layout` (`auto` | `flat` | `task_folders` |
`answer_file`), `prefix` (DEER's `<prefix>_<n>.md`), `ignore` (file-name globs), `allow_missing` (`true`, or
the share of tasks that may have no report; default 0.5), `subfolder` (one model of an LRB-style parent folder;
set by `layout: per_model`, which `expand_per_model` turns into one system per subfolder).

The folder is untrusted input, so:
- the stage stops with one message listing files and tasks when the names do not map: a report-like file
  that maps to no task together with a task without a report, or more tasks missing than `allow_missing`;
- every file read is confined to the folder (`reports.base.confined_to`): a symlink to `/etc/passwd` or to
  another user's run is refused, as are devices, FIFOs and sockets;
- each task's report is loaded in isolation: whatever goes wrong becomes that task's `parse_error` with the
  file and the reason, and the next task is read;
- an empty report is `missing`, scored as the benchmark scores a missing report, never as an ok report;
- every child that maps to no task is written to outcomes.jsonl as an `unmapped` row naming the file, and
  the whole mapping table (file -> task, rule) to `mapping.jsonl` next to it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reportbench.bounds import ReportLimits, report_limits
from reportbench.reports.base import confined_to, read_json
from reportbench.reports.discover import DiscoveredReports, MappingRow, discover_reports
from reportbench.reports.formats.markdown import split_markdown_report
from reportbench.reports.task_names import DEFAULT_NAMING, NameIndex, TaskNaming
from reportbench.systems.base import SystemError_, TaskOutcome, register_kind
from reportbench.systems.common import isolated_load, subset_full_task_ids
from reportbench.systems.spool import report_list
from reportbench.types import Report, Task

MAPPING_FILE = "mapping.jsonl"
DEFAULT_ALLOW_MISSING = 0.5
_LIST_LIMIT = 12


def naming_for(benchmark: str | None) -> TaskNaming:
    """The benchmark's declared naming rules (the generic id-only rules without a benchmark)."""
    if not benchmark:
        return DEFAULT_NAMING
    from reportbench.benchmarks import get_benchmark  # lazy: +640 ms to import (python -X importtime)

    return get_benchmark(str(benchmark)).task_naming


def allowed_missing_share(name: str, value: Any) -> float:
    """`allow_missing`: true (any share), false (none), or a share in [0, 1]; default 0.5."""
    if value is None:
        return DEFAULT_ALLOW_MISSING
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float) and 0.0 <= float(value) <= 1.0:
        return float(value)
    raise SystemError_(f"systems.{name}.allow_missing: {value!r} must be true, false or a share in [0, 1]")


def _listed(items: list[str]) -> str:
    head = ", ".join(items[:_LIST_LIMIT])
    return head + (f" (+{len(items) - _LIST_LIMIT} more)" if len(items) > _LIST_LIMIT else "")


def mapping_error(
    name: str, where: str, rows: list[MappingRow], missing: list[str], n_tasks: int, share: float, naming: TaskNaming
) -> str | None:
    """The one message that stops a system whose files do not map onto the tasks, or None when they do."""
    bad = [r for r in rows if r.status == "unmapped" and r.report_like]
    too_many = n_tasks > 0 and len(missing) / n_tasks > share + 1e-12
    if not ((bad and missing) or too_many):
        return None
    parts = [f"systems.{name}: the reports in {where} do not map onto the release's {n_tasks} tasks:"]
    if bad:
        files = [f"{Path(r.file).name} ({r.reason})" for r in bad]
        parts.append(f"{len(bad)} file(s) map to no task: {_listed(files)};")
    if missing:
        parts.append(f"{len(missing)} task(s) have no report: {_listed(missing)}")
        if too_many:
            parts.append(f"(more than allow_missing={share:g} of the tasks)")
        parts[-1] += ";"
    parts.append(
        f"the benchmark's rule: {naming.describe()}. Rename the files, set layout/format/prefix, or set "
        "allow_missing for a partial submission; `reportbench check <path> -b <benchmark>` shows the mapping "
        "(docs/mapping.md)"
    )
    return " ".join(parts)


def write_mapping(out_dir: Path, rows: list[MappingRow]) -> None:
    """The mapping table next to outcomes.jsonl: one JSON line per file (file, status, task_id, rule, reason)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / MAPPING_FILE, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r.as_dict(), ensure_ascii=False) + "\n")


def read_mapping(run_dir: Path) -> list[dict[str, Any]]:
    """The mapping table of a run ([] for kinds that map nothing)."""
    path = Path(run_dir) / MAPPING_FILE
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def discover_for(
    name: str,
    spec: Mapping[str, Any],
    task_ids: list[str],
    naming: TaskNaming,
    full_task_ids: list[str] | None = None,
) -> DiscoveredReports:
    """Discovery of a folder system with its options (shared by the kind and `reportbench check`);
    `full_task_ids`: the full release's ids when the release is a quick subset (`limit`)."""

    folder = Path(str(spec.get("path")))
    if spec.get("subfolder"):
        folder = folder / str(spec["subfolder"])
    layout = str(spec.get("layout") or "auto")
    if layout == "per_model":
        raise SystemError_(
            f"systems.{name}.layout: per_model names a parent folder; `reportbench compose` turns it into one "
            "system per subfolder (it was not expanded: run `reportbench compose`)"
        )
    ignore = tuple(str(g) for g in (spec.get("ignore") or ()))
    try:
        return discover_reports(
            folder,
            task_ids,
            fmt=str(spec.get("format") or "auto"),
            naming=naming,
            layout=layout,
            prefix=spec.get("prefix"),
            ignore=ignore,
            full_task_ids=full_task_ids,
        )
    except ValueError as exc:  # an unknown format or layout name
        field = "layout" if "layout" in str(exc) else "format"
        raise SystemError_(f"systems.{name}.{field}: {exc}") from exc


@register_kind("folder")
def run_folder_system(
    name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path
) -> tuple[list[Report], list[TaskOutcome]]:
    given = spec.get("path")
    naming = naming_for(spec.get("benchmark"))
    share = allowed_missing_share(name, spec.get("allow_missing"))
    if given and Path(str(given)).is_file() and not spec.get("subfolder"):
        all_ids = list(spec.get("_all_task_ids") or [t.task_id for t in tasks])
        full = subset_full_task_ids(spec)
        return _run_answer_file(name, Path(str(given)), tasks, out_dir, naming, share, all_ids, full)
    folder = Path(str(given)) / str(spec["subfolder"]) if given and spec.get("subfolder") else Path(str(given or ""))
    if not given or not folder.is_dir():
        shown = str(folder) if given else given
        raise SystemError_(f"systems.{name}.path: {shown!r} is not a folder (nor an answer file)")
    fmt = spec.get("format") or "auto"
    all_ids = list(spec.get("_all_task_ids") or [t.task_id for t in tasks])  # a per-task rerun maps against all
    task_ids = [t.task_id for t in tasks]
    discovered = discover_for(name, spec, all_ids, naming, subset_full_task_ids(spec))
    found = dict(discovered)
    # a FIFO/device/hard link named after a task is that task's unreadable report (parse_error below), not a gap
    missing = [t for t in all_ids if t not in found and _refused_for(t, discovered.unmapped) is None]
    err = mapping_error(name, str(folder), discovered.rows, missing, len(all_ids), share, naming)
    if err:
        raise SystemError_(err)
    write_mapping(out_dir, discovered.rows)
    reports: list[Report] = report_list()  # spooled to disk in a system stage (systems.spool)
    outcomes: list[TaskOutcome] = []
    attributed: set[str] = set()  # refused children reported as their task's outcome (not again as unmapped)
    try:
        limits = ReportLimits.from_spec(spec, name)
    except ValueError as exc:
        raise SystemError_(str(exc)) from exc
    with confined_to(folder), report_limits(limits, name):
        for task_id in task_ids:
            path = found.get(task_id)
            if path is None:
                refused = _refused_for(task_id, discovered.unmapped)
                if refused is not None:  # e.g. a FIFO or a hard link named after the task: say what it is
                    attributed.add(refused[0])
                    outcomes.append(
                        TaskOutcome(task_id=task_id, status="parse_error", reason=refused[1], path=refused[0])
                    )
                    continue
                outcomes.append(TaskOutcome(task_id=task_id, status="missing", reason=f"no report in {folder}"))
                continue
            report, outcome = isolated_load(path, fmt=fmt, task_id=task_id, system=name)
            if report is not None:
                reports.append(report)
            outcomes.append(outcome)
    outcomes.extend(
        TaskOutcome(task_id="", status="unmapped", path=path, reason=reason)
        for path, reason in discovered.unmapped
        if path not in attributed
    )
    return reports, outcomes


# ------------------------------------------------------------------------------------------- answer files

_ANSWER_KEYS = ("answer", "response", "report", "output")
_ID_KEYS = ("id", "corpusid_sectionid", "task_id", "query_id", "qid")


def answer_entries(path: Path) -> list[tuple[str, str, str]]:
    """(key as written, id field, answer text) of an answer file, in file order.

    Shapes read: ResearchQA's `{id: {"answer": str}}` (compute_coverage.py --responses), its released
    per-system outputs `[{corpusid_sectionid, answer, ...}]`, ResearcherBench's `[{id, question, response}]`.
    """

    data = read_json(path)
    out: list[tuple[str, str, str]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            text = value.get("answer") if isinstance(value, dict) else value if isinstance(value, str) else None
            if not isinstance(text, str):
                raise SystemError_(f"{path}: entry {key!r} has no string 'answer'")
            out.append((str(key), "key", text))
        return out
    if not isinstance(data, list):
        raise SystemError_(f"{path}: an answer file is {{id: {{answer}}}} or a list of {{id, answer}} objects")
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise SystemError_(f"{path}[{i}]: not an object")
        id_key = next((k for k in _ID_KEYS if k in entry), None)
        text_key = next((k for k in _ANSWER_KEYS if isinstance(entry.get(k), str)), None)
        if id_key is None or text_key is None:
            raise SystemError_(f"{path}[{i}]: needs one of {_ID_KEYS} and a string {'/'.join(_ANSWER_KEYS)}")
        out.append((str(entry[id_key]), id_key, str(entry[text_key])))
    return out


def map_answer_file(
    path: Path, task_ids: list[str], naming: TaskNaming, full_task_ids: list[str] | None = None
) -> tuple[dict[str, str], list[MappingRow]]:
    """task_id -> answer text, and the mapping table (`<file>#<key>` -> task) of one answer file
    (`full_task_ids`: a subset release's full list, NameIndex)."""
    index = NameIndex(task_ids, naming, full_task_ids)
    chosen: dict[str, str] = {}
    rows: list[MappingRow] = []
    for key, field, text in answer_entries(path):
        label = f"{path}#{key}"
        m = index.match(re.sub(r"\s+", "", key))
        if m.task_id is None:
            status = "outside_release" if m.outside_release else "unmapped"
            rows.append(MappingRow(label, status, reason=f"{field} {key!r}: {m.note}"))
        elif m.task_id in chosen:
            rows.append(MappingRow(label, "duplicate", m.task_id, reason=f"task {m.task_id} already has an answer"))
        else:
            chosen[m.task_id] = text
            rows.append(MappingRow(label, "mapped", m.task_id, f"{field}: {m.rule}"))
    return chosen, rows


def _run_answer_file(
    name: str,
    path: Path,
    tasks: list[Task],
    out_dir: Path,
    naming: TaskNaming,
    share: float,
    all_ids: list[str],
    full_ids: list[str] | None = None,
) -> tuple[list[Report], list[TaskOutcome]]:
    task_ids = [t.task_id for t in tasks]
    try:
        chosen, rows = map_answer_file(path, all_ids, naming, full_ids)
    except (OSError, ValueError) as exc:
        raise SystemError_(f"systems.{name}.path: {exc}") from exc
    missing = [t for t in all_ids if t not in chosen]
    err = mapping_error(name, str(path), rows, missing, len(all_ids), share, naming)
    if err:
        raise SystemError_(err)
    write_mapping(out_dir, rows)
    reports: list[Report] = report_list()  # spooled to disk in a system stage (systems.spool)
    outcomes: list[TaskOutcome] = []
    for tid in task_ids:
        text = chosen.get(tid)
        if text is None:
            outcomes.append(TaskOutcome(task_id=tid, status="missing", reason=f"no answer in {path}"))
            continue
        if not text.strip():
            outcomes.append(TaskOutcome(task_id=tid, status="missing", reason=f"{path}: empty answer", path=str(path)))
            continue
        report = split_markdown_report(text).to_report("markdown", tid, name, path)
        reports.append(report)
        outcomes.append(TaskOutcome(task_id=tid, status="ok", path=str(path), report_id=report.report_id))
    outcomes.extend(
        TaskOutcome(task_id="", status="unmapped", path=r.file, reason=r.reason)
        for r in rows
        if r.status not in ("mapped", "outside_release")  # another task of the full release: ignored
    )
    return reports, outcomes


# ------------------------------------------------------------------------------------------ per-model parents


def _system_name(entry: str, sub: str) -> str:
    return f"{entry}__{re.sub(r'[^A-Za-z0-9_-]+', '_', sub).strip('_') or 'model'}"


def model_dirs(base: Path) -> list[str]:
    """The model subfolders of a per_model parent (no hidden folders, no symlinks)."""
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))


def expand_per_model(systems: Mapping[str, Any]) -> dict[str, Any]:
    """`layout: per_model` entries (an LRB-style parent folder `<base>/<model_name>/qid_<qid>_report.md`)
    become one folder system per subfolder, named `<entry>__<subfolder>`; other entries are kept as they are."""
    out: dict[str, Any] = {}
    for name, spec in systems.items():
        if not isinstance(spec, Mapping) or spec.get("kind") != "folder" or spec.get("layout") != "per_model":
            out[name] = spec
            continue
        base = Path(str(spec.get("path") or ""))
        subs = model_dirs(base)
        if not subs:
            raise SystemError_(f"systems.{name}.path: {base} holds no model subfolders (layout: per_model)")
        for sub in subs:
            out[_system_name(name, sub)] = {**dict(spec), "layout": "auto", "subfolder": sub, "parent_entry": name}
    return out


def _refused_for(task_id: str, unmapped: list[tuple[str, str]]) -> tuple[str, str] | None:
    """(path, reason) of a special file or hard link named after `task_id` (`<task_id>.md`), if any; a symlink
    out of the folder stays an unmapped row (the task is missing: nothing of it is in the folder)."""
    for path, reason in unmapped:
        name = Path(path).name
        if "not a regular file or folder" in reason or reason.startswith("hard link"):
            if name == task_id or Path(name).stem == task_id:
                return str(path), f"{path}: {reason}"
    return None
