"""DeepScholar-bench on the spine: its release kinds, judge steps and score function (`BENCHMARK`)."""

from __future__ import annotations

from collections import Counter
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
from reportbench.metrics.stats import geometric_mean
from reportbench.protocols.deepscholar.checks import leakage_summary
from reportbench.protocols.deepscholar.items import ReleaseContext, as_params, build_items, count_lookup_ids
from reportbench.protocols.deepscholar.metrics import METRIC_NAMES, score_system
from reportbench.protocols.deepscholar.report_stats import system_report_stats
from reportbench.protocols.deepscholar.sources import ids_to_resolve, resolve_source_texts, texts_from_frame
from reportbench.reports.task_names import TaskNaming
from reportbench.types import strip_arxiv_version

NAME = "deepscholar"
JUDGE_TASKS = ("organization", "nugget_assign", "relevance", "support", "citation_support")
RUN_KEYS = ("citations", "source_texts")  # judging subtrees that configure lookups, not the protocol
COUNTS_SCHEMA = {
    "arxiv_id": pl.String,
    "cited_by_count": pl.Int64,
    "status": pl.String,
    "via": pl.String,
    "fetched_at": pl.String,
}


def protocol_params(bench: Mapping[str, Any]) -> Any:
    """DeepScholarParams from the benchmark's `judging` and `scoring` subtrees (deep-merged)."""

    merged: dict[str, Any] = {}
    for part in ("judging", "scoring"):
        for key, value in (bench.get(part) or {}).items():
            if key in RUN_KEYS:
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
        from reportbench.release.demo import build_demo_release  # lazy: +38 ms to import (python -X importtime)

        return build_demo_release(source, max_tasks=max_tasks)
    if kind == "deepscholar":
        # lazy: +50 ms to import (python -X importtime)
        from reportbench.release.deepscholar_import import fetch_deepscholar, import_deepscholar

        root = Path(str(source))
        if str(source).startswith(("http://", "https://")):
            root = fetch_deepscholar(Path(".reportbench/downloads/deepscholar-bench"))
        return import_deepscholar(root, max_tasks=max_tasks, name=name)
    if kind == "path":
        from reportbench.release.format import read_release  # lazy: +59 ms to import (python -X importtime)

        if max_tasks is not None:
            raise ConfigError("benchmarks.deepscholar.release.max_tasks is not supported for kind=path")
        return read_release(Path(str(source)))
    raise ConfigError(f"benchmarks.deepscholar.release.kind {kind!r} is not one of demo, deepscholar, path")


def release_context(release: Any, source_texts: pl.DataFrame | None) -> Any:
    """The protocol's view of the release, plus the arXiv texts the `source_texts` step resolved. The judge
    and score stages both build it this way, so item ids (content hashes) agree."""

    return ReleaseContext.from_release(release).with_resolved(texts_from_frame(source_texts))


def source_texts(ctx: JudgeContext) -> pl.DataFrame:
    """Title + abstract of every arXiv id the system's reports cite or link: release corpus, then the local
    cache, then (only with `judging.source_texts.offline: false`) the arXiv API in batches."""

    cfg = ctx.judging.get("source_texts") or {}
    rctx = ReleaseContext.from_release(ctx.release)
    result = resolve_source_texts(
        ids_to_resolve(ctx.reports),
        rctx.corpus,
        cache_dir=cfg.get("cache_dir", ".reportbench/cache/arxiv_texts"),
        offline=bool(cfg.get("offline", True)),
        batch_size=int(cfg.get("batch_size", 50)),
        timeout=float(cfg.get("timeout", 20.0)),
    )
    return result.frame()


def _items(task: str):
    def build(ctx: JudgeContext) -> list[Any]:
        rctx = release_context(ctx.release, ctx.derived.get("source_texts"))
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
    # lazy: +254 ms to import (python -X importtime)
    from reportbench.citations import CitationCountStore, lookup_counts, seed_from_release

    cfg = ctx.judging.get("citations") or {}
    rctx = release_context(ctx.release, ctx.derived.get("source_texts"))
    wanted = count_lookup_ids(ctx.release.tasks, ctx.reports, rctx)
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


def _counts_of(df: pl.DataFrame | None) -> dict[str, int | None]:
    if df is None:
        return {}
    return dict(zip(df["arxiv_id"].to_list(), df["cited_by_count"].to_list(), strict=True))


def coverage(release_has_labels: bool, any_count_known: bool) -> tuple[tuple[str, ...], dict[str, str]]:
    """Which metrics this release and run can define for every system, and why the others cannot.

    Reference Coverage needs importance labels in the release (the public snapshot has none: run
    `stages/label_importance.py` with a judge key); Document Importance needs citation counts (OpenAlex,
    online or from the cache). The overall geometric mean covers only these metrics and says so; the
    seven-metric one stays next to it (NaN while a metric is missing), never silently mixed.
    """
    missing: dict[str, str] = {}
    if not release_has_labels:
        missing["reference_coverage"] = "no importance labels in the release"
    if not any_count_known:
        missing["document_importance"] = "no citation counts (offline, empty cache)"
    return tuple(m for m in METRIC_NAMES if m not in missing), missing


