"""DeepResearch Bench on the spine: judge steps (clean -> RACE; FACT extract -> de-duplicate -> validate against
the fetch stage's pages) and the score function (RACE relative scores, citation accuracy, effective citations,
and the authors' result format). Switches: docs/deepresearch-bench.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import polars as pl

from reportbench.benchmarks import BenchmarkSpec, JudgeContext, JudgeStep, ScoreContext, ScoreResult, SystemScore
from reportbench.config import ConfigError
from reportbench.judges.errors import failure_class
from reportbench.judges.tasks import register_task
from reportbench.metrics.aggregate import NO_EVIDENCE_NEEDED, metric_row, rows_frame, summarise_rows
from reportbench.metrics.registry import MetricSpec, register_metric
from reportbench.protocols import JudgeItem, content_hash
from reportbench_deepresearch_bench import CONF_DIR
from reportbench_deepresearch_bench import fact as fact_math
from reportbench_deepresearch_bench import pack as _pack  # noqa: F401  (registers the authors' steps)
from reportbench_deepresearch_bench import race as race_math
from reportbench_deepresearch_bench.export import export_race
from reportbench_deepresearch_bench.release import NAME, build_release, criteria_of, task_infos
from reportbench_deepresearch_bench.systems import raw_article
from reportbench_deepresearch_bench.tasks import PROMPTS, TASKS

JUDGING_DEFAULTS: dict[str, Any] = {
    "clean": True,  # the authors' cleaning step before RACE (their --skip_cleaning turns it off)
    "race": {"parser": "strict"},  # strict (ours) | authors (their JSON extractor)
    "fact": {"dedup_failure": "fail", "fetch_failure": "skip"},  # code: keep_all / judge
}
SCORING_DEFAULTS: dict[str, Any] = {"race": "paper", "fact": "paper"}  # paper | code


def _merged(defaults: Mapping[str, Any], given: Mapping[str, Any] | None, where: str) -> dict[str, Any]:
    out = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in defaults.items()}
    for k, v in (given or {}).items():
        if k not in defaults:
            raise ConfigError(f"benchmarks.{NAME}.{where}.{k} is not a known key; known: {sorted(defaults)}")
        if v is None:
            continue
        if isinstance(defaults[k], Mapping):
            if not isinstance(v, Mapping) or set(v) - set(defaults[k]):
                raise ConfigError(f"benchmarks.{NAME}.{where}.{k}: known keys are {sorted(defaults[k])}")
            out[k].update({kk: vv for kk, vv in v.items() if vv is not None})
        else:
            out[k] = v
    return out


CHOICES = {
    ("judging", "race.parser"): ("strict", "authors"),
    ("judging", "fact.dedup_failure"): ("fail", "keep_all"),
    ("judging", "fact.fetch_failure"): ("skip", "judge"),
    ("scoring", "race"): ("paper", "code"),
    ("scoring", "fact"): ("paper", "code"),
}


def _checked(cfg: dict[str, Any], where: str) -> dict[str, Any]:
    for (w, key), allowed in CHOICES.items():
        if w != where:
            continue
        a, _, b = key.partition(".")
        value = cfg[a][b] if b else cfg[a]
        if value not in allowed:
            raise ConfigError(f"benchmarks.{NAME}.{where}.{key} must be one of {allowed}, got {value!r}")
    return cfg


def judging(params: Mapping[str, Any]) -> dict[str, Any]:
    return _checked(_merged(JUDGING_DEFAULTS, params.get("judging"), "judging"), "judging")


def scoring(params: Mapping[str, Any]) -> dict[str, Any]:
    return _checked(_merged(SCORING_DEFAULTS, params.get("scoring"), "scoring"), "scoring")


def _article(ctx: Any, report: Any) -> str:
    """The article the judges read: as submitted, unless the spine flagged judge-steering text in it."""
    flags = [f for o in ctx.outcomes if o.task_id == report.task_id for f in (o.flags or [])]
    return raw_article(report, flags)


def _lang(ctx: Any, task_id: str) -> str:
    return task_infos(ctx.release)[task_id].language


def criteria_json(release: Any, task_id: str) -> str:
    """The authors' format_criteria_list: {dimension: [{criterion, explanation}]} as indented JSON, no weights."""
    out: dict[str, list[dict[str, str]]] = {}
    for c in criteria_of(release, task_id):
        out.setdefault(c.dimension, []).append({"criterion": c.criterion, "explanation": c.explanation})
    return json.dumps(out, ensure_ascii=False, indent=2)


