"""The work of each DVC stage, as plain functions (testable without DVC).

Each `stages/<name>.py` script parses paths from the command line, loads `params.yaml` and calls one
function here. Outputs are written deterministically (sorted, no wall-clock values) wherever they feed
later stages, so DVC skips everything downstream of a stage whose output did not change.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl

from reportbench.config import ConfigError, require

log = logging.getLogger("reportbench")

JUDGE_TASKS = ("organization", "nugget_assign", "relevance", "support")


def setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


def write_json(path: Path, data: Any) -> None:
    """Strict, sorted JSON (NaN -> null) so metric files diff cleanly and `dvc metrics` can read them."""
    from reportbench.metrics.leaderboard import json_safe

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(json_safe(data), indent=2, sort_keys=True, allow_nan=False) + "\n")


# ----------------------------------------------------------------------------------------------- release
def build_release(params: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """Import or build the configured release and write it in the release format."""
    from reportbench.release.format import write_release

    kind = require(params, "release.kind")
    source = require(params, "release.source")
    max_tasks = params["release"].get("max_tasks")
    name = require(params, "release.name")
    if kind == "demo":
        from reportbench.release.demo import build_demo_release

        release = build_demo_release(source, max_tasks=max_tasks)
    elif kind == "deepscholar":
        from reportbench.release.deepscholar_import import fetch_deepscholar, import_deepscholar

        root = Path(source)
        if str(source).startswith(("http://", "https://")):
            root = fetch_deepscholar(Path(".reportbench/downloads/deepscholar-bench"))
        release = import_deepscholar(root, max_tasks=max_tasks, name=name)
    elif kind == "path":
        release = read_release(Path(source))
        if max_tasks is not None:
            raise ConfigError("params.yaml: release.max_tasks is not supported for release.kind=path")
    else:
        raise ConfigError(f"params.yaml: release.kind {kind!r} is not one of demo, deepscholar, path")
    return write_release(release, out_dir)


def read_release(release_dir: Path) -> Any:
    from reportbench.release.format import read_release as _read

    return _read(release_dir)


# ----------------------------------------------------------------------------------------------- systems
def run_system(params: dict[str, Any], system: str, release_dir: Path, out_dir: Path) -> dict[str, int]:
    """Produce (or read) one system's reports for every task; one outcome per task."""
    from reportbench.systems import run_system as _run

    spec = require(params, f"systems.{system}")
    release = read_release(release_dir)
    # Systems that retrieve from the release's corpus (offline baseline, oracles) get the release path.
    outcomes = _run(system, {**spec, "release_dir": str(release_dir)}, release.tasks, out_dir)
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
        if o.status != "ok":
            log.warning("%s / %s: %s (%s)", system, o.task_id, o.status, o.reason)
    log.info("%s: %s", system, counts)
    return counts


