"""LiveResearchBench / DeepEval on the spine: judge steps per (system, member), depth vs the reference as the
cross-system stage, and the Table-1 score with citation accuracy and grading coverage alongside.

Steps per (system, member): presentation, coverage, consistency, citation (association), then our citation
accuracy reconstruction: `claims` (compute: claim–URL pairs), `relevance` (E2 gate per task × URL whose page
is reachable) and `support` (E3 per (claim, URL) pair past the gate). Depth runs in `cross`: every system but
the reference against the reference, both orders, every member.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from reportbench.benchmarks import CrossContext, JudgeContext, ScoreContext, ScoreResult, SystemScore
from reportbench.config import ConfigError
from reportbench.judges import factory  # `factory.make_judge` at call time: `reportbench estimate` swaps it
from reportbench.judges.runner import run_judgments_sync
from reportbench.metrics.aggregate import metric_row, rows_frame, summarise_by_group, summarise_rows
from reportbench.metrics.registry import MetricSpec
from reportbench.partial_reuse import dir_digest, per_system, reported_tasks
from reportbench.protocols import JudgeItem, content_hash
from reportbench.protocols.liveresearchbench import rules as R
from reportbench.protocols.liveresearchbench.citations import URL_STATUS, extract_claims
from reportbench.protocols.liveresearchbench.release import (
    NAME,
    coverage_items,
    eval_date_of,
    format_date,
    presentation_criteria,
)
from reportbench.protocols.liveresearchbench.tasks import (
    DEFAULT_RULES,
    ChecklistInput,
    ChecklistLine,
    DepthInput,
    PointwiseInput,
    RelevanceInput,
    SupportInput,
)
from reportbench.reports.refusal import non_answer, non_answer_hit
from reportbench.validate import judge_config

REPORT_CRITERIA = ("presentation", "consistency", "coverage", "citation_association")
STEP_OF = {
    "presentation": "presentation",
    "coverage": "coverage",
    "consistency": "consistency",
    "citation_association": "citation",
}
CIT_METRICS = ("cit_e1", "cit_e2", "cit_e3", "cit_total", "cit_n_urls", "cit_blocked", "cit_not_checked")
_SCALE: dict[str, Any] = {"unit": "points", "value_range": (0.0, 100.0)}
_POINTS: dict[str, Any] = {**_SCALE, "evidence_kinds": ("judgments",)}
_COUNT = {"aggregation": "count_mean", "unit": "count", "value_range": None}
_FETCHED = {
    **_COUNT,
    "evidence": "a fetched status (ok, invalid, blocked) for a cited URL",
    "no_evidence": "not_checked",
    "evidence_kinds": ("pages",),
}
_CHECKED = {
    **_COUNT,
    "evidence": "a fetch status and a relevance or support verdict for a cited URL or (claim, source) pair",
    "no_evidence": "not_checked",
    "evidence_kinds": ("pages", "judgments"),
}
_DEPTH = {
    "evidence": "a decisive depth comparison (win or loss) against the reference",
    "no_evidence": "no_games",
    "evidence_kinds": ("judgments", "games"),
}

METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("presentation", NAME, "pass rate of the ten presentation checks (0-100)", short="Pres", **_POINTS),
    MetricSpec("consistency", NAME, "issue-count bins of internal contradictions (10-100)", short="Cons", **_POINTS),
    MetricSpec("coverage", NAME, "pass rate of the task's coverage checklist (0-100)", short="Cov", **_POINTS),
    MetricSpec("citation_association", NAME, "issue-count bins of uncited claims (10-100)", short="Assoc", **_POINTS),
    MetricSpec("avg", NAME, "Table-1 Avg: mean of Pres, Cons, Cov, Assoc", short="Avg", **_POINTS),
    MetricSpec(
        "depth_win_rate",
        NAME,
        "depth W/(W+L) vs the reference, ties excluded (0-100)",
        aggregation="win_rate",
        short="Depth",
        **_SCALE,
        **_DEPTH,
    ),
    MetricSpec(
        "depth_win_rate_nondegenerate",
        NAME,
        "depth win rate without degenerate reference reports",
        aggregation="win_rate",
        short="Depth*",
        **_SCALE,
        **_DEPTH,
    ),
    MetricSpec(
        "cit_e1", NAME, "E1 invalid links per report (our reconstruction)", higher_is_better=False, **_FETCHED
    ),
    MetricSpec("cit_e2", NAME, "E2 irrelevant links per report", higher_is_better=False, **_CHECKED),
    MetricSpec("cit_e3", NAME, "E3 unsupported (claim, source) pairs per report", higher_is_better=False, **_CHECKED),
    MetricSpec("cit_total", NAME, "E1+E2+E3 per report", higher_is_better=False, **_CHECKED),
    MetricSpec(
        "cit_n_urls",
        NAME,
        "distinct cited URLs per report (read the error counts with it)",
        evidence="the report's cited URLs (counted: a measurement, no judgment needed)",
        evidence_kinds=("report",),
        **_COUNT,
    ),
    MetricSpec(
        "cit_blocked",
        NAME,
        "401/403/paywall URLs per report (flagged apart from E1)",
        higher_is_better=False,
        **_FETCHED,
    ),
    MetricSpec(
        "cit_not_checked",
        NAME,
        "URLs or pairs not checked (not fetched, failed judgment)",
        higher_is_better=False,
        evidence="the report's cited URLs and what the fetch and judge stages did with them (a measurement)",
        evidence_kinds=("report",),
        **_COUNT,
    ),
)


# ------------------------------------------------------------------------------------------- helpers
def _cfg(params: Mapping[str, Any], *path: str) -> dict[str, Any]:
    node: Any = params
    for p in path:
        node = (node or {}).get(p) if isinstance(node, Mapping) else None
    return dict(node or {})


def rule_params(ctx_params: Mapping[str, Any], member: str) -> str:
    """This member's offline thresholds (benchmarks.liveresearchbench.judging.offline.<member>) as JSON."""
    given = _cfg(ctx_params, "judging", "offline", member)
    unknown = set(given) - set(DEFAULT_RULES)
    if unknown:
        raise ValueError(f"benchmarks.{NAME}.judging.offline.{member}: unknown rule(s) {sorted(unknown)}")
    return json.dumps(dict(sorted(given.items())), sort_keys=True) if given else ""