# ------------------------------------------------------------------------------------------- clean
def clean_items(ctx: JudgeContext) -> list[JudgeItem]:
    if not judging(ctx.params)["clean"]:
        return []
    return [
        JudgeItem(
            "drb_clean",
            f"{r.report_id}:clean",
            {"article": _article(ctx, r), "language": _lang(ctx, r.task_id)},
            {"task_id": r.task_id, "report_id": r.report_id},
        )
        for r in ctx.reports
    ]


CLEAN_SCHEMA = {
    "report_id": pl.String,
    "task_id": pl.String,
    "status": pl.String,
    "article": pl.String,
    "reason": pl.String,
}


def cleaned_table(ctx: JudgeContext, judgments: list[Any]) -> pl.DataFrame:
    """Per report: the article RACE judges (cleaned, or as submitted when cleaning is off) or why there is none."""
    by_report = {j.input_ids["report_id"]: j for j in judgments}
    rows = []
    for r in ctx.reports:
        j = by_report.get(r.report_id)
        if j is None:
            rows.append(
                {
                    "report_id": r.report_id,
                    "task_id": r.task_id,
                    "status": "raw",
                    "article": _article(ctx, r),
                    "reason": None,
                }
            )
        elif j.ok:
            rows.append(
                {
                    "report_id": r.report_id,
                    "task_id": r.task_id,
                    "status": "cleaned",
                    "article": json.loads(j.parsed)["article"],
                    "reason": None,
                }
            )
        else:  # under the authors' bound (too_short) the task is unscored, as they leave it: not a failure
            undefined = failure_class(j.status, j.error) == "undefined"
            rows.append(
                {
                    "report_id": r.report_id,
                    "task_id": r.task_id,
                    "status": "undefined" if undefined else "failed",
                    "article": None,
                    "reason": f"{NOT_CLEANED if undefined else 'cleaning failed'}: {j.error}",
                }
            )
    return pl.DataFrame(rows, schema=CLEAN_SCHEMA, orient="row")


NOT_CLEANED = "not cleaned (the authors: Failed to clean article)"
"""The head of an undefined clean record's reason: the authors' words for an article under their bound."""


# -------------------------------------------------------------------------------------------- race
def race_items(ctx: JudgeContext) -> list[JudgeItem]:
    parser = judging(ctx.params)["race"]["parser"]
    tasks = {t.task_id: t for t in ctx.release.tasks}
    items = []
    for row in ctx.derived["cleaned"].iter_rows(named=True):
        if row["article"] is None:
            continue
        t = tasks[row["task_id"]]
        inputs = {
            "task_prompt": t.task_prompt,
            "criteria": criteria_json(ctx.release, t.task_id),
            "article_1": row["article"],
            "article_2": t.exemplar or "",
            "language": _lang(ctx, t.task_id),
            "parser": parser,
        }
        iid = f"{row['report_id']}:race:{content_hash(row['article'], n=8)}"
        items.append(JudgeItem("drb_race", iid, inputs, {"task_id": t.task_id, "report_id": row["report_id"]}))
    return items


# -------------------------------------------------------------------------------------------- fact
def extract_items(ctx: JudgeContext) -> list[JudgeItem]:
    return [
        JudgeItem(
            "drb_fact_extract",
            f"{r.report_id}:extract",
            {"article": _article(ctx, r), "language": _lang(ctx, r.task_id)},
            {"task_id": r.task_id, "report_id": r.report_id},
        )
        for r in ctx.reports
    ]


CIT_SCHEMA = {
    "report_id": pl.String,
    "task_id": pl.String,
    "n": pl.Int64,
    "fact": pl.String,
    "ref_idx": pl.String,
    "url": pl.String,
}


def citations_table(ctx: JudgeContext, judgments: list[Any]) -> pl.DataFrame:
    rows = []
    for j in judgments:
        if not j.ok:
            continue
        for n, c in enumerate(json.loads(j.parsed)["citations"]):
            rows.append({"report_id": j.input_ids["report_id"], "task_id": j.input_ids["task_id"], "n": n, **c})
    return pl.DataFrame(rows, schema=CIT_SCHEMA, orient="row")


