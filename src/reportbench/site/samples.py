"""The per-sample viewer: for one benchmark × release × system × task, the report as the harness parsed it
(sentences under their headings, citation markers linked to the report's own sources, unresolved markers
highlighted) next to every judgment on it (judge, member, model, prompt id and hash, verdict, explanation,
raw output, failure reason), the task's per-metric scores and the cross-system judgments it took part in.

Why pages rather than a server: they are written by the `site` stage (and on demand by `reportbench view`),
open from file:// with the network off, and link from each leaderboard cell to the per-task values behind it.

Inputs are the pipeline's files, read defensively: one unreadable line or table is reported on the page and
never loses the rest (a report is untrusted text: everything is escaped, nothing is rendered as HTML).
"""

from __future__ import annotations

import json
import math
import shlex
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from reportbench.injection import WARNING_PREFIX, flags_from_warnings
from reportbench.metrics.registry import reason_code
from reportbench.partial_reuse import iter_line_heads
from reportbench.site.claims import ClaimLedger, load_ledger, render_claims_html, render_claims_text
from reportbench.site.html import (
    attrs,
    esc,
    fmt_number,
    is_number,
    num,
    page,
    pointer,
    slug,
    sort_value,
    table,
    th,
)
from reportbench.site.messages import items_per_task, rerender_messages
from reportbench.types import system_label

# ------------------------------------------------------------------------------------------------- loading


@dataclass
class SystemData:
    """Everything the viewer reads for one system of one benchmark × release; `problems` lists what could not
    be read (shown on the pages, never raised)."""

    benchmark: str
    release: str
    system: str
    reports: Mapping[str, Any] = field(default_factory=dict)  # task_id -> Report (LazyReports: parsed when read)
    outcomes: dict[str, dict[str, Any]] = field(default_factory=dict)  # task_id -> raw outcome (flags kept)
    judgments: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # task_id -> records
    unattributed: list[dict[str, Any]] = field(default_factory=list)  # judgments naming no task
    scores: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # task_id -> per-metric rows
    cross: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # task_id -> rows of cross tables
    mapping: list[dict[str, Any]] = field(default_factory=list)  # file -> task table of a folder system
    check: dict[str, Any] = field(default_factory=dict)  # the system stage's check.json (warnings, flagged tasks)
    problems: list[str] = field(default_factory=list)
    run_dir: Path | None = None  # data/runs/<b>/<R>/<S>: the reports as submitted (raw/) live here
    messages: dict[tuple[str, str, str], Any] = field(default_factory=dict)  # (member, step, item) -> Rendered
    ledger: ClaimLedger = field(default_factory=ClaimLedger)  # claims, cited pages' fetch status, verdicts
    memo: dict[str, Any] = field(default_factory=dict, repr=False)  # indexes built once per system (_mismatches)

    @property
    def task_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for src in (self.outcomes, self.scores, self.reports, self.judgments):
            seen.update(dict.fromkeys(src))
        return list(seen)


class LazyReports(Mapping[str, Any]):
    """task_id -> Report of a run's reports.jsonl, each parsed only when a page reads it.

    Why: a parsed report is ~200 KB and 1–3 ms; listing a system's tasks (its page, the sample pages' order) needs
    only each line's ids, which the head of the line holds. Loading scans the file once and keeps, per task, the
    line's offset and its ids (`report_id`, `path`); a report is validated on access (a line that is not a valid
    Report reads as no report, with the reason in `problems` of the line). The last line of a task wins, as when
    every line was parsed."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        self.path = Path(path)
        self._at: dict[str, tuple[int, int, int]] = {}  # task_id -> (offset, length, line number)
        self.heads: dict[str, dict[str, Any]] = {}  # task_id -> {"report_id", "path", ...} (the fields before body)
        self.bad: dict[str, str] = {}  # task_id -> why its line is not a valid Report (seen on access)
        if not self.path.is_file():
            problems.append(f"{self.path}: missing")
            return
        for lineno, offset, length, raw, head in iter_line_heads(self.path):
            if head is None:
                problems.append(_why_not_a_report(self.path, lineno, raw))
            else:
                tid = str(head["task_id"])
                self._at[tid] = (offset, length, lineno)
                self.heads[tid] = head

    def line(self, task_id: str) -> bytes:
        """The stored line of a task's report, as written by the system stage (a page key hashes it)."""
        offset, length, _ = self._at[task_id]
        with self.path.open("rb") as fh:
            fh.seek(offset)
            return fh.read(length)

    def __getitem__(self, task_id: str) -> Any:
        from reportbench.types import Report  # lazy: +60 ms to import (python -X importtime)

        if task_id not in self._at:
            raise KeyError(task_id)
        try:
            return Report.model_validate_json(self.line(task_id))
        except ValueError as exc:
            self.bad[task_id] = f"{self.path}: line {self._at[task_id][2]} is not a valid Report ({exc})"[:400]
            return None

    def get(self, task_id: str, default: Any = None) -> Any:  # type: ignore[override]
        if task_id not in self._at:
            return default
        report = self[task_id]
        return default if report is None else report

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._at


def _why_not_a_report(path: Path, lineno: int, raw: bytes) -> str:
    try:
        json.loads(raw)
    except ValueError as exc:
        return f"{path}: line {lineno} is not JSON ({exc})"[:400]
    return f"{path}: line {lineno} is not a valid Report (not a JSON object with a string task_id)"