def authors_path(ctx_params: Mapping[str, Any], member: str) -> str:
    """Which of the authors' provider framings this member gets with judge.prompts=authors (openai | gemini)."""
    path = str(_cfg(ctx_params, "judging", "authors_path").get(member, "openai"))
    if path not in ("openai", "gemini"):
        raise ValueError(f"benchmarks.{NAME}.judging.authors_path.{member} must be openai | gemini, got {path!r}")
    return path


def _date_text(release: Any) -> str:
    return format_date(eval_date_of(release))


def report_text(report: Any) -> str:
    """The report as the judges see it: the body plus its numbered reference list (the adapter splits the list
    off the body; the authors' judges read the whole markdown file)."""
    lines = [
        f"[{key}] " + (src.raw or f"{src.title or ''}: {src.url or ''}").strip()
        for key, src in report.sources.items()
        if not key.startswith("http")
    ]
    if not lines:
        return report.body
    return report.body.rstrip() + "\n\n### Sources\n\n" + "\n".join(lines) + "\n"


def _ids(report: Any) -> dict[str, str]:
    return {"task_id": report.task_id, "report_id": report.report_id}


# ----------------------------------------------------------------------------------------- judge steps
def _report_fields(ctx: JudgeContext, r: Any) -> dict[str, Any]:
    """The fields every report-level judge input shares: question, report, frozen date, this member's settings."""
    return {
        "query": ctx.release.task(r.task_id).task_prompt,
        "report": report_text(r),
        "eval_date": _date_text(ctx.release),
        "rule_params": rule_params(ctx.params, ctx.member),
        "authors_path": authors_path(ctx.params, ctx.member),
    }


def presentation_items(ctx: JudgeContext) -> list[JudgeItem]:
    crit = [ChecklistLine(id=c.item_id, text=c.text) for c in presentation_criteria(ctx.release)]
    return [
        JudgeItem(
            "lrb_presentation",
            f"{r.report_id}:presentation",
            ChecklistInput(criteria=crit, **_report_fields(ctx, r)).model_dump(),
            _ids(r),
        )
        for r in ctx.reports
    ]


def coverage_items_for(ctx: JudgeContext) -> list[JudgeItem]:
    items = []
    for r in ctx.reports:
        lines = [ChecklistLine(id=c.item_id, text=c.text) for c in coverage_items(ctx.release, r.task_id)]
        if not lines:
            continue  # scored `undefined` ("no checklist"), never silently dropped from the counts
        inp = ChecklistInput(criteria=lines, **_report_fields(ctx, r))
        items.append(JudgeItem("lrb_coverage", f"{r.report_id}:coverage", inp.model_dump(), _ids(r)))
    return items


def _pointwise_items(task: str, suffix: str) -> Any:
    def items(ctx: JudgeContext) -> list[JudgeItem]:
        return [
            JudgeItem(task, f"{r.report_id}:{suffix}", PointwiseInput(**_report_fields(ctx, r)).model_dump(), _ids(r))
            for r in ctx.reports
        ]

    return items


PAIR_SCHEMA = {
    "task_id": pl.String,
    "report_id": pl.String,
    "claim_id": pl.String,
    "claim": pl.String,
    "url": pl.String,
    "url_status": pl.String,
    "http_status": pl.Int64,
}


def _in_scope(ctx: Any, task_id: str) -> bool:
    cats = _cfg(ctx.params, "judging", "citation_accuracy").get("categories") or []
    return not cats or bool(set(ctx.release.task(task_id).categories) & set(cats))


def url_status(url: str, pages: Mapping[str, Any] | None) -> tuple[str, int | None]:
    """ok | invalid (E1) | blocked (401/403/paywall) | not_fetched, from the fetch stage's snapshot."""
    snap = (pages or {}).get(url)
    if snap is None:
        return "not_fetched", None
    return URL_STATUS.get(snap.error_class, "not_fetched"), snap.http_status


def claims_table(ctx: JudgeContext) -> pl.DataFrame:
    """Compute step: one row per (claim, URL) pair of every in-scope report, with the URL's fetch status.

    Gathered column by column, not as a dict per row: the pairs of every report of the unit are held at once
    (~80 per report), and a dict per pair was the step's peak (issue 36: ~50 KB per report at 200 tasks)."""
    cols: dict[str, list[Any]] = {name: [] for name in PAIR_SCHEMA}
    cap = _cfg(ctx.params, "judging", "citation_accuracy").get("max_pairs_per_report")
    for r in ctx.reports:
        if not _in_scope(ctx, r.task_id):
            continue
        n = 0
        for c in extract_claims(r):
            for u in c.urls:
                if cap is not None and n >= int(cap):
                    break
                status, http = url_status(u, ctx.pages)
                for name, value in zip(
                    PAIR_SCHEMA, (r.task_id, r.report_id, c.claim_id, c.text, u, status, http), strict=True
                ):
                    cols[name].append(value)
                n += 1
    return pl.DataFrame(cols, schema=PAIR_SCHEMA)


def _page_text(ctx: JudgeContext, url: str) -> tuple[str, str]:
    snap = (ctx.pages or {}).get(url)
    return (snap.title or "", snap.text or "") if snap is not None else ("", "")


def relevance_items(ctx: JudgeContext) -> list[JudgeItem]:
    cfg = _cfg(ctx.params, "judging", "citation_accuracy")
    n_open = int(cfg.get("opening_chars", 2000))
    rp = rule_params(ctx.params, ctx.member)
    pairs = ctx.derived.get("claims")
    if pairs is None or pairs.height == 0:
        return []
    seen = pairs.filter(pl.col("url_status") == "ok").select("task_id", "url").unique().sort("task_id", "url")
    items = []
    for task_id, url in seen.iter_rows():
        title, text = _page_text(ctx, url)
        inp = RelevanceInput(
            query=ctx.release.task(task_id).task_prompt, url=url, title=title, opening=text[:n_open], rule_params=rp
        )
        iid = f"{task_id}:{content_hash(url, n=12)}:relevance"
        items.append(JudgeItem("lrb_relevance", iid, inp.model_dump(), {"task_id": task_id, "url": url}))
    return items


