"""What was checked on a sample page: every claim with its cited page's fetch status and its verdict, or
"not checked (reason)".

Why: a per-task score such as Faithfulness 0.5 may rest on 2 of 3 claims because the third claim's page was never
fetched; the page must say so. The claims come from the judge stages' derived tables (each benchmark writes its
own shape: ResearcherBench `claims` + `claim_results`, DEER `claims` + `verifications`, LiveResearchBench `claims`,
DeepResearch Bench `statements` + `validations`), the fetch status from the fetch stage's snapshot table
(`data/pages/<b>/<R>/pages.parquet`). A table this module does not know is named on the page, never guessed at.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl

from reportbench.fetch.urls import normalise_url
from reportbench.site.html import esc, table, th

CLAIM_TABLES = ("claims", "statements")  # derived tables listing the claims a report makes, with cited URLs
VERDICT_TABLES = ("claim_results", "verifications", "validations")  # derived tables with a verdict per claim
JUDGED = {"yes", "no", "supported", "not_supported", "unsupported", "partially_supported", "refuted", "true", "false"}


@dataclass
class PageStatus:
    """One cited page as the fetch stage left it: `state` fetched | failed | not fetched | no page."""

    url: str
    state: str
    reason: str = ""

    def text(self) -> str:
        return self.state + (f" ({self.reason})" if self.reason else "")


@dataclass
class ClaimCheck:
    member: str
    claim_id: str
    text: str
    urls: list[str]
    verdict: str | None  # the judge's verdict, or None: not checked
    why_not: str = ""  # why the claim went unjudged (None verdict)


@dataclass
class ClaimLedger:
    """Per task: every claim of the report, the cited pages' statuses, and what this could not read."""

    claims: dict[str, list[ClaimCheck]] = field(default_factory=dict)  # task_id -> claims
    pages: dict[str, PageStatus] = field(default_factory=dict)  # normalised url -> status
    has_snapshot: bool = False
    problems: list[str] = field(default_factory=list)


@lru_cache(maxsize=1 << 16)
def _norm(url: str) -> str:
    """A cited URL as the snapshot table keys it, remembered (a page looks each of ~160 claims' URLs up twice)."""
    try:
        return normalise_url(url)
    except Exception:  # noqa: BLE001 - an unparseable URL is looked up as written
        return url


def page_status(url: str | None, ledger: ClaimLedger) -> PageStatus:
    """fetched / failed + reason / not fetched + reason / no cited page, for one cited URL."""
    if not url:
        return PageStatus("", "no cited page", "the claim cites no URL")
    if not ledger.has_snapshot:
        return PageStatus(url, "not fetched", "this benchmark's run has no page snapshot (no fetch stage)")
    snap = ledger.pages.get(_norm(url))
    if snap is None:
        return PageStatus(url, "not fetched", "not in the fetch stage's snapshot table")
    return snap


def _load_pages(path: Path, ledger: ClaimLedger) -> None:
    if not path.is_file():
        return
    try:
        df = pl.read_parquet(path, glob=False, columns=["url", "error_class", "error", "http_status"])
    except Exception as exc:  # noqa: BLE001 - shown on the page; claims still render
        ledger.problems.append(f"{path}: cannot read ({type(exc).__name__}: {exc})"[:300])
        return
    ledger.has_snapshot = True
    for row in df.iter_rows(named=True):
        cls, err = str(row.get("error_class") or "ok"), str(row.get("error") or "")
        if cls == "ok":
            st = PageStatus(row["url"], "fetched")
        elif cls == "not_fetched":
            st = PageStatus(row["url"], "not fetched", err or "not_fetched")
        else:
            status = f"HTTP {row['http_status']}: " if row.get("http_status") and "HTTP" not in err else ""
            st = PageStatus(row["url"], "failed", f"{cls}: {status}{err}".rstrip(": "))
        ledger.pages[row["url"]] = st


def _urls(row: Mapping[str, Any]) -> list[str]:
    if row.get("url"):
        return [str(row["url"])]
    raw = row.get("urls")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = [raw]
    return [str(u) for u in raw or [] if u]


def _claim_key(row: Mapping[str, Any]) -> str:
    if row.get("claim_id"):
        return str(row["claim_id"])
    return f"{row.get('report_id')}|{row.get('url')}|{row.get('idx')}"  # DeepResearch Bench: (url, idx)


