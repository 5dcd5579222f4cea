"""ResearcherBench on the spine: judge steps (rubric; claim extraction -> claims table -> verification against
the fetched pages -> one explicit result per claim) and the score stage.

Steps per (system, member), in order:
- `rubric` / `rubric_compat`: one call per (report, rubric item); only the step of the configured parsing mode
  has items (`judging.rubric.compat_authors_parsing`, default false = strict parser).
- `extract`: one call per section of `claims_step_size` paragraphs -> derived table `claims`.
- `verify`: one call per (report, cited page), chunked at `max_claims_per_call`; claims without a URL or whose
  page is missing or failed get no call -> derived table `claim_results` (every claim, explicit result).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import polars as pl

from reportbench.benchmarks import BenchmarkSpec, JudgeContext, JudgeStep, ScoreContext, ScoreResult, SystemScore
from reportbench.config import ConfigError
from reportbench.metrics.aggregate import metric_row, rows_frame, summarise_by_group, summarise_rows
from reportbench.metrics.registry import MetricSpec
from reportbench.partial_reuse import reported_tasks
from reportbench.protocols import JudgeItem, content_hash
from reportbench.protocols.researcherbench import metrics as M
from reportbench.protocols.researcherbench.release import NAME, build_release, category_of
from reportbench.protocols.researcherbench.responses import (
    KIND,
    TASK_NAMING,
    raw_response,
    response_file_question,
)
from reportbench.protocols.researcherbench.tasks import EXTRACT_TASK, RUBRIC_COMPAT_TASK, RUBRIC_TASK, VERIFY_TASK
from reportbench.protocols.researcherbench.text import (
    JOIN_MODES,
    SPLIT_MODES,
    URL_RE,
    references_text,
    sections,
    split_authors,
)

MAX_CONTENT_CHARS = 950_000  # the authors' page truncation (MAX_CONTENT_LENGTH)
TRUNCATION_NOTE = "\n\n[page text truncated]"

METRICS = [
    MetricSpec(
        "coverage",
        NAME,
        "weighted rubric coverage Σw·c/Σw per question, macro mean",
        judge_tasks=(RUBRIC_TASK,),
        missing_report="zero",
        short="Coverage",
    ),
    MetricSpec(
        "faithfulness",
        NAME,
        "cited claims the cited page supports: yes/(yes+no)",
        judge_tasks=(EXTRACT_TASK, VERIFY_TASK),
        short="Faith.",
        evidence="a fetched page for at least one cited claim, and the verifier's verdict on it",
        no_evidence="no_pages",
        evidence_kinds=("judgments", "pages"),
    ),
    MetricSpec(
        "groundedness",
        NAME,
        "claims that cite a source: cited/all claims",
        judge_tasks=(EXTRACT_TASK,),
        short="Ground.",
        evidence="extracted claims; when claims cite sources, a fetched page for at least one of them",
        no_evidence="no_pages",
        evidence_kinds=("judgments", "pages"),
    ),
]


# ------------------------------------------------------------------------------------------- params
def _judging(ctx: Any, key: str) -> dict[str, Any]:
    return dict((ctx.judging or {}).get(key) or {})


def question_text(ctx: Any, report: Any) -> str:
    """The canonical question (default), or the response file's copy (`judging.question_source`)."""
    source = str((ctx.judging or {}).get("question_source", "canonical"))
    if source not in ("canonical", "response_file"):
        raise ConfigError(f"judging.question_source: {source!r} is not canonical | response_file")
    if source == "response_file":
        q = response_file_question(report)
        if q is not None:
            return q
    return ctx.release.task(report.task_id).task_prompt


def _compat(ctx: JudgeContext) -> bool:
    return bool(_judging(ctx, "rubric").get("compat_authors_parsing", False))


# -------------------------------------------------------------------------------------------- rubric
def _rubric_items(ctx: JudgeContext, task: str) -> list[JudgeItem]:
    items = []
    for r in ctx.reports:
        response = raw_response(r)
        question = question_text(ctx, r)
        for it in ctx.release.rubric(r.task_id):
            h = content_hash(question, it.text, str(int(it.weight)), response, n=10)
            items.append(
                JudgeItem(
                    task,
                    f"{r.report_id}:r{it.item_id}:{h}",
                    {"question": question, "item": it.text, "weight": int(it.weight), "response": response},
                    {"task_id": r.task_id, "report_id": r.report_id, "item_id": it.item_id},
                )
            )
    return items


