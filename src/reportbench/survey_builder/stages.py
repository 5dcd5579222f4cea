"""The survey builder's DVC stages as plain functions (pipelines/researchqa_survey/dvc.yaml -> run.py -> here).

Stages: surveys -> sections -> queries -> rubrics -> publish. Each reads the composed root params.yaml
(`live_researchqa:` and the root `judge:` group), reads the previous stage's files under
`live_researchqa/work/<name>/` and writes its own (atomically, sorted, no wall clock). Each stage also writes
`metrics/live_researchqa/<stage>.json` (a `cache: false` DVC metric): kept and dropped counts by reason, the
network requests it made and its judge usage — request counts differ between a first build and a cached
rebuild, so they stay out of the data outputs.

Resuming: DVC clears a stage's outputs before rerunning it, so resumption lives in the caches: the shared HTTP
cache and item store (`live_researchqa.http.cache_dir`, the DeepScholar live builder's) and the judge response
cache. A stage killed halfway replays what it already fetched or generated without a request or a paid call.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import polars as pl

from reportbench import builder_kit
from reportbench.http_cache import CachingSession
from reportbench.live_builder.stage_io import fresh_dir, read_json, read_jsonl, write_json, write_jsonl
from reportbench.survey_builder.config import SurveyConfig, load_survey_config, work_dir
from reportbench.survey_builder.queries import QueryRecord, generate_queries, query_rows
from reportbench.survey_builder.records import (
    DROP_SCHEMA,
    BuildError,
    Drop,
    JudgeFactory,
    JudgeLog,
    drop_counts,
    judge_factory,
    read_drops,
    write_drops,
    write_verdicts,
)
from reportbench.survey_builder.rubrics import Candidate, build_rubrics, candidate_rows
from reportbench.survey_builder.sections import SectionRecord, section_rows, select_sections
from reportbench.survey_builder.surveys import SurveyRecord, find_surveys, survey_rows

log = logging.getLogger("reportbench.survey_builder")

STAGES = ("surveys", "sections", "queries", "rubrics", "publish")
NETWORK_STAGES = ("surveys", "rubrics")


class Paths:
    def __init__(self, cfg: SurveyConfig, root: Path = Path(".")) -> None:
        self.root = root
        self.work = work_dir(cfg, root)
        self.release_dir = root / "live_researchqa" / "releases" / cfg.name
        self.metrics_dir = root / "metrics" / "live_researchqa"
        self.stats = self.metrics_dir / "release.json"

    def stage(self, name: str) -> Path:
        return self.work / name

    def metrics(self, name: str) -> Path:
        return self.metrics_dir / f"{name}.json"


def open_session(cfg: SurveyConfig, root: Path = Path(".")) -> CachingSession:
    return builder_kit.open_session(cfg.http, root)


def _judges(params: dict[str, Any], cfg: SurveyConfig, judge_for: JudgeFactory | None) -> JudgeLog:
    """The stage's judge log. With a real generator, its credentials are checked before anything else runs:
    a missing key must fail in seconds, not after an hour of downloads (one `error:` line, exit 2)."""
    judge = params.get("judge") or {}
    if judge_for is None and str(judge.get("backend")) == "litellm":
        from reportbench.judges.client import preflight  # lazy: +74 ms to import (python -X importtime)

        role = {k: v for k, v in judge.items() if k != "prompts"}  # a judge-level key, not a client setting
        if cfg.generator_model:
            role["model"] = cfg.generator_model
        preflight(role, name=f"{judge.get('name')} (live_researchqa generator)")
    progress = bool((judge.get("runtime") or {}).get("progress", False))
    return JudgeLog(judge_for or judge_factory(params, cfg.generator_model), progress=progress)


def _stage_metrics(
    paths: Paths,
    stage: str,
    kept: int,
    drops: list[Drop],
    usage: dict[str, Any] | None = None,
    session: CachingSession | None = None,
) -> dict[str, Any]:
    from reportbench.survey_builder.publish import DROP_REASONS  # lazy: +2030 ms to import (python -X importtime)

    counts = drop_counts(drops)
    every = {code: counts.get(code, 0) for code in sorted({*DROP_REASONS.get(stage, ()), *counts})}
    rep: dict[str, Any] = {"kept": kept, "dropped": len(drops), "dropped_by_reason": every}
    if session is not None:
        rep.update(session.stats.as_dict())
    if usage is not None:
        rep["judge"] = {task: {k: u[k] for k in ("items", "ok", "failed", "cache_hits", "calls")}
                        for task, u in usage.items()}  # fmt: skip
    write_json(paths.metrics(stage), rep)
    return rep


# ---------------------------------------------------------------------------------------------- readers
def read_surveys(paths: Paths) -> list[SurveyRecord]:
    return [SurveyRecord.model_validate(r) for r in read_jsonl(paths.stage("surveys") / "surveys.jsonl")]


def read_sections(paths: Paths) -> list[SectionRecord]:
    return [SectionRecord.model_validate(r) for r in read_jsonl(paths.stage("sections") / "sections.jsonl")]


def read_queries(paths: Paths) -> list[QueryRecord]:
    return [QueryRecord.model_validate(r) for r in read_jsonl(paths.stage("queries") / "queries.jsonl")]


# ----------------------------------------------------------------------------------------------- stages
def stage_surveys(
    params: dict[str, Any],
    root: Path = Path("."),
    session: CachingSession | None = None,
    judge_for: JudgeFactory | None = None,
) -> dict[str, Any]:
    cfg = load_survey_config(params)
    paths = Paths(cfg, root)
    jl = _judges(params, cfg, judge_for)
    with builder_kit.stage_session(cfg.http, root, session) as sess:
        res = find_surveys(cfg, sess, jl, api_key=cfg.http.api_key(), mailto=cfg.http.mailto())
        out = fresh_dir(paths.stage("surveys"))
        write_jsonl(out / "surveys.jsonl", survey_rows(res.kept))
        write_drops(out / "dropped.parquet", res.drops)
        write_json(out / "summary.json", {"listed": res.listed, "per_field": res.per_field, "errors": res.errors})
        usage = jl.write(out / "judgments")
        rep = _stage_metrics(paths, "surveys", len(res.kept), res.drops, usage, sess)
    rep["listed"] = res.listed
    write_json(paths.metrics("surveys"), rep)
    log.info("surveys: %d listed, %d kept, %d dropped, %d requests (%d cache hits)",
             res.listed, len(res.kept), len(res.drops), rep["requests"], rep["cache_hits"])  # fmt: skip
    return rep


def stage_sections(params: dict[str, Any], root: Path = Path(".")) -> dict[str, Any]:
    cfg = load_survey_config(params)
    paths = Paths(cfg, root)
    kept, drops = select_sections(read_surveys(paths), cfg.sections)
    out = fresh_dir(paths.stage("sections"))
    write_jsonl(out / "sections.jsonl", section_rows(kept))
    write_drops(out / "dropped.parquet", drops)
    rep = _stage_metrics(paths, "sections", len(kept), drops)
    log.info("sections: %d kept, %d dropped", len(kept), len(drops))
    return rep


def stage_queries(
    params: dict[str, Any], root: Path = Path("."), judge_for: JudgeFactory | None = None
) -> dict[str, Any]:
    cfg = load_survey_config(params)
    paths = Paths(cfg, root)
    jl = _judges(params, cfg, judge_for)
    res = generate_queries(read_sections(paths), cfg.queries, jl)
    out = fresh_dir(paths.stage("queries"))
    write_jsonl(out / "queries.jsonl", query_rows(res.kept))
    write_drops(out / "dropped.parquet", res.drops)
    write_verdicts(out / "verdicts.parquet", res.verdicts)
    usage = jl.write(out / "judgments")
    rep = _stage_metrics(paths, "queries", len(res.kept), res.drops, usage)
    log.info("queries: %d kept, %d dropped", len(res.kept), len(res.drops))
    return rep


def stage_rubrics(
    params: dict[str, Any],
    root: Path = Path("."),
    session: CachingSession | None = None,
    judge_for: JudgeFactory | None = None,
) -> dict[str, Any]:
    cfg = load_survey_config(params)
    paths = Paths(cfg, root)
    jl = _judges(params, cfg, judge_for)
    queries = read_queries(paths)
    with builder_kit.stage_session(cfg.http, root, session) as sess, builder_kit.item_store(sess) as cache:
        res = build_rubrics(queries, cfg.rubrics, jl, sess, cache, api_key=cfg.http.api_key(), mailto=cfg.http.mailto())
        out = fresh_dir(paths.stage("rubrics"))
        rubric_rows = [
            {"query_id": qid, "items": [c.item_id for c in items]} for qid, items in sorted(res.rubrics.items())
        ]
        write_jsonl(out / "rubrics.jsonl", rubric_rows)
        write_jsonl(out / "candidates.jsonl", candidate_rows(res.candidates))
        write_drops(out / "dropped.parquet", res.drops)
        usage = jl.write(out / "judgments")
        rep = _stage_metrics(paths, "rubrics", len(res.rubrics), res.drops, usage, sess)
    rep["lookups"] = res.lookups
    write_json(paths.metrics("rubrics"), rep)
    log.info("rubrics: %d queries with a rubric, %d items/sets/queries dropped, %d requests",
             len(res.rubrics), len(res.drops), rep["requests"])  # fmt: skip
    return rep


def stage_publish(params: dict[str, Any], root: Path = Path(".")) -> dict[str, Any]:
    # lazy: +2030 ms to import (python -X importtime)
    from reportbench.survey_builder.publish import (
        DEFAULT_LICENCE,
        card,
        judge_totals,
        release_stats,
        source_row,
        split_rows,
        write_release,
    )

    cfg = load_survey_config(params)
    paths = Paths(cfg, root)
    queries = read_queries(paths)
    rdir = paths.stage("rubrics")
    cands = {c.item_id: c for c in (Candidate.model_validate(r) for r in read_jsonl(rdir / "candidates.jsonl"))}
    rubrics = {r["query_id"]: [cands[i] for i in r["items"]] for r in read_jsonl(rdir / "rubrics.jsonl")}
    rows, published, split_drops = split_rows(queries, rubrics, cfg)
    drops = [d for s in STAGES[:-1] for d in read_drops(paths.stage(s) / "dropped.parquet")] + split_drops
    if not published:
        raise BuildError(
            f"no query survived the survey builder ({len(drops)} drops; see {paths.work}/*/dropped.parquet "
            f"and the counts in {paths.metrics_dir}/<stage>.json)"
        )
    surveys_summary = read_json(paths.stage("surveys") / "summary.json")
    counts = {
        "surveys_listed": int(surveys_summary.get("listed", 0)),
        "surveys_kept": sum(1 for _ in read_jsonl(paths.stage("surveys") / "surveys.jsonl")),
        "sections_kept": sum(1 for _ in read_jsonl(paths.stage("sections") / "sections.jsonl")),
        "queries_after_filters": len(queries),
        "queries_with_rubric": len(rubrics),
    }
    requests = {s: read_json(paths.metrics(s)) for s in NETWORK_STAGES if paths.metrics(s).is_file()}
    judge_files = sorted(p for s in STAGES for p in (paths.stage(s) / "judgments").glob("*.parquet"))
    stats = release_stats(cfg, rows, drops, counts, requests, judge_totals(judge_files))
    judge_params = params.get("judge") or {}
    text = card(cfg, rows, stats, judge_params)
    drops_frame = pl.DataFrame(
        sorted((d.model_dump() for d in drops), key=lambda r: (r["stage"], r["item_id"], r["reason_code"])),
        schema=DROP_SCHEMA,
    )
    meta = {
        "name": cfg.name,
        "benchmark": "researchqa",
        "created_at": cfg.release_date,
        "licence": cfg.licence if cfg.licence != "mixed; see CARD.md" else DEFAULT_LICENCE,
        "source": "OpenAlex + arXiv e-prints (reportbench survey builder, live_researchqa/dvc.yaml)",
        "window": f"{cfg.window.start}..{cfg.window.end}",
        "generator": f"{judge_params.get('backend')}:{cfg.generator_model or judge_params.get('model')}",
        "description": cfg.description
        or f"ResearchQA-style queries and rubrics from surveys published {cfg.window.start}..{cfg.window.end}",
    }
    manifest = write_release(paths.release_dir, rows, [source_row(q) for q in published], text, meta, drops_frame)
    write_json(paths.stats, stats)
    req, jg = stats["requests"], stats["judge"]
    cost = jg["cost_per_1000_queries_usd"]
    print(
        f"publish: {len(published)} queries ({stats['splits']}) in {stats['fields']} fields -> {paths.release_dir}; "
        f"requests per kept query = {req['per_kept_query']} ({req['total']} requests, {req['cache_hits']} cache hits); "
        f"judge items per kept query = {jg['items_per_kept_query']} ({jg['calls_this_build']} calls this build); "
        f"generator cost per 1,000 queries from recorded tokens = "
        + (f"${cost}" if cost is not None else "unknown (no recorded tokens)")
    )
    return {"manifest": manifest, "stats": stats}


def run_stage(name: str, params: dict[str, Any], root: Path = Path(".")) -> dict[str, Any]:
    stages = (stage_surveys, stage_sections, stage_queries, stage_rubrics, stage_publish)
    return builder_kit.run_named_stage(dict(zip(STAGES, stages, strict=True)), name, params, root, "survey-builder")
