"""ResearchQA on the spine: release, the coverage judge step, the cross stage (battles + pairwise judging in
both orders) and the score stage (coverage tables, ensemble per battle, Bradley–Terry ratings with bootstrap).

Stage layout (adding a system reruns its own system stage, plus judge (the others from the cache), cross and score):
- judge@researchqa, per (system S, member): step `coverage` (rubric batches of <= 8 per answer);
- cross@researchqa: tables `battles` (the sampled tournament, DVC-tracked) and `pairwise` (two orders/battle);
- score@researchqa: coverage (macro x100, per domain, per rubric type), ensemble outcomes, ratings.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from reportbench.benchmarks import (
    BenchmarkSpec,
    CrossContext,
    JudgeContext,
    JudgeStep,
    ScoreContext,
    ScoreResult,
    SystemScore,
)
from reportbench.judges import factory  # `factory.make_judge` at call time: `reportbench estimate` swaps it
from reportbench.judges.runner import run_judgments_sync
from reportbench.metrics.aggregate import metric_row, rows_frame, summarise_rows
from reportbench.metrics.registry import MetricSpec, register_metric
from reportbench.partial_reuse import per_system, reported_tasks
from reportbench.protocols import JudgeItem, content_hash
from reportbench.protocols.researchqa.battles import ensemble_outcome, sample_battles
from reportbench.protocols.researchqa.labels import LABEL_VALUE, strip_links, strip_think
from reportbench.protocols.researchqa.rating import ELO_DECIMALS, TIE_MODES, bootstrap_bt
from reportbench.protocols.researchqa.release import NAME, build_release
from reportbench.protocols.researchqa.tasks import COVERAGE_TASK, PAIRWISE_TASK
from reportbench.reports.task_names import TaskNaming

log = logging.getLogger(__name__)

MAX_BATCH = 8  # the authors' batch_size; rubrics have <= 8 items, so one call per answer

METRICS = [
    MetricSpec(
        "coverage",
        NAME,
        "rubric coverage: mean (x-1)/4 over an answer's items, macro mean over queries, x100",
        judge_tasks=(COVERAGE_TASK,),
        unit="percent",
        value_range=(0.0, 100.0),
        short="Coverage %",
    ),
    MetricSpec(
        "elo",
        NAME,
        "Bradley–Terry rating (Elo scale, mean 1000) from ensemble-judged battles; bootstrap median or mean",
        aggregation="rating",
        judge_tasks=(COVERAGE_TASK, PAIRWISE_TASK),
        unit="elo",
        value_range=None,
        short="Elo",
    ),
]
METRIC_NAMES = tuple(m.name for m in METRICS)


def register_metrics() -> None:
    for spec in METRICS:
        register_metric(spec)


# ------------------------------------------------------------------------------------------- answers
def answer_text(report: Any) -> str:
    """The whole answer as judged: body plus its reference list (titles are what citation items need),
    with `<think>` blocks removed."""
    refs = []
    for src in report.sources.values():
        line = (src.raw or src.title or "").strip()
        if not line or src.key.startswith("http"):
            continue  # bare links stay where they are in the body
        refs.append(line if line.startswith("[") else f"[{src.key}] {line}")
    text = report.body.rstrip()
    if refs:
        text += "\n\nReferences\n" + "\n".join(refs)
    return strip_think(text)


def _rubric(release: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for r in release.table("rubric_items"):
        out.setdefault(r.task_id, []).append(r)
    for rows in out.values():
        rows.sort(key=lambda r: r.index)
    return out


def _domain(task: Any) -> str:
    return task.categories[0] if task.categories else "(none)"


# ------------------------------------------------------------------------------------- coverage step
def coverage_items(ctx: JudgeContext) -> list[JudgeItem]:
    cfg = (ctx.judging.get("coverage") or {}) if ctx.judging else {}
    batch = int(cfg.get("batch_size", MAX_BATCH))
    if not 1 <= batch <= MAX_BATCH:
        raise ValueError(f"benchmarks.researchqa.judging.coverage.batch_size must be 1..{MAX_BATCH}, got {batch}")
    rubric = _rubric(ctx.release)
    items = []
    for rep in ctx.reports:
        answer = answer_text(rep)
        rows = rubric.get(rep.task_id, [])
        for b in range(0, len(rows), batch):
            chunk = rows[b : b + batch]
            questions = [r.text for r in chunk]
            items.append(
                JudgeItem(
                    COVERAGE_TASK,
                    f"{rep.report_id}:cov{b // batch}:{content_hash(answer, *questions, n=10)}",
                    {"response": answer, "questions": questions},
                    {
                        "task_id": rep.task_id,
                        "report_id": rep.report_id,
                        "batch": str(b // batch),
                        "items": ",".join(r.item_id for r in chunk),
                    },
                )
            )
    return items


def coverage_labels(judgments: Sequence[Any]) -> dict[str, tuple[list[str] | None, list[str]]]:
    """task_id -> (labels in item order, or None if any batch failed; item ids)."""
    by_task: dict[str, list[Any]] = {}
    for j in judgments:
        by_task.setdefault(j.input_ids["task_id"], []).append(j)
    out: dict[str, tuple[list[str] | None, list[str]]] = {}
    for task_id, js in by_task.items():
        js.sort(key=lambda j: int(j.input_ids["batch"]))
        labels: list[str] | None = []
        ids: list[str] = []
        for j in js:
            ids.extend(j.input_ids["items"].split(","))
            if not j.ok or labels is None:
                labels = None
                continue
            labels.extend(json.loads(j.parsed)["labels"])
        out[task_id] = (labels, ids)
    return out


# --------------------------------------------------------------------------------------------- cross
PAIRWISE_SCHEMA: dict[str, Any] = {
    "battle_id": pl.String,
    "order": pl.String,  # ab: A shown as Response 1; ba: swapped
    "status": pl.String,  # ok | failed
    "verdict": pl.String,  # Response 1 | Response 2 (as the judge saw it)
    "vote": pl.String,  # A | B (mapped back), null when the order failed (0 votes, flagged)
    "flagged": pl.Boolean,
    "error": pl.String,
    "raw_output": pl.String,
    "explanation": pl.String,
    "judge_id": pl.String,
    "prompt_id": pl.String,
}


def _battle_params(ctx_params: Mapping[str, Any]) -> dict[str, Any]:
    cfg = (ctx_params.get("judging") or {}).get("battles") or {}
    return {
        "min_per_domain": int(cfg.get("min_per_domain") or 1000),
        "seed": int(cfg.get("seed", 0)),
        "reserve_share": float(cfg.get("reserve_share") or 0.0),
    }


def _member_judge_cfg(judge_params: Mapping[str, Any], params: Mapping[str, Any], member: str | None) -> dict[str, Any]:
    """The root judge group with one ensemble member's overrides (what pipeline.judge_config does)."""
    cfg = dict(judge_params)
    members = params.get("judges") or {"main": {}}
    name = member or next(iter(members))
    for key, value in (members.get(name) or {}).items():
        if isinstance(value, Mapping) and isinstance(cfg.get(key), Mapping):
            cfg[key] = {**cfg[key], **value}
        else:
            cfg[key] = value
    role = (cfg.get("task_models") or {}).get(PAIRWISE_TASK)
    if role:
        cfg["model"] = role
    return cfg