def rubric_items(ctx: JudgeContext) -> list[JudgeItem]:
    return [] if _compat(ctx) else _rubric_items(ctx, RUBRIC_TASK)


def rubric_compat_items(ctx: JudgeContext) -> list[JudgeItem]:
    return _rubric_items(ctx, RUBRIC_COMPAT_TASK) if _compat(ctx) else []


# ---------------------------------------------------------------------------------------- extraction
def report_sections(ctx: Any, report: Any) -> tuple[list[str], str]:
    """(sections, references text) of one report under `judging.extraction` (split, step, join)."""
    cfg = _judging(ctx, "extraction")
    split = str(cfg.get("reference_split", "adapter"))
    join = str(cfg.get("section_join", "paragraphs"))
    step = int(cfg.get("claims_step_size", 5))
    if split not in SPLIT_MODES:
        raise ConfigError(f"judging.extraction.reference_split: {split!r} is not one of {SPLIT_MODES}")
    if join not in JOIN_MODES:
        raise ConfigError(f"judging.extraction.section_join: {join!r} is not one of {JOIN_MODES}")
    if split == "adapter":
        return sections(report.body, step, join), references_text(report.sources)
    content, refs = split_authors(raw_response(report), fixed=split == "authors_fixed")
    return sections(content, step, join, authors_strip=True), refs


def extract_items(ctx: JudgeContext) -> list[JudgeItem]:
    items = []
    for r in ctx.reports:
        question = question_text(ctx, r)
        secs, refs = report_sections(ctx, r)
        for i, sec in enumerate(secs):
            items.append(
                JudgeItem(
                    EXTRACT_TASK,
                    f"{r.report_id}:s{i}:{content_hash(question, sec, refs, n=10)}",
                    {"question": question, "section": sec, "references": refs},
                    {"task_id": r.task_id, "report_id": r.report_id, "section": str(i)},
                )
            )
    return items


CLAIM_SCHEMA = {
    "claim_id": pl.String,
    "task_id": pl.String,
    "report_id": pl.String,
    "section": pl.Int64,
    "claim": pl.String,
    "context": pl.String,
    "source": pl.String,
    "url": pl.String,
    "cited": pl.Boolean,
    "in_response": pl.Boolean,
}


def _norm(url: str) -> str:
    from reportbench.fetch.urls import normalise_url  # lazy: +69 ms to import (python -X importtime)

    return normalise_url(url)


def is_cited(source: str) -> bool:
    """Only an http(s) URL counts as a citation ("N/A", "None", "" do not)."""
    s = (source or "").strip()
    return s.lower().startswith(("http://", "https://")) and len(s) > len("https://")


def claims_table(ctx: JudgeContext, judgments: list[Any]) -> pl.DataFrame:
    """One row per extracted claim; a failed section adds none (the score stage counts it as failed)."""
    by_report = {r.report_id: r for r in ctx.reports}
    urls_in: dict[str, set[str]] = {}
    rows = []
    for j in sorted(judgments, key=lambda j: (j.input_ids["report_id"], int(j.input_ids["section"]))):
        if not j.ok:
            continue
        rid = j.input_ids["report_id"]
        if rid not in urls_in:
            urls_in[rid] = {_norm(u.rstrip(".,;")) for u in URL_RE.findall(raw_response(by_report[rid]))}
        for k, c in enumerate(json.loads(j.parsed)["claims"]):
            cited = is_cited(c["source"])
            url = _norm(c["source"].strip()) if cited else ""
            rows.append(
                {
                    "claim_id": f"{rid}:s{j.input_ids['section']}:c{k}",
                    "task_id": j.input_ids["task_id"],
                    "report_id": rid,
                    "section": int(j.input_ids["section"]),
                    "claim": c["claim"],
                    "context": c["context"],
                    "source": c["source"],
                    "url": url,
                    "cited": cited,
                    "in_response": (url in urls_in[rid]) if cited else False,
                }
            )
    return pl.DataFrame(rows, schema=CLAIM_SCHEMA, orient="row")


# -------------------------------------------------------------------------------------- verification
def _page(ctx: Any, url: str) -> Any:
    return ctx.page(url)


def _page_status(page: Any) -> str:
    if page is None:
        return "not_fetched"
    return "ok" if page.error_class in (None, "ok") else str(page.error_class)


