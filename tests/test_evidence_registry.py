"""Issue 34: the evidence rule as a property of the registry, for built-in benchmarks and plug-ins alike.

Every installed benchmark (the DeepResearch Bench plug-in included) runs its demo with one kind of evidence
withheld: every judge call failed. Then no value that needs a judgment (a metric declaring judge tasks, or any
metric not declared a plain measurement) may be a number: not a per-task cell, not the system value, not a
leaderboard cell, not a per-category breakdown or export number in extra.json. The other kinds (no pages, no
validations, no counts, no labels) are per-benchmark evidence and run in tests/test_undefined_<benchmark>.py and
tests/test_evidence_rule.py; this test needs no knowledge of a benchmark beyond its registered metrics.
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
    bad: list[str] = []
    for parquet in sorted((root / "scores").glob("*.parquet")):
        per = pl.read_parquet(parquet).filter(pl.col("metric").is_in(judged))
        if "status" not in per.columns:  # DeepScholar's own per-task table: the reason says what a 0 is
            per = per.with_columns(
                pl.when(pl.col("reason").str.starts_with("zero:") | (pl.col("reason") == "no_report"))
                .then(pl.lit("nothing_to_score"))
                .otherwise(pl.lit("ok"))
                .alias("status")
            )
        # a per-task 0 is allowed only where the system left something out (the protocol's missing-report 0)
        nums = per.filter(pl.col("value").is_not_nan() & ~pl.col("status").is_in(["no_report", "nothing_to_score"]))
        bad += [f"{parquet.stem}/{r['task_id']}/{r['metric']}={r['value']} ({r['status']})" for r in nums.to_dicts()]
    systems = json.loads((root / "metrics" / "systems.json").read_text())
    for s, summary in systems.items():
        for m in judged:
            mm = (summary.get("metrics") or {}).get(m) or {}
            if mm.get("mean") is not None and not math.isnan(mm["mean"]):
                bad.append(f"systems.json {s}.{m}.mean={mm['mean']}")
            bad += [f"systems.json {s}.{m}.groups{p}={v}" for p, v in _numbers(mm.get("groups"))]
        for cat, row in (summary.get("by_category") or {}).items():
            if row.get("n_no_report") == row.get("n_tasks"):
                continue  # the system gave no report in this category: the protocol's missing-report 0
            bad += [f"systems.json {s}.by_category.{cat}.{m}={row[m]}" for m in judged if _is_number(row.get(m))]
    lb = json.loads((root / "metrics" / "leaderboard.json").read_text())
    for row in lb.get("rows") or []:
        for m in judged:
            v = (row.get("metrics") or {}).get(m)
            if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
                bad.append(f"leaderboard.json {row['system']}.{m}={v}")
    assert not bad, f"{benchmark}: numbers without evidence: {bad[:12]} ({len(bad)} in all)"