def pairwise_items(
    battles: pl.DataFrame, tasks: Mapping[str, Any], answers: Mapping[str, Mapping[str, str]], link_mode: str
) -> list[JudgeItem]:
    items = []
    for b in battles.filter(pl.col("status") == "ok").iter_rows(named=True):
        query = tasks[b["task_id"]].title
        ra = strip_links(answers[b["system_a"]][b["task_id"]], link_mode)
        rb = strip_links(answers[b["system_b"]][b["task_id"]], link_mode)
        for order, r1, r2 in (("ab", ra, rb), ("ba", rb, ra)):
            items.append(
                JudgeItem(
                    PAIRWISE_TASK,
                    f"{b['battle_id']}:{order}:{content_hash(query, r1, r2, n=10)}",
                    {"query": query, "response_1": r1, "response_2": r2},
                    {"battle_id": b["battle_id"], "order": order, "task_id": b["task_id"]},
                )
            )
    return items


def pairwise_rows(judgments: Sequence[Any]) -> pl.DataFrame:
    rows = []
    for j in judgments:
        order = j.input_ids["order"]
        vote = None
        if j.ok:
            first = j.label == "Response 1"
            vote = ("A" if first else "B") if order == "ab" else ("B" if first else "A")
        rows.append(
            {
                "battle_id": j.input_ids["battle_id"],
                "order": order,
                "status": j.status,
                "verdict": j.label if j.ok else None,
                "vote": vote,
                "flagged": not j.ok,
                "error": j.error,
                "raw_output": j.raw_output,
                "explanation": j.explanation,
                "judge_id": j.judge_id,
                "prompt_id": j.prompt_id,
            }
        )
    return pl.DataFrame(rows, schema=PAIRWISE_SCHEMA, orient="row").sort(["battle_id", "order"])