def verify_items(ctx: JudgeContext) -> list[JudgeItem]:
    cfg = _judging(ctx, "verification")
    chunk = int(cfg.get("max_claims_per_call", 30))
    max_chars = int(cfg.get("max_content_chars", MAX_CONTENT_CHARS))
    claims = ctx.derived.get("claims")
    if claims is None or claims.height == 0:
        return []
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for c in claims.filter(pl.col("cited")).iter_rows(named=True):
        groups[(c["report_id"], c["url"])].append(c)
    items = []
    for (rid, url), rows in sorted(groups.items()):
        page = _page(ctx, url)
        if _page_status(page) != "ok":
            continue  # fetch_error: no call (derive records it)
        text = page.text if len(page.text) <= max_chars else page.text[:max_chars] + TRUNCATION_NOTE
        for k in range(0, len(rows), chunk):
            part = rows[k : k + chunk]
            claims_in = [{"id": i + 1, "claim": c["claim"], "context": c["context"]} for i, c in enumerate(part)]
            h = content_hash(url, text, json.dumps(claims_in, sort_keys=True), n=10)
            items.append(
                JudgeItem(
                    VERIFY_TASK,
                    f"{rid}:{content_hash(url, n=10)}:k{k // chunk}:{h}",
                    {"source": text, "claims": claims_in},
                    {
                        "task_id": part[0]["task_id"],
                        "report_id": rid,
                        "url": url,
                        "claim_ids": json.dumps([c["claim_id"] for c in part]),
                    },
                )
            )
    return items


RESULT_SCHEMA = {
    "claim_id": pl.String,
    "task_id": pl.String,
    "report_id": pl.String,
    "url": pl.String,
    "page_status": pl.String,
    "result": pl.String,
}


def claim_results(ctx: JudgeContext, judgments: list[Any]) -> pl.DataFrame:
    """Every claim with exactly one result: yes | no | unknown | no_url | fetch_error | judge_error."""
    verdict: dict[str, str] = {}
    for j in judgments:
        ids = json.loads(j.input_ids["claim_ids"])
        if not j.ok:
            verdict.update({cid: "judge_error" for cid in ids})
            continue
        by_id = {r["id"]: r["result"] for r in json.loads(j.parsed)["results"]}
        verdict.update({cid: by_id.get(i + 1, "judge_error") for i, cid in enumerate(ids)})
    claims = ctx.derived.get("claims")
    rows = []
    for c in claims.iter_rows(named=True) if claims is not None else []:
        if not c["cited"]:
            status, result = "", "no_url"
        else:
            status = _page_status(_page(ctx, c["url"]))
            result = "fetch_error" if status != "ok" else verdict.get(c["claim_id"], "judge_error")
        rows.append(
            {
                "claim_id": c["claim_id"],
                "task_id": c["task_id"],
                "report_id": c["report_id"],
                "url": c["url"],
                "page_status": status,
                "result": result,
            }
        )
    return pl.DataFrame(rows, schema=RESULT_SCHEMA, orient="row")


# --------------------------------------------------------------------------------------------- score
def _member_values(
    ctx: ScoreContext, system: str, member: str, weights: Mapping[tuple[str, str], float]
) -> dict[str, dict[str, M.Value]]:
    """task_id -> metric -> Value for one (system, member)."""
    scoring = ctx.scoring
    on_failure = str(scoring.get("on_failure", "nan"))
    modes = M.FactualModes.from_params(
        {"on_failure": on_failure if on_failure != "miss" else "nan", **dict(scoring.get("factual") or {})}
    )
    steps = ctx.judgments[system].get(member, {})
    rubric = steps.get("rubric_compat") or steps.get("rubric") or []
    extract = steps.get("extract", [])
    results = ctx.derived[system].get(member, {}).get("claim_results")
    by_task_rubric: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for j in rubric:
        tid = j.input_ids["task_id"]
        by_task_rubric[tid].append((weights[(tid, j.input_ids["item_id"])], j.score))
    failed_extract: dict[str, int] = defaultdict(int)
    for j in extract:
        if not j.ok:
            failed_extract[j.input_ids["task_id"]] += 1
    by_task_results: dict[str, list[str]] = defaultdict(list)
    unfetched: dict[str, int] = defaultdict(int)
    if results is not None:
        for row in results.iter_rows(named=True):
            by_task_results[row["task_id"]].append(row["result"])
            unfetched[row["task_id"]] += row["result"] == "fetch_error" and row["page_status"] == "not_fetched"
    out: dict[str, dict[str, M.Value]] = {}
    for tid in reported_tasks(ctx, system):  # the reports' line heads: no report parsed
        cov = M.coverage(by_task_rubric.get(tid, []), on_failure=on_failure)
        faith, ground, counts = M.factual(by_task_results.get(tid, []), modes)
        if failed_extract.get(tid) and modes.on_failure == "nan":
            why = f"{failed_extract[tid]} section extraction(s) failed"
            faith, ground = M.Value(math.nan, "failed", why), M.Value(math.nan, "failed", why)
        cited = sum(counts.values()) - counts["no_url"] - counts["judge_error"]
        if cited and unfetched.get(tid, 0) == cited and faith.status != "failed":
            # Evidence: a claim is verified against its fetched page. Never fetched (offline) is not a fetch
            # error: with no page at all both values are undefined (no_pages), never 0 (docs/reading-scores.md)
            why = f"no_pages: none of the {cited} cited claim(s)' pages was fetched"
            faith, ground = M.Value(math.nan, "undefined", why), M.Value(math.nan, "undefined", why)
        elif not cited and ground.status == "ok" and ground.value == 0.0:
            ground.reason = "zero: no claim cites a source"  # the protocol's 0, needing no page
        faith.details.update(counts)
        out[tid] = {"coverage": cov, "faithfulness": faith, "groundedness": ground}
    return out