def _jsonl(path: Path, problems: list[str]) -> Iterable[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        problems.append(f"{path}: missing")
        return
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                problems.append(f"{path}: line {lineno} is not JSON ({exc})")
                continue
            if isinstance(obj, dict):
                yield lineno, obj


def load_system(
    root: Path,
    benchmark: str,
    release: str,
    system: str,
    members: Iterable[str] | None = None,
    ledger_tasks: int | Iterable[str] | None = None,
    full_records: int | None = None,
) -> SystemData:
    """Read runs, judgments, scores and cross tables of one system (paths as the pipeline writes them).

    `ledger_tasks`: the tasks whose claim ledger (the sample page's "What was checked") is built: the first n of
    `task_ids` (the sample pages the site writes) or these; None: every task (~160 claims a task, read for no page
    past the site's --max-samples, issue 36).

    `full_records`: only the first n of `task_ids` (the sample pages the site writes) keep their judgment records
    and cross rows whole, when the benchmark's judge items are task-local (`judge_items_per_task`: a page's
    messages and claims read its own task's records alone); every other task keeps, per record, what the system
    page shows of it (its status: the judgments and failed-judgments columns). Why: every record of every task
    with its raw output and parsed answer held at once made `site` ~1 GB at 5,000 LiveResearchBench-shaped tasks
    (issue 36). None: every record whole (`reportbench view`)."""
    if full_records is not None and _items_per_task(benchmark):
        d = _load_system(root, benchmark, release, system, members, ledger_tasks, full_records)
        if not d.unattributed:  # records naming no task are re-planned with every record (attach_messages)
            return d
    return _load_system(root, benchmark, release, system, members, ledger_tasks, None)


def _load_system(
    root: Path,
    benchmark: str,
    release: str,
    system: str,
    members: Iterable[str] | None,
    ledger_tasks: int | Iterable[str] | None,
    full_records: int | None,
) -> SystemData:
    d = SystemData(benchmark, release, system)
    run_dir = root / "data" / "runs" / benchmark / release / system
    d.run_dir = run_dir
    d.reports = reports = LazyReports(run_dir / "reports.jsonl", d.problems)  # ids only; parsed per page
    for _, obj in _jsonl(run_dir / "outcomes.jsonl", d.problems):
        if obj.get("task_id"):  # an unmapped file names no task: it is a row of the mapping table, not a task page
            d.outcomes[str(obj["task_id"])] = obj
    if (run_dir / "mapping.jsonl").is_file():  # folder systems: which file landed on which task, by which rule
        d.mapping = [obj for _, obj in _jsonl(run_dir / "mapping.jsonl", d.problems)]
    try:
        check = json.loads((run_dir / "check.json").read_text(encoding="utf-8"))
        d.check = check if isinstance(check, dict) else {}
    except (OSError, ValueError):
        d.check = {}
    spath = root / "data" / "scores" / benchmark / release / f"{system}.parquet"
    scores: dict[str, list[dict[str, Any]]] = {}
    score_problems: list[str] = []  # listed where they were before the records were read first
    if spath.is_file():
        try:
            for row in pl.read_parquet(spath, glob=False).to_dicts():
                scores.setdefault(str(row.get("task_id")), []).append(row)
        except Exception as exc:  # noqa: BLE001
            score_problems.append(f"{spath}: cannot read ({type(exc).__name__}: {exc})"[:400])
    whole = _whole_records(d, scores, full_records)
    jdir = root / "data" / "judgments" / benchmark / release / system
    member_dirs = (
        [jdir / m for m in members] if members is not None else sorted(p for p in jdir.glob("*") if p.is_dir())
    )
    by_report = {str(h.get("report_id")): t for t, h in reports.heads.items()}
    for mdir in member_dirs:
        for path in sorted(mdir.glob("*.parquet")):
            try:
                records = pl.read_parquet(path, glob=False)
            except Exception as exc:  # noqa: BLE001 - a corrupt table is shown, the rest still renders
                d.problems.append(f"{path}: cannot read ({type(exc).__name__}: {exc})"[:400])
                continue
            for rec in records.iter_rows(named=True):  # one record's dict at a time, not the table's
                rec["_step"] = path.stem
                rec["_member"] = rec.get("member") or mdir.name
                try:
                    ids = json.loads(rec.get("input_ids") or "{}")
                except ValueError:
                    ids = {}
                rec["_ids"] = ids if isinstance(ids, dict) else {}
                tid = rec["_ids"].get("task_id") or by_report.get(str(rec["_ids"].get("report_id")))
                if tid is None:
                    d.unattributed.append(rec)
                elif whole is None or whole(str(tid)):
                    d.judgments.setdefault(str(tid), []).append(rec)
                else:  # a task without a page here: what the system page shows of the record
                    stub = {"status": rec.get("status"), "_step": rec["_step"], "_member": rec["_member"], "_ids": {}}
                    d.judgments.setdefault(str(tid), []).append(stub)
    ledger_at = len(d.problems)  # its problems are listed here, before the scores' and cross tables'
    d.scores = scores
    d.problems.extend(score_problems)
    _load_cross(root / "data" / "cross" / benchmark / release, d, whole)
    tasks = None
    if isinstance(ledger_tasks, int):
        tasks = set(d.task_ids[:ledger_tasks])
    elif ledger_tasks is not None:
        tasks = set(ledger_tasks)
    d.ledger = load_ledger(root, benchmark, release, system, [m.name for m in member_dirs], d.judgments, tasks=tasks)
    d.problems[ledger_at:ledger_at] = d.ledger.problems
    return d


def _whole_records(d: SystemData, scores: Mapping[str, Any], n: int | None) -> Any:
    """Whether a task keeps its judgment records whole (None: every task): the first `n` of `task_ids`, known
    before the records are read from the outcomes, scores and reports (a task named by records alone comes after
    them in `task_ids`, and keeps its records whole)."""
    if n is None:
        return None
    known: dict[str, None] = {}
    for src in (d.outcomes, scores, d.reports):
        known.update(dict.fromkeys(src))
    first = set(list(known)[:n])
    return lambda tid: tid in first or tid not in known


MESSAGE_CHUNK = 64  # tasks re-planned at once when a benchmark's items are task-local (their parsed reports held)


def attach_messages(
    sd: SystemData, params: Mapping[str, Any], root: Path, tasks: Iterable[str] | None = None
) -> None:
    """Fill `sd.messages` with what every judgment's judge was sent (site/messages.py: re-rendered from the stored
    inputs and the prompt at the recorded hash). With `tasks`, only the judgments of those tasks (the sample pages
    the site writes) and the unattributed ones are rendered: the rest would be rendered for no page. Every step
    still reads all records (a later step's items may derive from them), so what is rendered is unchanged; a
    benchmark whose items are task-local (messages.items_per_task) is re-planned from those tasks' reports and
    records alone, `MESSAGE_CHUNK` tasks at a time (issue 36: parsed reports held for a chunk, not every page)."""
    by_member: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for rec in [*(r for rs in sd.judgments.values() for r in rs), *sd.unattributed]:
        by_member[str(rec["_member"])][str(rec["_step"])].append(rec)
    if tasks is None:
        _attach(sd, params, root, by_member, None, None)
        return
    tasks = list(tasks)
    only = {id(r) for t in tasks for r in sd.judgments.get(t, [])} | {id(r) for r in sd.unattributed}
    if not isinstance(sd.reports, LazyReports) or sd.unattributed:
        _attach(sd, params, root, by_member, only, None)
        return
    if not _items_per_task(sd.benchmark):  # items may read other reports: every record, the pages' reports
        wanted = set(tasks)
        reports = [r for t in sd.reports if t in wanted and (r := sd.reports.get(t)) is not None]
        _attach(sd, params, root, by_member, only, reports)
        return
    order = [t for t in sd.reports if t in set(tasks)]  # the run's order, as every report was planned
    for at in range(0, len(order), MESSAGE_CHUNK):
        chunk = order[at : at + MESSAGE_CHUNK]
        mine = {id(r) for t in chunk for r in sd.judgments.get(t, [])}
        reports = [r for t in chunk if (r := sd.reports.get(t)) is not None]
        part: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for member, steps in by_member.items():
            kept = {st: [r for r in rs if id(r) in mine] for st, rs in steps.items()}
            if any(kept.values()):
                part[member] = defaultdict(list, {st: rs for st, rs in kept.items() if rs})
        _attach(sd, params, root, part, mine, reports)


def _attach(
    sd: SystemData,
    params: Mapping[str, Any],
    root: Path,
    by_member: Mapping[str, Mapping[str, list[dict[str, Any]]]],
    only: set[int] | None,
    reports: list[Any] | None,
) -> None:
    for member, records in by_member.items():
        rendered = rerender_messages(params, root, sd.benchmark, sd.release, sd.system, member, records, only=only,
                                     reports=reports)  # fmt: skip
        for (step, item), r in rendered.items():
            sd.messages[(member, step, item)] = r


def _items_per_task(benchmark: str) -> bool:
    from reportbench.benchmarks import get_benchmark  # lazy: +203 ms to import (python -X importtime)

    try:
        return items_per_task(get_benchmark(benchmark))
    except Exception:  # noqa: BLE001 - an unknown benchmark: every record (rerender_messages says why it renders none)
        return False


MAX_RAW_CHARS = 200_000  # a report as submitted is shown up to this size (the file is named either way)


def raw_report(sd: SystemData, task_id: str, report: Any | None) -> tuple[str, str] | None:
    """(where it was read, text) of the report as the system submitted it: the run's `raw/<task_id>.md` (kinds
    that produce reports) or the file the folder adapter parsed; None when neither is a readable file."""
    candidates: list[Path] = []
    if sd.run_dir is not None:
        candidates.append(sd.run_dir / "raw" / f"{task_id}.md")
    if report is not None and report.path:
        path = Path(report.path)
        root = sd.run_dir.parents[4] if sd.run_dir is not None and len(sd.run_dir.parents) > 4 else Path(".")
        candidates += [path] if path.is_absolute() else [root / path, path]  # the repo, else the working dir
    for path in candidates:
        try:
            if path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace")
                cut = len(text) > MAX_RAW_CHARS
                return str(path), text[:MAX_RAW_CHARS] + ("\n[… cut at 200,000 characters]" if cut else "")
        except OSError:
            continue
    return None


# Verdict -> badge class: what the judge decided, not whether the call worked (a failed call has no verdict).
_POSITIVE = {"supported", "support", "important", "relevant", "yes", "true", "pass", "covered", "met", "satisfied"}
_NEGATIVE = {"not_supported", "not_support", "not_important", "irrelevant", "no", "false", "fail", "not_covered"}
_PARTIAL = {"partial_support", "partially_supported", "partial", "partially_covered"}
VERDICT_LEGEND = (
    ("v-pos", "supported / yes / full"),
    ("v-part", "partial"),
    ("v-neg", "not supported / no / none"),
    ("v-fail", "failed call (no verdict)"),
    ("v-oth", "other verdict (a choice, a grade)"),
)


def verdict_class(rec: Mapping[str, Any]) -> str:
    if rec.get("status") != "ok":
        return "v-fail"
    label = str(rec.get("label") or "").strip().lower().replace(" ", "_").replace("-", "_")
    if label in _POSITIVE:
        return "v-pos"
    if label in _NEGATIVE:
        return "v-neg"
    if label in _PARTIAL:
        return "v-part"
    value = rec.get("value")
    if label in {"", "0", "1"} and is_number(value) and 0 <= float(value) <= 1:
        return "v-pos" if float(value) == 1 else "v-neg" if float(value) == 0 else "v-part"
    return "v-oth"


def verdict_legend() -> str:
    items = "".join(f'<span class="badge {c}">{esc(t)}</span>' for c, t in VERDICT_LEGEND)
    return f'<p class="legend note">Judgment badges by verdict: {items}</p>'


def render_messages(rendered: Any | None, rec: Mapping[str, Any]) -> str:
    """The chat messages of one judgment, saying where they come from (or why there are none)."""
    if rendered is None:
        return '<p class="note">messages: not available (the item was not found when re-planning this step)</p>'
    if rendered.note:
        return f'<p class="note">messages: {esc(rendered.note)}</p>'
    offline = str(rec.get("judge_id") or "").startswith("offline") or "offline" in str(rec.get("model") or "")
    source = rendered.source + (
        "; the offline judge sends nothing: these are what an LLM judge gets for this item" if offline else ""
    )
    parts = "".join(
        f'<div class="msg"><b>{esc(str(m.get("role")))}</b><pre>{esc(str(m.get("content")))}</pre></div>'
        for m in rendered.messages
    )
    return f'<details class="msgs"><summary>messages sent ({esc(source)})</summary>{parts}</details>'


def _load_cross(cdir: Path, d: SystemData, whole: Any = None) -> None:
    """Rows of cross-stage tables that concern this system and a task: LRB's depth comparisons (column
    `system`), ResearchQA's battles (`system_a`/`system_b`) joined with their per-order verdicts (`battle_id`).
    With `whole` (load_system's `full_records`), only the rows of tasks it keeps whole (only their pages read
    them)."""
    if not cdir.is_dir():
        return
    tables: dict[str, pl.DataFrame] = {}
    for path in sorted(cdir.glob("*.parquet")):
        try:
            tables[path.stem] = pl.read_parquet(path, glob=False)
        except Exception as exc:  # noqa: BLE001
            d.problems.append(f"{path}: cannot read ({type(exc).__name__}: {exc})"[:400])
    battle_tasks: dict[str, str] = {}
    for name, df in tables.items():
        if "task_id" not in df.columns:
            continue
        if "system" in df.columns:
            sub = df.filter(pl.col("system") == d.system)
        elif {"system_a", "system_b"} <= set(df.columns):
            sub = df.filter((pl.col("system_a") == d.system) | (pl.col("system_b") == d.system))
            if "battle_id" in df.columns:
                battle_tasks.update(zip(sub["battle_id"].to_list(), sub["task_id"].to_list(), strict=True))
        else:
            continue
        for row in sub.iter_rows(named=True):
            if whole is None or whole(str(row["task_id"])):
                d.cross.setdefault(str(row["task_id"]), []).append({"_table": name, **row})
    if battle_tasks:
        for name, df in tables.items():
            if "battle_id" in df.columns and "task_id" not in df.columns:
                for row in df.filter(pl.col("battle_id").is_in(list(battle_tasks))).iter_rows(named=True):
                    if whole is None or whole(str(battle_tasks[row["battle_id"]])):
                        d.cross.setdefault(str(battle_tasks[row["battle_id"]]), []).append({"_table": name, **row})


# ------------------------------------------------------------------------------------------------ rendering


def task_file(task_id: str) -> str:
    return f"{slug(task_id)}.html"


def _anchor(key: str) -> str:
    return "src-" + slug(key)


def _value(v: Any) -> str:
    return fmt_number(v, 3) if is_number(v) else ("NaN" if isinstance(v, float) and math.isnan(v) else "—")


def render_report(report: Any, judgments: list[dict[str, Any]]) -> str:
    """The report as parsed: sections, sentences with linked citation markers (unresolved ones highlighted)
    and, per sentence, badges linking to the judgments that name it."""
    from reportbench.reports.citations import scan_citations  # lazy: +96 ms to import (python -X importtime)

    by_sentence: dict[str, list[int]] = defaultdict(list)
    for n, rec in enumerate(judgments):
        sid = rec["_ids"].get("sentence")
        if sid is not None:
            by_sentence[str(sid)].append(n)
    unresolved = set(report.unresolved_citations)
    out = ['<div class="report">']
    section = None
    for sent in report.sentences:
        if sent.section != section:
            section = sent.section
            if section:
                out.append(f'<div class="sec">{esc(section)}</div>')
        text = sent.text
        pieces, pos, shown = [], 0, set()
        try:
            markers = scan_citations(text, report.sources).markers
        except Exception:  # noqa: BLE001 - a marker we cannot re-find is still listed below
            markers = []
        for mk in sorted(markers, key=lambda m: m.start):
            if mk.start < pos:
                continue
            pieces.append(esc(text[pos : mk.start]))
            frag = esc(text[mk.start : mk.end])
            bad = [k for k in mk.keys if k in unresolved or k not in report.sources]
            if bad:
                pieces.append(f'<span class="unres" title="unresolved: {esc(", ".join(bad))}">{frag}</span>')
            elif mk.keys:
                pieces.append(
                    f'<a class="cite" href="#{_anchor(mk.keys[0])}" title="{esc(", ".join(mk.keys))}">{frag}</a>'
                )
            else:
                pieces.append(frag)
            shown.update(mk.keys)
            pos = mk.end
        pieces.append(esc(text[pos:]))
        extra = [k for k in sent.citation_keys if k not in shown]
        chips = "".join(
            f'<span class="unres" title="unresolved">[{esc(k)}]</span>'
            if k in unresolved or k not in report.sources
            else f'<a class="cite" href="#{_anchor(k)}">[{esc(k)}]</a>'
            for k in extra
        )
        badges = "".join(
            f'<a class="badge {verdict_class(judgments[n])}" href="#j-{n}" '
            f'title="{esc(judgments[n]["_step"])}: {esc(_verdict(judgments[n]))}">'
            f"{esc(judgments[n]['_step'])} {esc(_verdict(judgments[n]))}</a>"
            for n in by_sentence.get(str(sent.index), [])
        )
        out.append(
            f'<span class="sent" id="s-{sent.index}" title="sentence {sent.index}">{"".join(pieces)}{chips}'
            f"{badges}</span> "
        )
    if not report.sentences and report.body:
        out.append(f"<pre>{esc(report.body)}</pre>")
    out.append("</div>")
    return "".join(out)


def render_sources(report: Any) -> str:
    cited: dict[str, list[int]] = defaultdict(list)
    for s in report.sentences:
        for k in s.citation_keys:
            cited[k].append(s.index)
    rows = []
    for key, src in report.sources.items():
        links = []
        if src.url:
            links.append(f'<a href="{esc(src.url)}" rel="noreferrer noopener">{esc(src.url[:90])}</a>')
        if src.arxiv_id:
            links.append(f"arXiv:{esc(src.arxiv_id)}")
        if src.doi:
            links.append(f"doi:{esc(src.doi)}")
        back = " ".join(f'<a href="#s-{i}">s{i}</a>' for i in cited.get(key, [])) or '<span class="na">not cited</span>'
        abstract = f"<details><summary>abstract</summary>{esc(src.abstract)}</details>" if src.abstract else ""
        rows.append(
            f'<div class="src" id="{_anchor(key)}"><b>[{esc(key)}]</b> {esc(src.title or src.raw or "")} '
            f'{" · ".join(links)} <span class="note">cited in: {back}</span>{abstract}</div>'
        )
    if report.unresolved_citations:
        rows.append(
            '<div class="warn">Unresolved markers (no entry in the report\'s own reference list): '
            + ", ".join(f'<span class="unres">{esc(k)}</span>' for k in report.unresolved_citations)
            + "</div>"
        )
    return "".join(rows) or '<p class="note">No sources.</p>'


_ID_LINKS = {"sentence": "s-", "source_key": "src-"}


def _ids_html(ids: Mapping[str, Any], report: Any | None) -> str:
    parts = []
    by_arxiv = {s.arxiv_id: k for k, s in (report.sources.items() if report else []) if s.arxiv_id}
    for k, v in sorted(ids.items()):
        txt = f"{esc(k)}={esc(str(v))}"
        if k == "sentence":
            txt = f'<a href="#s-{esc(str(v))}">{txt}</a>'
        elif k == "source_key" and report is not None and str(v) in report.sources:
            txt = f'<a href="#{_anchor(str(v))}">{txt}</a>'
        elif k == "candidate" and str(v) in by_arxiv:
            txt = f'<a href="#{_anchor(by_arxiv[str(v)])}">{txt}</a>'
        parts.append(f"<code>{txt}</code>")
    return " ".join(parts)


def render_judgment(n: int, rec: Mapping[str, Any], report: Any | None, messages: str = "") -> str:
    status = str(rec.get("status") or "")
    verdict = rec.get("label")
    value = rec.get("value")
    head = (
        f"<b>{esc(rec['_step'])}</b> · member <code>{esc(str(rec['_member']))}</code> · "
        f'<span class="badge {esc(status)}">{esc(status)}</span>'
        + (
            f' verdict <span class="badge {verdict_class(rec)}">{esc(str(verdict))}</span>'
            if verdict is not None
            else ""
        )
        + f" value <b>{esc(_value(value))}</b>"
    )
    fields = {
        "item": f"<code>{esc(str(rec.get('item_id')))}</code>",
        "inputs": _ids_html(rec["_ids"], report),
        "judge": f"<code>{esc(str(rec.get('judge_id')))}</code> model <code>{esc(str(rec.get('model')))}</code>",
        "prompt": f"<code>{esc(str(rec.get('prompt_id')))}</code> sha256 "
        f"<code>{esc(str(rec.get('prompt_hash') or '')[:16])}</code>",
    }
    if rec.get("error"):
        fields["failure"] = f'<span class="fail">{esc(str(rec["error"]))}</span>'
    if rec.get("explanation"):
        fields["explanation"] = f"<pre>{esc(str(rec['explanation']))}</pre>"
    usage = (
        f"{rec.get('prompt_tokens') or 0}+{rec.get('completion_tokens') or 0} tokens, "
        f"{_cost(rec.get('cost_usd'))}, {float(rec.get('latency_s') or 0):.2f} s, "
        f"attempts {rec.get('attempts')}, cache hit {bool(rec.get('cache_hit'))}"
    )
    fields["call"] = esc(usage)
    dets = ""
    if rec.get("raw_output"):
        dets += f"<details><summary>raw output</summary><pre>{esc(str(rec['raw_output']))}</pre></details>"
    if rec.get("parsed"):
        dets += f"<details><summary>parsed output</summary><pre>{esc(str(rec['parsed']))}</pre></details>"
    body = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in fields.items())
    dets = messages + dets
    hay = " ".join(str(rec.get(k) or "") for k in ("item_id", "label", "explanation", "error", "_step"))
    return (
        f"<div{attrs(class_='jd ' + status, id=f'j-{n}', data_filter=hay, data_step=rec['_step'], data_status=status)}>"
        f"{head}<dl>{body}</dl>{dets}</div>"
    )


