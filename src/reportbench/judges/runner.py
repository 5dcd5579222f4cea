"""Run a Judge over many items, write/read judgments as parquet, and summarise usage.

- Fan-out: a fixed pool of workers pulls items (memory stays flat for 100k items); the judge's client
  bounds in-flight HTTP calls, so the pool is only slightly larger than that bound (cache hits and
  parsing run while others wait on the network). Output order = input order, always.
- Every item ends as exactly one Judgment: an unexpected exception becomes a failed record with the
  reason (`internal: ...`), never a crashed stage that loses finished work.
- Except fatal errors (errors.py: auth, model_not_found, quota, and context_length before any call got
  through): after `runtime.fatal_after` (default 3) identical ones the rest is cancelled and
  `FatalJudgeError` is raised with one line naming judge, model, kind and fix. Answers already fetched
  are in the response cache, so the rerun after the fix does not pay for them again.
- Parquet with a fixed schema (dicts as JSON strings) so the offline and litellm backends write
  byte-compatible tables that `aggregate`/`calibrate` read without caring who judged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl
from tqdm import tqdm

from reportbench.judges.base import Judge, JudgeInput, Judgment
from reportbench.judges.errors import DEFAULT_FATAL_AFTER, FatalError, FatalTripwire, fatal_error, observe_judgment

Item = tuple[str, JudgeInput, dict[str, str]]

JUDGMENT_SCHEMA: dict[str, Any] = {
    "task": pl.String,
    "item_id": pl.String,
    "input_ids": pl.String,  # JSON object
    "judge_id": pl.String,
    "member": pl.String,
    "model": pl.String,
    "prompt_id": pl.String,
    "prompt_hash": pl.String,
    "status": pl.String,
    "value": pl.Float64,
    "label": pl.String,
    "parsed": pl.String,  # JSON (as produced by base.dump_parsed)
    "explanation": pl.String,
    "raw_output": pl.String,
    "error": pl.String,
    "prompt_tokens": pl.Int64,
    "completion_tokens": pl.Int64,
    "cost_usd": pl.Float64,
    "latency_s": pl.Float64,
    "cache_hit": pl.Boolean,
    "attempts": pl.Int64,
}
if set(JUDGMENT_SCHEMA) != set(Judgment.model_fields):  # a field added to Judgment must be added here
    raise RuntimeError(
        "JUDGMENT_SCHEMA out of sync with Judgment: "
        f"{sorted(set(JUDGMENT_SCHEMA) ^ set(Judgment.model_fields))}"
    )


class JudgmentRun(list[Judgment]):
    """The judgments of one run, in input order, plus the run's wall time (for usage_summary)."""

    wall_s: float | None = None


def _failed(judge: Judge, item_id: str, input_ids: dict[str, str], task: str, exc: BaseException) -> Judgment:
    return Judgment(
        task=task,
        item_id=item_id,
        input_ids=dict(input_ids),
        judge_id=getattr(judge, "judge_id", "unknown"),
        model=getattr(getattr(judge, "cfg", None), "model", None),
        status="failed",
        error=f"internal: {type(exc).__name__}: {exc}"[:1000],
    )


def _task_name(judge: Judge) -> str:
    task = getattr(judge, "task", None)
    return str(getattr(task, "name", task or "unknown"))