def _groups(ctx: JudgeContext) -> dict[tuple[str, str, str], list[str]]:
    """(report, task, URL) -> facts in extraction order (grouped by the URL string, as the authors do)."""
    out: dict[tuple[str, str, str], list[str]] = {}
    for c in ctx.derived["citations"].sort(["report_id", "n"]).iter_rows(named=True):
        out.setdefault((c["report_id"], c["task_id"], c["url"]), []).append(c["fact"])
    return out


def _gid(rid: str, url: str) -> str:
    return f"{rid}:{content_hash(url, n=12)}"


def dedup_items(ctx: JudgeContext) -> list[JudgeItem]:
    return [
        JudgeItem(
            "drb_fact_dedup",
            f"{_gid(rid, url)}:dedup",
            {"statements": facts, "language": _lang(ctx, tid)},
            {"task_id": tid, "report_id": rid, "url": url},
        )
        for (rid, tid, url), facts in _groups(ctx).items()
        if len(facts) > 1
    ]


ST_SCHEMA = {
    "report_id": pl.String,
    "task_id": pl.String,
    "url": pl.String,
    "idx": pl.Int64,
    "fact": pl.String,
    "status": pl.String,
}


def statements_table(ctx: JudgeContext, judgments: list[Any]) -> pl.DataFrame:
    """Per URL group the statements kept; a failed de-duplication keeps all (code) or fails the group (paper)."""
    jp = judging(ctx.params)
    by_group = {(j.input_ids["report_id"], j.input_ids["url"]): j for j in judgments}
    rows = []
    for (rid, tid, url), facts in _groups(ctx).items():
        j = by_group.get((rid, url))
        status, keep = "ok", list(range(1, len(facts) + 1))
        if j is not None and j.ok:
            keep = list(json.loads(j.parsed)["keep"])
        elif j is not None and jp["fact"]["dedup_failure"] == "fail":
            status = "dedup_failed"
        for k, i in enumerate(keep):
            rows.append(
                {"report_id": rid, "task_id": tid, "url": url, "idx": k + 1, "fact": facts[i - 1], "status": status}
            )
    return pl.DataFrame(rows, schema=ST_SCHEMA, orient="row")


def _page_text(ctx: JudgeContext, url: str) -> tuple[str | None, str]:
    """(page text, fetch status) for a cited URL."""
    page = ctx.page(url)
    if page is None:
        return None, "not fetched" if url.startswith(("http://", "https://")) else "not an http(s) URL"
    if page.error_class != "ok" or not (page.text or "").strip():
        return None, f"fetch: {page.error_class if page.error_class != 'ok' else 'empty page'}"
    return str(page.text), "ok"


def validate_items(ctx: JudgeContext) -> list[JudgeItem]:
    jp = judging(ctx.params)
    groups: dict[tuple[str, str, str], list[str]] = {}
    for s in ctx.derived["statements"].filter(pl.col("status") == "ok").iter_rows(named=True):
        groups.setdefault((s["report_id"], s["task_id"], s["url"]), []).append(s["fact"])
    items = []
    for (rid, tid, url), facts in groups.items():
        text, why = _page_text(ctx, url)
        if text is None:
            if jp["fact"]["fetch_failure"] != "judge":
                continue
            text = f"scrape failed: {why}"  # the authors send their scraper's failure text to the validator
        items.append(
            JudgeItem(
                "drb_fact_validate",
                f"{_gid(rid, url)}:validate:{content_hash(text, *facts, n=8)}",
                {"reference": text, "statements": facts, "language": _lang(ctx, tid)},
                {"task_id": tid, "report_id": rid, "url": url},
            )
        )
    return items


VAL_SCHEMA = {
    "report_id": pl.String,
    "task_id": pl.String,
    "url": pl.String,
    "idx": pl.Int64,
    "fact": pl.String,
    "result": pl.String,
    "status": pl.String,
    "reason": pl.String,
}