def _combine(values: list[M.Value]) -> M.Value:
    """Ensemble: the mean over members; any failed member fails the task, else any undefined -> undefined."""
    for status in ("failed", "undefined"):
        bad = [v for v in values if v.status == status]
        if bad:
            return M.Value(math.nan, status, bad[0].reason)
    reason = values[0].reason if values and all(v.reason == values[0].reason for v in values) else ""
    return M.Value(
        sum(v.value for v in values) / len(values), reason=reason, details=values[0].details if values else {}
    )


def score(ctx: ScoreContext) -> ScoreResult:
    weights = {(r.task_id, r.item_id): float(r.weight) for r in ctx.release.table("rubric_items")}
    specs = {m.name: m for m in METRICS}
    out: list[SystemScore] = []
    extra: dict[str, Any] = {}
    for s in ctx.systems:
        members = sorted(ctx.judgments[s])
        per_member = [_member_values(ctx, s, m, weights) for m in members]
        reported = set(reported_tasks(ctx, s))
        rows = []
        claim_counts: dict[str, int] = {r: 0 for r in M.RESULTS}
        for t in ctx.release.tasks:
            if t.task_id not in reported:
                for name in specs:
                    rows.append(metric_row(s, t.task_id, name, math.nan, "no_report", "no report"))
                continue
            for name in specs:
                v = (
                    _combine([pm[t.task_id][name] for pm in per_member])
                    if per_member
                    else M.Value(math.nan, "failed", "no judge member")
                )
                rows.append(metric_row(s, t.task_id, name, v.value, v.status, v.reason))
            if per_member:
                for k in M.RESULTS:
                    claim_counts[k] += int(per_member[0][t.task_id]["faithfulness"].details.get(k, 0))
        per_task = rows_frame(rows)
        summary = summarise_rows(s, NAME, per_task, METRICS)
        # the same rules as the system value: a category's 0.0 resting only on tasks with no cited claim, while
        # its other tasks have no page, is "— no_pages", not 0.0 (summarise_by_group)
        categories = summarise_by_group(per_task, METRICS, {t.task_id: category_of(t) or "" for t in ctx.release.tasks})
        summary["by_category"] = categories
        summary["claims"] = claim_counts
        out.append(SystemScore(s, per_task, summary))
        extra[s] = {"by_category": categories, "claims": claim_counts}
    return ScoreResult(out, extra_metrics={"researcherbench": extra}, overall=None)


# Task ids `q<id>`; the authors number questions 1..65 (response files' `id`), so `7.md` is q7.

BENCHMARK = BenchmarkSpec(
    name=NAME,
    tag="rb",  # dvc exp show columns rb.<system> (dvc_metrics.brief)
    title="ResearcherBench (weighted rubric coverage, faithfulness, groundedness)",
    build_release=build_release,
    judge_steps=(
        JudgeStep("rubric", task=RUBRIC_TASK, items=rubric_items),
        JudgeStep("rubric_compat", task=RUBRIC_COMPAT_TASK, items=rubric_compat_items),
        JudgeStep("extract", task=EXTRACT_TASK, items=extract_items, derive=claims_table, derived_table="claims"),
        JudgeStep("verify", task=VERIFY_TASK, items=verify_items, derive=claim_results, derived_table="claim_results"),
    ),
    score=score,
    metric_names=tuple(m.name for m in METRICS),
    description="65 frontier AI-research questions with expert weighted rubrics (Xu et al. 2025)",
    system_kinds=(KIND,),
    task_naming=TASK_NAMING,
)