def _answers(reports: Iterable[Any]) -> dict[str, str]:
    """task_id -> the answer as judged (a per-system partial of the cross stage)."""
    return {r.task_id: answer_text(r) for r in reports}


def cross(ctx: CrossContext) -> dict[str, pl.DataFrame]:
    """Sample the battles, then judge each in both orders (markdown links stripped)."""

    bp = _battle_params(ctx.params)
    tasks = {t.task_id: t for t in ctx.release.tasks}
    queries: dict[str, list[str]] = {}
    for t in ctx.release.tasks:
        queries.setdefault(_domain(t), []).append(t.task_id)
    # per system, only what the battles need: its tasks (read from its reports' line heads), then the answer texts
    # of the tasks it battles on (reused by the key of its reports when the stage keeps partials: partial_reuse)
    reported = {s: reported_tasks(ctx, s) for s in ctx.reports}
    battles = sample_battles(
        queries,
        ctx.systems,
        {s: set(a) for s, a in reported.items()},
        min_per_domain=bp["min_per_domain"],
        seed=bp["seed"],
        reserve_share=bp["reserve_share"],
    )
    needed: dict[str, set[str]] = {s: set() for s in reported}
    for b in battles.filter(pl.col("status") == "ok").iter_rows(named=True):
        needed[b["system_a"]].add(b["task_id"])
        needed[b["system_b"]].add(b["task_id"])
    answers = {}
    for s in reported:
        every = per_system(ctx, s, "researchqa.answers", _answers)
        answers[s] = {t: every[t] for t in needed[s]}
        del every
    pcfg = (ctx.params.get("judging") or {}).get("pairwise") or {}
    items = pairwise_items(battles, tasks, answers, str(pcfg.get("strip_links", "authors")))
    judge_cfg = _member_judge_cfg(ctx.judge_params, ctx.params, pcfg.get("member"))
    judge = factory.make_judge(PAIRWISE_TASK, judge_cfg)
    run = run_judgments_sync(
        judge,
        [(i.item_id, i.typed(), dict(i.input_ids)) for i in items],
        desc=f"pairwise@{ctx.benchmark}",
        judge_name=str(judge_cfg.get("name")),
    )
    pairwise = pairwise_rows(list(run))
    n_flag = int(pairwise["flagged"].sum()) if pairwise.height else 0
    if n_flag:
        log.warning(
            "researchqa pairwise: %d of %d orders unparseable/failed (0 votes, flagged)", n_flag, pairwise.height
        )
    return {"battles": battles, "pairwise": pairwise}


