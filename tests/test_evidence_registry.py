"""Issue 34: the evidence rule as a property of the registry, for built-in benchmarks and plug-ins alike.

Every installed benchmark (the DeepResearch Bench plug-in included) runs its demo with one kind of evidence
withheld — every judge call failed; or no page fetched (no seeds, an empty page cache: offline), which also
leaves nothing to validate — and then no value whose declared evidence (`MetricSpec.kinds`) includes the withheld
kind may be a number: not a per-task cell, not the system value, not a leaderboard cell, not a per-category or
per-domain breakdown, site cell or the plug-in's authors'-format export. Only the registry is read: a plug-in is
covered by registering its metrics. Labels (DeepScholar's importance labels) are withheld here too; counts in
tests/test_undefined_deepscholar.py (they also come from the count cache, not only the release).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from reportbench.benchmarks import get_benchmark, installed_benchmarks
from reportbench.judges.tasks import TASKS
from reportbench.metrics.registry import EVIDENCE_KINDS, MetricSpec, get_metric

SIX = ("deepscholar", "deer", "researcherbench", "researchqa", "liveresearchbench", "deepresearch_bench")


def _params(repo_root: Path, benchmark: str, tmp: Path) -> dict[str, Any]:
    if benchmark == "deepresearch_bench":
        import yaml
        from reportbench_deepresearch_bench import CONF_DIR
        from reportbench_deepresearch_bench.benchmark import BENCHMARK

        from reportbench.benchmarks import register_benchmark
        from reportbench.config import composed_params
        from spine_helpers import refresh_plan

        register_benchmark(BENCHMARK, replace=True)
        p = composed_params(conf_dir=repo_root / "conf")
        p["judge"]["runtime"]["progress"] = False
        p["fetch"]["cache_path"] = str(tmp / "pages.sqlite")
        b = yaml.safe_load((CONF_DIR / "benchmarks" / f"{benchmark}.yaml").read_text())["benchmarks"][benchmark]
        b["release"] = yaml.safe_load((CONF_DIR / benchmark / "release" / "demo.yaml").read_text())
        b["systems"] = yaml.safe_load((CONF_DIR / benchmark / "systems" / "demo.yaml").read_text())
        p["benchmarks"] = {benchmark: b}
        return refresh_plan(p)
    from reportbench.config import composed_params
    from spine_helpers import refresh_plan

    benchmarks = "deepscholar" if benchmark == "deepscholar" else f"deepscholar,{benchmark}"
    p = composed_params([f"benchmarks=[{benchmarks}]"], conf_dir=repo_root / "conf")
    p["judge"]["runtime"]["progress"] = False
    return refresh_plan(p)


def _judged(spec: MetricSpec) -> bool:
    """A metric whose value needs a judgment, by its declaration (`MetricSpec.kinds`)."""
    return "judgments" in spec.kinds


@pytest.mark.core
def test_every_metric_declares_the_kinds_of_evidence_it_needs() -> None:
    import reportbench_deepresearch_bench  # noqa: F401  (registers the plug-in)

    for b in SIX:
        for name in get_benchmark(b).metric_names:
            kinds = get_metric(name, b).kinds
            assert kinds and set(kinds) <= set(EVIDENCE_KINDS), (b, name, kinds)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not (isinstance(v, float) and math.isnan(v))


def _numbers(obj: Any, path: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(obj, bool):
        return
    if isinstance(obj, (int, float)):
        if not (isinstance(obj, float) and math.isnan(obj)):
            yield path, float(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _numbers(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _numbers(v, f"{path}[{i}]")


def _category_rows(obj: Any, systems: set[str], path: str = "", system: str | None = None) -> Iterator[tuple]:
    """(path, system, category, row) for every `*by_category` mapping in extra.json, whichever way it nests the
    system (`<S>.by_category.<cat>` or `by_category.<S>.<cat>`)."""
    if not isinstance(obj, dict):
        return
    for k, v in obj.items():
        here = f"{path}.{k}" if path else str(k)
        owner = str(k) if str(k) in systems else system
        if str(k).endswith("by_category") and isinstance(v, dict):
            for a, b in v.items():
                if owner is None and str(a) in systems and isinstance(b, dict):
                    yield from ((f"{here}.{a}", str(a), str(c), r) for c, r in b.items() if isinstance(r, dict))
                elif owner is not None and isinstance(b, dict):
                    yield here, owner, str(a), b
        else:
            yield from _category_rows(v, systems, here, owner)


@pytest.mark.core
def test_extra_json_category_rows_are_found_in_both_nestings() -> None:
    extra = {"researcherbench": {"A": {"by_category": {"Lit": {"groundedness": 0.0}}}},
             "citation_accuracy_by_category": {"B": {"market": {"cit_e3": 1.0}}}}
    rows = list(_category_rows(extra, {"A", "B"}))
    assert ("researcherbench.A.by_category", "A", "Lit", {"groundedness": 0.0}) in rows
    assert ("citation_accuracy_by_category.B", "B", "market", {"cit_e3": 1.0}) in rows


@pytest.fixture()
def every_call_fails() -> Iterator[None]:
    """Every registered judge task's offline rule raises (a failed call, after retries), restored afterwards."""

    def broken(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("withheld: every judge call fails (issue 34 registry test)")

    saved = {name: task.offline for name, task in TASKS.items() if getattr(task, "offline", None) is not None}
    for name in saved:
        object.__setattr__(TASKS[name], "offline", broken)
    try:
        yield
    finally:
        for name, fn in saved.items():
            object.__setattr__(TASKS[name], "offline", fn)


def _numbers_without_evidence(root: Path, metrics: list[str]) -> list[str]:
    """Every number among `metrics` that rests on no evidence: per-task cells (except the protocol's 0 for what
    the system left out, and values that need none: reason `zero:`), system means, leaderboard cells, and
    per-group / per-category breakdowns whose group has a task lacking evidence and none with any."""
    bad: list[str] = []
    tasks = pl.read_parquet(root / "releases" / "tasks.parquet")
    pairs = zip(tasks["task_id"].to_list(), tasks["categories"].to_list(), strict=True)
    category = {t: (c[0] if c else "") for t, c in pairs}
    rows_of: dict[str, pl.DataFrame] = {}
    for parquet in sorted((root / "scores").glob("*.parquet")):
        per = pl.read_parquet(parquet).filter(pl.col("metric").is_in(metrics))
        if "status" not in per.columns:  # DeepScholar's own per-task table: the reason says what a 0 is
            per = per.with_columns(
                pl.when(pl.col("reason").str.starts_with("zero:") | (pl.col("reason") == "no_report"))
                .then(pl.lit("nothing_to_score"))
                .otherwise(pl.when(pl.col("value").is_nan()).then(pl.lit("undefined")).otherwise(pl.lit("ok")))
                .alias("status")
            )
        excused = pl.col("status").is_in(["no_report", "nothing_to_score"]) | pl.col("reason").fill_null(
            ""
        ).str.starts_with("zero:")
        per = per.with_columns(excused.alias("excused"))
        rows_of[parquet.stem] = per
        nums = per.filter(pl.col("value").is_not_nan() & ~pl.col("excused"))
        bad += [f"{parquet.stem}/{r['task_id']}/{r['metric']}={r['value']} ({r['status']})" for r in nums.to_dicts()]

    def unsupported(system: str, metric: str, task_ids: set[str]) -> bool:
        sub = rows_of.get(system)
        if sub is None:
            return False
        sub = sub.filter((pl.col("metric") == metric) & pl.col("task_id").is_in(list(task_ids)))
        lacking = sub.filter(pl.col("status").is_in(["failed", "undefined"])).height > 0
        evidenced = sub.filter((pl.col("status") == "ok") & ~pl.col("excused")).height > 0
        return lacking and not evidenced

    systems = json.loads((root / "metrics" / "systems.json").read_text())
    for s, summary in systems.items():
        per = rows_of.get(s)
        for m in metrics:
            mm = (summary.get("metrics") or {}).get(m) or {}
            if _is_number(mm.get("mean")):
                bad.append(f"systems.json {s}.{m}.mean={mm['mean']}")
            for g, v in (mm.get("groups") or {}).items():
                ids = set() if per is None else set(per.filter(pl.col("group") == g)["task_id"].to_list())
                if _is_number(v) and unsupported(s, m, ids):
                    bad.append(f"systems.json {s}.{m}.groups.{g}={v}")
        for cat, row in (summary.get("by_category") or {}).items():
            ids = {t for t, c in category.items() if c == cat}
            bad += [
                f"systems.json {s}.by_category.{cat}.{m}={row[m]}"
                for m in metrics
                if _is_number(row.get(m)) and unsupported(s, m, ids)
            ]
    # per-category breakdowns a protocol writes to extra.json (ResearcherBench `researcherbench.<S>.by_category`,
    # LiveResearchBench `citation_accuracy_by_category.<S>`): the same rule as systems.json's
    extra_path = root / "metrics" / "extra.json"
    for where, s, cat, row in _category_rows(json.loads(extra_path.read_text()) if extra_path.exists() else {},
                                             set(systems)):
        ids = {t for t, c in category.items() if c == cat}
        bad += [f"extra.json {where}.{cat}.{m}={row[m]}" for m in metrics
                if _is_number(row.get(m)) and unsupported(s, m, ids)]
    lb = json.loads((root / "metrics" / "leaderboard.json").read_text())
    for row in lb.get("rows") or []:
        for m in metrics:
            v = (row.get("metrics") or {}).get(m)
            if _is_number(v):
                bad.append(f"leaderboard.json {row['system']}.{m}={v}")
    # the site's benchmark page: every such cell reads "— code", never a number
    from reportbench.site.leaderboard_page import BenchmarkData, render_benchmark_page
    from undefined_helpers import site_cell

    html = render_benchmark_page(BenchmarkData(benchmark="b", release="r", metrics_rel=".", leaderboard=lb))
    for row in lb.get("rows") or []:
        for m in metrics:
            if m in (lb.get("metrics") or []):
                cell = site_cell(html, str(row["system"]), m)
                if "— " not in cell or 'class="num"' in cell.split("</span>")[0]:
                    bad.append(f"site {row['system']}.{m}: {cell[:80]}")
    # the authors'-format export of a plug-in (DeepResearch Bench: fact_result.txt / race_result.txt numbers)
    extra = (
        json.loads((root / "metrics" / "extra.json").read_text()) if (root / "metrics" / "extra.json").exists() else {}
    )
    for system, res in (extra.get("authors_results") or {}).items():
        fact = (res or {}).get("fact") or {}
        if {"citation_accuracy", "effective_citations"} & set(metrics):
            bad += [f"extra.json authors_results.{system}.fact.{k}={fact[k]}" for k in
                    ("total_citations", "total_valid_citations", "valid_rate") if _is_number(fact.get(k))]  # fmt: skip
    return bad


@pytest.mark.integration
@pytest.mark.parametrize("benchmark", SIX)
def test_no_judged_value_is_a_number_when_every_judge_call_failed(
    benchmark: str, repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    from spine_helpers import run_benchmark

    assert set(installed_benchmarks()) >= set(SIX)
    monkeypatch.chdir(repo_root)
    params = _params(repo_root, benchmark, tmp_path)
    request.getfixturevalue("every_call_fails")  # after the plug-in's tasks are registered
    root = run_benchmark(params, benchmark, tmp_path / "run")

    judged = [m for m in get_benchmark(benchmark).metric_names if _judged(get_metric(m, benchmark))]
    assert judged, benchmark
    bad = _numbers_without_evidence(root, judged)
    assert not bad, f"{benchmark}: numbers without evidence: {bad[:12]} ({len(bad)} in all)"


@pytest.mark.integration
@pytest.mark.parametrize("benchmark", SIX)
def test_no_page_based_value_is_a_number_without_pages(benchmark: str, repo_root: Path, tmp_path: Path) -> None:
    from spine_helpers import run_benchmark

    params = _params(repo_root, benchmark, tmp_path)
    if benchmark not in params["plan"]["fetch"]:
        pytest.skip(f"{benchmark} fetches no pages")
    params["benchmarks"][benchmark]["fetch_seeds"] = []
    params["fetch"]["cache_path"] = str(tmp_path / "empty-pages.sqlite")
    root = run_benchmark(params, benchmark, tmp_path / "run")
    needs_pages = [m for m in get_benchmark(benchmark).metric_names if "pages" in get_metric(m, benchmark).kinds]
    assert needs_pages, f"{benchmark} fetches pages but no metric declares it needs them"
    bad = _numbers_without_evidence(root, needs_pages)
    assert not bad, f"{benchmark}: numbers without pages: {bad[:12]} ({len(bad)} in all)"


@pytest.mark.integration
def test_no_label_based_value_is_a_number_without_labels(repo_root: Path, tmp_path: Path) -> None:
    """Labels are release data (DeepScholar's importance labels on the exemplar's references): the demo is scored
    again from a release declaring none, and no metric declaring `labels` may be a number. (Counts: DeepScholar's
    counts come from the count cache as well as the release; tests/test_undefined_deepscholar.py withholds them.)"""
    import hashlib

    from reportbench import pipeline
    from spine_helpers import run_benchmark

    benchmark = "deepscholar"
    params = _params(repo_root, benchmark, tmp_path)
    root = run_benchmark(params, benchmark, tmp_path / "run")
    rel = root / "releases"
    meta = json.loads((rel / "release.json").read_text())
    refs = pl.read_parquet(rel / "exemplar_refs.parquet")
    assert refs["is_important"].any(), "the demo release has no importance labels to withhold"
    tables = {
        "exemplar_refs": refs.with_columns(pl.lit(None, dtype=refs.schema["is_important"]).alias("is_important")),
        "important_refs": pl.read_parquet(rel / "important_refs.parquet").clear(),
    }
    for name, frame in tables.items():
        frame.write_parquet(rel / f"{name}.parquet")
        digest = hashlib.sha256((rel / f"{name}.parquet").read_bytes()).hexdigest()
        meta["tables"][name].update(rows=frame.height, sha256=digest)
        meta["counts"][name] = frame.height
    meta["has_important_refs"] = False
    (rel / "release.json").write_text(json.dumps(meta))
    pipeline.score_stage(params, benchmark, rel, root / "runs", root / "judgments", root / "scores", root / "metrics")
    needing = [m for m in get_benchmark(benchmark).metric_names if "labels" in get_metric(m, benchmark).kinds]
    assert needing == ["reference_coverage"]
    bad = _numbers_without_evidence(root, needing)
    assert not bad, f"{benchmark}: numbers without labels: {bad[:12]} ({len(bad)} in all)"