def _relevant(judgments: list[Any]) -> dict[tuple[str, str], bool | None]:
    out: dict[tuple[str, str], bool | None] = {}
    for j in judgments:
        key = (j.input_ids["task_id"], j.input_ids["url"])
        out[key] = (j.score == 1.0) if j.ok else None
    return out


def support_items(ctx: JudgeContext) -> list[JudgeItem]:
    cfg = _cfg(ctx.params, "judging", "citation_accuracy")
    n_chars = int(cfg.get("page_chars", 12000))
    rp = rule_params(ctx.params, ctx.member)
    pairs = ctx.derived.get("claims")
    if pairs is None or pairs.height == 0:
        return []
    relevant = _relevant(ctx.judgments.get("relevance", []))
    items = []
    for row in pairs.filter(pl.col("url_status") == "ok").iter_rows(named=True):
        if relevant.get((row["task_id"], row["url"])) is not True:
            continue
        _title, text = _page_text(ctx, row["url"])
        inp = SupportInput(
            query=ctx.release.task(row["task_id"]).task_prompt,
            claim=row["claim"],
            url=row["url"],
            page_text=text[:n_chars],
            rule_params=rp,
        )
        iid = f"{row['claim_id']}:{content_hash(row['url'], row['claim'], n=12)}:support"
        items.append(
            JudgeItem(
                "lrb_support",
                iid,
                inp.model_dump(),
                {
                    "task_id": row["task_id"],
                    "report_id": row["report_id"],
                    "claim_id": row["claim_id"],
                    "url": row["url"],
                },
            )
        )
    return items


# ------------------------------------------------------------------------------------------ depth (cross)
DEPTH_SCHEMA: dict[str, Any] = {
    "system": pl.String,
    "task_id": pl.String,
    "member": pl.String,
    "order": pl.String,
    "status": pl.String,
    "error": pl.String,
    "judge_winner": pl.String,
    "totals_winner": pl.String,
    "winner_mismatch": pl.Boolean,
    "degenerate_reference": pl.Boolean,
    **{f"eval_{d}": pl.Int64 for d in R.DEPTH_DIMENSIONS},
    **{f"ref_{d}": pl.Int64 for d in R.DEPTH_DIMENSIONS},
    "eval_total": pl.Int64,
    "ref_total": pl.Int64,
}

_DEGENERATE = re.compile(
    r"\b(i cannot|i can't|unable to (?:find|provide|satisfy)|analysis plan|research plan|none found|no .{0,20}found"
    r"|provisional|interim|data gaps?)\b",
    re.IGNORECASE,
)


def degenerate_reference(report: Any | None, listed: set[str]) -> bool:
    """A refusal, plan, 'none found' or provisional reference report (or one listed in config)."""
    if report is None:
        return False
    if report.task_id in listed:
        return True
    return bool(_DEGENERATE.search(report.body[:600]) or non_answer(report)) or not report.sources


def _depth_texts(reports: Iterable[Any]) -> dict[str, str]:
    """task -> the report as the depth judges read it (the last report of a task wins)."""
    return {r.task_id: report_text(r) for r in reports}


def _depth_reference(reports: Iterable[Any]) -> dict[str, list[Any]]:
    """task -> [its text, whether it is degenerate by its text] of the reference system's reports (the listed
    tasks are applied at use: they are config, not the report's)."""
    return {r.task_id: [report_text(r), degenerate_reference(r, set())] for r in reports}


def depth_cross(ctx: CrossContext) -> dict[str, pl.DataFrame]:
    """Every non-reference system vs the reference on every task: both orders × every member.

    Each system's texts are derived report by report (`per_system`: one parsed report in memory, from the partial
    cache when the system's reports are unchanged); the judge items hold the texts, not the parsed reports. A
    system's judged rows per member are stored as a partial keyed by its items (both texts of every pair, the
    question, the member's settings) and the judge's config, prompts and code: a change to one evaluated system
    judges only its pairs again (issue 36). Rows with a failed call are never stored (the next run asks again)."""

    cfg = _cfg(ctx.params, "judging", "depth")
    ref = str(cfg.get("reference", "open_deep_research"))
    listed = set(cfg.get("degenerate_tasks") or [])
    members = sorted((ctx.params.get("judges") or {"main": {}}).keys())
    reference = per_system(ctx, ref, f"{NAME}.depth_reference", _depth_reference) if ref in ctx.systems else {}
    evaluated = sorted(s for s in ctx.systems if s != ref)
    texts = {s: per_system(ctx, s, f"{NAME}.depth_texts", _depth_texts) for s in evaluated}
    partials = getattr(ctx, "partials", None)
    rows: list[dict[str, Any]] = []
    full = {"judge": dict(ctx.judge_params), "benchmarks": {NAME: dict(ctx.params)}}
    for member in members:
        rp = rule_params(ctx.params, member)
        jcfg = judge_config(full, "lrb_depth", NAME, member)
        items, meta = [], {}
        judged: dict[str, dict[str, Any]] = {}  # item id -> its row's judged columns (stored or judged now)
        to_store: dict[str, tuple[str, list[str]]] = {}  # system -> (its partial's key, its item ids)
        for system in evaluated:
            mine = texts[system]
            mine_items = []
            for t in ctx.release.tasks:
                rr, er = reference.get(t.task_id), mine.get(t.task_id)
                base = {
                    "system": system,
                    "task_id": t.task_id,
                    "member": member,
                    "degenerate_reference": rr is not None and (t.task_id in listed or bool(rr[1])),
                }
                if rr is None or er is None:
                    for order in ("eval_first", "ref_first"):
                        rows.append({**base, "order": order, "status": "no_reference" if rr is None else "no_report"})
                    continue
                for order, (a, b) in (("eval_first", (er, rr[0])), ("ref_first", (rr[0], er))):
                    iid = f"{system}:{t.task_id}:{order}:{content_hash(a, b, n=10)}"
                    inp = DepthInput(
                        query=t.task_prompt,
                        report_a=a,
                        report_b=b,
                        rule_params=rp,
                        authors_path=authors_path(ctx.params, member),
                    )
                    mine_items.append((iid, inp, {"system": system, "task_id": t.task_id, "order": order}))
                    meta[iid] = (base, order)
            if not mine_items:
                continue
            key, stored = ("", None) if partials is None else partials.stored(
                system, f"{NAME}.depth.{member}", _depth_key_parts(jcfg, mine_items)
            )
            if isinstance(stored, dict) and set(stored) == {iid for iid, _, _ in mine_items}:
                judged.update(stored)
                continue
            items += mine_items
            to_store[system] = (key, [iid for iid, _, _ in mine_items])
        if items:
            judge = factory.make_judge("lrb_depth", jcfg)
            run = run_judgments_sync(
                judge, items, desc=f"depth@{NAME}.{member}", judge_name=f"{jcfg.get('name')}/{member}"
            )
            judged.update({j.item_id: depth_row(j, meta[j.item_id][1]) for j in run})
            for system, (key, iids) in to_store.items():
                value = {iid: judged[iid] for iid in iids if iid in judged}
                if partials is not None and len(value) == len(iids) and all(
                    v.get("status") == "ok" for v in value.values()
                ):
                    partials.put(system, f"{NAME}.depth.{member}", key, value)
        for iid in meta:
            if iid in judged:
                base, order = meta[iid]
                rows.append({**base, "order": order, **judged[iid]})
    df = pl.DataFrame(rows, schema=DEPTH_SCHEMA, orient="row") if rows else pl.DataFrame(schema=DEPTH_SCHEMA)
    return {"depth": df.sort("system", "task_id", "member", "order")}