# --------------------------------------------------------------------------------------------- score
def _scoring(ctx: ScoreContext) -> dict[str, Any]:
    s = ctx.scoring
    cov = s.get("coverage") or {}
    ens = s.get("ensemble") or {}
    rat = s.get("rating") or {}
    ties = str(rat.get("ties", "half"))
    if ties not in TIE_MODES:
        raise ValueError(f"benchmarks.researchqa.scoring.rating.ties must be one of {TIE_MODES}, got {ties!r}")
    report = str(rat.get("report", "median"))
    if report not in ("median", "mean", "point"):
        raise ValueError(f"benchmarks.researchqa.scoring.rating.report must be median|mean|point, got {report!r}")
    return {
        "missing": str(cov.get("missing", "skip")),
        "on_failure": str(cov.get("on_failure", "nan")),
        "ens_mode": str(ens.get("mode", "paper")),
        "vote_weight": ens.get("vote_weight"),
        "member": ens.get("member"),
        "ties": ties,
        "report": report,
        "rounds": int(rat.get("rounds", 1000)),
        "seed": int(rat.get("seed", 0)),
        "solver": str(rat.get("solver", "joint")),
        "order": str(rat.get("order", "sorted")),  # sorted | factorize (the notebook's pd.factorize)
        "std_ddof": int(rat.get("std_ddof", 0)),  # 0 | 1 (the notebook's pandas .std())
    }


def _sem(values: list[float]) -> float | None:
    vals = [v for v in values if v == v]
    if len(vals) < 2:
        return None
    return float(np.std(vals, ddof=1) / math.sqrt(len(vals)))