# ------------------------------------------------------------------------------------- citation counts
def citation_counts(params: dict[str, Any], release_dir: Path, reports_dir: Path, out: Path) -> dict[str, Any]:
    """Citation counts for Document Importance: S of each report and S* of each exemplar.

    Offline (the default) reads only the release's frozen counts and the local cache; a missing count is
    recorded as missing (never 0). Online fetches OpenAlex and caches each answer with its fetch date.
    """
    from reportbench.citations import CitationCountStore, lookup_counts, seed_from_release
    from reportbench.protocols.deepscholar import ReleaseContext, count_lookup_ids
    from reportbench.systems import read_reports

    cfg = require(params, "citations")
    release = read_release(release_dir)
    reports = read_reports(reports_dir)
    ctx = ReleaseContext.from_release(release)
    wanted = count_lookup_ids(release.tasks, reports, ctx)
    store = CitationCountStore(Path(cfg.get("cache_path", ".reportbench/cache/openalex.sqlite")))
    result = lookup_counts(
        sorted(wanted),
        wanted,
        store=store,
        offline=bool(cfg.get("offline", True)),
        seed=seed_from_release(release),
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
    schema = {
        "arxiv_id": pl.String,
        "cited_by_count": pl.Int64,
        "status": pl.String,
        "via": pl.String,
        "fetched_at": pl.String,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows, schema=schema, orient="row").write_parquet(out, statistics=False)
    summary = result.summary()
    log.info("citation counts: %s", summary)
    return summary


def read_citation_counts(path: Path) -> dict[str, int | None]:
    df = pl.read_parquet(path)
    return dict(zip(df["arxiv_id"].to_list(), df["cited_by_count"].to_list(), strict=True))


# ------------------------------------------------------------------------------------------------ judges
def judge_config(params: dict[str, Any], task: str) -> dict[str, Any]:
    """The judge group with the task's grader role applied (`judge.task_models[task]` overrides model)."""
    cfg = dict(require(params, "judge"))
    role = (cfg.get("task_models") or {}).get(task)
    if role:
        cfg["model"] = role
    return cfg


def judge_items(params: dict[str, Any], task: str, release: Any, reports: list[Any]) -> list[Any]:
    """Every distinct item of one judge task over one system's reports (deduplicated by item id)."""
    from reportbench.protocols.deepscholar import ReleaseContext, build_items

    ctx = ReleaseContext.from_release(release)
    ds_params = params.get("deepscholar") or {}
    items: dict[str, Any] = {}
    for report in reports:
        for item in build_items(release.task(report.task_id), report, ctx, ds_params)[task]:
            items.setdefault(item.item_id, item)
    return list(items.values())


def run_judge_stage(
    params: dict[str, Any], task: str, system: str, release_dir: Path, reports_dir: Path, out: Path, usage_out: Path
) -> dict[str, Any]:
    """Judge every item of `task` for one system; write judgment records and a usage summary."""
    from reportbench.judges.factory import make_judge
    from reportbench.judges.runner import format_usage, run_judgments_sync, usage_summary, write_judgments
    from reportbench.systems import read_reports

    if task not in JUDGE_TASKS:
        raise ConfigError(f"unknown judge task {task!r}; expected one of {JUDGE_TASKS}")
    release = read_release(release_dir)
    reports = read_reports(reports_dir)
    items = judge_items(params, task, release, reports)
    cfg = judge_config(params, task)
    judge = make_judge(task, cfg)
    t0 = time.perf_counter()
    judgments = run_judgments_sync(
        judge, [(i.item_id, i.typed(), dict(i.input_ids)) for i in items], desc=f"{task}@{system}"
    )
    wall = time.perf_counter() - t0
    write_judgments(out, judgments)
    usage = usage_summary(judgments, wall_s=wall)
    log.info("%s@%s: %s", task, system, format_usage(usage))
    # The git-tracked metric keeps only reproducible counts (no wall time), so a rerun that changes
    # nothing leaves it byte-identical and `dvc metrics diff` shows real changes only.
    usage.pop("wall_s", None)
    usage.update({"task": task, "system": system, "judge": cfg.get("name"), "model": cfg.get("model")})
    write_json(usage_out, usage)
    return usage


# ------------------------------------------------------------------------------------------------- score
def score_stage(
    params: dict[str, Any],
    system: str,
    release_dir: Path,
    reports_dir: Path,
    judgments_dir: Path,
    counts_path: Path,
    per_task_out: Path,
    out: Path,
) -> dict[str, Any]:
    """Turn one system's judgments into the seven metrics: per-task table + system summary JSON."""
    from reportbench.judges.runner import read_judgments
    from reportbench.protocols.deepscholar import ReleaseContext, score_system
    from reportbench.protocols.deepscholar.checks import leakage_summary
    from reportbench.systems import read_outcomes, read_reports
    from reportbench.types import strip_arxiv_version

    release = read_release(release_dir)
    reports = read_reports(reports_dir)
    outcomes = read_outcomes(reports_dir)
    judgments = {
        task: {j.item_id: j for j in read_judgments(judgments_dir / task / f"{system}.parquet")} for task in JUDGE_TASKS
    }
    scores = score_system(
        system,
        release.tasks,
        reports,
        judgments,
        ReleaseContext.from_release(release),
        read_citation_counts(counts_path),
        params.get("deepscholar") or {},
    )
    per_task_out.parent.mkdir(parents=True, exist_ok=True)
    scores.per_task.write_parquet(per_task_out, statistics=False)
    judge = params.get("judge") or {}
    summary = dict(scores.summary)
    summary.update(
        {
            "release": params["release"]["name"],
            "benchmark": params.get("benchmark", "deepscholar"),
            "judge": {"name": judge.get("name"), "backend": judge.get("backend"), "model": judge.get("model")},
            "report_outcomes": _count_statuses(outcomes),
            "failed_judgments": {t: sum(1 for j in js.values() if not j.ok) for t, js in judgments.items()},
            "leakage": leakage_summary(
                {t.task_id: t for t in release.tasks},
                reports,
                {strip_arxiv_version(d.arxiv_id): d.published_date for d in release.corpus if d.arxiv_id},
            ),
        }
    )
    write_json(out, summary)
    return summary


def _count_statuses(outcomes: list[Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    return dict(sorted(counts.items()))


# ------------------------------------------------------------------------------------------- leaderboard
def leaderboard_stage(
    params: dict[str, Any], release_dir: Path, scores_dir: Path, metrics_dir: Path, out_dir: Path
) -> Any:
    """Leaderboard over the configured systems (enumerated from params, never by globbing a folder).

    Summaries are recomputed from the per-task tables this stage declares as its input (not read back
    from the score stages' metric JSON), so DVC knows every file the leaderboard depends on.
    """
    from reportbench.metrics.leaderboard import build_leaderboard, write_leaderboard
    from reportbench.protocols.deepscholar.items import as_params
    from reportbench.protocols.deepscholar.metrics import METRIC_NAMES, summarise

    ds_params = as_params(params.get("deepscholar") or {})
    summaries = []
    frames = []
    for system in require(params, "system_names"):
        per_task = pl.read_parquet(scores_dir / f"{system}.parquet")
        summary = summarise(system, per_task, ds_params)
        no_report = per_task.filter(pl.col("reason") == "no_report")["task_id"].n_unique()
        summary["n_missing_reports"] = no_report
        summaries.append(summary)
        frames.append(per_task)
    lb = build_leaderboard(summaries, pl.concat(frames) if frames else None, metrics=list(METRIC_NAMES))
    return write_leaderboard(lb, out_dir)
