"""Run a whole benchmark through the real stage functions, in-process (no DVC): what every stage of dvc.yaml
does, in its order, with the same paths. Shared by the DeepScholar pipeline tests and the toy benchmark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reportbench import pipeline
from reportbench.plan import build_plan, judge_units


def refresh_plan(params: dict[str, Any]) -> dict[str, Any]:
    """Recompute `plan` after a test edits benchmarks/agents (compose does this for params.yaml)."""
    params["plan"] = build_plan(params.get("benchmarks"), params.get("agents"), agreement=params.get("agreement"))
    return params


def run_benchmark(params: dict[str, Any], benchmark: str, root: Path) -> Path:
    """Every stage of one benchmark under `root` (release, systems, fetch, judges, cross, score)."""
    refresh_plan(params)
    b = params["plan"]["benchmarks"][benchmark]
    release = root / "releases"
    runs = root / "runs"
    pipeline.build_release(params, benchmark, release)
    for system in b["systems"]:
        pipeline.run_system(params, benchmark, system, release, runs / system)
    pages = None
    if benchmark in params["plan"]["fetch"]:
        pages = root / "pages"
        pipeline.fetch_stage(params, benchmark, runs, release, pages / "pages.parquet")
    for j in judge_units(params["plan"]).values():
        if j["benchmark"] != benchmark:
            continue
        pipeline.run_judge_stage(
            params,
            benchmark,
            j["system"],
            j["member"],
            release,
            runs / j["system"],
            root / "judgments" / j["system"] / j["member"],
            root / "metrics" / "usage" / f"{j['system']}.{j['member']}.json",
            pages_dir=pages,
        )
    cross = None
    if benchmark in params["plan"]["cross"]:
        cross = root / "cross"
        pipeline.cross_stage(params, benchmark, release, runs, cross)
    pipeline.score_stage(
        params, benchmark, release, runs, root / "judgments", root / "scores", root / "metrics", cross_dir=cross
    )
    return root


def benchmark_params(repo_root: Path, benchmark: str, *overrides: str) -> dict[str, Any]:
    """Composed params with `benchmark` enabled (besides DeepScholar), progress bars off, the plan refreshed.

    The caller must run with the repository root as the working directory (params hold repo-relative paths).
    """
    from reportbench.config import composed_params

    params = composed_params([f"benchmarks=[deepscholar,{benchmark}]", *overrides], conf_dir=repo_root / "conf")
    params["judge"]["runtime"]["progress"] = False
    return refresh_plan(params)