def _depth_key_parts(jcfg: Mapping[str, Any], items: list[tuple[str, Any, Any]]) -> dict[str, Any]:
    """What a system's depth judgments depend on besides the code: the judge's config (model, settings), the
    prompts it renders (ours and the authors' mirror setting), and every item in full (sha256 of its inputs)."""
    h = hashlib.sha256()
    for iid, inp, _ in items:
        h.update(iid.encode() + b"\0" + inp.model_dump_json().encode() + b"\0")
    prompts = Path(str(jcfg.get("prompts_dir") or "prompts"))
    return {
        "judge": json.dumps(dict(jcfg), sort_keys=True, default=str),
        "prompts": dir_digest(prompts / NAME) if (prompts / NAME).exists() else dir_digest(prompts),
        "authors_mirror": os.environ.get("REPORTBENCH_AUTHORS_MIRROR"),
        "authors_cache": dir_digest(Path(".reportbench") / "cache" / "authors"),
        "items": h.hexdigest(),
    }


def depth_row(j: Any, order: str) -> dict[str, Any]:
    """One depth judgment mapped back to (evaluated, reference)."""
    if not j.ok:
        return {"status": "failed", "error": j.error}
    parsed = json.loads(j.parsed)
    a, b = parsed["scores"]["A"], parsed["scores"]["B"]
    ev, rf = (a, b) if order == "eval_first" else (b, a)
    to_eval = (
        {"A": "eval", "B": "ref", "tie": "tie"} if order == "eval_first" else {"A": "ref", "B": "eval", "tie": "tie"}
    )
    judge_w = to_eval[parsed["winner"]]
    totals_w = R.tie_rule(ev["total"], rf["total"])
    return {
        "status": "ok",
        "judge_winner": judge_w,
        "totals_winner": totals_w,
        "winner_mismatch": judge_w != totals_w,
        **{f"eval_{d}": ev[d] for d in R.DEPTH_DIMENSIONS},
        **{f"ref_{d}": rf[d] for d in R.DEPTH_DIMENSIONS},
        "eval_total": ev["total"],
        "ref_total": rf["total"],
    }


def depth_outcomes(df: pl.DataFrame, system: str, members: list[str], margin: float = 1.0) -> dict[str, tuple]:
    """Paper aggregation per task: {task_id: (outcome, total_eval, total_ref, degenerate, reason)}."""
    out: dict[str, tuple] = {}
    sub = df.filter(pl.col("system") == system)
    by_task = {k[0]: v for k, v in sub.partition_by("task_id", as_dict=True, maintain_order=True).items()}
    for task_id in sorted(by_task):  # one partition, not one filter over every row per task
        t = by_task[task_id]
        degenerate = bool(t["degenerate_reference"].any())
        statuses = set(t["status"].to_list())
        if statuses & {"no_report", "no_reference"}:
            out[task_id] = (
                "no_report" if "no_report" in statuses else "no_reference",
                math.nan,
                math.nan,
                degenerate,
                "",
            )
            continue
        calls: dict[str, list[R.DepthCall]] = {}
        failed = False
        for m in members:
            mt = t.filter((pl.col("member") == m) & (pl.col("status") == "ok"))
            if mt.height < 2:  # both orders are required per member
                failed = True
                break
            calls[m] = [
                R.DepthCall(
                    {d: r[f"eval_{d}"] for d in R.DEPTH_DIMENSIONS},
                    {d: r[f"ref_{d}"] for d in R.DEPTH_DIMENSIONS},
                    r["judge_winner"],
                )
                for r in mt.iter_rows(named=True)
            ]
        if failed:
            out[task_id] = ("failed", math.nan, math.nan, degenerate, "a member lacks a successful call per order")
            continue
        outcome, te, tr = R.paper_outcome(calls, margin)
        out[task_id] = (outcome, te, tr, degenerate, "")
    return out


