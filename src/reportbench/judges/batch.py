"""Batch mode: every uncached call of a judge stage goes to the provider's batch API at half the price.

`judge.runtime.mode: batch` swaps the judge's client for `BatchClient`. Everything above the client is the
online path unchanged: the judge renders, looks in the response cache (same keys), calls `complete`, parses
strictly and stores what parsed, so a batch answer lands in the same cache under the same key and a later
online run is free. Only `complete` differs: requests are *collected* (the runner puts every item in flight at
once in batch mode), submitted as one batch once no new request arrived for `batch.quiet_s`, and each caller
waits for its line.

Why direct HTTP and not litellm's `create_batch`: litellm 1.106's batch helpers cover OpenAI/Azure/Vertex but
not Anthropic's message batches, import litellm (3.5 s), and hide the file/line details we need for failure
records; the documented endpoints are small (OpenAI: `POST /files`, `POST /batches`, `GET /batches/{id}`,
`GET /files/{id}/content`; Anthropic: `POST /v1/messages/batches`, `GET .../{id}`, `GET .../{id}/results`).

Crash safety. Every submitted batch id and its lines (custom id = digest of the request body, the body itself)
are written to `batches.sqlite` next to the response cache in the same transaction that follows the create
call, before any polling. A rerun after `kill -9` renders the same requests, finds their custom ids in a batch
that is still open, and polls it instead of resubmitting. Results are stored per line as soon as a batch ends,
so a crash after the download re-reads them without a network call.

Partial failure. A line the provider answered with an error (`batch_failed`), or did not reach before the
batch expired (`batch_expired`), becomes that item's failure record (`call: batch_expired: ...`); it is never
cached, so the next run of the stage resubmits exactly those lines (`reportbench batch retry` resubmits them at
once, from the stored bodies, without waiting for the stage; `reportbench batch status` lists batches).
A parse failure of a batch answer re-asks in a new batch, as the online path re-asks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from reportbench.judges.budgets import is_cut
from reportbench.judges.client import (
    _STUB_PLACEHOLDER_KEY,
    BUDGET,
    CallFailed,
    ClientConfig,
    Completion,
    _is_loopback,
    canonical_digest,
    classify,
    redact,
)
from reportbench.judges.errors import FatalError
from reportbench.judges.fastpath import WithoutLitellm
from reportbench.judges.pricing import Price

log = logging.getLogger(__name__)

Provider = Literal["openai", "anthropic"]
TERMINAL_OPENAI = {"completed", "expired", "failed", "cancelled"}
DEFAULT_STATE_NAME = "batches.sqlite"

_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS batches (
        batch_id TEXT PRIMARY KEY,
        provider TEXT NOT NULL,
        base_url TEXT NOT NULL,
        model TEXT,
        status TEXT NOT NULL,
        n_lines INTEGER NOT NULL,
        input_file_id TEXT,
        output_file_id TEXT,
        error_file_id TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        collected INTEGER NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE IF NOT EXISTS lines (
        custom_id TEXT NOT NULL,
        batch_id TEXT NOT NULL,
        body TEXT NOT NULL,
        state TEXT NOT NULL,
        text TEXT,
        prompt_tokens INTEGER,
        completion_tokens INTEGER,
        error_kind TEXT,
        error TEXT,
        PRIMARY KEY (custom_id, batch_id)
    )""",
    "CREATE INDEX IF NOT EXISTS lines_by_custom_id ON lines (custom_id)",
]


# ------------------------------------------------------------------------------------------------
# Persistent state
# ------------------------------------------------------------------------------------------------


CUT_MARK = "length"
"""`error_kind` of an answered (`ok`) line whose answer hit its output budget (judges/budgets.py): stored in the
existing column, so the state file needs no new field."""


FIRST_POLL_WAIT_S = 0.25