def score(ctx: ScoreContext) -> ScoreResult:
    sc = _scoring(ctx)
    tasks = {t.task_id: t for t in ctx.release.tasks}
    rubric = _rubric(ctx.release)
    item_types = {
        (r.task_id, r.item_id): (json.loads(r.meta).get("type") if r.meta else None) or ["(none)"]
        for rows in rubric.values()
        for r in rows
    }
    members = sorted({m for s in ctx.systems for m in ctx.judgments.get(s, {})})
    member = sc["member"] or (members[0] if members else None)

    labels_by_system: dict[str, dict[str, tuple[list[str] | None, list[str]]]] = {}
    cov_rows: dict[str, list[dict[str, Any]]] = {}
    by_domain: dict[str, dict[str, float | None]] = {}
    by_type: dict[str, dict[str, dict[str, float | int]]] = {}
    sems: dict[str, float | None] = {}
    for s in ctx.systems:
        js = (ctx.judgments.get(s, {}).get(member, {}) if member else {}).get("coverage", [])
        labs = coverage_labels(js)
        labels_by_system[s] = labs
        reported = set(reported_tasks(ctx, s))
        rows = []
        domain_vals: dict[str, list[float]] = {}
        type_counts: dict[str, list[int]] = {}
        for tid, t in tasks.items():
            dom = _domain(t)
            if tid not in reported:
                if sc["missing"] == "zero":
                    rows.append(metric_row(s, tid, "coverage", 0.0, reason="no answer: scored 0", group=dom))
                    domain_vals.setdefault(dom, []).append(0.0)
                else:
                    rows.append(metric_row(s, tid, "coverage", math.nan, "no_report", "no answer", group=dom))
                continue
            if not rubric.get(tid):
                rows.append(metric_row(s, tid, "coverage", math.nan, "undefined", "empty rubric", group=dom))
                continue
            labels, ids = labs.get(tid, (None, []))
            if labels is None:
                if sc["on_failure"] == "zero":
                    rows.append(metric_row(s, tid, "coverage", 0.0, reason="judge failed: scored 0", group=dom))
                    domain_vals.setdefault(dom, []).append(0.0)
                else:
                    why = "coverage judgment failed" if tid in labs else "no coverage judgment"
                    rows.append(metric_row(s, tid, "coverage", math.nan, "failed", why, group=dom, n_failed=1))
                continue
            value = 100.0 * sum((LABEL_VALUE[x] - 1) / 4.0 for x in labels) / len(labels)
            rows.append(metric_row(s, tid, "coverage", value, group=dom, n_items=len(labels)))
            domain_vals.setdefault(dom, []).append(value)
            for item_id, label in zip(ids, labels, strict=True):
                for typ in item_types.get((tid, item_id), ["(none)"]):
                    c = type_counts.setdefault(typ, [0, 0])
                    c[0] += 1
                    c[1] += int(label == "Completely")
        cov_rows[s] = rows
        by_domain[s] = {d: float(np.mean(v)) if v else None for d, v in sorted(domain_vals.items())}
        by_type[s] = {
            t: {"n_items": n, "share_completely": c / n, "error": 1.0 - c / n}
            for t, (n, c) in sorted(type_counts.items())
        }
        sems[s] = _sem([r["value"] for r in rows if r["status"] == "ok"])

    # ---- ensemble over battles, then ratings
    battles = ctx.cross.get("battles")
    pairwise = ctx.cross.get("pairwise")
    outcomes: list[dict[str, Any]] = []
    counts = {
        "battles": 0,
        "reserve": 0,
        "unplayable": 0,
        "requeued_coverage": 0,
        "missing_coverage": 0,
        "flagged_orders": 0,
        "rated": 0,
    }
    if battles is not None and pairwise is not None:
        outcomes = ensemble_battles(battles, pairwise, labels_by_system, sc["ens_mode"], sc["vote_weight"], counts)
    wlt = {
        "win": sum(1 for o in outcomes if o["outcome"] == 1.0),
        "lose": sum(1 for o in outcomes if o["outcome"] == 0.0),
        "tie": sum(1 for o in outcomes if o["outcome"] == 0.5),
    }
    ratings: dict[str, list[dict[str, Any]]] = {}
    for ties in TIE_MODES:
        if outcomes:
            r = bootstrap_bt(
                [o["system_a"] for o in outcomes],
                [o["system_b"] for o in outcomes],
                [o["outcome"] for o in outcomes],
                ties=ties,
                rounds=sc["rounds"],
                seed=sc["seed"],
                solver=sc["solver"],
                order=sc["order"],
            )
            ratings[ties] = r.table(ddof=sc["std_ddof"], decimals=ELO_DECIMALS)
        else:
            ratings[ties] = []
    key = {"median": "boot_median", "mean": "boot_mean", "point": "rating"}[sc["report"]]
    if sc["rounds"] == 0:
        key = "rating"
    chosen = {row["system"]: row for row in ratings[sc["ties"]]}

    out = []
    for s in ctx.systems:
        rows = list(cov_rows[s])
        if s in chosen and chosen[s][key] is None:
            why = chosen[s].get("reason") or chosen[s].get("ci_reason") or "not_identifiable"
            rows.append(metric_row(s, "*", "elo", math.nan, "undefined", str(why)))
        elif s in chosen:
            rows.append(
                metric_row(
                    s,
                    "*",
                    "elo",
                    float(chosen[s][key]),
                    n_items=sum(1 for o in outcomes if s in (o["system_a"], o["system_b"])),
                )
            )
        else:
            rows.append(metric_row(s, "*", "elo", math.nan, "undefined", "no rated battle"))
        per_task = rows_frame(rows)
        summary = summarise_rows(
            s,
            NAME,
            per_task,
            METRICS,
            coverage_sem=sems[s],
            coverage_by_domain=by_domain[s],
            coverage_by_type=by_type[s],
            elo_interval=[chosen[s]["ci_low"], chosen[s]["ci_high"]]
            if s in chosen and chosen[s]["ci_low"] is not None
            else None,
            **({"elo_interval_reason": chosen[s]["ci_reason"]} if "ci_reason" in chosen.get(s, {}) else {}),
        )
        out.append(SystemScore(s, per_task, summary))
    extra = {
        "coverage_by_domain": by_domain,
        "coverage_by_type": by_type,
        "coverage_sem": sems,
        "ensemble": {"mode": sc["ens_mode"], "vote_weight": sc["vote_weight"], "member": member, **counts, **wlt},
        "ratings": {
            "reported": sc["ties"],
            "value": sc["report"],
            "tables": ratings,
            "rounds": sc["rounds"],
            "seed": sc["seed"],
        },
    }
    return ScoreResult(out, extra_metrics=extra, overall="coverage")


