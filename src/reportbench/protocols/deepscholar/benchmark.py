"""DeepScholar-bench on the spine: its release kinds, judge steps and score function (`BENCHMARK`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from reportbench.benchmarks import (
    BenchmarkSpec,
    JudgeContext,
    JudgeStep,
    ScoreContext,
    ScoreResult,
    SystemScore,
)
from reportbench.config import ConfigError
from reportbench.protocols.deepscholar.metrics import METRIC_NAMES

NAME = "deepscholar"
JUDGE_TASKS = ("organization", "nugget_assign", "relevance", "support")
COUNTS_SCHEMA = {
    "arxiv_id": pl.String,
    "cited_by_count": pl.Int64,
    "status": pl.String,
    "via": pl.String,
    "fetched_at": pl.String,
}


def protocol_params(bench: Mapping[str, Any]) -> Any:
    """DeepScholarParams from the benchmark's `judging` and `scoring` subtrees (deep-merged)."""
    from reportbench.protocols.deepscholar.items import as_params

    merged: dict[str, Any] = {}
    for part in ("judging", "scoring"):
        for key, value in (bench.get(part) or {}).items():
            if key == "citations":
                continue
            if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
                merged[key] = {**merged[key], **value}
            else:
                merged[key] = dict(value) if isinstance(value, Mapping) else value
    return as_params(merged)


def build_release(cfg: Mapping[str, Any]) -> Any:
    """`release.kind`: demo (data/demo/deepscholar) | deepscholar (the authors' layout) | path (a built release)."""
    kind, source, name = cfg.get("kind"), cfg.get("source"), cfg.get("name")
    max_tasks = cfg.get("max_tasks")
    if kind == "demo":
        from reportbench.release.demo import build_demo_release

        return build_demo_release(source, max_tasks=max_tasks)
    if kind == "deepscholar":
        from reportbench.release.deepscholar_import import fetch_deepscholar, import_deepscholar

        root = Path(str(source))
        if str(source).startswith(("http://", "https://")):
            root = fetch_deepscholar(Path(".reportbench/downloads/deepscholar-bench"))
        return import_deepscholar(root, max_tasks=max_tasks, name=name)
    if kind == "path":
        from reportbench.release.format import read_release

        if max_tasks is not None:
            raise ConfigError("benchmarks.deepscholar.release.max_tasks is not supported for kind=path")
        return read_release(Path(str(source)))
    raise ConfigError(f"benchmarks.deepscholar.release.kind {kind!r} is not one of demo, deepscholar, path")


def _items(task: str):
    def build(ctx: JudgeContext) -> list[Any]:
        from reportbench.protocols.deepscholar.items import ReleaseContext, build_items

        rctx = ReleaseContext.from_release(ctx.release)
        params = protocol_params(ctx.params)
        items: dict[str, Any] = {}
        for report in ctx.reports:
            for item in build_items(ctx.release.task(report.task_id), report, rctx, params)[task]:
                items.setdefault(item.item_id, item)
        return list(items.values())

    return build


def citation_counts(ctx: JudgeContext) -> pl.DataFrame:
    """Citation counts for Document Importance: S of each report and S* of each exemplar.

    Offline (the default) reads only the release's frozen counts and the local cache; a missing count is
    recorded as missing (never 0). Online fetches OpenAlex and caches each answer with its fetch date.
    """
    from reportbench.citations import CitationCountStore, lookup_counts, seed_from_release
    from reportbench.protocols.deepscholar.items import ReleaseContext, count_lookup_ids

    cfg = ctx.judging.get("citations") or {}
    wanted = count_lookup_ids(ctx.release.tasks, ctx.reports, ReleaseContext.from_release(ctx.release))
    result = lookup_counts(
        sorted(wanted),
        wanted,
        store=CitationCountStore(Path(cfg.get("cache_path", ".reportbench/cache/openalex.sqlite"))),
        offline=bool(cfg.get("offline", True)),
        seed=seed_from_release(ctx.release),
        mailto_env=cfg.get("mailto_env", "OPENALEX_MAILTO"),
        api_key_env=cfg.get("api_key_env", "OPENALEX_API_KEY"),
    )
    rows = []
    for aid in sorted(result.counts):
        rec = result.records.get(aid)
        rows.append(
            {
                "arxiv_id": aid,
                "cited_by_count": result.counts[aid],
                "status": rec.status if rec else "missing",
                "via": rec.via if rec else "none",
                "fetched_at": rec.fetched_at if rec else None,
            }
        )
    return pl.DataFrame(rows, schema=COUNTS_SCHEMA, orient="row")


def score(ctx: ScoreContext) -> ScoreResult:
    """The seven metrics per system (single judge member), with report outcomes, failures and leakage."""
    from reportbench.protocols.deepscholar.checks import leakage_summary
    from reportbench.protocols.deepscholar.items import ReleaseContext
    from reportbench.protocols.deepscholar.metrics import score_system
    from reportbench.types import strip_arxiv_version

    params = protocol_params(ctx.params)
    rctx = ReleaseContext.from_release(ctx.release)
    tasks = {t.task_id: t for t in ctx.release.tasks}
    dates = {strip_arxiv_version(d.arxiv_id): d.published_date for d in ctx.release.corpus if d.arxiv_id}
    out = []
    for system in ctx.systems:
        members = ctx.judgments.get(system) or {}
        if len(members) != 1:
            raise ConfigError(f"benchmarks.deepscholar.judges: DeepScholar-bench grades with one judge, got {members}")
        member = next(iter(members))
        judgments = {t: {j.item_id: j for j in members[member].get(t, [])} for t in JUDGE_TASKS}
        counts_df = ctx.derived[system][member].get("citation_counts")
        counts = (
            dict(zip(counts_df["arxiv_id"].to_list(), counts_df["cited_by_count"].to_list(), strict=True))
            if counts_df is not None
            else {}
        )
        scores = score_system(system, tasks, ctx.reports[system], judgments, rctx, counts, params)
        summary = dict(scores.summary)
        summary["failed_judgments"] = {t: sum(1 for j in js.values() if not j.ok) for t, js in judgments.items()}
        summary["leakage"] = leakage_summary(tasks, ctx.reports[system], dates)
        out.append(SystemScore(system, scores.per_task, summary))
    return ScoreResult(out)


BENCHMARK = BenchmarkSpec(
    name=NAME,
    title="DeepScholar-bench",
    build_release=build_release,
    judge_steps=(
        JudgeStep("citation_counts", kind="compute", compute=citation_counts, derived_table="citation_counts"),
        *(JudgeStep(t, items=_items(t)) for t in JUDGE_TASKS),
    ),
    score=score,
    metric_names=tuple(METRIC_NAMES),
    description="Related-work generation from a paper's title and abstract (arXiv 2508.20033).",
)
