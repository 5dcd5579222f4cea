"""The stage functions end to end on the demo release, in-process (no DVC), plus failure isolation."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from reportbench import pipeline
from reportbench.config import composed_params
from reportbench.systems import read_outcomes, read_reports
from spine_helpers import run_benchmark

pytestmark = pytest.mark.integration

METRICS = {
    "organization",
    "nugget_coverage",
    "relevance_rate",
    "reference_coverage",
    "document_importance",
    "citation_precision",
    "claim_coverage",
}


def _run_all(params: dict, root: Path, systems: list[str]) -> Path:
    bench = params["benchmarks"]["deepscholar"]
    bench["systems"] = {s: bench["systems"][s] for s in systems}
    return run_benchmark(params, "deepscholar", root)


def _summary(root: Path, system: str) -> dict:
    return json.loads((root / "metrics" / "systems.json").read_text())[system]


@pytest.fixture()
def demo_params(repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.chdir(repo_root)  # params hold repo-relative paths (data/demo/deepscholar, prompts/)
    params = composed_params(conf_dir=repo_root / "conf")
    params["benchmarks"]["deepscholar"]["judging"]["citations"]["cache_path"] = str(tmp_path / "openalex.sqlite")
    params["judge"]["runtime"]["progress"] = False
    return params


def test_demo_release_scores_every_metric_for_every_system(demo_params: dict, tmp_path: Path) -> None:
    systems = list(demo_params["benchmarks"]["deepscholar"]["systems"])
    root = _run_all(demo_params, tmp_path / "a", systems)
    board = json.loads((root / "metrics" / "leaderboard.json").read_text())
    assert board["rows"] and {r["system"] for r in board["rows"]} == set(systems)
    for system in systems:
        summary = _summary(root, system)
        assert set(summary["metrics"]) == METRICS
        for name, m in summary["metrics"].items():
            assert m["mean"] is not None and 0.0 <= m["mean"] <= 1.0, (system, name, m)
            assert m["higher_is_better"] is True and m["n_failed_items"] == 0
        assert summary["judge"]["name"] == "offline"
    # The demo is built so that the careful writer covers every important arXiv reference.
    careful = _summary(root, "careful_writer")
    assert careful["metrics"]["reference_coverage"]["mean"] == 1.0
    # ... and never cites a paper published after the task's cut-off; the hasty writer does (by design).
    assert careful["leakage"]["reports_with_leak"] == 0
    hasty = _summary(root, "hasty_writer")
    assert hasty["leakage"]["after_cutoff"] >= 1 and hasty["leakage"]["leaked_sources"]


def test_rerun_is_byte_identical(demo_params: dict, tmp_path: Path) -> None:
    systems = list(demo_params["benchmarks"]["deepscholar"]["systems"])[:1]
    a = _run_all(demo_params, tmp_path / "a", systems)
    b = _run_all(demo_params, tmp_path / "b", systems)
    for rel in [f"runs/{systems[0]}/reports.jsonl", "metrics/systems.json", "metrics/leaderboard.md"]:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_one_bad_report_never_loses_the_rest(demo_params: dict, repo_root: Path, tmp_path: Path) -> None:
    folder = tmp_path / "broken_system"
    shutil.copytree(repo_root / "data" / "demo" / "deepscholar" / "systems" / "careful_writer", folder)
    first = sorted(folder.iterdir())[0]
    first.write_bytes(b"\x00" * (6 * 1024 * 1024))  # over the adapter's 5 MB cap: a parse error
    demo_params["benchmarks"]["deepscholar"]["systems"] = {
        "broken": {"kind": "folder", "path": str(folder), "format": "auto"}
    }
    root = _run_all(demo_params, tmp_path / "run", ["broken"])
    outcomes = {o.task_id: o for o in read_outcomes(root / "runs" / "broken")}
    assert outcomes[first.stem].status == "parse_error" and first.name in (outcomes[first.stem].reason or "")
    assert sum(o.status == "ok" for o in outcomes.values()) == len(outcomes) - 1
    assert len(read_reports(root / "runs" / "broken")) == len(outcomes) - 1
    summary = _summary(root, "broken")
    assert summary["n_missing_reports"] == 1 and summary["report_outcomes"]["parse_error"] == 1
    assert summary["metrics"]["organization"]["n_undefined"] == 1  # NaN for that task, never 0


def test_stub_judge_runs_the_real_litellm_path(demo_params: dict, tmp_path: Path) -> None:
    from reportbench.judges.runner import read_judgments
    from reportbench.stub_server import stub_server_thread

    release = tmp_path / "release"
    pipeline.build_release(demo_params, "deepscholar", release)
    run = tmp_path / "run"
    pipeline.run_system(demo_params, "deepscholar", "careful_writer", release, run)
    with stub_server_thread(latency_ms=5) as server:
        stub = composed_params(["judge=stub"], conf_dir=Path("conf"))["judge"]
        stub["api_base"] = server.base_url
        stub["runtime"].update(cache_path=str(tmp_path / "judge.sqlite"), progress=False)
        demo_params["judge"] = stub
        usage = pipeline.run_judge_stage(
            demo_params, "deepscholar", "careful_writer", "main", release, run, tmp_path / "j", tmp_path / "u.json"
        )["steps"]["support"]
    judgments = read_judgments(tmp_path / "j" / "support.parquet")
    assert usage["calls"] == len(judgments) > 0 and usage["failed"] == 0
    assert all(j.member == "main" for j in judgments)
    assert all(j.judge_id == "litellm:openai/stub-judge" and j.value in (0.0, 1.0) for j in judgments)
    assert not any(math.isnan(j.score) for j in judgments)