def poll_waits(interval_s: float) -> Iterator[float]:
    """The waits between status checks: the first check is at once, then 0.25 s, doubling up to
    `poll_interval_s`, so a batch that ends in under a second (a small one, the stub) is collected then, a long one
    every interval. Against a first wait of 1 s this costs a long batch two more status checks and saved ~0.7 s
    per batch of an all-benchmark stub run (64 batches, one after another: ~48 s of one CI worker idle)."""
    wait = min(FIRST_POLL_WAIT_S, interval_s)
    while True:
        yield wait
        wait = min(wait * 2, interval_s)


async def poll_sleep(seconds: float) -> None:
    """One wait between status checks (its own name so a test can count the waits)."""
    await asyncio.sleep(seconds)


@dataclass(frozen=True)
class LineResult:
    """One line's outcome as stored: `ok` with text and usage, or `failed` with kind and reason."""

    custom_id: str
    batch_id: str
    state: str
    text: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    error_kind: str | None
    error: str | None


class BatchState:
    """Batch ids, their lines and per-line results in sqlite (WAL; safe across processes)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=60.0, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=60000")
        for stmt in _SCHEMA:
            self._db.execute(stmt)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def record_batch(
        self,
        batch_id: str,
        *,
        provider: str,
        base_url: str,
        model: str,
        status: str,
        input_file_id: str | None,
        lines: Mapping[str, str],
    ) -> None:
        """Persist a just-created batch and its lines (custom id -> body JSON) in one transaction."""
        now = time.time()
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(
                    "INSERT OR REPLACE INTO batches (batch_id, provider, base_url, model, status, n_lines, "
                    "input_file_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (batch_id, provider, base_url, model, status, len(lines), input_file_id, now, now),
                )
                db.executemany(
                    "INSERT OR REPLACE INTO lines (custom_id, batch_id, body, state) VALUES (?, ?, ?, 'submitted')",
                    [(cid, batch_id, body) for cid, body in lines.items()],
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def update_batch(self, batch_id: str, **fields: Any) -> None:
        if not fields:
            return
        cols = ", ".join(f"{k} = ?" for k in fields)
        with self._lock:
            self._db.execute(
                f"UPDATE batches SET {cols}, updated_at = ? WHERE batch_id = ?",  # noqa: S608 - our column names
                (*fields.values(), time.time(), batch_id),
            )

    def store_results(self, batch_id: str, results: Iterable[LineResult], status: str) -> None:
        """Every line's outcome, and the batch marked collected, atomically."""
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(
                    "UPDATE lines SET state = ?, text = ?, prompt_tokens = ?, completion_tokens = ?, "
                    "error_kind = ?, error = ? WHERE custom_id = ? AND batch_id = ?",
                    [
                        (r.state, r.text, r.prompt_tokens, r.completion_tokens, r.error_kind, r.error,
                         r.custom_id, batch_id)
                        for r in results
                    ],
                )
                db.execute(
                    "UPDATE batches SET status = ?, collected = 1, updated_at = ? WHERE batch_id = ?",
                    (status, time.time(), batch_id),
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def answered(self, custom_id: str) -> LineResult | None:
        """The newest `ok` answer for a request, if any batch answered it."""
        with self._lock:
            row = self._db.execute(
                "SELECT l.custom_id, l.batch_id, l.state, l.text, l.prompt_tokens, l.completion_tokens, "
                "l.error_kind, l.error FROM lines l JOIN batches b USING (batch_id) "
                "WHERE l.custom_id = ? AND l.state = 'ok' ORDER BY b.created_at DESC LIMIT 1",
                (custom_id,),
            ).fetchone()
        return LineResult(*row) if row else None

    def open_batch(self, custom_id: str) -> str | None:
        """A submitted, not yet collected batch that holds this request (attach to it, never resubmit)."""
        with self._lock:
            row = self._db.execute(
                "SELECT b.batch_id FROM lines l JOIN batches b USING (batch_id) "
                "WHERE l.custom_id = ? AND b.collected = 0 ORDER BY b.created_at DESC LIMIT 1",
                (custom_id,),
            ).fetchone()
        return row[0] if row else None

    def result(self, custom_id: str, batch_id: str) -> LineResult | None:
        with self._lock:
            row = self._db.execute(
                "SELECT custom_id, batch_id, state, text, prompt_tokens, completion_tokens, error_kind, error "
                "FROM lines WHERE custom_id = ? AND batch_id = ?",
                (custom_id, batch_id),
            ).fetchone()
        return LineResult(*row) if row else None

    def batch(self, batch_id: str) -> dict[str, Any] | None:
        with self._lock:
            cur = self._db.execute("SELECT * FROM batches WHERE batch_id = ?", (batch_id,))
            row = cur.fetchone()
            names = [d[0] for d in cur.description]
        return dict(zip(names, row, strict=True)) if row else None

    def batches(self) -> list[dict[str, Any]]:
        with self._lock:
            cur = self._db.execute(
                "SELECT b.*, SUM(l.state = 'ok') AS ok, SUM(l.state = 'failed') AS failed, "
                "SUM(l.state = 'submitted') AS waiting FROM batches b LEFT JOIN lines l USING (batch_id) "
                "GROUP BY b.batch_id ORDER BY b.created_at"
            )
            names = [d[0] for d in cur.description]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def retryable(self) -> list[tuple[str, str, str, str, str]]:
        """(custom_id, body, provider, base_url, model) of failed lines no later batch answered or holds."""
        with self._lock:
            return self._db.execute(
                "SELECT l.custom_id, l.body, b.provider, b.base_url, b.model FROM lines l JOIN batches b "
                "USING (batch_id) WHERE l.state = 'failed' AND NOT EXISTS (SELECT 1 FROM lines l2 JOIN batches b2 "
                "USING (batch_id) WHERE l2.custom_id = l.custom_id AND (l2.state = 'ok' OR b2.collected = 0)) "
                "GROUP BY l.custom_id"
            ).fetchall()


# ------------------------------------------------------------------------------------------------
# Provider APIs (documented HTTP endpoints)
# ------------------------------------------------------------------------------------------------


def provider_of(model: str) -> Provider:
    prefix = model.split("/", 1)[0] if "/" in model else "openai"
    if prefix in ("openai", "anthropic"):
        return prefix  # type: ignore[return-value]
    raise FatalError(
        f"judge.runtime.mode=batch supports openai/... and anthropic/... models, not {model!r}: "
        "use judge.runtime.mode=online for this model"
    )


def wire_model(model: str) -> str:
    return model.split("/", 1)[1] if "/" in model else model


class _HTTPError(Exception):
    def __init__(self, status_code: int, body: str) -> None:
        super().__init__(f"HTTP {status_code}: {body[:300]}")
        self.status_code = status_code
        self.body = body


class BatchAPI:
    """The few batch endpoints of one provider, with a small retry loop for transient errors."""

    def __init__(self, provider: Provider, base_url: str, api_key: str | None, session: Any) -> None:
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.session = session

    @classmethod
    def base_for(cls, provider: Provider, api_base: str | None) -> str:
        if provider == "openai":
            return (api_base or "https://api.openai.com/v1").rstrip("/")
        base = (api_base or "https://api.anthropic.com").rstrip("/")
        return base.removesuffix("/v1")

    def _headers(self) -> dict[str, str]:
        if self.provider == "anthropic":
            h = {"anthropic-version": "2023-06-01"}
            if self.api_key:
                h["x-api-key"] = self.api_key
            return h
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    async def _call(self, method: str, url: str, *, raw: bool = False, **kwargs: Any) -> Any:
        delay = 1.0
        for attempt in range(6):
            try:
                async with self.session.request(method, url, headers=self._headers(), **kwargs) as resp:
                    body = await resp.read()
                    if resp.status >= 400:
                        raise _HTTPError(resp.status, body.decode("utf-8", "replace"))
                    return body if raw else json.loads(body)
            except Exception as exc:  # noqa: BLE001 - classify; retry only what a retry can fix
                kind, retryable = classify(exc)
                if not retryable or attempt == 5:
                    raise
                log.info("batch API %s %s: %s (retrying)", method, url, kind)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
        raise AssertionError("unreachable")

    # -- submit -----------------------------------------------------------------------------------

    async def submit(self, lines: Mapping[str, dict[str, Any]], completion_window: str) -> dict[str, Any]:
        """Create one batch from {custom_id: chat request body}; returns {'id', 'status', 'input_file_id'}."""
        if self.provider == "openai":
            import aiohttp

            jsonl = "".join(
                json.dumps({"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body}) + "\n"
                for cid, body in lines.items()
            ).encode("utf-8")
            form = aiohttp.FormData()
            form.add_field("purpose", "batch")
            form.add_field("file", jsonl, filename="reportbench-batch.jsonl", content_type="application/jsonl")
            uploaded = await self._call("POST", f"{self.base_url}/files", data=form)
            created = await self._call(
                "POST",
                f"{self.base_url}/batches",
                json={
                    "input_file_id": uploaded["id"],
                    "endpoint": "/v1/chat/completions",
                    "completion_window": completion_window,
                    "metadata": {"source": "reportbench"},
                },
            )
            return {"id": created["id"], "status": created.get("status", "validating"), "input_file_id": uploaded["id"]}
        requests = [{"custom_id": cid, "params": anthropic_params(body)} for cid, body in lines.items()]
        created = await self._call("POST", f"{self.base_url}/v1/messages/batches", json={"requests": requests})
        return {"id": created["id"], "status": created.get("processing_status", "in_progress"), "input_file_id": None}

    # -- poll -------------------------------------------------------------------------------------

    async def retrieve(self, batch_id: str) -> dict[str, Any]:
        """{'status', 'done', 'counts', 'output_file_id', 'error_file_id', 'results_url'}."""
        if self.provider == "openai":
            b = await self._call("GET", f"{self.base_url}/batches/{batch_id}")
            return {
                "status": b.get("status"),
                "done": b.get("status") in TERMINAL_OPENAI,
                "counts": b.get("request_counts") or {},
                "output_file_id": b.get("output_file_id"),
                "error_file_id": b.get("error_file_id"),
            }
        b = await self._call("GET", f"{self.base_url}/v1/messages/batches/{batch_id}")
        return {
            "status": b.get("processing_status"),
            "done": b.get("processing_status") == "ended",
            "counts": b.get("request_counts") or {},
            "results_url": b.get("results_url"),
        }

    async def results(self, batch_id: str, info: Mapping[str, Any]) -> tuple[list[LineResult], str]:
        """Every answered or failed line of an ended batch, and the batch's final status."""
        out: list[LineResult] = []
        if self.provider == "openai":
            for key in ("output_file_id", "error_file_id"):
                file_id = info.get(key)
                if not file_id:
                    continue
                data = await self._call("GET", f"{self.base_url}/files/{file_id}/content", raw=True)
                out += [openai_line(batch_id, json.loads(x)) for x in data.decode("utf-8").splitlines() if x.strip()]
            return out, str(info.get("status"))
        url = info.get("results_url") or f"{self.base_url}/v1/messages/batches/{batch_id}/results"
        data = await self._call("GET", url, raw=True)
        out = [anthropic_line(batch_id, json.loads(x)) for x in data.decode("utf-8").splitlines() if x.strip()]
        expired = any(r.error_kind == "batch_expired" for r in out)
        return out, "expired" if expired else "ended"


def anthropic_params(body: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI-style chat body as Anthropic Messages params (what litellm sends for anthropic/...):
    system messages joined into `system`; a JSON-schema answer requested through a forced tool call."""
    system = "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "system")
    params: dict[str, Any] = {
        "model": body["model"],
        "max_tokens": int(body.get("max_tokens") or 1024),
        "messages": [m for m in body.get("messages", []) if m.get("role") != "system"],
    }
    if system:
        params["system"] = system
    if body.get("temperature") is not None:
        params["temperature"] = body["temperature"]
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema") or {"type": "object"}
        params["tools"] = [{"name": "json_tool_call", "input_schema": schema}]
        params["tool_choice"] = {"type": "tool", "name": "json_tool_call"}
    return params


def openai_line(batch_id: str, row: Mapping[str, Any]) -> LineResult:
    cid = str(row.get("custom_id"))
    err = row.get("error")
    resp = row.get("response") or {}
    if err:
        code = str(err.get("code") or "")
        kind = "batch_expired" if code == "batch_expired" else "batch_failed"
        return LineResult(cid, batch_id, "failed", None, None, None, kind, f"{code}: {err.get('message')}")
    status = resp.get("status_code")
    body = resp.get("body") or {}
    if status != 200:
        msg = json.dumps(body.get("error") or body)[:300]
        return LineResult(cid, batch_id, "failed", None, None, None, "batch_failed", f"HTTP {status}: {msg}")
    try:
        text = body["choices"][0]["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        return LineResult(cid, batch_id, "failed", None, None, None, "batch_failed", "line is not a chat completion")
    usage = body.get("usage") or {}
    cut = CUT_MARK if is_cut(body["choices"][0].get("finish_reason")) else None
    return LineResult(
        cid, batch_id, "ok", text, usage.get("prompt_tokens"), usage.get("completion_tokens"), cut, None
    )


def anthropic_line(batch_id: str, row: Mapping[str, Any]) -> LineResult:
    cid = str(row.get("custom_id"))
    result = row.get("result") or {}
    rtype = result.get("type")
    if rtype == "succeeded":
        msg = result.get("message") or {}
        parts = msg.get("content") or []
        tool = next((p for p in parts if p.get("type") == "tool_use"), None)
        if tool is not None:
            text = json.dumps(tool.get("input"), ensure_ascii=False)
        else:
            text = "".join(p.get("text", "") for p in parts if p.get("type") == "text")
        usage = msg.get("usage") or {}
        cut = CUT_MARK if is_cut(msg.get("stop_reason")) else None
        return LineResult(cid, batch_id, "ok", text, usage.get("input_tokens"), usage.get("output_tokens"), cut, None)
    if rtype == "expired":
        return LineResult(cid, batch_id, "failed", None, None, None, "batch_expired", "expired before processing")
    detail = json.dumps(result.get("error") or result)[:300]
    return LineResult(cid, batch_id, "failed", None, None, None, "batch_failed", f"{rtype}: {detail}")


# ------------------------------------------------------------------------------------------------
# The client
# ------------------------------------------------------------------------------------------------


@dataclass
class _Waiting:
    body: dict[str, Any]
    futures: list[asyncio.Future[Completion]] = field(default_factory=list)
    fresh: bool = False  # a re-ask (the stored answer did not parse): needs a new batch


class BatchClient(WithoutLitellm):
    """Collects `complete` calls into provider batches; see the module docstring."""

    def __init__(self, cfg: ClientConfig | Mapping[str, Any]) -> None:
        super().__init__(cfg)
        self.provider = provider_of(self.cfg.model)
        self.max_concurrency = 1_000_000  # every item waits on its line at once
        self.batch_cfg = self.cfg.runtime.batch
        self.state_path = self._state_path(self.batch_cfg.state_path, DEFAULT_STATE_NAME)
        self._pending: dict[str, _Waiting] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._flushes: set[asyncio.Task[None]] = set()
        self._served: set[str] = set()
        self._price: Price | None = None
        self.submitted: list[str] = []  # batch ids this client created (tests, logs)
        self.attached: set[str] = set()  # open batches from an earlier run it polled instead

    # -- no litellm ------------------------------------------------------------------------------

    def preflight(self) -> CallFailed | None:
        done, failure = self._preflight
        if not done:
            failure = None
            try:
                self._api_key()
            except CallFailed as exc:
                failure = exc
            self._preflight = (True, failure)
        return failure

    def _api_key(self) -> str | None:
        name = self.cfg.api_key_env or ("ANTHROPIC_API_KEY" if self.provider == "anthropic" else "OPENAI_API_KEY")
        value = os.environ.get(name)
        if value:
            return value
        if _is_loopback(self.cfg.api_base):
            return _STUB_PLACEHOLDER_KEY
        raise CallFailed("auth", f"environment variable {name} is not set")

    # -- collecting ------------------------------------------------------------------------------

    async def complete(
        self, messages: list[dict[str, Any]], *, response_format: dict[str, Any] | None = None
    ) -> Completion:
        failure = self.preflight()
        if failure is not None:
            raise failure

        BUDGET.check(self.cfg.runtime.max_cost_usd)
        self._prepare()
        body = self.request_kwargs(messages, response_format)
        body["model"] = wire_model(body["model"])
        cid = "rb-" + canonical_digest({"provider": self.provider, "body": body})[:40]
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Completion] = loop.create_future()
        waiting = self._pending.get(cid)
        if waiting is None:
            waiting = self._pending[cid] = _Waiting(body, fresh=cid in self._served)
        waiting.futures.append(fut)
        if len(self._pending) >= self.batch_cfg.max_lines:
            self._kick()
        else:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = loop.call_later(self.batch_cfg.quiet_s, self._kick)
        return await fut

    def _kick(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        entries, self._pending = self._pending, {}
        if entries:
            task = asyncio.ensure_future(self._flush(entries))
            self._flushes.add(task)
            task.add_done_callback(self._flushes.discard)

    async def _flush(self, entries: dict[str, _Waiting]) -> None:
        try:
            await self._flush_inner(entries)
        except BaseException as exc:  # noqa: BLE001 - every waiting caller gets a typed failure
            if isinstance(exc, CallFailed):
                failure = exc
            else:
                kind, _ = classify(exc)
                secrets = tuple(s for s in (os.environ.get(self.cfg.api_key_env or ""),) if s)
                failure = CallFailed(kind, redact(f"batch: {type(exc).__name__}: {exc}", secrets)[:500])
            for w in entries.values():
                for f in w.futures:
                    if not f.done():
                        f.set_exception(failure)
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def _flush_inner(self, entries: dict[str, _Waiting]) -> None:
        import aiohttp

        state = BatchState(self.state_path)
        try:
            todo: dict[str, _Waiting] = {}
            attach: dict[str, list[str]] = {}
            for cid, w in entries.items():
                if not w.fresh:
                    stored = state.answered(cid)
                    if stored is not None:  # answered by a batch of an earlier (maybe killed) run
                        self._resolve(w, stored)
                        self._served.add(cid)
                        continue
                open_id = None if w.fresh else state.open_batch(cid)
                if open_id is not None:
                    attach.setdefault(open_id, []).append(cid)
                    todo[cid] = w
                else:
                    todo[cid] = w
            if not todo:
                return
            new = [cid for cid in todo if not any(cid in ids for ids in attach.values())]
            new = self._within_budget(new, todo)
            timeout = aiohttp.ClientTimeout(total=max(300.0, self.cfg.runtime.timeout_s))
            async with aiohttp.ClientSession(timeout=timeout) as session:
                base = BatchAPI.base_for(self.provider, self.cfg.api_base)
                api = BatchAPI(self.provider, base, self._api_key(), session)
                for batch_id in attach:
                    self.attached.add(batch_id)
                    log.info("batch %s: still open from an earlier run, polling it (nothing resubmitted)", batch_id)
                for start in range(0, len(new), self.batch_cfg.max_lines):
                    chunk = {cid: todo[cid].body for cid in new[start : start + self.batch_cfg.max_lines]}
                    created = await api.submit(chunk, self.batch_cfg.completion_window)
                    state.record_batch(
                        created["id"],
                        provider=self.provider,
                        base_url=base,
                        model=self.cfg.model,
                        status=str(created["status"]),
                        input_file_id=created["input_file_id"],
                        lines={cid: json.dumps(b) for cid, b in chunk.items()},  # key order kept: it is the request
                    )
                    self.submitted.append(created["id"])
                    attach[created["id"]] = list(chunk)
                    log.info("batch %s: submitted %d requests to %s", created["id"], len(chunk), self.provider)
                await asyncio.gather(*(self._wait(api, state, bid, cids, todo) for bid, cids in attach.items()))
        finally:
            state.close()

    def _within_budget(self, cids: list[str], todo: Mapping[str, _Waiting]) -> list[str]:
        """With `max_cost_usd`, submit only the lines whose worst-case cost (prompt ~ 4 characters per token,
        completion = max_tokens) still fits what is left; the others fail with `call: budget` (a batch is paid as a
        whole, so the limit is applied before submitting, never after)."""

        limit = self.cfg.runtime.max_cost_usd
        if limit is None or self._price is None:
            return cids
        left = limit - BUDGET.spent_usd
        keep: list[str] = []
        for cid in cids:
            body = todo[cid].body
            prompt = sum(len(str(m.get("content", ""))) for m in body.get("messages", [])) // 4 + 1
            worst = self._price.cost(prompt, int(self.cfg.max_tokens or 1024), batch=True)
            if worst <= left:
                keep.append(cid)
                left -= worst
                continue
            BUDGET.refused += 1
            failure = CallFailed(
                "budget",
                f"judge.runtime.max_cost_usd={limit:g} would be exceeded by this batch line (worst case "
                f"${worst:.4f}, ${max(0.0, left):.4f} left; ${BUDGET.spent_usd:.4f} spent by this stage)",
            )
            for f in todo[cid].futures:
                if not f.done():
                    f.set_exception(failure)
        return keep

    async def _wait(
        self, api: BatchAPI, state: BatchState, batch_id: str, cids: list[str], todo: Mapping[str, _Waiting]
    ) -> None:
        t0 = time.monotonic()
        max_wait = self.batch_cfg.max_wait_s
        last = None
        waits = poll_waits(self.batch_cfg.poll_interval_s)
        while True:
            info = await api.retrieve(batch_id)
            state.update_batch(
                batch_id,
                status=str(info["status"]),
                output_file_id=info.get("output_file_id"),
                error_file_id=info.get("error_file_id"),
            )
            line = f"batch {batch_id}: {info['status']} {json.dumps(info.get('counts') or {}, sort_keys=True)}"
            if line != last:
                log.info("%s (%.0fs)", line, time.monotonic() - t0)
                last = line
            if info["done"]:
                break
            if max_wait is not None and time.monotonic() - t0 >= max_wait:
                failure = CallFailed(
                    "batch_pending",
                    f"batch {batch_id} still {info['status']} after {max_wait:g}s; rerun the stage to collect it "
                    "(nothing is resubmitted)",
                )
                for cid in cids:
                    for f in todo[cid].futures:
                        if not f.done():
                            f.set_exception(failure)
                return
            await poll_sleep(next(waits))
        results, status = await api.results(batch_id, info)
        seen = {r.custom_id for r in results}
        kind = "batch_expired" if status == "expired" else "batch_failed"
        for cid in cids:  # a line the provider never reported (a failed/cancelled batch) is a failure too
            if cid not in seen:
                results.append(LineResult(cid, batch_id, "failed", None, None, None, kind, f"batch {status}"))
        state.store_results(batch_id, results, status)
        for cid in cids:
            stored = state.result(cid, batch_id)
            if stored is not None:
                self._resolve(todo[cid], stored)
                self._served.add(cid)

    def _resolve(self, w: _Waiting, r: LineResult) -> None:
        if r.state == "ok":
            cost = (
                self._price.cost(r.prompt_tokens, r.completion_tokens, batch=True)
                if self._price is not None and r.prompt_tokens is not None
                else None
            )

            BUDGET.spend(cost, self.cfg.runtime.max_cost_usd)
            comp = Completion(
                finish_reason="length" if r.error_kind == CUT_MARK else None,
                text=r.text or "",
                prompt_tokens=r.prompt_tokens,
                completion_tokens=r.completion_tokens,
                cost_usd=cost,
                latency_s=0.0,
                cache_hit=False,
                attempts=1,
            )
            for f in w.futures:
                if not f.done():
                    f.set_result(comp)
            return
        kind = r.error_kind if r.error_kind in ("batch_expired", "batch_failed") else "batch_failed"
        failure = CallFailed(kind, f"batch {r.batch_id}, line {r.custom_id}: {r.error}"[:500], attempts=1)  # type: ignore[arg-type]
        for f in w.futures:
            if not f.done():
                f.set_exception(failure)


# ------------------------------------------------------------------------------------------------
# `reportbench batch status | retry`
# ------------------------------------------------------------------------------------------------


def _state_path_from_args(args: argparse.Namespace) -> Path:
    if args.state:
        return Path(args.state)
    return Path(args.cache_dir) / DEFAULT_STATE_NAME


def _cmd_status(args: argparse.Namespace) -> int:
    path = _state_path_from_args(args)
    if not path.is_file():
        print(f"no batch state at {path} (no batch-mode run yet)")
        return 0
    state = BatchState(path)
    rows = state.batches()
    state.close()
    print(f"{'batch':<36} {'provider':<9} {'status':<11} {'lines':>6} {'ok':>6} {'failed':>6} {'waiting':>7}")
    for r in rows:
        print(
            f"{r['batch_id']:<36} {r['provider']:<9} {r['status']:<11} {r['n_lines']:>6} {r['ok'] or 0:>6} "
            f"{r['failed'] or 0:>6} {r['waiting'] or 0:>7}"
        )
    return 0


def _cmd_retry(args: argparse.Namespace) -> int:
    """Resubmit every failed or expired line no later batch answered, from the stored request bodies."""
    import aiohttp

    path = _state_path_from_args(args)
    if not path.is_file():
        print(f"no batch state at {path} (no batch-mode run yet)")
        return 0
    state = BatchState(path)
    rows = state.retryable()
    if not rows:
        print("no failed or expired batch lines to retry")
        state.close()
        return 0
    groups: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
    for cid, body, provider, base_url, model in rows:
        groups.setdefault((provider, base_url, model), {})[cid] = json.loads(body)

    async def _run() -> None:
        async with aiohttp.ClientSession() as session:
            for (provider, base_url, model), lines in groups.items():
                client_key = _key_for(provider, base_url, args.api_key_env)
                api = BatchAPI(provider, base_url, client_key, session)  # type: ignore[arg-type]
                created = await api.submit(lines, args.completion_window)
                state.record_batch(
                    created["id"],
                    provider=provider,
                    base_url=base_url,
                    model=model,
                    status=str(created["status"]),
                    input_file_id=created["input_file_id"],
                    lines={cid: json.dumps(b) for cid, b in lines.items()},
                )
                print(f"batch {created['id']}: resubmitted {len(lines)} failed/expired lines ({provider}, {model})")

    try:
        asyncio.run(_run())
    finally:
        state.close()
    print("rerun the judge stages (`dvc repro`) to collect them: nothing else is resubmitted")
    return 0


def _key_for(provider: str, base_url: str, api_key_env: str | None = None) -> str | None:
    name = api_key_env or ("ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY")
    value = os.environ.get(name)
    if value:
        return value
    return _STUB_PLACEHOLDER_KEY if _is_loopback(base_url) else None


def register(subparsers: Any) -> None:
    """`reportbench batch status|retry`."""
    p = subparsers.add_parser("batch", help="batch-mode judge calls: list batches, resubmit failed/expired lines")
    sub = p.add_subparsers(dest="batch_command", required=True)
    for name, fn, text in (
        ("status", _cmd_status, "list submitted batches with their line counts"),
        ("retry", _cmd_retry, "resubmit failed/expired lines now; the next `dvc repro` collects them"),
    ):
        q = sub.add_parser(name, help=text)
        q.add_argument("--cache-dir", default=".reportbench/cache", help="where batches.sqlite lives")
        q.add_argument("--state", default=None, help="explicit path of batches.sqlite")
        q.add_argument("--completion-window", default="24h", help="the batch API's completion window (default 24h)")
        q.add_argument("--api-key-env", default=None, help="the judge's judge.api_key_env, if it sets one")
        q.set_defaults(func=fn)