def validations_table(ctx: JudgeContext, judgments: list[Any]) -> pl.DataFrame:
    """One row per kept statement: supported / unsupported / unknown, or why it was not judged."""
    by_group = {(j.input_ids["report_id"], j.input_ids["url"]): j for j in judgments}
    rows = []
    for s in ctx.derived["statements"].iter_rows(named=True):
        base = {k: s[k] for k in ("report_id", "task_id", "url", "idx", "fact")}
        if s["status"] != "ok":
            rows.append({**base, "result": None, "status": s["status"], "reason": "de-duplication call failed"})
            continue
        j = by_group.get((s["report_id"], s["url"]))
        if j is None:
            rows.append({**base, "result": None, "status": "not_fetched", "reason": _page_text(ctx, s["url"])[1]})
        elif not j.ok:
            rows.append({**base, "result": None, "status": "failed", "reason": j.error})
        else:
            res = {v["idx"]: v["result"] for v in json.loads(j.parsed)["results"]}
            if s["idx"] in res:
                rows.append({**base, "result": res[s["idx"]], "status": "ok", "reason": None})
            else:  # the authors' parser checks only the count: a verdict numbered otherwise is not guessed
                rows.append({**base, "result": None, "status": "failed", "reason": f"no verdict numbered {s['idx']}"})
    return pl.DataFrame(rows, schema=VAL_SCHEMA, orient="row")


# ------------------------------------------------------------------------------------------- score
RACE_METRICS = ("race_overall", *(f"race_{d}" for d in race_math.DIMENSIONS))
FACT_METRICS = ("citation_accuracy", "effective_citations")
_FACT_EVIDENCE = (
    "a validator verdict on at least one cited statement (its page fetched), unless the report cites nothing"
)
METRICS = [
    MetricSpec(
        "race_overall",
        NAME,
        "RACE overall: S_int(target) / (S_int(target) + S_int(reference))",
        short="RACE",
        missing_report="zero",
        judge_tasks=("drb_race",),
    ),
    *(
        MetricSpec(
            f"race_{d}",
            NAME,
            f"RACE {d}: weighted dimension score relative to the reference",
            short=d.replace("_", " ").title(),
            missing_report="zero",
            judge_tasks=("drb_race",),
        )
        for d in race_math.DIMENSIONS
    ),
    MetricSpec(
        "citation_accuracy",
        NAME,
        "FACT citation accuracy: supported / judged statement-URL pairs",
        short="C.Acc",
        judge_tasks=("drb_fact_extract", "drb_fact_validate"),
        evidence_kinds=("judgments", "pages", "validations"),
        evidence=_FACT_EVIDENCE,
        no_evidence="no_pages",
    ),
    MetricSpec(
        "effective_citations",
        NAME,
        "FACT effective citations: supported statement-URL pairs per task",
        unit="count",
        value_range=None,
        short="E.Cit",
        missing_report="zero",
        judge_tasks=("drb_fact_extract", "drb_fact_validate"),
        evidence_kinds=("judgments", "pages", "validations"),
        evidence=_FACT_EVIDENCE,
        no_evidence="no_pages",
    ),
]


def _race_task(
    rep: Any, steps: Mapping[str, list[Any]], release: Any, sc: Mapping[str, Any]
) -> tuple[dict[str, Any], str | None]:
    """(metric -> value or None, failure reason) of one report."""
    cj = [j for j in steps.get("clean", []) if j.input_ids.get("report_id") == rep.report_id]
    if cj and not cj[0].ok:
        if failure_class(cj[0].status, cj[0].error) == "undefined":  # unscored by the authors' protocol
            return {}, f"{NOT_CLEANED}: {cj[0].error}"
        return {}, f"cleaning failed: {cj[0].error}"
    rj = [j for j in steps.get("race", []) if j.input_ids.get("report_id") == rep.report_id]
    if not rj:
        return {}, "no RACE judgment"
    if not rj[0].ok:
        return {}, f"RACE judge failed: {rj[0].error}"
    crits = [
        race_math.Criterion(c.dimension, c.criterion, c.explanation, c.weight)
        for c in criteria_of(release, rep.task_id)
    ]
    info = task_infos(release)[rep.task_id]
    weights = {d: getattr(info, d) for d in race_math.DIMENSIONS}
    try:
        scores = race_math.weighted_scores(
            race_math.items_from_answer(json.loads(rj[0].parsed)), crits, weights, sc["race"]
        )
    except race_math.RaceError as exc:
        return {}, f"RACE scores do not fit the criteria: {exc}"
    res = race_math.task_result(scores, sc["race"])
    return {"race_overall": res["overall_score"], **{f"race_{d}": res[d] for d in race_math.DIMENSIONS}}, None