# ---------------------------------------------------------------------------------------------- score
def _member_value(
    criterion: str, judgments: list[Any], expected: list[str], scoring: Mapping[str, Any], flags: list[str]
) -> float:
    """One member's 0-100 value for one report, or NaN when its judgment failed (or a paper-mode missing key)."""
    if not judgments:
        return math.nan
    j = judgments[0]
    if not j.ok:
        flags.append(f"judgment failed: {j.error}")
        return math.nan
    parsed = json.loads(j.parsed)
    if criterion in ("presentation", "coverage"):
        mode = str(_cfg(scoring, "checklist").get("mode", "paper"))
        answered = {k: int(v["score"]) for k, v in parsed["evaluations"].items()}
        cs = R.checklist_score(expected, answered, mode)
        flags.extend(cs.flags)
        return cs.value
    ps = R.pointwise_score(parsed["specific_issues"], parsed["total_issues"], parsed["score"])
    flags.extend(ps.flags)
    return ps.headline(str(_cfg(scoring, "pointwise").get("score_source", "count")))


def score(ctx: ScoreContext) -> ScoreResult:
    scoring = ctx.scoring
    members = sorted({m for s in ctx.systems for m in ctx.judgments.get(s, {})}) or ["main"]
    members = sorted((ctx.params.get("judges") or {m: {} for m in members}).keys())
    depth_cfg = _cfg(ctx.params, "judging", "depth")
    ref = str(depth_cfg.get("reference", "open_deep_research"))
    margin = float(_cfg(scoring, "depth").get("tie_margin", 1.0))
    depth_aggregation = str(_cfg(scoring, "depth").get("aggregation") or "paper")
    if depth_aggregation not in ("paper", "code"):
        raise ConfigError(
            f"benchmarks.liveresearchbench.scoring.depth.aggregation must be paper|code, got {depth_aggregation!r}"
        )
    publish_partial = bool(scoring.get("publish_partial", False))
    depth_df = ctx.cross.get("depth")
    presentation_ids = [c.item_id for c in presentation_criteria(ctx.release)]
    coverage_ids = _coverage_ids(ctx.release)  # `coverage_items` per task scans every rubric item: N² at 1,000s
    systems_out: list[SystemScore] = []
    coverage_report: dict[str, Any] = {}
    depth_code: dict[str, Any] = {}
    flags_out: dict[str, list[str]] = {}
    breakdown: dict[str, dict[str, float]] = {}
    for s in ctx.systems:
        rows: list[dict[str, Any]] = []
        by_task = dict.fromkeys(reported_tasks(ctx, s))  # the reports' line heads: no report parsed
        jud = ctx.judgments.get(s, {})
        by_tid = _judgments_by_task(jud, members)  # one pass over the judgments, not one per task
        cov: dict[str, dict[str, dict[str, int]]] = {}
        for criterion in REPORT_CRITERIA:
            step = STEP_OF[criterion]
            cov[criterion] = {}
            for m in members:
                n_ok = _n_ok(jud.get(m, {}).get(step, []))
                expected_n = sum(1 for t in by_task if criterion != "coverage" or _coverage_of(coverage_ids, ctx, t))
                cov[criterion][m] = {"n_graded": n_ok, "n_expected": expected_n}
        for t in ctx.release.tasks:
            tid = t.task_id
            if tid not in by_task:
                for c in (*REPORT_CRITERIA, "avg"):
                    rows.append(metric_row(s, tid, c, math.nan, "no_report", "no report"))
                continue
            values = {}
            for criterion in REPORT_CRITERIA:
                step = STEP_OF[criterion]
                expected = (
                    presentation_ids
                    if criterion == "presentation"
                    else _coverage_of(coverage_ids, ctx, tid)
                )
                if criterion == "coverage" and not expected:
                    rows.append(metric_row(s, tid, criterion, math.nan, "undefined", "no checklist for this task"))
                    values[criterion] = math.nan
                    continue
                member_vals, flags = [], []
                for m in members:
                    js = by_tid[m].get(step, {}).get(tid, [])
                    f: list[str] = []
                    member_vals.append(_member_value(criterion, js, expected, scoring, f))
                    flags.extend(f"{m}: {x}" for x in f)
                if flags:
                    flags_out.setdefault(s, []).extend(f"{tid}/{criterion}: {x}" for x in flags)
                n_failed = sum(1 for v in member_vals if v != v)
                if n_failed:
                    rows.append(
                        metric_row(
                            s,
                            tid,
                            criterion,
                            math.nan,
                            "failed",
                            f"{n_failed}/{len(members)} judge(s) without a result",
                            n_items=len(members),
                            n_failed=n_failed,
                        )
                    )
                    values[criterion] = math.nan
                else:
                    v = sum(member_vals) / len(member_vals)
                    rows.append(metric_row(s, tid, criterion, v, n_items=len(members)))
                    values[criterion] = v
            four = [values[c] for c in REPORT_CRITERIA]
            if any(v != v for v in four):
                rows.append(metric_row(s, tid, "avg", math.nan, "failed", "a criterion has no value"))
            else:
                rows.append(metric_row(s, tid, "avg", sum(four) / 4))
        rows.extend(_depth_rows(s, ctx, depth_df, members, ref, margin, depth_code))
        rows.extend(_accuracy_rows(s, ctx, members, scoring))
        per_task = rows_frame(rows)
        summary = summarise_rows(s, NAME, per_task, list(METRICS))
        _table1_avg(summary)
        if depth_aggregation == "code" and s != ref:
            _code_depth_means(summary, depth_code.get(s))
        withheld = _withhold_partial(summary, cov, publish_partial)
        summary.update(
            {
                "eval_date": ctx.release.meta.provenance.get("eval_date"),
                "placeholders": ctx.release.meta.provenance.get("placeholders"),
                "grading_coverage": cov,
                "withheld": withheld,
                "reference_system": s == ref,
            }
        )
        coverage_report[s] = cov
        # detectors flag, the protocol scores: the authors' coverage prompt judges every checklist item of a
        # refusal / plan / "none found" report as written (it never zeroes a report); the flag and the span
        # that triggered it are shown (docs/mapping.md)
        detected = per_system(ctx, s, f"{NAME}.non_answers", _non_answers)  # task -> [flag, span]
        if detected:
            flags_out.setdefault(s, []).extend(
                f"{t}: {detected[t][0]} (detector only, scored as written): \"{detected[t][1]}\""
                for t in sorted(detected)
            )
            summary["refusal_like_reports"] = sorted(detected)
            summary["detector_flags"] = {
                t: {"flag": detected[t][0], "span": detected[t][1]} for t in sorted(detected)
            }
        breakdown[s] = presentation_breakdown(jud, members)  # now: the stage holds one system's judgments
        systems_out.append(SystemScore(s, per_task, summary))
        del by_tid  # this system's records go before the next system's are read
    extra = {
        "eval_date": ctx.release.meta.provenance.get("eval_date"),
        "grading_coverage": coverage_report,
        "depth_code_aggregation": depth_code,
        "flags": {k: v[:200] for k, v in sorted(flags_out.items())},
        "modes": {
            "checklist": _cfg(scoring, "checklist").get("mode", "paper"),
            "pointwise_score_source": _cfg(scoring, "pointwise").get("score_source", "count"),
            "depth_aggregation": depth_aggregation
            + (" (code variant in depth_code_aggregation)" if depth_aggregation == "paper"
               else " (each call's declared winner; the paper's mean kept as paper_mean)"),
        },
        "presentation_breakdown": {s: breakdown[s] for s in ctx.systems},
        "citation_accuracy_by_category": {sc.system: by_category(sc.per_task, ctx.release) for sc in systems_out},
        "family_means": family_means(systems_out, scoring.get("families") or {}),
    }
    return ScoreResult(systems_out, extra_metrics=extra, overall="avg")