def _verdict(rec: Mapping[str, Any]) -> str:
    return str(rec.get("label") or (_value(rec.get("value")) if rec.get("status") == "ok" else rec.get("status")))


def _int(v: Any) -> str:
    return esc(str(v)) if v is not None else ""


def _row_status(r: Mapping[str, Any]) -> str:
    """A per-task row's status; protocols whose tables predate `status` get ok/undefined from the value (and
    `no_report` from their reason)."""
    if r.get("status"):
        return str(r["status"])
    if not is_number(r.get("value")) and reason_code(r.get("reason")) in ("no_report", "system_failed"):
        return "no_report"
    return "ok" if is_number(r.get("value")) else "undefined"


def missing_code(r: Mapping[str, Any]) -> str:
    """The code shown for a task the system left out: `system_failed` when it crashed on it, else the status."""
    code = reason_code(r.get("reason"))
    return code if code == "system_failed" else str(r.get("status") or "no_report")


def render_scores(rows: list[dict[str, Any]], system_index: str, metric_info: Mapping[str, Any]) -> str:
    head = [
        th("metric", kind="text", cls="s"),
        th("value"),
        th("status", kind="text", cls="s"),
        th("reason", kind="text", cls="s"),
        th("items"),
        th("failed items"),
        th("group", kind="text", cls="s"),
    ]
    body = []
    for r in rows:
        m = str(r.get("metric"))
        label = (metric_info.get(m) or {}).get("label", m)
        st = _row_status(r)
        body.append(
            f'<tr><td class="s" data-sort="{esc(m)}">'
            f'<a href="{esc(system_index)}#m-{esc(m)}">{esc(str(label))}</a></td>'
            f'<td data-sort="{sort_value(r.get("value"))}">{esc(_value(r.get("value")))}</td>'
            f'<td class="s"><span class="badge {"ok" if st == "ok" else "bad"}">{esc(st)}</span></td>'
            f'<td class="s">{esc(str(r.get("reason") or ""))}</td>'
            f'<td data-sort="{sort_value(r.get("n_items"))}">{_int(r.get("n_items"))}</td>'
            f'<td data-sort="{sort_value(r.get("n_failed"))}">{_int(r.get("n_failed"))}</td>'
            f'<td class="s">{esc(str(r.get("group") or ""))}</td></tr>'
        )
    return table(head, body) if body else '<p class="note">No per-task scores for this task.</p>'