def _cited_urls(rep: Any) -> int:
    """The number of http(s) sources the parsed report lists (its own citations, whatever the extractor found)."""
    return sum(1 for src in (getattr(rep, "sources", {}) or {}).values() if str(src.url or "").startswith("http"))


def _fact_task(
    rep: Any, steps: Mapping[str, list[Any]], derived: Mapping[str, pl.DataFrame], sc: Mapping[str, Any]
) -> fact_math.TaskFact:
    ej = [j for j in steps.get("fact_extract", []) if j.input_ids.get("report_id") == rep.report_id]
    if not ej or not ej[0].ok:
        return fact_math.TaskFact(rep.task_id, 0, 0, 0, failed=True)
    cits = derived.get("citations")
    n_cit = 0 if cits is None else cits.filter(pl.col("report_id") == rep.report_id).height
    val = derived.get("validations")
    rows = [] if val is None else list(val.filter(pl.col("report_id") == rep.report_id).iter_rows(named=True))
    bad = [r for r in rows if r["status"] in ("failed", "dedup_failed")]
    if bad and (sc["fact"] == "paper" or any(r["status"] == "dedup_failed" for r in bad)):
        return fact_math.TaskFact(rep.task_id, 0, 0, n_cit, failed=True)
    ok = [r for r in rows if r["status"] == "ok"]
    s, u = fact_math.count_results(ok)
    return fact_math.TaskFact(rep.task_id, s, u, n_cit, n_validated=len(ok))


def score(ctx: ScoreContext) -> ScoreResult:
    sc = scoring(ctx.params)
    topic = {t.task_id: (t.categories[0] if t.categories else "") for t in ctx.release.tasks}
    out, authors = [], {}
    for system in ctx.systems:
        members = ctx.judgments.get(system) or {}
        member = sorted(members)[0] if members else None
        steps = members.get(member, {}) if member else {}
        derived = ctx.derived.get(system, {}).get(member, {}) if member else {}
        reported = {r.task_id: r for r in ctx.reports[system]}
        rows: list[dict[str, Any]] = []
        facts: list[fact_math.TaskFact] = []
        race_ok: list[dict[str, Any]] = []
        for t in ctx.release.tasks:
            tid, g = t.task_id, topic[t.task_id]
            rep = reported.get(tid)
            if rep is None:
                for m in (*RACE_METRICS, *FACT_METRICS):
                    rows.append(metric_row(system, tid, m, math.nan, "no_report", "no report", group=g))
                continue
            values, why = _race_task(rep, steps, ctx.release, sc)
            for m in RACE_METRICS:
                if why and why.startswith(NOT_CLEANED):
                    rows.append(metric_row(system, tid, m, math.nan, "undefined", why, group=g))
                elif why:
                    rows.append(metric_row(system, tid, m, math.nan, "failed", why, group=g, n_failed=1))
                elif values[m] is None:
                    rows.append(
                        metric_row(system, tid, m, math.nan, "undefined", "target + reference score 0", group=g)
                    )
                else:
                    rows.append(metric_row(system, tid, m, values[m], group=g))
            if not why and values["race_overall"] is not None:
                race_ok.append(values)
            tf = _fact_task(rep, steps, derived, sc)
            facts.append(tf)
            if tf.failed:
                for m in FACT_METRICS:
                    rows.append(
                        metric_row(
                            system, tid, m, math.nan, "failed", "FACT extraction/validation failed", group=g, n_failed=1
                        )
                    )
                continue
            if tf.unchecked:  # it cites, but nothing was validated: no value (never 0), the reason says why
                why = f"no_pages: none of its {tf.n_citations} cited statement(s) was validated (page not fetched)"
                for m in FACT_METRICS:
                    rows.append(metric_row(system, tid, m, math.nan, "undefined", why, group=g))
                continue
            urls = _cited_urls(rep)
            if tf.n_citations == 0 and urls:
                # "cites nothing" is the report's property, not the extractor's: a report listing sources whose
                # extraction gave no statement-URL pair had nothing validated either, so it has no value
                why = f"not_checked: it lists {urls} source URL(s), no statement-URL pair was extracted or validated"
                for m in FACT_METRICS:
                    rows.append(metric_row(system, tid, m, math.nan, "undefined", why, group=g))
                facts[-1] = fact_math.TaskFact(tid, 0, 0, urls, n_validated=0)  # unchecked in the export too
                continue
            acc = fact_math.citation_accuracy(tf.supported, tf.unsupported)
            n_j = tf.supported + tf.unsupported
            rows.append(
                metric_row(system, tid, "citation_accuracy", acc, n_items=n_j, group=g)
                if acc is not None
                else metric_row(
                    system, tid, "citation_accuracy", math.nan, "undefined", "no statement-URL pair judged", group=g
                )
            )
            eff = fact_math.effective_citations(tf, sc["fact"])
            rows.append(
                metric_row(
                    system,
                    tid,
                    "effective_citations",
                    eff,
                    n_items=n_j,
                    group=g,
                    reason=f"{NO_EVIDENCE_NEEDED} the report cites nothing" if tf.n_citations == 0 else None,
                )
                if eff is not None
                else metric_row(
                    system,
                    tid,
                    "effective_citations",
                    math.nan,
                    "undefined",
                    "no citations (code: task not counted)",
                    group=g,
                )
            )
        per_task = rows_frame(rows)
        summary = summarise_rows(system, NAME, per_task, METRICS)
        fsum = fact_math.summary(facts, sc["fact"])
        summary["fact_pooled"] = fsum
        summary["modes"] = {"scoring": sc}
        authors[system] = {"race": _authors_race(race_ok), "fact": fsum}
        summary["authors_result"] = authors[system]
        out.append(SystemScore(system, per_task, summary))
    return ScoreResult(out, extra_metrics={"authors_results": authors}, overall="race_overall")