async def run_judgments(
    judge: Judge,
    items: Iterable[Item],
    desc: str = "judge",
    *,
    concurrency: int | None = None,
    progress: bool | None = None,
    fatal_after: int | None = None,
    judge_name: str | None = None,
) -> JudgmentRun:
    """Judge every item concurrently; returns one Judgment per item in input order.

    Raises `errors.FatalJudgeError` after `fatal_after` (default: the judge's `runtime.fatal_after`, else
    3; 0 = never) identical fatal failures; `judge_name` (default: the config's `name`) is for its message.
    """
    todo: Sequence[Item] = items if isinstance(items, Sequence) else list(items)
    n = len(todo)
    bound = concurrency or int(getattr(judge, "max_concurrency", 64) or 64)
    workers = max(1, min(n, bound + max(8, bound // 4)))
    show = getattr(judge, "progress", True) if progress is None else progress
    results: list[Judgment | None] = [None] * n
    task_name = _task_name(judge)
    bar = tqdm(
        total=n,
        desc=desc,
        file=sys.stderr,
        disable=not show or n == 0,
        unit="item",
        dynamic_ncols=True,
        mininterval=0.5,
    )
    next_index = 0
    t0 = time.perf_counter()
    cfg = getattr(judge, "cfg", None)
    if fatal_after is None:
        fatal_after = getattr(getattr(cfg, "runtime", None), "fatal_after", DEFAULT_FATAL_AFTER)
    wire = FatalTripwire(int(fatal_after if fatal_after is not None else DEFAULT_FATAL_AFTER))
    tasks: list[asyncio.Task[None]] = []

    async def worker() -> None:
        nonlocal next_index
        while next_index < n and wire.tripped is None and getattr(judge, "local_fatal", None) is None:
            i = next_index
            next_index += 1
            item_id, inputs, input_ids = todo[i]
            try:
                results[i] = await judge(item_id, inputs, input_ids)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - one bad item must not lose the others
                results[i] = _failed(judge, item_id, input_ids, task_name, exc)
            bar.update(1)
            if observe_judgment(wire, results[i]):
                me = asyncio.current_task()
                for t in tasks:  # nothing else can succeed: stop paying for calls now
                    if t is not me:
                        t.cancel()

    try:
        tasks.extend(asyncio.ensure_future(worker()) for _ in range(workers))
        done = await asyncio.gather(*tasks, return_exceptions=True)
        if wire.tripped is None:
            for outcome in done:
                if isinstance(outcome, BaseException):
                    raise outcome
    finally:
        for t in tasks:
            t.cancel()
        if wire.tripped is not None:
            bar.leave = False  # the error line replaces the bar
        bar.close()
    return _finished(judge, cfg, judge_name, wire, results, t0)


def run_computed(
    judge: Judge,
    items: Iterable[Item],
    desc: str = "judge",
    *,
    concurrency: int | None = None,
    progress: bool | None = None,
    fatal_after: int | None = None,
    judge_name: str | None = None,
) -> JudgmentRun:
    """`run_judgments` for a judge whose `judge_now(item_id, inputs, input_ids)` computes the Judgment without
    awaiting (the offline judge): the same records in the same order, the same failure handling (an exception is a
    failed record with its reason; the fatal tripwire and `local_fatal` stop the run), without the event loop,
    the worker tasks and an awaited call per item (~40 µs per judgment at 1,000 tasks, bench/judge_overhead.py).
    Awaiting such a judge never yields, so `run_judgments` judged its items one after another in input order too.
    `concurrency` is accepted for the same signature and has nothing to bound here."""
    del concurrency
    todo: Sequence[Item] = items if isinstance(items, Sequence) else list(items)
    n = len(todo)
    judge_now = judge.judge_now  # type: ignore[attr-defined]
    show = getattr(judge, "progress", True) if progress is None else progress
    task_name = _task_name(judge)
    results: list[Judgment | None] = [None] * n
    cfg = getattr(judge, "cfg", None)
    if fatal_after is None:
        fatal_after = getattr(getattr(cfg, "runtime", None), "fatal_after", DEFAULT_FATAL_AFTER)
    wire = FatalTripwire(int(fatal_after if fatal_after is not None else DEFAULT_FATAL_AFTER))
    bar = tqdm(total=n, desc=desc, file=sys.stderr, disable=not show or n == 0, unit="item", dynamic_ncols=True,
               mininterval=0.5)  # fmt: skip
    t0 = time.perf_counter()
    try:
        for i, (item_id, inputs, input_ids) in enumerate(todo):
            if wire.tripped is not None or getattr(judge, "local_fatal", None) is not None:
                break
            try:
                result = judge_now(item_id, inputs, input_ids)
            except Exception as exc:  # noqa: BLE001 - one bad item must not lose the others
                result = _failed(judge, item_id, input_ids, task_name, exc)
            results[i] = result
            bar.update(1)
            observe_judgment(wire, result)
    finally:
        if wire.tripped is not None:
            bar.leave = False  # the error line replaces the bar
        bar.close()
    return _finished(judge, cfg, judge_name, wire, results, t0)


def _finished(
    judge: Judge, cfg: Any, judge_name: str | None, wire: FatalTripwire, results: list[Judgment | None], t0: float
) -> JudgmentRun:
    """The run's records, or the fatal error that stopped it (carrying what it judged): how both runners end."""
    local_fatal = getattr(judge, "local_fatal", None)
    if isinstance(local_fatal, BaseException):  # e.g. the cache disk is full: no retry or later item fixes it
        raise _with_judgments(local_fatal, results, t0)
    if wire.tripped is not None:
        kind = wire.tripped
        raise _with_judgments(
            fatal_error(
                kind,
                name=judge_name or getattr(cfg, "name", None),
                cfg=cfg if cfg is not None else {"model": getattr(judge, "judge_id", None)},
                reason=wire.first_reason.get(kind, ""),
                count=wire.counts[kind],
            ),
            results,
            t0,
        )
    run = JudgmentRun(r for r in results if r is not None)
    run.wall_s = time.perf_counter() - t0
    return run


def _with_judgments(exc: BaseException, results: list[Judgment | None], t0: float) -> BaseException:
    """`exc` carrying what the run got before it stopped (`FatalError.judgments`): the stage writes its usage."""
    if isinstance(exc, FatalError):
        stopped = JudgmentRun(r for r in results if r is not None)
        stopped.wall_s = time.perf_counter() - t0
        exc.judgments = stopped
    return exc


def run_judgments_sync(
    judge: Judge, items: Iterable[Item], desc: str = "judge", **kwargs: Any
) -> JudgmentRun:
    """Sync wrapper: `asyncio.run`, or a helper thread when called from inside a running loop. A judge that
    computes without awaiting (it has `judge_now`: the offline judge) is run in a plain loop instead."""
    if callable(getattr(judge, "judge_now", None)):
        return run_computed(judge, items, desc, **kwargs)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_judgments(judge, items, desc, **kwargs))
    box: list[JudgmentRun | BaseException] = []

    def _target() -> None:
        try:
            box.append(asyncio.run(run_judgments(judge, items, desc, **kwargs)))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box.append(exc)

    t = threading.Thread(target=_target, name="reportbench-judge-run")
    t.start()
    t.join()
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


# ------------------------------------------------------------------------------------------------
# Parquet I/O
# ------------------------------------------------------------------------------------------------


# what json.dumps(..., sort_keys=True, ensure_ascii=False) builds anew at every call (non-default arguments)
_INPUT_IDS_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False)


def judgments_frame(judgments: Iterable[Judgment]) -> pl.DataFrame:
    """Judgments as a DataFrame with the fixed JUDGMENT_SCHEMA (input_ids serialised as JSON). Built column by
    column from the fields (every field is a scalar but input_ids): no dict per judgment (`model_dump`)."""
    todo = judgments if isinstance(judgments, Sequence) else list(judgments)
    columns: dict[str, list[Any]] = {}
    for name in JUDGMENT_SCHEMA:
        if name == "input_ids":
            encode = _INPUT_IDS_JSON.encode  # json.dumps(ids, sort_keys=True, ensure_ascii=False), one encoder
            columns[name] = [encode(j.input_ids) for j in todo]
        else:
            columns[name] = [getattr(j, name) for j in todo]
    return pl.DataFrame(columns, schema=JUDGMENT_SCHEMA)


def write_judgments(path: str | Path, judgments: Iterable[Judgment]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        try:
            judgments_frame(judgments).write_parquet(tmp)
            with open(tmp, "rb") as fh:  # a file object: polars would read `[` `]` in a path as a glob
                pl.read_parquet_schema(fh)  # a write cut short by a full disk leaves no valid footer
        except (OSError, pl.exceptions.PolarsError) as exc:
            raise _write_failed(path, exc) from None
        tmp.replace(path)  # atomic: a crashed stage never leaves half a file for DVC to hash
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _write_failed(path: Path, exc: BaseException) -> FatalError:
    """One line for a judgments file that could not be written (a full disk, a read-only folder)."""
    free = ""
    with contextlib.suppress(OSError):
        free = f"; {shutil.disk_usage(path.parent).free // 1024**2} MiB free there"
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0][:200]
    return FatalError(f"cannot write {path}: {reason}{free}. Free disk space and rerun the stage.")


def read_judgments(path: str | Path) -> list[Judgment]:
    """Every record of a judgments file, as Judgments (`read_judgment_records`, all built)."""
    return list(read_judgment_records(path))


def read_judgment_records(path: str | Path) -> JudgmentRecords:
    """A judgments file's records kept as its columns, each built as a Judgment when read (JudgmentRecords)."""
    try:
        df = pl.read_parquet(path, glob=False)
    except pl.exceptions.PolarsError as exc:
        raise FatalError(
            f"{path} is damaged or truncated (was the disk full when it was written?): "
            f"{str(exc).splitlines()[0][:200]}; rerun the stage that writes it"
        ) from None
    return JudgmentRecords(df)


def _judgment(row: dict[str, Any]) -> Judgment:
    row["input_ids"] = json.loads(row["input_ids"]) if row.get("input_ids") else {}
    return Judgment.model_validate(row)


class JudgmentRecords(Sequence[Judgment]):
    """One judgments file's records as columns (a polars frame), a Judgment built for each record only when it is
    read, and dropped by the reader: the same Judgments, in the stored order, as `read_judgments` gives.

    Why: `score@` held a system's judgment records as validated pydantic objects (~36 KB a LiveResearchBench-shaped
    task, ~540 MB at 5,000 × 3 members' steps, issue 36); as columns they are their bytes. `n_ok` counts from the
    status column and `rows_by(key)` groups row positions by an input id, so a score can look a task's records up
    (`at`) without building the others."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __len__(self) -> int:
        return self.frame.height

    def __iter__(self) -> Any:
        for row in self.frame.iter_rows(named=True):
            yield _judgment(row)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [_judgment(r) for r in self.frame[index].iter_rows(named=True)]
        n = self.frame.height
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(index)
        return _judgment(self.frame.row(i, named=True))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Any) -> list[Judgment]:
        return list(self) + list(other)

    def n_ok(self) -> int:
        """How many records are ok (`Judgment.ok`), from the status column."""
        return int((self.frame["status"] == "ok").sum()) if self.frame.height else 0

    def rows_by(self, key: str) -> dict[Any, list[int]]:
        """input id `key`'s value -> the positions of its records, in stored order (None: records without it)."""
        out: dict[Any, list[int]] = {}
        if not self.frame.height:
            return out
        for i, ids in enumerate(self.frame["input_ids"].to_list()):
            out.setdefault(json.loads(ids).get(key) if ids else None, []).append(i)
        return out

    def at(self, positions: Sequence[int]) -> list[Judgment]:
        """The records at `positions`, built, in that order."""
        if not positions:
            return []
        return [_judgment(r) for r in self.frame[list(positions)].iter_rows(named=True)]


# ------------------------------------------------------------------------------------------------
# Usage
# ------------------------------------------------------------------------------------------------


def reason_class(error: str | None) -> str:
    """Failure class of an error: 'call: rate_limit: ..' -> 'call/rate_limit', 'parse: ..' -> 'parse',
    'internal: X: ..' -> 'internal/X'."""
    if not error:
        return "unknown"
    head, _, rest = error.partition(":")
    head = head.strip()
    if head in ("call", "internal"):
        sub = rest.strip().partition(":")[0].strip()
        return f"{head}/{sub}" if sub else head
    return head


def usage_summary(judgments: Sequence[Judgment], wall_s: float | None = None) -> dict[str, Any]:
    """Calls, cache hits, failures by reason class, tokens and spend of one run.

    `cost_usd` sums the known cost of answers fetched in this run (cache hits cost nothing now; their
    original cost is `cost_usd_cached`), or is None when answers came back and none had a price;
    `calls_unknown_cost` counts items that got an answer with no price (failed calls that got no answer
    are not billed and not counted).
    """
    fetched = [j for j in judgments if not j.cache_hit]
    failures = Counter(reason_class(j.error) for j in judgments if not j.ok)
    known = [j.cost_usd for j in fetched if j.cost_usd is not None]
    wall = wall_s if wall_s is not None else getattr(judgments, "wall_s", None)
    unpriced = sum(1 for j in fetched if j.cost_usd is None and (j.ok or j.raw_output is not None))
    return {
        "items": len(judgments),
        "ok": sum(1 for j in judgments if j.ok),
        "failed": sum(failures.values()),
        "failures": dict(sorted(failures.items())),
        "cache_hits": sum(1 for j in judgments if j.cache_hit),
        "calls": sum(j.attempts for j in fetched),
        "prompt_tokens": sum(j.prompt_tokens or 0 for j in fetched),
        "completion_tokens": sum(j.completion_tokens or 0 for j in fetched),
        # unknown is not free: with answers but no price at all the cost is null ("—"), never $0.0000
        "cost_usd": None if unpriced and not known else math.fsum(known),
        "calls_unknown_cost": unpriced,
        "cost_usd_cached": math.fsum(j.cost_usd for j in judgments if j.cache_hit and j.cost_usd is not None),
        "wall_s": wall,
    }


def format_usage(summary: dict[str, Any]) -> str:
    """One line for logs, e.g. '200 items: 198 ok, 2 failed (call/timeout=2); 150 cache hits; ...'."""
    fails = ", ".join(f"{k}={v}" for k, v in summary["failures"].items())
    wall = summary.get("wall_s")
    parts = [
        f"{summary['items']} items: {summary['ok']} ok, {summary['failed']} failed"
        + (f" ({fails})" if fails else ""),
        f"{summary['cache_hits']} cache hits",
        f"{summary['calls']} calls",
        f"{summary['prompt_tokens']}+{summary['completion_tokens']} tokens",
        ("cost unknown" if summary["cost_usd"] is None else f"${summary['cost_usd']:.4f}")
        + (f" (+{summary['calls_unknown_cost']} unpriced)" if summary["calls_unknown_cost"] else ""),
    ]
    if wall is not None:
        parts.append(f"{wall:.1f}s wall")
    return "; ".join(parts)