def _labels_of(labels_by_system: Mapping[str, Mapping[str, Any]], system: str, task_id: str) -> list[str] | None:
    return labels_by_system.get(system, {}).get(task_id, (None, []))[0]


def ensemble_battles(
    battles: pl.DataFrame,
    pairwise: pl.DataFrame,
    labels_by_system: Mapping[str, Mapping[str, Any]],
    mode: str,
    vote_weight: float | None,
    counts: dict[str, int],
) -> list[dict[str, Any]]:
    """Decide every main battle by the ensemble rule. A battle whose coverage is missing for a side is
    re-queued onto the first unused reserve battle of the same domain and pair that has both coverages;
    when there is none it is counted in `missing_coverage` and not rated."""
    votes: dict[str, list[str]] = {}
    for p in pairwise.iter_rows(named=True):
        if p["vote"] is not None:
            votes.setdefault(p["battle_id"], []).append(p["vote"])
    counts["flagged_orders"] = int(pairwise["flagged"].sum()) if pairwise.height else 0
    rows = list(battles.iter_rows(named=True))
    reserves = [b for b in rows if b.get("reserve") and b["status"] == "ok"]
    used: set[str] = set()

    def scored(b: Mapping[str, Any]) -> bool:
        return (
            _labels_of(labels_by_system, b["system_a"], b["task_id"]) is not None
            and _labels_of(labels_by_system, b["system_b"], b["task_id"]) is not None
        )

    out = []
    for b in rows:
        if b.get("reserve"):
            counts["reserve"] += 1
            continue
        counts["battles"] += 1
        if b["status"] != "ok":
            counts["unplayable"] += 1
            continue
        if not scored(b):
            pair = {b["system_a"], b["system_b"]}
            spare = next(
                (
                    r
                    for r in reserves
                    if r["battle_id"] not in used
                    and r["domain"] == b["domain"]
                    and {r["system_a"], r["system_b"]} == pair
                    and scored(r)
                ),
                None,
            )
            if spare is None:
                counts["missing_coverage"] += 1
                continue
            used.add(spare["battle_id"])
            counts["requeued_coverage"] += 1
            b = {**spare, "requeued_from": b["battle_id"]}
        la = _labels_of(labels_by_system, b["system_a"], b["task_id"]) or []
        lb = _labels_of(labels_by_system, b["system_b"], b["task_id"]) or []
        v = votes.get(b["battle_id"], [])
        sa, sb, y = ensemble_outcome(
            [LABEL_VALUE[x] for x in la], [LABEL_VALUE[x] for x in lb], v.count("A"), v.count("B"), mode, vote_weight
        )
        out.append({**b, "score_a": sa, "score_b": sb, "outcome": y})
    counts["rated"] = len(out)
    return out


def task_payload(task: Any) -> dict[str, Any]:
    """What command/endpoint systems see: the prompt plus the fields it was built from."""
    return {
        "task_id": task.task_id,
        "prompt": task.task_prompt,
        "query": task.title,
        "date": task.published_date,
        "domain": task.categories,
    }


# Task ids are the dataset's `id` (`<corpusid>-s<N>`, the authors' internal `corpusid_sectionid`); no numbers.
TASK_NAMING = TaskNaming(spelled="<corpusid>-s<N> (or <corpusid>_s<N>)", separators=(("-", "_"),))

BENCHMARK = BenchmarkSpec(
    name=NAME,
    tag="rqa",  # dvc exp show columns rqa.<system> (dvc_metrics.brief)
    title="ResearchQA",
    build_release=build_release,
    judge_steps=(JudgeStep("coverage", task=COVERAGE_TASK, items=coverage_items),),
    score=score,
    metric_names=METRIC_NAMES,
    cross=cross,
    task_payload=task_payload,
    description="Rubric coverage over 75 fields, pairwise judging, battles and Bradley–Terry ratings",
    task_naming=TASK_NAMING,
)