def _task_header(task: Any | None, task_id: str) -> str:
    if task is None:
        return f"<h1>task <code>{esc(task_id)}</code></h1>"
    prompt = getattr(task, "task_prompt", "") or ""
    return (
        f'<h1>{esc(task.title)}</h1><p class="note">task <code>{esc(task_id)}</code></p>'
        f"<details><summary>task prompt given to systems</summary><pre>{esc(prompt)}</pre></details>"
    )


def _reference_material(release: Any | None, task_id: str) -> str:
    """What the judges compared the report with: rubric/checklist items, nuggets (when the release has them)."""
    if release is None:
        return ""
    parts = []
    try:
        items = release.rubric(task_id)
    except Exception:  # noqa: BLE001 - benchmarks without rubric tables
        items = []
    if items:
        lis = "".join(
            f"<li><code>{esc(i.item_id)}</code> {esc(i.text)}"
            f"{f' <span class=note>(weight {i.weight:g})</span>' if i.weight != 1 else ''}</li>"
            for i in items
        )
        parts.append(f"<details><summary>rubric / checklist ({len(items)} items)</summary><ol>{lis}</ol></details>")
    try:
        nuggets = release.nuggets(task_id)
    except Exception:  # noqa: BLE001
        nuggets = []
    if nuggets:
        lis = "".join(f"<li>{esc(n.text)} <span class=note>({esc(n.importance)})</span></li>" for n in nuggets)
        parts.append(f"<details><summary>nuggets ({len(nuggets)})</summary><ol start=0>{lis}</ol></details>")
    return "".join(parts)