def score(ctx: ScoreContext) -> ScoreResult:
    """The seven metrics per system (single judge member), with report outcomes, failures, leakage, the
    report statistics of Table 6, and the overall geometric mean over the metrics this run can define."""

    params = protocol_params(ctx.params)
    tasks = {t.task_id: t for t in ctx.release.tasks}
    dates = {strip_arxiv_version(d.arxiv_id): d.published_date for d in ctx.release.corpus if d.arxiv_id}
    out = []
    has_labels = bool(ctx.release.has_important_refs)
    for system in ctx.systems:
        members = ctx.judgments.get(system) or {}
        if len(members) != 1:
            raise ConfigError(f"benchmarks.deepscholar.judges: DeepScholar-bench grades with one judge, got {members}")
        member = next(iter(members))
        judgments = {t: {j.item_id: j for j in members[member].get(t, [])} for t in JUDGE_TASKS}
        derived = ctx.derived[system][member]
        counts = _counts_of(derived.get("citation_counts"))
        rctx = release_context(ctx.release, derived.get("source_texts"))
        scores = score_system(system, tasks, ctx.reports[system], judgments, rctx, counts, params)
        summary = dict(scores.summary)
        summary["failed_judgments"] = {t: sum(1 for j in js.values() if not j.ok) for t, js in judgments.items()}
        summary["leakage"] = leakage_summary(tasks, ctx.reports[system], dates)
        summary["report_stats"] = system_report_stats(ctx.reports[system])
        # what each judged source's text came from (report, corpus, arxiv, title_only, id_only, ...), per task
        summary["judged_on"] = {
            t: dict(sorted(Counter(j.input_ids.get("evidence", "?") for j in js.values()).items()))
            for t, js in judgments.items()
            if t in ("relevance", "support", "citation_support") and js
        }
        st = derived.get("source_texts")
        if st is not None:
            summary["source_texts"] = {k: int(v) for k, v in st["status"].value_counts().iter_rows()}
        out.append(SystemScore(system, scores.per_task, summary))
    # Document Importance is defined by the run when some report's arXiv ids have counts (a 0 for a report
    # without arXiv links does not count: it needs no count)
    any_count = any(
        sc.summary["metrics"]["document_importance"]["n_defined"]
        > sc.summary["metrics"]["document_importance"]["n_zero_nothing_to_score"]
        for sc in out
    )
    covered, not_covered = coverage(has_labels, any_count)
    systems_cfg = ctx.params.get("systems") or {}
    for sc in out:
        means = {m: sc.summary["metrics"][m]["mean"] for m in METRIC_NAMES}
        sc.summary["overall"] = {
            "geomean_all": geometric_mean(means.values()),
            "geomean_covered": geometric_mean(means[m] for m in covered),
            "metrics_covered": list(covered),
            "not_covered": not_covered,
        }
        if (systems_cfg.get(sc.system) or {}).get("kind") == "human_exemplar":
            # paper footnote 1: the exemplar's geometric mean leaves out Cite-P and Claim Coverage
            table2 = [m for m in covered if m not in ("citation_precision", "claim_coverage")]
            sc.summary["overall"]["geomean_table2_exemplar"] = geometric_mean(means[m] for m in table2)
            sc.summary["overall"]["table2_exemplar_metrics"] = table2
    extra = {
        "overall": {"metrics_covered": list(covered), "not_covered": not_covered},
        "report_stats": {sc.system: sc.summary["report_stats"] for sc in out},
    }
    return ScoreResult(out, extra_metrics=extra, overall="geomean", overall_metrics=covered)


# The authors' released baselines name each output folder by the 0-based row of the task list
# (`<system>/<file_id>/`); reports may also be named by arXiv id (any version, '/' as '_').
TASK_NAMING = TaskNaming(
    spelled="<arXiv id>[vN] ('/' as '_')",
    numbers="row_index",
    numbers_note="the authors' baseline outputs are 0-based folder names",
    arxiv_versions=True,
)

BENCHMARK = BenchmarkSpec(
    name=NAME,
    tag="ds",  # dvc exp show columns ds.<system> (dvc_metrics.brief)
    title="DeepScholar-bench",
    build_release=build_release,
    judge_steps=(
        JudgeStep("source_texts", kind="compute", compute=source_texts, derived_table="source_texts"),
        JudgeStep("citation_counts", kind="compute", compute=citation_counts, derived_table="citation_counts"),
        *(JudgeStep(t, items=_items(t)) for t in JUDGE_TASKS),
    ),
    score=score,
    metric_names=tuple(METRIC_NAMES),
    description="Related-work generation from a paper's title and abstract (arXiv 2508.20033).",
    task_naming=TASK_NAMING,
)