TABLE1 = (*REPORT_CRITERIA, "avg")


def _coverage_ids(release: Any) -> dict[str, list[str]]:
    """task -> its coverage checklist's item ids, as `coverage_items` gives them (the task's rubric items, then the
    shared ones, by index), for every release task from one pass over the rubric table."""
    own: dict[str, list[Any]] = {}
    shared: list[Any] = []
    for r in release.table("rubric_items"):
        (shared if r.task_id == "*" else own.setdefault(r.task_id, [])).append(r)
    out = {}
    for t in release.tasks:
        rows = sorted([*own.get(t.task_id, []), *shared], key=lambda r: (r.task_id == "*", r.index, r.item_id))
        out[t.task_id] = [r.item_id for r in rows if r.kind == "coverage"]
    return out


def _coverage_of(coverage_ids: Mapping[str, list[str]], ctx: Any, task_id: str) -> list[str]:
    """The coverage item ids of a task (a task outside the release: looked up as before)."""
    got = coverage_ids.get(task_id)
    return got if got is not None else [c.item_id for c in coverage_items(ctx.release, task_id)]


def _non_answers(reports: Iterable[Any]) -> dict[str, list[str]]:
    """task -> [flag, the span that triggered it] of the reports a detector flags as non-answers (a later report
    of a task that is not flagged leaves an earlier one's flag, as the dict it replaces did)."""
    out: dict[str, list[str]] = {}
    for r in reports:
        if (hit := non_answer_hit(r)) is not None:
            out[r.task_id] = [hit.flag, hit.evidence]
    return out


def _n_ok(js: Any) -> int:
    """How many of a step's judgments are ok (from the status column of stored records: none built)."""
    n_ok = getattr(js, "n_ok", None)
    return n_ok() if n_ok is not None else sum(1 for j in js if j.ok)


class _TaskRecords:
    """task -> its judgments of one step, in stored order, built when the task is looked up (`get`): the stored
    records (judges.runner.JudgmentRecords) stay columns; a task's Judgments live while it is scored."""

    def __init__(self, records: Any) -> None:
        self._records, self._rows = records, records.rows_by("task_id")

    def get(self, task_id: Any, default: Any = None) -> Any:
        rows = self._rows.get(task_id)
        return default if rows is None else self._records.at(rows)


def _by_task(js: Any) -> Any:
    """task -> its judgments of one step, in their stored order (see `_judgments_by_task`)."""
    if hasattr(js, "rows_by"):
        return _TaskRecords(js)
    grouped: dict[str, list[Any]] = {}
    for j in js:
        grouped.setdefault(j.input_ids.get("task_id"), []).append(j)
    return grouped


def _judgments_by_task(jud: Mapping[str, Any], members: list[str]) -> dict[str, dict[str, Any]]:
    """member -> step -> task -> its judgments, in their stored order: the rows of a task are looked up, not found
    by scanning every judgment of the step once per task (quadratic in tasks). Stored records are grouped by
    position and built per task (issue 36: every Judgment of a system held at once was ~36 KB a task)."""
    out: dict[str, dict[str, Any]] = {}
    for m in members:
        out[m] = {}
        for step, js in (jud.get(m) or {}).items():
            out[m][step] = _by_task(js)
    return out


def presentation_breakdown(judgments: Mapping[str, Any], members: list[str]) -> dict[str, float]:
    """Pass rate (0-100) of each presentation criterion over a system's reports and members (paper Fig. 22)."""
    passed: dict[str, list[int]] = {}
    for m in members:
        for j in judgments.get(m, {}).get("presentation", []):
            if j.ok:
                for k, v in json.loads(j.parsed)["evaluations"].items():
                    passed.setdefault(k, []).append(int(v["score"]))
    order = sorted(passed, key=lambda k: (len(k), k))
    return {k: 100.0 * sum(passed[k]) / len(passed[k]) for k in order}


def by_category(per_task: pl.DataFrame, release: Any) -> dict[str, dict[str, Any]]:
    """Mean citation-accuracy counts per task category (paper Table 2 is per category x system), under the
    system value's rules: a category with nothing checked is None with its reason (`reasons`), never 0."""
    cat = {t.task_id: (t.categories or ["?"])[0] for t in release.tasks}
    specs = [m for m in METRICS if m.name in CIT_METRICS]
    return summarise_by_group(per_task, specs, cat, digits=None)


