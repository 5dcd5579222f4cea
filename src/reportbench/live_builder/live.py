"""The live release builder's DVC stages as plain functions (pipelines/live/dvc.yaml -> pipelines/live/run.py -> here).

Each stage reads the composed root params.yaml (`live:` and, for labelling, `judge:`), reads the previous
stage's files under `live/work/<name>/` and writes its own, atomically and deterministically. Network stages
(list, sources, recover) also write `metrics/live/requests/<stage>.json` (a `cache: false` metric: request
counts differ between a first build and a cached rebuild, so they are kept out of the data outputs and never
invalidate downstream stages).

Resuming: DVC clears a stage's outputs before rerunning it, so resumption lives in the caches, outside the
outputs: the HTTP cache and item store (`live.http.cache_dir`) and the judge cache. A stage killed halfway
replays everything it already fetched without a single request.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from reportbench import builder_kit
from reportbench.http_cache import CachingSession
from reportbench.judges.factory import make_judge
from reportbench.judges.runner import write_judgments
from reportbench.live_builder.arxiv_listing import ListedPaper, list_papers, listing_rows
from reportbench.live_builder.filter import KeptPaper, filter_papers
from reportbench.live_builder.label import important_frame, label_papers, nugget_frame
from reportbench.live_builder.live_config import LiveConfig, load_live_config, work_dir
from reportbench.live_builder.publish import (
    build_release,
    export_tables,
    live_card_section,
    publish,
    release_stats,
    tool_versions,
)
from reportbench.live_builder.recover import RecoveredRef, recover_references, ref_rows
from reportbench.live_builder.sources_stage import SourceRecord, process_all, record_rows
from reportbench.live_builder.stage_io import (
    DropRecord,
    dump_json,
    fresh_dir,
    read_drops,
    read_json,
    read_jsonl,
    write_drops,
    write_json,
    write_jsonl,
    write_parquet,
)

log = logging.getLogger("reportbench.live")

STAGES = ("list", "sources", "filter", "recover", "label", "publish")
NETWORK_STAGES = ("list", "sources", "recover")


class Paths:
    """Every file the live stages read or write, relative to the repo root."""

    def __init__(self, cfg: LiveConfig, root: Path = Path(".")) -> None:
        self.root = root
        self.work = work_dir(cfg, root)
        self.list_dir = self.work / "list"
        self.sources_dir = self.work / "sources"
        self.filter_dir = self.work / "filter"
        self.recover_dir = self.work / "recover"
        self.label_dir = self.work / "label"
        self.judgments_dir = self.work / "judgments"
        self.release_dir = root / "live" / "releases" / cfg.name
        self.export_dir = root / "live" / "exports" / cfg.name
        self.metrics_dir = root / "metrics" / "live"
        self.stats = self.metrics_dir / "release.json"

    def requests_file(self, stage: str) -> Path:
        return self.metrics_dir / "requests" / f"{stage}.json"


def open_session(cfg: LiveConfig, root: Path = Path(".")) -> CachingSession:
    return builder_kit.open_session(cfg.http, root)


def _request_report(session: CachingSession, items: int, item_name: str) -> dict[str, Any]:
    rep = session.stats.as_dict()
    rep["items"] = items
    rep["item"] = item_name
    rep["per_item"] = round(rep["requests"] / items, 4) if items else None
    return rep


# --------------------------------------------------------------------------------------------- readers


def read_listing(paths: Paths) -> list[ListedPaper]:
    return [ListedPaper.model_validate(r) for r in read_jsonl(paths.list_dir / "papers.jsonl")]


def read_sources(paths: Paths) -> list[SourceRecord]:
    return [SourceRecord.model_validate(r) for r in read_jsonl(paths.sources_dir / "records.jsonl")]


def read_kept(paths: Paths) -> list[KeptPaper]:
    return [KeptPaper.model_validate(r) for r in read_jsonl(paths.filter_dir / "kept.jsonl")]


def read_refs(paths: Paths) -> list[RecoveredRef]:
    return [RecoveredRef.model_validate(r) for r in read_jsonl(paths.recover_dir / "references.jsonl")]


# ---------------------------------------------------------------------------------------------- stages


def stage_list(params: dict[str, Any], root: Path = Path("."), session: CachingSession | None = None) -> dict[str, Any]:
    cfg = load_live_config(params)
    paths = Paths(cfg, root)
    with builder_kit.stage_session(cfg.http, root, session) as sess:
        res = list_papers(cfg, sess)
    fresh_dir(paths.list_dir)
    write_jsonl(paths.list_dir / "papers.jsonl", listing_rows(res.papers))
    write_drops(paths.list_dir / "dropped.parquet", res.dropped)
    write_json(
        paths.list_dir / "summary.json",
        {"per_category": res.per_category, "errors": res.errors, "kept": len(res.papers), "dropped": len(res.dropped)},
    )
    report = _request_report(sess, len(res.papers) + len(res.dropped), "listed paper")
    write_json(paths.requests_file("list"), report)
    log.info(
        "list: %d papers kept, %d dropped, %d requests (%d cache hits)",
        len(res.papers),
        len(res.dropped),
        report["requests"],
        report["cache_hits"],
    )
    return report


def stage_sources(
    params: dict[str, Any], root: Path = Path("."), session: CachingSession | None = None
) -> dict[str, Any]:
    cfg = load_live_config(params)
    paths = Paths(cfg, root)
    papers = read_listing(paths)
    with builder_kit.stage_session(cfg.http, root, session) as sess:
        saved_cap = sess.max_body_bytes
        sess.max_body_bytes = min(saved_cap, int(cfg.sources.max_source_mb * (1 << 20)))
        try:
            records = process_all(sess, papers, cfg.latex.to_latex_config(), cfg.sources.max_papers)
        finally:
            sess.max_body_bytes = saved_cap
    fresh_dir(paths.sources_dir)
    write_jsonl(paths.sources_dir / "records.jsonl", record_rows(records))
    report = _request_report(sess, len(records), "paper")
    write_json(paths.requests_file("sources"), report)
    ok = sum(1 for r in records if r.status == "ok")
    log.info(
        "sources: %d/%d read, %d requests (%d cache hits)", ok, len(records), report["requests"], report["cache_hits"]
    )
    return report


def stage_filter(params: dict[str, Any], root: Path = Path(".")) -> dict[str, Any]:
    cfg = load_live_config(params)
    paths = Paths(cfg, root)
    res = filter_papers(read_listing(paths), read_sources(paths), cfg.filter)
    fresh_dir(paths.filter_dir)
    write_jsonl(paths.filter_dir / "kept.jsonl", [k.model_dump(mode="json") for k in res.kept])
    write_drops(paths.filter_dir / "dropped.parquet", res.dropped)
    summary = {"kept": len(res.kept), "dropped": len(res.dropped)}
    log.info("filter: %d kept, %d dropped", len(res.kept), len(res.dropped))
    return summary


def stage_recover(
    params: dict[str, Any], root: Path = Path("."), session: CachingSession | None = None
) -> dict[str, Any]:
    cfg = load_live_config(params)
    paths = Paths(cfg, root)
    kept = read_kept(paths)
    with builder_kit.stage_session(cfg.http, root, session) as sess, builder_kit.item_store(sess) as cache:
        res = recover_references(kept, cfg.recover, sess, cache, api_key=cfg.http.api_key(), mailto=cfg.http.mailto())
    fresh_dir(paths.recover_dir)
    write_jsonl(paths.recover_dir / "references.jsonl", ref_rows(res.refs))
    summary = {k: v for k, v in res.summary().items() if k != "lookup_calls"}  # calls differ on a cached rebuild
    write_json(paths.recover_dir / "summary.json", {**summary, "error_list": res.errors[:200]})
    report = _request_report(sess, len(res.refs), "cited reference")
    report["lookup"] = res.summary()
    write_json(paths.requests_file("recover"), report)
    per_ref = "n/a" if report["per_item"] is None else report["per_item"]
    print(
        f"recover: {len(res.refs)} cited references, {report['requests']} requests "
        f"({report['cache_hits']} cache hits): requests per cited reference = {per_ref}"
    )
    return report


def _judge_factory(params: dict[str, Any]) -> Callable[[str], Any]:
    from reportbench.pipeline import judge_config  # lazy: +32 ms to import (python -X importtime)

    return lambda task: make_judge(task, judge_config(params, task))


def stage_label(
    params: dict[str, Any], root: Path = Path("."), judge_for: Callable[[str], Any] | None = None
) -> dict[str, Any]:
    cfg = load_live_config(params)
    paths = Paths(cfg, root)
    kept = read_kept(paths)
    refs = read_refs(paths)
    progress = bool(((params.get("judge") or {}).get("runtime") or {}).get("progress", False))
    res = label_papers(kept, refs, cfg.label, judge_for or _judge_factory(params), progress=progress)
    fresh_dir(paths.label_dir)
    write_parquet(paths.label_dir / "important.parquet", important_frame(res.important))
    write_parquet(paths.label_dir / "nuggets.parquet", nugget_frame(res.nuggets))
    write_drops(paths.label_dir / "dropped.parquet", res.dropped)

    fresh_dir(paths.judgments_dir)
    for task, js in res.judgments.items():
        write_judgments(paths.judgments_dir / f"{task}.parquet", js)
    usage = res.usage()
    write_json(paths.judgments_dir / "usage.json", usage)
    log.info(
        "label: %d papers dropped; usage %s", len(res.dropped), {k: (v["ok"], v["failed"]) for k, v in usage.items()}
    )
    return {"dropped": len(res.dropped), "usage": usage}


def stage_publish(params: dict[str, Any], root: Path = Path(".")) -> dict[str, Any]:
    cfg = load_live_config(params)
    paths = Paths(cfg, root)
    listing = read_listing(paths)
    kept = read_kept(paths)
    refs = read_refs(paths)
    important = pl.read_parquet(paths.label_dir / "important.parquet", glob=False).to_dicts()
    nuggets = pl.read_parquet(paths.label_dir / "nuggets.parquet", glob=False).to_dicts()
    label_drops = read_drops(paths.label_dir / "dropped.parquet")
    drops: list[DropRecord] = (
        read_drops(paths.list_dir / "dropped.parquet") + read_drops(paths.filter_dir / "dropped.parquet") + label_drops
    )
    judge = params.get("judge") or {}
    versions = tool_versions()
    provenance = {
        "live.categories": ",".join(cfg.categories),
        "live.window": f"{cfg.window.start}..{cfg.window.end}",
        "live.v1_only": str(cfg.v1_only).lower(),
        "live.venue_filter": str(cfg.venue_filter.enabled).lower(),
        "live.filter": dump_json(cfg.filter.model_dump()).strip().replace("\n", " "),
        "judge": f"{judge.get('name')} ({judge.get('backend')}, {judge.get('model')})",
        **{f"tool.{k}": v for k, v in versions.items()},
    }
    release = build_release(
        cfg,
        kept,
        refs,
        important,
        nuggets,
        {d.arxiv_id for d in label_drops},
        labelled_important=cfg.label.important_refs,
        provenance=provenance,
    )
    if not release.tasks:
        raise RuntimeError(
            f"no paper survived the live pipeline ({len(drops)} dropped; see {paths.filter_dir / 'dropped.parquet'} "
            "and the other dropped.parquet files)"
        )
    requests = {s: read_json(paths.requests_file(s)) for s in NETWORK_STAGES if paths.requests_file(s).is_file()}
    stats = release_stats(release, refs, drops, len(listing), requests)
    card = live_card_section(cfg, stats, versions, judge)
    tables = export_tables(release, kept, refs, drops)
    manifest = publish(release, paths.release_dir, paths.export_dir, paths.stats, card, tables, stats)
    req = stats["requests"]
    print(
        f"publish: {len(release.tasks)} papers, {stats['references']['total']} references -> {paths.release_dir}; "
        f"requests per cited reference = {req['per_cited_reference']} "
        f"(recovery {req['recover_per_cited_reference']}; {req['total']} requests, {req['cache_hits']} cache hits)"
    )
    return {"manifest": manifest, "stats": stats}


def run_stage(name: str, params: dict[str, Any], root: Path = Path(".")) -> dict[str, Any]:
    stages = (stage_list, stage_sources, stage_filter, stage_recover, stage_label, stage_publish)
    return builder_kit.run_named_stage(dict(zip(STAGES, stages, strict=True)), name, params, root, "live")


def run_all(params: dict[str, Any], root: Path = Path(".")) -> dict[str, Any]:
    """All six stages in order, in-process (tests; DVC runs them one by one)."""
    out: dict[str, Any] = {}
    for name in STAGES:
        out[name] = run_stage(name, params, root)
    return out
