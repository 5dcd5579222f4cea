"""A quick subset for every benchmark (issue 32): `-S benchmarks.<b>.release.limit=N` (docs/scale.md).

The rule (the N tasks with the smallest sha256(task_id), in release order) on all six demos, in process; the
subset recorded in release.json, CARD.md and on every leaderboard output; reports of the full release's other tasks
ignored by the system stage and by `reportbench check`; bad limits as one error line; the authors' real data where
../shared has it (skips without). The ONE DVC end-to-end run, `dvc exp run -S benchmarks.deer.release.limit=2`, is
docs/scale.md's command: the docs test runs it and checks its results (see the end of this file).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from reportbench.cli import main
from reportbench.config import composed_params
from reportbench.release.format import read_release, write_release
from reportbench.release.subset import choose_tasks

BENCHMARKS = ("deepscholar", "researcherbench", "deer", "researchqa", "liveresearchbench", "deepresearch_bench")
NOTICE = "not comparable with full runs"


@pytest.fixture(scope="module")
def params(repo_root: Path) -> dict[str, Any]:
    """The default composition (every installed benchmark's demo release)."""
    return composed_params(conf_dir=repo_root / "conf")


def _release_cfg(params: dict[str, Any], benchmark: str) -> dict[str, Any]:
    if benchmark not in params["benchmarks"]:
        pytest.skip(f"{benchmark} is not installed (pip install -e plugins/deepresearch_bench)")
    return dict(params["benchmarks"][benchmark]["release"])


def _by_hash(ids: list[str], n: int) -> list[str]:
    """The documented rule, spelled independently of the code under test."""
    keep = sorted(ids, key=lambda t: hashlib.sha256(t.encode("utf-8")).hexdigest())[:n]
    return [t for t in ids if t in keep]


# ------------------------------------------------------------------------------------------- every benchmark
@pytest.mark.core
@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_limit_keeps_the_hashed_choice_on_every_benchmark_demo(
    benchmark: str, params: dict[str, Any], repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reportbench.pipeline import configured_release

    monkeypatch.chdir(repo_root)
    cfg = _release_cfg(params, benchmark)
    assert "limit" in cfg and cfg["limit"] is None, "every release config documents `limit: null`"
    full = configured_release(benchmark, cfg)
    ids = [t.task_id for t in full.tasks]
    sub = configured_release(benchmark, {**cfg, "limit": 2})
    kept = [t.task_id for t in sub.tasks]
    assert kept == _by_hash(ids, 2) and len(kept) == 2 < len(ids)
    assert sub.meta.name == f"{cfg['name']}-limit2"
    # every task-keyed row of every table follows the subset; rows every task shares ('*') stay
    tables = {"exemplar_refs": sub.exemplar_ref_rows, "nuggets": sub.nugget_rows, **sub.extra}
    for name, rows in tables.items():
        bad = [r.task_id for r in rows if hasattr(r, "task_id") and r.task_id not in (*kept, "*")]
        assert not bad, (name, bad[:3])
    for name, rows in full.extra.items():  # nothing of a chosen task is lost
        mine = [r for r in rows if getattr(r, "task_id", None) in kept]
        assert len([r for r in sub.extra[name] if getattr(r, "task_id", None) in kept]) == len(mine), name

    out = tmp_path / "release"
    manifest = write_release(sub, out)
    subset = manifest["subset"]
    assert (subset["n"], subset["of"], subset["limit"]) == (2, len(ids), 2)
    assert subset["task_ids_of_full"] == ids and "sha256(task_id)" in subset["rule"]
    assert json.loads((out / "release.json").read_text())["subset"]["n"] == 2
    card = (out / "CARD.md").read_text()
    assert f"subset 2 of {len(ids)} tasks" in card and NOTICE in card
    assert NOTICE in (out / "README.md").read_text()
    back = read_release(out)
    assert back.meta.subset == subset and back.task_ids == kept

    # limit >= M: the full set, with a note (and a full release's manifest has no `subset` at all)
    every = configured_release(benchmark, {**cfg, "limit": len(ids) + 5})
    assert every.task_ids == ids and "full set" in every.meta.subset["note"]
    assert "subset" not in write_release(full, tmp_path / "full")


@pytest.mark.core
def test_the_choice_is_stable_when_the_source_grows() -> None:
    ids = [f"task-{i}" for i in range(200)]
    grown = ids[:100] + [f"new-{i}" for i in range(30)] + ids[100:]
    before, after = choose_tasks(ids, 10), choose_tasks(grown, 10)
    newcomers = [t for t in after if t.startswith("new-")]
    # an old task leaves the subset only for a new one that hashes below it; dropping unchosen tasks changes nothing
    assert len(set(before) - set(after)) == len(newcomers)
    assert choose_tasks([t for t in ids if t in before or t.endswith("7")], 10) == before


@pytest.mark.core
@pytest.mark.parametrize("value", ["0", "-3", "abc", "2.5", "true"])
def test_a_bad_limit_is_one_error_line_naming_the_field(
    value: str, repo_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["compose", "--out", str(tmp_path / "params.yaml"), f"benchmarks.deer.release.limit={value}"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert "benchmarks.deer.release.limit" in err and "positive integer" in err, err


@pytest.mark.core
def test_plan_names_a_subset_release_apart_from_the_full_one(params: dict[str, Any]) -> None:
    from reportbench.plan import build_plan

    benchmarks = {"deer": {**params["benchmarks"]["deer"]}}
    full = build_plan(benchmarks, {})["benchmarks"]["deer"]["release"]
    benchmarks["deer"]["release"] = {**benchmarks["deer"]["release"], "limit": 2}
    assert (full, build_plan(benchmarks, {})["benchmarks"]["deer"]["release"]) == ("demo", "demo-limit2")


# ----------------------------------------------------------------- systems, judges and scores follow the subset
@pytest.mark.core
def test_systems_judges_and_scores_follow_the_subset(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spine_helpers import benchmark_params, run_benchmark

    monkeypatch.chdir(repo_root)
    params = benchmark_params(repo_root, "researcherbench", "benchmarks.researcherbench.release.limit=2")
    root = run_benchmark(params, "researcherbench", tmp_path / "rb")
    kept = read_release(root / "releases").task_ids
    assert kept == _by_hash(["q1", "q2", "q3"], 2)
    for system in params["plan"]["benchmarks"]["researcherbench"]["systems"]:
        outcomes = [json.loads(x) for x in (root / "runs" / system / "outcomes.jsonl").read_text().splitlines()]
        # a report of the full release's other task is ignored: no unmapped outcome, a mapping row that says so
        assert [o["task_id"] for o in outcomes] == kept, outcomes
        mapping = [json.loads(x) for x in (root / "runs" / system / "mapping.jsonl").read_text().splitlines()]
        assert {m["status"] for m in mapping} <= {"mapped", "outside_release"}, mapping
        assert all(m["task_id"] in kept for m in mapping if m["status"] == "mapped"), mapping
    outside = [json.loads(x)["status"] for x in (root / "runs/footnote_writer/mapping.jsonl").read_text().splitlines()]
    assert outside.count("outside_release") == 1  # footnote_writer answers q1..q3
    board = json.loads((root / "metrics" / "leaderboard.json").read_text())
    assert all(r["n_tasks"] == 2 for r in board["rows"])
    assert board["meta"]["subset"]["n"] == 2 and board["meta"]["subset"]["of"] == 3
    assert "task_ids_of_full" not in board["meta"]["subset"]
    line = board["meta"]["notice"]
    assert line.startswith("subset 2 of 3 tasks") and NOTICE in line
    assert line in (root / "metrics" / "leaderboard.md").read_text().splitlines()[0]
    assert line in (root / "metrics" / "leaderboard.html").read_text().replace("&#x27;", "'")
    csv = (root / "metrics" / "leaderboard.csv").read_text().splitlines()
    assert csv[0].split(",")[-1] == "subset" and all(NOTICE in row for row in csv[1:])


@pytest.mark.core
@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_every_demo_system_runs_on_the_subset(
    benchmark: str, params: dict[str, Any], repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every system kind of the default demos takes a subset release (no kind refuses what the subset adds) and
    answers exactly its tasks; reports of the other tasks are never unmapped outcomes."""
    from reportbench import pipeline

    monkeypatch.chdir(repo_root)
    cfg = _release_cfg(params, benchmark)
    p = {**params, "benchmarks": {**params["benchmarks"], benchmark: {**params["benchmarks"][benchmark]}}}
    p["benchmarks"][benchmark]["release"] = {**cfg, "limit": 2}
    release = tmp_path / "release"
    pipeline.build_release(p, benchmark, release)
    kept = read_release(release).task_ids
    for system in p["benchmarks"][benchmark].get("systems") or {}:
        pipeline.run_system(p, benchmark, system, release, tmp_path / "runs" / system)
        rows = (tmp_path / "runs" / system / "outcomes.jsonl").read_text().splitlines()
        outcomes = [json.loads(x) for x in rows]
        assert [o["task_id"] for o in outcomes] == kept, (system, outcomes)


@pytest.mark.core
def test_check_ignores_reports_of_tasks_outside_the_subset(
    repo_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from reportbench.pipeline import configured_release

    monkeypatch.chdir(repo_root)
    cfg = yaml.safe_load((repo_root / "conf" / "deepscholar" / "release" / "demo.yaml").read_text())
    release_dir = tmp_path / "demo-limit1"
    write_release(configured_release("deepscholar", {**cfg, "limit": 1}), release_dir)
    folder = "data/demo/deepscholar/systems/careful_writer"  # demo-0001..3.md: two belong to other tasks
    assert main(["check", folder, "-b", "deepscholar", "--release", str(release_dir), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    statuses = sorted(m["status"] for m in result["mapping"])
    assert statuses == ["mapped", "outside_release", "outside_release"], result["mapping"]
    assert not result["errors"] and not [w for w in result["warnings"] if "outside" in w or "unmapped" in w]


@pytest.mark.core
def test_a_bare_row_number_keeps_naming_its_row_of_the_full_release() -> None:
    """DeepScholar's released baselines name reports by 0-based row: row n is the same task at any limit."""
    from reportbench.protocols.deepscholar.benchmark import BENCHMARK
    from reportbench.reports.task_names import NameIndex

    full = [f"t{i}" for i in range(6)]
    kept = choose_tasks(full, 2)
    index = NameIndex(kept, BENCHMARK.task_naming, full_task_ids=full)
    for n, tid in enumerate(full):
        m = index.match(str(n))
        assert (m.task_id, m.outside_release) == ((tid, False) if tid in kept else (None, True)), (n, m)
    assert index.match("6").task_id is None and not index.match("6").outside_release


# ----------------------------------------------------------------------------- the authors' data (../shared)
@pytest.mark.integration
@pytest.mark.parametrize(
    ("benchmark", "release", "data", "total"),
    [
        ("researcherbench", "researcherbench", "researcherbench", 65),
        ("liveresearchbench", "public80", "liveresearchbench/coverage_checklist_public80.csv", 80),
        ("deepscholar", "deepscholar", "deepscholar-bench", 63),
    ],
)
def test_limit_on_the_authors_data(
    benchmark: str, release: str, data: str, total: int, shared_dir: Path, repo_root: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from reportbench.pipeline import configured_release

    path = shared_dir / "data" / data
    if not path.exists():
        pytest.skip(f"../shared/data/{data} is not present")
    monkeypatch.chdir(repo_root)
    cfg = composed_params([f"{benchmark}/release={release}"], conf_dir=repo_root / "conf")["benchmarks"][benchmark]
    rcfg = {**cfg["release"], "source": str(path), "limit": 5}
    if "path" in rcfg:
        rcfg["path"] = str(path)
    sub = configured_release(benchmark, rcfg)
    assert (sub.meta.subset["n"], sub.meta.subset["of"]) == (5, total)
    assert sub.task_ids == _by_hash(sub.meta.subset["task_ids_of_full"], 5)


@pytest.mark.integration
def test_check_of_the_authors_lrb_reports_against_a_subset(
    shared_dir: Path, repo_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from reportbench.pipeline import configured_release

    data = shared_dir / "data" / "liveresearchbench"
    reports = data / "reference_reports"
    if not reports.is_dir():
        pytest.skip("../shared/data/liveresearchbench/reference_reports is not present")
    monkeypatch.chdir(repo_root)
    cfg = composed_params(["liveresearchbench/release=public80"], conf_dir=repo_root / "conf")
    rcfg = {**cfg["benchmarks"]["liveresearchbench"]["release"], "limit": 10}
    rcfg.update(path=str(data / "coverage_checklist_public80.csv"), source=str(data))
    write_release(configured_release("liveresearchbench", rcfg), tmp_path / "rel")
    code = main(["check", str(reports), "-b", "liveresearchbench", "--release", str(tmp_path / "rel"),
                 "--allow-missing", "true", "--json"])  # fmt: skip
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and not result["errors"], result["errors"]
    statuses = [m["status"] for m in result["mapping"]]
    assert set(statuses) <= {"mapped", "outside_release"} and statuses.count("outside_release") > 10, statuses
    assert not [w for w in result["warnings"] if "unmapped" in w or "not a task id" in w], result["warnings"]


# ------------------------------------------------------------------------------------------------ DVC, once
# The DVC end-to-end run is docs/scale.md's own command, `dvc exp run -S benchmarks.deer.release.limit=2`, which the
# docs test's `scale-limits` scenario runs from the session's reproduced template: its results (the `-limit2` release,
# the notice on every output and the site, `dvc metrics diff` never pairing a subset with a full run) are checked
# there, right after it (tests/test_docs_commands.py `subset_release_results`), so CI runs it once.