def render_sample_page(
    sd: SystemData,
    task_id: str,
    *,
    release: Any | None = None,
    metric_info: Mapping[str, Any] | None = None,
    other_systems: Iterable[str] = (),
    prev_next: tuple[str | None, str | None] = (None, None),
    crumbs: list[tuple[str, str | None]] | None = None,
) -> str:
    """One task × system: outcome, scores, report as parsed with sources, every judgment, cross judgments."""
    task = None
    if release is not None:
        try:
            task = release.task(task_id)
        except Exception:  # noqa: BLE001 - a task the release does not know still gets its page
            task = None
    report = sd.reports.get(task_id)
    judgments = sd.judgments.get(task_id, [])
    outcome = sd.outcomes.get(task_id, {})
    body = [_task_header(task, task_id)]
    nav = [f'<a href="index.html">all tasks of {esc(sd.system)}</a>']
    if prev_next[0]:
        nav.append(f'<a rel="prev" href="{esc(task_file(prev_next[0]))}">← previous task (p)</a>')
    if prev_next[1]:
        nav.append(f'<a rel="next" href="{esc(task_file(prev_next[1]))}">next task (n) →</a>')
    others = [f'<a href="../{esc(slug(s))}/{esc(task_file(task_id))}">{esc(s)}</a>' for s in other_systems]
    if others:
        nav.append("same task, other systems: " + " ".join(others))
    body.append(f'<p class="note">{" · ".join(nav)}</p>')
    st = str(outcome.get("status") or ("ok" if report else "unknown"))
    facts = {
        "system": f"<b>{esc(sd.system)}</b>",
        "outcome": f'<span class="badge {"ok" if st == "ok" else "bad"}">{esc(st)}</span> '
        f"{esc(str(outcome.get('reason') or ''))}",
    }
    flags = outcome.get("flags") or []
    if flags:
        facts["flags"] = render_flags(flags, flag_evidence(sd, task_id, report))
    mapped = [m for m in sd.mapping if m.get("task_id") == task_id and m.get("status") == "mapped"]
    if mapped:
        facts["file"] = f"<code>{esc(str(mapped[0].get('file')))}</code> (rule: {esc(str(mapped[0].get('rule')))})"
    if report is not None:
        facts["parsed as"] = (
            f"<code>{esc(report.format)}</code> · {len(report.sentences)} sentences · "
            f"{len(report.sources)} sources · {len(report.unresolved_citations)} unresolved markers"
        )
        if report.warnings:
            facts["parser warnings"] = "<br>".join(esc(w) for w in report.warnings)
    n_failed = sum(1 for j in judgments if j.get("status") == "failed")
    facts["judgments"] = f"{len(judgments)} ({n_failed} failed)" if n_failed else str(len(judgments))
    body.append("<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in facts.items()) + "</dl>")
    if sd.problems:
        body.append(
            '<div class="warn">Some inputs could not be read: '
            + "<br>".join(esc(p) for p in sd.problems[:10])
            + "</div>"
        )
    body.append(
        "<h2>Scores for this task</h2>" + render_scores(sd.scores.get(task_id, []), "index.html", metric_info or {})
    )
    body.append(render_claims_html(sd.ledger.claims.get(task_id, []), sd.ledger))
    body.append(_reference_material(release, task_id))
    raw = raw_report(sd, task_id, report)
    left = ["<h2>Report as parsed</h2>"]
    if raw is not None:
        left.append('<p class="note"><a href="#raw">the report as submitted ↓</a></p>')
    if report is None:
        bad = getattr(sd.reports, "bad", {}).get(task_id)  # a stored line that is not a valid Report: why
        left.append(f'<p class="warn">No report: {esc(st)} {esc(str(outcome.get("reason") or ""))}'
                    + (f"<br>{esc(bad)}" if bad else "") + "</p>")
    else:
        left.append(verdict_legend())
        left.append(render_report(report, judgments))
        left.append("<h2>Sources</h2>" + render_sources(report))
    if raw is not None:
        left.append(
            f'<h2 id="raw">Report as submitted</h2><p class="note">{esc(raw[0])} (exactly as read; '
            '<a href="#">back to the parsed report ↑</a>)</p>'
            f'<pre class="raw">{esc(raw[1])}</pre>'
        )
    steps = sorted({j["_step"] for j in judgments})
    opts = "".join(f'<option value="{esc(s)}">{esc(s)}</option>' for s in steps)
    right = [
        "<h2>Judgments</h2>",
        '<div class="filters">'
        f'<label>step <select id="f-step" data-filter-for="jl" data-field="step"><option value="">all</option>{opts}'
        "</select></label>"
        '<label>status <select id="f-status" data-filter-for="jl" data-field="status"><option value="">all</option>'
        '<option value="ok">ok</option><option value="failed">failed</option></select></label>'
        '<label>search <input id="f-q" data-filter-for="jl" placeholder="text"></label></div>',
        '<div id="jl">',
        *(
            render_judgment(
                n,
                rec,
                report,
                render_messages(sd.messages.get((str(rec["_member"]), str(rec["_step"]), str(rec.get("item_id")))), rec)
                if sd.messages
                else "",
            )
            for n, rec in enumerate(judgments)
        ),
        "</div>",
    ]
    if not judgments:
        right.append('<p class="note">No judgment names this task.</p>')
    body.append(f'<div class="grid2"><div>{"".join(left)}</div><div>{"".join(right)}</div></div>')
    cross = sd.cross.get(task_id, [])
    if cross:
        body.append("<h2>Cross-system judgments</h2>" + _cross_html(cross))
    title = f"{sd.benchmark} · {sd.release} · {sd.system} · {task_id}"
    return page(title, "".join(body), crumbs=crumbs or [])


def _cross_html(rows: list[dict[str, Any]]) -> str:
    out = []
    for name in dict.fromkeys(r["_table"] for r in rows):
        sub = [r for r in rows if r["_table"] == name]
        cols = [c for c in sub[0] if c != "_table" and c != "raw_output"]
        head = [th(esc(c), kind="text", cls="s") for c in cols]
        body = [
            "<tr>"
            + "".join(f'<td class="s">{esc(str(r.get(c)) if r.get(c) is not None else "")}</td>' for c in cols)
            + "</tr>"
            for r in sub
        ]
        out.append(f"<h3>{esc(name)}</h3>" + table(head, body))
        raws = [r for r in sub if r.get("raw_output")]
        if raws:
            out.append(
                "<details><summary>raw outputs</summary>"
                + "".join(f"<pre>{esc(str(r['raw_output']))}</pre>" for r in raws)
                + "</details>"
            )
    return "".join(out)


def view_command(sd: SystemData, task_id: str) -> str:
    """The command that renders a task's sample page on demand (`reportbench view`, site/cli.py)."""
    return (
        f"reportbench view -b {shlex.quote(sd.benchmark)} -s {shlex.quote(sd.system)} -t {shlex.quote(task_id)}"
        f" --release {shlex.quote(sd.release)}"  # still right once params.yaml plans another release
    )


def unrendered_note(sd: SystemData, rendered: set[str] | None) -> str:
    """One line above a system's task table when some tasks have no sample page here: how many, and how to get
    one (never silently missing)."""
    if rendered is None:
        return ""
    tids = sd.task_ids
    missing = sum(1 for t in tids if t not in rendered)
    if not missing:
        return ""
    return (
        f'<p class="note">Sample pages written for {len(tids) - missing:,} of {len(tids):,} tasks (the site stage\'s '
        f"<code>--max-samples</code>); every task is listed below, and each of the other {missing:,} renders on "
        f"demand: <code>{esc(view_command(sd, '<task>'))}</code>.</p>"
    )


def render_system_page(
    sd: SystemData,
    metrics: list[str],
    metric_info: Mapping[str, Any],
    *,
    release: Any | None = None,
    crumbs: list[tuple[str, str | None]] | None = None,
    rendered: set[str] | None = None,
    board_row: Mapping[str, Any] | None = None,
    board_src: str = "",
) -> str:
    """Tasks × metrics for one system: each cell the per-task value and its status, each row linking to the
    task's sample page; `#m-<metric>` (the leaderboard's cell links) highlights and sorts that column.
    `board_row` (the system's leaderboard.json row, `board_src` its file#pointer) adds the leaderboard's values
    as the last row, so the drill-down and the leaderboard show the same number."""
    head = [
        th("task", kind="text", cls="s"),
        th("title", kind="text", cls="s"),
        th("outcome", kind="text", cls="s"),
        th("judgments"),
        th("failed judgments"),
    ]
    for m in metrics:
        info = metric_info.get(m) or {}
        arrow = "↑" if info.get("higher_is_better", True) else "↓"
        head.append(
            f'<th data-kind="num" data-metric="{esc(m)}" title="{esc(str(info.get("description", "")))}">'
            f"{esc(str(info.get('label', m)))} {arrow}</th>"
        )
    # a metric whose only row is the system's (task `*`, e.g. ResearchQA's Elo) has no per-task value: said so
    system_level = {str(r.get("metric")) for r in sd.scores.get("*", [])}
    body = []
    for tid in sd.task_ids:
        rows = {str(r.get("metric")): r for r in sd.scores.get(tid, [])}
        js = sd.judgments.get(tid, [])
        n_failed = sum(1 for j in js if j.get("status") == "failed")
        title = ""
        if release is not None:
            try:
                title = release.task(tid).title
            except Exception:  # noqa: BLE001
                title = ""
        outcome = sd.outcomes.get(tid, {})
        st = str(outcome.get("status") or "")
        flags = outcome.get("flags") or []
        evidence = flag_evidence(sd, tid, sd.reports.get(tid) if report_adds_evidence(sd, tid, flags) else None)
        link = (
            f'<a href="{esc(task_file(tid))}">{esc(tid)}</a>'
            if rendered is None or tid in rendered
            else f'{esc(tid)} <span class="note">(no page here: <code>{esc(view_command(sd, tid))}</code>)</span>'
        )
        cells = [
            f'<td class="s" data-sort="{esc(tid)}">{link}</td>',
            f'<td class="s">{esc(title[:80])}</td>',
            f'<td class="s"><span class="badge {"ok" if st == "ok" else "bad"}">{esc(st)}</span>'
            + "".join(
                f' <span class="badge bad" title="{esc(evidence[str(f)][0][:300]) if str(f) in evidence else ""}">'
                f"{esc(str(f))}</span>"
                for f in flags
            )
            + "</td>",
            f'<td data-sort="{len(js)}">{len(js)}</td>',
            f'<td data-sort="{n_failed}"{" class=fail" if n_failed else ""}>{n_failed}</td>',
        ]
        for m in metrics:
            r = rows.get(m)
            if r is None:
                short, why = (("system-level", "computed for the system as a whole, not per task: its value is the "
                               "leaderboard row below") if m in system_level
                              else ("no row", "the score table has no row for this task and metric"))
                cells.append(f'<td data-metric="{esc(m)}" data-sort="" title="{esc(why)}">'
                             f'<span class="na">— {esc(short)}</span></td>')
                continue
            v, status = r.get("value"), _row_status(r)
            code = missing_code(r) if status in ("no_report", "nothing_to_score") else status
            if status == "ok":
                extra = ""
            elif is_number(v):  # what the protocol scores a missing report (0), with the reason: never a bare 0
                extra = f' <span class="cnt {"fail" if code == "system_failed" else ""}">— {esc(code)}</span>'
            else:
                extra = f'<span class="cnt {"fail" if code in ("failed", "system_failed") else ""}">{esc(code)}</span>'
            reason = esc(str(r.get("reason") or ""))
            shown = esc(_value(v)) if is_number(v) else "— "  # undefined: "— code", never a bare NaN
            cells.append(
                f'<td data-metric="{esc(m)}" data-sort="{sort_value(v)}" title="{reason}">{shown}{extra}</td>'
            )
        body.append(f"<tr>{''.join(cells)}</tr>")
    foot_rows = []
    # its variant tag next to its name (agents.variant: how it departs from the agent as published)
    heading_name = system_label(sd.system, (board_row or {}).get("variant"))
    if board_row is not None:  # the leaderboard's value under each column: the same number, traced to its file
        foot = [
            '<td class="s"><b>leaderboard</b></td>',
            '<td class="s" colspan="4">the value on the leaderboard: the mean of the values above over the tasks '
            "with a defined value (a metric averaged per group: the mean of its group means)</td>",
        ]
        for m in metrics:
            v = (board_row.get("metrics") or {}).get(m)
            why = (board_row.get("undefined_reason") or {}).get(m) or "undefined"
            src = board_src + pointer("metrics", m)
            shown = num(v, src, 3) if is_number(v) else f'<span class="na">— {esc(why)}</span>'
            foot.append(f'<td data-metric="{esc(m)}" data-sort="{sort_value(v)}">{shown}</td>')
        foot_rows.append(f'<tr class="board">{"".join(foot)}</tr>')
    intro = (
        f'<h1>{esc(heading_name)} <span class="note">{esc(sd.benchmark)} · {esc(sd.release)}</span></h1>'
        '<p class="note">Per-task values behind the leaderboard: the leaderboard value of a column (last row) is '
        "the mean over its tasks with a defined value. A task without a report holds what the protocol scores it: "
        "“0 — no_report” where the protocol scores a missing report 0 (it counts in the mean), “— no_report” where "
        "it leaves it undefined (left out); “system_failed” when the system itself failed on the task. failed = a "
        "judgment failed: NaN, excluded, never 0. Click a task for its report and judgments.</p>"
    )
    problems = ('<div class="warn">' + "<br>".join(esc(p) for p in sd.problems[:10]) + "</div>") if sd.problems else ""
    unattributed = ""
    if sd.unattributed:
        unattributed = f"<h2>Judgments naming no task ({len(sd.unattributed)})</h2>" + "".join(
            render_judgment(n, r, None) for n, r in enumerate(sd.unattributed[:200])
        )
    return page(
        f"{sd.benchmark} · {sd.release} · {heading_name}",
        intro + unrendered_note(sd, rendered) + problems + table(head, body, id_="tasks", foot=foot_rows)
        + render_mapping(sd.mapping)
        + render_check(sd.check)
        + unattributed,
        crumbs=crumbs or [],
    )


RECORDED = "recorded by the system stage's check"
REDETECTED = "re-detected from the parsed report (the run's check.json has none)"


def flag_evidence(sd: SystemData, task_id: str, report: Any | None) -> dict[str, tuple[str, str]]:
    """flag -> (the text that triggered it, where that excerpt comes from), for one task's report.

    Why: a badge alone ("refusal") cannot be checked; the excerpt can. The system stage's check.json records
    the detector's excerpt at run time; a run without one (older, or `shift_check: off`) gets the excerpt
    re-detected from the stored parsed report, and says so. Judge-directed / hidden text: the parser warning
    that names the flag (it quotes what was removed)."""
    out: dict[str, tuple[str, str]] = {}
    recorded = (sd.check.get("evidence") or {}).get(task_id)
    if isinstance(recorded, Mapping):
        out.update({str(f): (str(t), RECORDED) for f, t in recorded.items() if t})
    m = _mismatches(sd).get(task_id)  # `mapping_suspect`: the shifted-mapping check's verdict
    if m is not None:
        why = (
            f"the report matches task {m.get('best_task')}'s question better than its own "
            f"(BM25 {fmt_number(m.get('best'))} vs {fmt_number(m.get('own'))})"
        )
        out.setdefault("mapping_suspect", (why, RECORDED))
    if report is None:
        return out
    if not isinstance(recorded, Mapping):
        from reportbench.reports.refusal import detect_report  # lazy: +102 ms to import (python -X importtime)

        try:
            out.update({na.flag: (na.evidence, REDETECTED) for na in detect_report(report)})
        except Exception as exc:  # noqa: BLE001 - an untrusted report never breaks its page
            sd.problems.append(f"{task_id}: flag evidence not re-detected ({type(exc).__name__}: {exc})"[:400])

    for w in report.warnings:
        if w.startswith(WARNING_PREFIX):
            for f in flags_from_warnings([w]):
                out.setdefault(f, (w, "the parser's warning"))
    return out


def _mismatches(sd: SystemData) -> dict[str, Mapping[str, Any]]:
    """task -> the shift check's first verdict naming it, indexed once per system: a scan of the verdicts per
    task was quadratic when most tasks are flagged (a release whose reports match other tasks' questions)."""
    shift = sd.check.get("shift") if isinstance(sd.check.get("shift"), Mapping) else {}
    verdicts = shift.get("mismatched") or []
    memo = sd.memo.get("mismatches")
    if memo is None or memo[0] is not verdicts:
        index: dict[str, Mapping[str, Any]] = {}
        for m in verdicts:
            if isinstance(m, Mapping):
                index.setdefault(str(m.get("task_id")), m)
        memo = sd.memo["mismatches"] = (verdicts, index)
    return memo[1]


def report_adds_evidence(sd: SystemData, task_id: str, flags: Iterable[Any]) -> bool:
    """Whether parsing the task's report could change the excerpt `flag_evidence` gives one of `flags`: only for a
    flag the records (check.json's evidence, the shift check's verdicts) leave without one. The report's own
    sources (re-detection, the parser's warnings) only fill flags left open (a recorded excerpt is never replaced:
    re-detection runs only without a record and never yields `mapping_suspect`), so a system page whose flagged
    tasks all have recorded excerpts parses none of their reports."""
    covered = flag_evidence(sd, task_id, None)
    return any(str(f) not in covered for f in flags)


def render_flags(flags: Iterable[Any], evidence: Mapping[str, tuple[str, str]]) -> str:
    """Each flag's badge with the excerpt that triggered it (escaped: report text is untrusted)."""
    items = []
    for f in flags:
        got = evidence.get(str(f))
        what = (
            f'<q class="evidence">{esc(got[0][:300])}</q> <span class="note">({esc(got[1])})</span>'
            if got
            else '<span class="note">(no excerpt recorded for this flag)</span>'
        )
        items.append(f'<li><span class="badge bad">{esc(str(f))}</span> {what}</li>')
    return f'<ul class="flags">{"".join(items)}</ul>'


def render_check(check: Mapping[str, Any]) -> str:
    """The system stage's check: reports flagged as refusal / plan / not found / no references, and warnings."""
    flagged = check.get("flagged") or {}
    warnings = [str(w) for w in check.get("warnings") or []]
    if not flagged and not warnings:
        return ""
    items = "".join(f"<li><b>{esc(str(f))}</b>: {esc(', '.join(map(str, t)))}</li>" for f, t in flagged.items())
    items += "".join(f"<li>{esc(w)}</li>" for w in warnings[:50])
    summary = f"Check ({len(flagged)} flag kinds, {len(warnings)} warnings)"
    return f"<details><summary>{summary}</summary><ul>{items}</ul></details>"


def render_mapping(rows: list[dict[str, Any]]) -> str:
    """The folder system's mapping table (file -> task, the rule that matched or why not; docs/mapping.md)."""
    if not rows:
        return ""
    head = [th(esc(c), kind="text", cls="s") for c in ("file", "status", "task", "rule or reason")]
    body = [
        f'<tr><td class="s"><code>{esc(str(r.get("file", "")))}</code></td>'
        f'<td class="s"><span class="badge {"ok" if r.get("status") == "mapped" else "bad"}">'
        f'{esc(str(r.get("status", "")))}</span></td><td class="s">{esc(str(r.get("task_id") or "—"))}</td>'
        f'<td class="s">{esc(str(r.get("rule") or r.get("reason") or ""))}</td></tr>'
        for r in rows
    ]
    n_bad = sum(1 for r in rows if r.get("status") != "mapped")
    return (
        f"<details{' open' if n_bad else ''}><summary>Files → tasks ({len(rows)} files, {n_bad} not mapped)"
        "</summary>" + table(head, body, id_="mapping") + "</details>"
    )


def render_text(sd: SystemData, task_id: str) -> str:
    """A plain-text view for the terminal (`reportbench view --text`)."""
    lines = [f"{sd.benchmark} / {sd.release} / {sd.system} / {task_id}"]
    o = sd.outcomes.get(task_id, {})
    lines.append(f"outcome: {o.get('status')} {o.get('reason') or ''} {' '.join(o.get('flags') or [])}".rstrip())
    evidence = flag_evidence(sd, task_id, sd.reports.get(task_id))
    for f in o.get("flags") or []:
        if str(f) in evidence:
            text, source = evidence[str(f)]
            lines.append(f"  {f}: {text[:300]!r} ({source})")
    for r in sd.scores.get(task_id, []):
        lines.append(
            f"  {r.get('metric')}: {_value(r.get('value'))} [{_row_status(r)}] {r.get('reason') or ''}".rstrip()
        )
    lines += render_claims_text(sd.ledger.claims.get(task_id, []), sd.ledger)
    rep = sd.reports.get(task_id)
    if rep is not None:
        lines.append("")
        lines.append(f"report ({rep.format}, {len(rep.sentences)} sentences, unresolved: {rep.unresolved_citations})")
        for s in rep.sentences:
            keys = ",".join(s.citation_keys)
            lines.append(f"  s{s.index}: {s.text}" + (f"  -> [{keys}]" if keys else ""))
        for k, src in rep.sources.items():
            lines.append(f"  [{k}] {src.title or src.raw or ''} {src.url or ''}".rstrip())
    lines.append("")
    for n, j in enumerate(sd.judgments.get(task_id, [])):
        lines.append(
            f"j{n} {j['_step']}/{j['_member']} {j.get('status')} label={j.get('label')} "
            f"value={_value(j.get('value'))} judge={j.get('judge_id')} prompt={j.get('prompt_id')} "
            f"ids={json.dumps(j['_ids'], sort_keys=True)}"
        )
        if j.get("error"):
            lines.append(f"    failure: {j['error']}")
        if j.get("explanation"):
            lines.append(f"    why: {str(j['explanation'])[:300]}")
    return "\n".join(lines) + "\n"


def _cost(v: object) -> str:
    """A judge call's cost: unknown (null: no price for the model) is "—", never $0.0000."""
    return "cost —" if v is None or not isinstance(v, int | float) else f"${float(v):.4f}"