def family_means(systems: list[SystemScore], families: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Unweighted means over the systems of each configured family (`scoring.families: {name: [systems]}`)."""
    means = {sc.system: sc.summary["metrics"] for sc in systems}
    out = {}
    for fam, members in families.items():
        vals = {}
        for m in TABLE1:
            xs = [means[s][m]["mean"] for s in members if s in means]
            xs = [x for x in xs if x is not None and x == x]
            vals[m] = sum(xs) / len(xs) if xs and len(xs) == len(list(members)) else math.nan
        out[str(fam)] = vals
    return out


def _table1_avg(summary: dict[str, Any]) -> None:
    """Avg = mean of the four column means (Table 1), kept next to the macro mean of per-task averages."""
    ms = summary["metrics"]
    cols = [ms[c]["mean"] for c in REPORT_CRITERIA]
    ms["avg"]["task_mean"] = ms["avg"]["mean"]
    ms["avg"]["mean"] = math.nan if any(v is None or v != v for v in cols) else sum(cols) / 4


def _withhold_partial(summary: dict[str, Any], cov: Mapping[str, Any], publish_partial: bool) -> list[str]:
    """A mean is not published below full grading coverage (any member) unless scoring.publish_partial."""
    out = []
    for criterion, by_member in cov.items():
        partial = any(v["n_graded"] < v["n_expected"] for v in by_member.values())
        if partial and not publish_partial:
            summary["metrics"][criterion]["unpublished_mean"] = summary["metrics"][criterion]["mean"]
            summary["metrics"][criterion]["mean"] = math.nan
            out.append(criterion)
    if out and not publish_partial:
        summary["metrics"]["avg"]["mean"] = math.nan
    return out


def _code_depth_means(summary: dict[str, Any], code: Mapping[str, Any] | None) -> None:
    """`scoring.depth.aggregation: code`: the system's depth means are the authors' count (each call's declared
    winner a game, per judge W/(W+L), the mean of the judges: average_results.py); the per-task rows stay the
    paper's outcomes and the paper's mean is kept as `paper_mean`. No game at all is NaN (no_games), never 0."""
    for name, rates in (("depth_win_rate", code), ("depth_win_rate_nondegenerate", (code or {}).get("nondegenerate"))):
        m = summary["metrics"].get(name)
        if m is None:
            continue
        rate = (rates or {}).get("win_rate")
        m["paper_mean"] = m["mean"]
        m["mean"] = math.nan if rate is None else float(rate)
        m["depth_aggregation"] = "code" if rate is not None else "code: no_games"
        if rate is None:  # no decisive game (none played, or ties only): "— no_games", with what happened
            m["reason"] = "no_games"
            m["reason_detail"] = str((rates or {}).get("reason") or "no_games")
            if (rates or {}).get("authors_win_rate") is not None:
                m["authors_mean"] = rates["authors_win_rate"]  # type: ignore[index]
        else:
            m.pop("reason", None)


def _depth_rows(
    s: str,
    ctx: ScoreContext,
    df: pl.DataFrame | None,
    members: list[str],
    ref: str,
    margin: float,
    code_out: dict[str, Any],
) -> list[dict[str, Any]]:
    rows = []
    names = ("depth_win_rate", "depth_win_rate_nondegenerate")
    if s == ref:
        for t in ctx.release.tasks:
            for n in names:
                rows.append(
                    metric_row(
                        s, t.task_id, n, math.nan, "undefined", "reference: the reference is never compared with itself"
                    )
                )
        return rows
    if df is None or df.height == 0:
        for t in ctx.release.tasks:
            for n in names:
                rows.append(metric_row(s, t.task_id, n, math.nan, "undefined", "no_games: no depth stage output"))
        return rows
    outcomes = depth_outcomes(df, s, members, margin)
    reported = set(reported_tasks(ctx, s))
    for t in ctx.release.tasks:
        # a report with no depth comparison is not a missing report: no game was played (no_games)
        absent = ("no_games" if t.task_id in reported else "no_report", math.nan, math.nan, False, "")
        outcome, te, tr, degenerate, reason = outcomes.get(t.task_id, absent)
        for n in names:
            if n.endswith("nondegenerate") and degenerate:
                rows.append(metric_row(s, t.task_id, n, math.nan, "undefined", "degenerate reference report"))
            elif outcome in ("eval", "ref"):
                rows.append(
                    metric_row(
                        s,
                        t.task_id,
                        n,
                        100.0 if outcome == "eval" else 0.0,
                        n_items=2 * len(members),
                        reason=f"totals {te:.2f} vs {tr:.2f}",
                    )
                )
            elif outcome == "tie":
                rows.append(metric_row(s, t.task_id, n, math.nan, "undefined", f"no_games: tie ({te:.2f} vs {tr:.2f})"))
            elif outcome == "no_games":
                rows.append(metric_row(s, t.task_id, n, math.nan, "undefined", "no_games: no depth comparison"))
            elif outcome == "failed":
                rows.append(metric_row(s, t.task_id, n, math.nan, "failed", reason))
            elif outcome == "no_reference":
                rows.append(metric_row(s, t.task_id, n, math.nan, "undefined", "no reference report"))
            else:
                rows.append(metric_row(s, t.task_id, n, math.nan, "no_report", "no report"))
    sub = df.filter((pl.col("system") == s) & (pl.col("status") == "ok"))
    winners = {m: sub.filter(pl.col("member") == m)["judge_winner"].to_list() for m in members}
    code_out[s] = R.code_win_rates(winners)
    nondeg = sub.filter(~pl.col("degenerate_reference"))
    code_out[s]["nondegenerate"] = R.code_win_rates(
        {m: nondeg.filter(pl.col("member") == m)["judge_winner"].to_list() for m in members}
    )
    # the judge's declared winner vs the tie rule on its own totals (the authors never check this)
    code_out[s]["winner_mismatches"] = int(sub["winner_mismatch"].sum())
    code_out[s]["calls_ok"] = sub.height
    return rows


def _has_evidence(c: R.AccuracyCounts, need: str | None) -> bool:
    """Whether a member's counts rest on something checked: `need` for E1/E2/E3/blocked; for the total,
    every stage it needs: a fetched URL, and a verdict whenever a fetched page left something to judge."""
    if need is not None:
        return getattr(c, need) > 0
    if c.n_fetched == 0:
        return False
    return c.n_to_judge == 0 or c.n_relevance_judged + c.n_support_judged > 0


CLAIM_COLUMNS = ["task_id", "claim_id", "url", "url_status"]  # what the score reads of the claims table


def _claim_columns(tables: Mapping[str, Any]) -> pl.DataFrame | None:
    """The claims table's `CLAIM_COLUMNS` (None: no table): only those columns read where the stage's tables can
    (pipeline.TableFiles.columns), so the claim texts, most of the table's bytes, are never loaded for the score."""
    if "claims" not in tables:
        return None
    read_columns = getattr(tables, "columns", None)
    if read_columns is not None:
        return read_columns("claims", CLAIM_COLUMNS)
    return tables["claims"].select(CLAIM_COLUMNS)


class ClaimRows:
    """task -> its (claim_id, url, url_status) rows in stored order, from one frame sorted by task (stable: a task's
    rows keep their order) and each task's (offset, length): Python objects only for the task being scored."""

    def __init__(self, claims: pl.DataFrame | None) -> None:
        self._frame = pl.DataFrame(schema={c: pl.String for c in CLAIM_COLUMNS})
        self._at: dict[str, tuple[int, int]] = {}
        if claims is None or claims.height == 0:
            return
        self._frame = claims.select(CLAIM_COLUMNS).sort("task_id", maintain_order=True)
        counts = self._frame.group_by("task_id", maintain_order=True).len()
        offset = 0
        for tid, n in counts.iter_rows():
            self._at[tid] = (offset, n)
            offset += n

    def rows(self, task_id: str) -> list[tuple[Any, Any, Any]]:
        at = self._at.get(task_id)
        if at is None:
            return []
        return [(c, u, st) for _, c, u, st in self._frame.slice(at[0], at[1]).iter_rows()]


def _accuracy_rows(s: str, ctx: ScoreContext, members: list[str], scoring: Mapping[str, Any]) -> list[dict[str, Any]]:
    blocked_is_e1 = bool(_cfg(scoring, "citation_accuracy").get("blocked_is_e1", False))
    by_task = set(reported_tasks(ctx, s))
    # per member, each task's claim pairs, relevance and support verdicts, grouped once (a scan per task was
    # quadratic in tasks)
    # task -> its (claim_id, url, url_status) rows in stored order, read task by task from one compact frame per
    # member (ClaimRows): Python tuples of every pair held at once were ~45 KB a task (issue 36)
    pairs_of: dict[str, ClaimRows] = {}
    relevant_of: dict[str, dict[str, dict[str, bool | None]]] = {}
    support_of: dict[str, Any] = {}
    for m in members:
        pairs_of[m] = ClaimRows(_claim_columns(ctx.derived.get(s, {}).get(m, {})))
        steps = ctx.judgments.get(s, {}).get(m, {})
        relevant_of[m] = {}
        for (task, u), v in _relevant(steps.get("relevance", [])).items():
            relevant_of[m].setdefault(task, {})[u] = v
        support_of[m] = _by_task(steps.get("support", []))  # built per task when its records are stored
    rows = []
    for t in ctx.release.tasks:
        tid = t.task_id
        cats = _cfg(ctx.params, "judging", "citation_accuracy").get("categories") or []
        if cats and not set(t.categories) & set(cats):
            continue
        if tid not in by_task:
            for n in CIT_METRICS:
                rows.append(metric_row(s, tid, n, math.nan, "no_report", "no report"))
            continue
        per_member: list[R.AccuracyCounts] = []
        for m in members:
            rows_of = pairs_of[m].rows(tid)
            pairs = list(dict.fromkeys((cid, url) for cid, url, _ in rows_of))
            status = {url: st for _, url, st in rows_of}
            relevant = relevant_of[m].get(tid, {})
            supported: dict[tuple[str, str], bool | None] = {}
            for j in support_of[m].get(tid, []):
                supported[(j.input_ids["claim_id"], j.input_ids["url"])] = (j.score == 1.0) if j.ok else None
            per_member.append(R.count_errors(pairs, status, relevant, supported, blocked_is_e1=blocked_is_e1))
        n_urls = per_member[0].n_urls if per_member else 0
        rows.append(metric_row(s, tid, "cit_n_urls", float(n_urls), n_items=n_urls))
        for n, attr in (
            ("cit_e1", "e1"),
            ("cit_e2", "e2"),
            ("cit_e3", "e3"),
            ("cit_total", "total"),
            ("cit_blocked", "blocked"),
            ("cit_not_checked", "not_checked"),
        ):
            if n_urls == 0:
                rows.append(metric_row(s, tid, n, math.nan, "nothing_to_score", "no cited URLs (not zero errors)"))
                continue
            # Evidence (docs/reading-scores.md): an error count exists only where something was checked — E1 and
            # blocked need a fetched URL, E2/E3/total a verdict. A member that checked nothing has no count (its
            # 0 would read as "no errors"); with no member left the value is undefined, reason not_checked.
            # E2 needs a relevance verdict, E3 a support verdict, and the total both wherever a fetched page
            # left something to judge (an E1 link alone does not make "0 irrelevant links": issue 34)
            need = {"e1": "n_fetched", "blocked": "n_fetched", "e2": "n_relevance_judged", "e3": "n_support_judged"}
            usable = (
                per_member
                if attr == "not_checked"
                else [c for c in per_member if _has_evidence(c, need.get(attr))]
            )
            if not usable:
                done = "fetched" if need == "n_fetched" else "checked"
                why = f"not_checked: none of {n_urls} cited URL(s) was {done}"
                rows.append(metric_row(s, tid, n, math.nan, "undefined", why, n_items=n_urls))
                continue
            v = sum(getattr(c, attr) for c in usable) / len(usable)
            rows.append(metric_row(s, tid, n, v, n_items=n_urls))
    return rows