def _authors_race(ok: list[dict[str, Any]]) -> dict[str, float | None] | None:
    """race_result.txt: the plain mean over successfully scored tasks (4 decimals, their labels). A value left
    undefined by `scoring.race: paper` (0/0) is left out of its mean (with `code` it is already 0)."""
    if not ok:
        return None
    labels = {
        "race_comprehensiveness": "Comprehensiveness",
        "race_insight": "Insight",
        "race_instruction_following": "Instruction Following",
        "race_readability": "Readability",
        "race_overall": "Overall Score",
    }
    out: dict[str, float | None] = {}
    for m, lab in labels.items():
        vals = [float(v[m]) for v in ok if v[m] is not None]
        out[lab] = round(sum(vals) / len(vals), 4) if vals else None
    return out


def task_payload(task: Any) -> dict[str, Any]:
    """What a command system gets: the authors' submission fields (id, prompt), never the reference report."""
    return {"task_id": task.task_id, "id": task.task_id, "prompt": task.task_prompt, "task_prompt": task.task_prompt}


def install() -> None:
    """Register judge tasks and metrics (idempotent); importing this module does it."""
    for t in TASKS:
        register_task(t, replace=True)
    for m in METRICS:
        register_metric(m, replace=True)


install()

def _reproducible_tables() -> tuple[Any, ...]:
    """The published tables `reportbench reproduce deepresearch_bench/<table>` reruns (reproduce.py)."""
    from reportbench_deepresearch_bench.reproduce import TABLES

    return TABLES


BENCHMARK = BenchmarkSpec(
    name=NAME,
    tag="drb",  # dvc exp show columns drb.<system>
    title="DeepResearch Bench (RACE + FACT)",
    build_release=build_release,
    judge_steps=(
        JudgeStep("clean", task="drb_clean", items=clean_items, derive=cleaned_table, derived_table="cleaned"),
        JudgeStep("race", task="drb_race", items=race_items),
        JudgeStep(
            "fact_extract",
            task="drb_fact_extract",
            items=extract_items,
            derive=citations_table,
            derived_table="citations",
        ),
        JudgeStep(
            "fact_dedup", task="drb_fact_dedup", items=dedup_items, derive=statements_table, derived_table="statements"
        ),
        JudgeStep(
            "fact_validate",
            task="drb_fact_validate",
            items=validate_items,
            derive=validations_table,
            derived_table="validations",
        ),
    ),
    score=score,
    metric_names=(*RACE_METRICS, *FACT_METRICS),
    task_payload=task_payload,
    export=export_race,  # `reportbench export -b deepresearch_bench` (export.py)
    conf_dir=CONF_DIR,
    prompts_dir=PROMPTS,
    system_kinds=("drb_jsonl",),
    reproduce=_reproducible_tables(),
    description="100 PhD-level research tasks (zh/en); RACE and FACT (Du et al. 2025, arXiv 2506.11763).",
)