def _verdicts(frames: Mapping[str, pl.DataFrame]) -> dict[str, tuple[str | None, str]]:
    """claim key -> (verdict or None, why unjudged) from the verdict tables of one member."""
    out: dict[str, tuple[str | None, str]] = {}
    for name in VERDICT_TABLES:
        df = frames.get(name)
        if df is None or "result" not in df.columns:
            continue
        for row in df.iter_rows(named=True):
            result = str(row.get("result") or "").strip()
            status = str(row.get("status") or "ok")
            keys = [_claim_key(row)]
            if row.get("claim_id") and row.get("url"):
                keys.append(f"{row['claim_id']}|{row['url']}")  # one verdict per (claim, cited page): DEER
            for key in keys:
                if result.lower() in JUDGED and status == "ok":
                    out[key] = (result, "")
                else:
                    why = [x for x in (result, row.get("page_status"), row.get("error_kind"), row.get("reason"),
                                       None if status == "ok" else status) if x]
                    out.setdefault(key, (None, "; ".join(dict.fromkeys(str(x) for x in why)) or "no verdict"))
    return out


def _record_verdicts(
    records: Iterable[Mapping[str, Any]],
) -> tuple[dict[str, tuple[str | None, str]], dict[tuple[str, str], str]]:
    """From judgment records: claim id (and "claim id|url") -> verdict for records that name their claims
    (`claim_id` / `claim_ids` inputs), and (task, url) -> "step: value" for page-level judgments (LRB's relevance),
    which explain why a claim on that page was not checked further."""
    out: dict[str, tuple[str | None, str]] = {}
    page_notes: dict[tuple[str, str], str] = {}
    for rec in records:
        ids = rec.get("_ids") or {}
        names = ids.get("claim_ids") or ids.get("claim_id")
        if isinstance(names, str) and names.startswith("["):
            try:
                names = json.loads(names)
            except ValueError:
                names = [names]
        names = [names] if isinstance(names, str) else list(names or [])
        label = rec.get("label") if rec.get("label") is not None else rec.get("value")
        if not names and ids.get("url"):
            note = f"{rec.get('_step')}: {label}" if rec.get("status") == "ok" else f"{rec.get('_step')} failed"
            page_notes[(str(ids.get("task_id")), str(ids["url"]))] = note
        for cid in names:
            keys = [str(cid), f"{cid}|{ids['url']}"] if ids.get("url") else [str(cid)]
            for key in keys:
                if rec.get("status") == "ok" and len(names) == 1:
                    out[key] = (str(label), "")
                elif rec.get("status") != "ok":
                    out.setdefault(key, (None, f"judgment {rec.get('status')}: {rec.get('error') or ''}".strip()))
    return out, page_notes


def load_ledger(
    root: Path, benchmark: str, release: str, system: str, members: Iterable[str],
    judgments: Mapping[str, list[Mapping[str, Any]]] | None = None, tasks: set[str] | None = None,
) -> ClaimLedger:
    """Read each member's claim and verdict tables and the fetch snapshot; never raises (problems are listed).
    With `tasks`, the claims of those tasks only (the sample pages written; the rest would be built for no page)."""
    ledger = ClaimLedger()
    _load_pages(root / "data" / "pages" / benchmark / release / "pages.parquet", ledger)
    jdir = root / "data" / "judgments" / benchmark / release / system
    records = [r for rs in (judgments or {}).values() for r in rs]
    for member in members:
        ddir = jdir / member / "derived"
        frames: dict[str, pl.DataFrame] = {}
        for name in (*CLAIM_TABLES, *VERDICT_TABLES):
            path = ddir / f"{name}.parquet"
            if path.is_file():
                try:
                    frames[name] = pl.read_parquet(path, glob=False)
                except Exception as exc:  # noqa: BLE001
                    ledger.problems.append(f"{path}: cannot read ({type(exc).__name__}: {exc})"[:300])
        verdicts, page_notes = _record_verdicts(r for r in records if str(r.get("_member")) == member)
        verdicts.update(_verdicts(frames))
        for name in CLAIM_TABLES:
            df = frames.get(name)
            if df is None:
                continue
            if "task_id" not in df.columns:
                ledger.problems.append(f"{ddir / name}.parquet: no task_id column; its claims are not shown")
                continue
            if tasks is not None:
                df = df.filter(pl.col("task_id").cast(pl.String).is_in(sorted(tasks)))
            for row in df.iter_rows(named=True):
                text = next((str(row[k]) for k in ("claim", "text", "fact") if row.get(k)), "")
                urls = _urls(row)
                key = _claim_key(row)
                per_url = [verdicts.get(f"{key}|{u}") for u in urls] if "claim_id" in df.columns else []
                if len(urls) > 1 and all(per_url):  # several cited pages, each with its own verdict
                    judged = [f"{v[0]} ({u})" for u, v in zip(urls, per_url, strict=True) if v and v[0] is not None]
                    unjudged = [f"{u}: {v[1]}" for u, v in zip(urls, per_url, strict=True) if v and v[0] is None]
                    verdict = "; ".join(judged) if judged else None
                    why = "; ".join(unjudged) if verdict is None else ""
                else:
                    one = per_url[0] if len(urls) == 1 and per_url else None
                    verdict, why = one or verdicts.get(key, (None, ""))
                if verdict is None:
                    pages = [page_status(u, ledger) for u in urls] or [page_status(None, ledger)]
                    bad = [p.text() for p in pages if p.state != "fetched"]
                    tid = str(row["task_id"])
                    notes = [page_notes[(tid, u)] for u in urls if (tid, u) in page_notes]
                    why = why or "; ".join(bad) or (
                        f"no verdict recorded for this claim (page-level judgment {'; '.join(notes)})" if notes
                        else "no verdict recorded for this claim")
                ledger.claims.setdefault(str(row["task_id"]), []).append(
                    ClaimCheck(member, key, text, urls, verdict, why)
                )
    return ledger


def summary_line(claims: list[ClaimCheck], ledger: ClaimLedger) -> str:
    """"Cited pages: 3 fetched; 1 not fetched (…). Claims: 3 judged; 1 not checked (…)." for one task."""
    urls = dict.fromkeys(u for c in claims for u in c.urls)
    by_state: dict[str, list[str]] = {}
    for u in urls:
        st = page_status(u, ledger)
        by_state.setdefault(st.state, []).append(f"{u}: {st.reason}" if st.reason else u)
    pages = "; ".join(
        f"{len(v)} {state}" + (f" ({', '.join(v)})" if state != "fetched" else "") for state, v in by_state.items()
    ) or "none cited"
    judged = [c for c in claims if c.verdict is not None]
    unjudged = [c for c in claims if c.verdict is None]
    line = f"Cited pages: {pages}. Claims: {len(judged)} judged"
    if unjudged:
        members = len({c.member for c in claims}) > 1  # an ensemble: each member's claims are its own
        line += f"; {len(unjudged)} not checked (" + "; ".join(
            f"{c.claim_id}{f' [{c.member}]' if members else ''}: {c.why_not}" for c in unjudged) + ")"
    return line + "."


def render_claims_html(claims: list[ClaimCheck], ledger: ClaimLedger) -> str:
    """The sample page's "What was checked" section: the page-level line, then one row per claim (cited page,
    its fetch status, the verdict or "not checked (reason)"); "" when the benchmark writes no claim table."""
    if not claims:
        return ""
    head = [th("claim", kind="text", cls="s"), th("member", kind="text", cls="s"),
            th("cited page", kind="text", cls="s"), th("page status", kind="text", cls="s"),
            th("verdict", kind="text", cls="s")]
    body = []
    for c in claims:
        pages = [page_status(u, ledger) for u in c.urls] or [page_status(None, ledger)]
        links = "<br>".join(esc(p.url) if p.url else '<span class="na">none</span>' for p in pages)
        states = "<br>".join(
            f'<span class="badge {"ok" if p.state == "fetched" else "bad"}">{esc(p.state)}</span>'
            + (f" {esc(p.reason)}" if p.reason else "")
            for p in pages
        )
        verdict = (
            f'<span class="badge ok">{esc(c.verdict)}</span>' if c.verdict is not None
            else f'<span class="badge bad">not checked</span> ({esc(c.why_not)})'
        )
        body.append(
            f'<tr class="claim" data-checked="{"1" if c.verdict is not None else "0"}">'
            f'<td class="s"><code>{esc(c.claim_id)}</code> {esc(c.text[:300])}</td>'
            f'<td class="s">{esc(c.member)}</td><td class="s">{links}</td>'
            f'<td class="s">{states}</td><td class="s">{verdict}</td></tr>'
        )
    warn = ' class="warn"' if any(c.verdict is None for c in claims) else ' class="note"'
    return (
        '<h2 id="checked">What was checked</h2>'
        f'<p{warn} id="checked-summary">{esc(summary_line(claims, ledger))}</p>'
        + table(head, body, id_="claims")
    )


def render_claims_text(claims: list[ClaimCheck], ledger: ClaimLedger) -> list[str]:
    """The same for `reportbench view --text`."""
    if not claims:
        return []
    lines = ["", summary_line(claims, ledger)]
    for c in claims:
        pages = [page_status(u, ledger) for u in c.urls] or [page_status(None, ledger)]
        page = "; ".join(f"{p.url or '-'} [{p.text()}]" for p in pages)
        verdict = c.verdict if c.verdict is not None else f"not checked ({c.why_not})"
        lines.append(f"  {c.claim_id} ({c.member}): {verdict} | page: {page} | {c.text[:160]}")
    return lines
