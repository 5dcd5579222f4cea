"""Issue 21 §1 done-when: the same reports score the same whatever layout brings them in.

Each test runs one benchmark's demo release through the real stage functions (in-process, offline judge) with
the demo's own reports in two layouts side by side, and compares the per-task scores row by row:
ResearcherBench `1.md…N.md` vs the authors' response file; DEER's authors' per-task folders
(`<domain folder>/<n>/<prefix>_<n>.md`) vs the flat layout; LiveResearchBench's per-model parent folder vs flat
folders.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from spine_helpers import benchmark_params, run_benchmark

pytestmark = pytest.mark.integration


def _rows(root: Path, system: str) -> list[dict]:
    df = pl.read_parquet(root / "scores" / f"{system}.parquet").drop("system")
    return df.sort(["task_id", "metric"]).to_dicts()


def _same(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b) and a, (len(a), len(b))
    for x, y in zip(a, b, strict=True):
        for k in x:
            vx, vy = x[k], y[k]
            if isinstance(vx, float) and vx != vx:
                assert vy != vy, (k, x, y)
            else:
                assert vx == vy, (k, x, y)


def test_researcherbench_numbered_folder_scores_what_the_response_file_scores(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    params = benchmark_params(repo_root, "researcherbench")
    src = repo_root / "data" / "demo" / "researcherbench" / "systems" / "footnote_writer"
    numbered = tmp_path / "numbered"
    numbered.mkdir()
    entries = []
    for f in sorted(src.glob("q*.md")):
        n = int(f.stem[1:])
        shutil.copy(f, numbered / f"{n}.md")
        entries.append({"id": n, "question": "", "response": f.read_text(encoding="utf-8")})
    responses = tmp_path / "System.json"
    responses.write_text(json.dumps(entries), encoding="utf-8")
    params["benchmarks"]["researcherbench"]["systems"] = {
        "numbered": {"kind": "folder", "path": str(numbered)},
        "responses": {"kind": "researcherbench_responses", "path": str(responses)},
    }
    root = run_benchmark(params, "researcherbench", tmp_path / "out")
    _same(_rows(root, "numbered"), _rows(root, "responses"))
    mapping = [json.loads(x) for x in (root / "runs" / "numbered" / "mapping.jsonl").read_text().splitlines()]
    assert {(Path(m["file"]).name, m["task_id"]) for m in mapping} == {("1.md", "q1"), ("2.md", "q2"), ("3.md", "q3")}


def test_deer_authors_task_folders_score_what_the_flat_layout_scores(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    params = benchmark_params(repo_root, "deer")
    flat = repo_root / "data" / "demo" / "deer" / "systems" / "careful_writer"
    tasks = repo_root / "data" / "demo" / "deer" / "tasks"
    authors = tmp_path / "data"
    shutil.copytree(tasks, authors)  # query.md / core_criteria.md sit next to the reports, as the authors ship
    folder_of = {"ai": "csai", "cs": "csai"}
    for f in sorted(flat.glob("*.md")):
        domain, n = f.stem.rsplit("-", 1)
        target = authors / folder_of.get(domain, domain) / n / f"careful_{n}.md"
        shutil.copy(f, target)
    params["benchmarks"]["deer"]["systems"] = {
        "flat": {"kind": "folder", "path": str(flat)},
        "authors": {"kind": "folder", "path": str(authors)},  # layout auto-detected: task folders
    }
    root = run_benchmark(params, "deer", tmp_path / "out")
    _same(_rows(root, "flat"), _rows(root, "authors"))
    check = json.loads((root / "runs" / "authors" / "check.json").read_text())
    assert check["mapped"] == 3 and not check["errors"]


def test_lrb_per_model_parent_scores_what_flat_folders_score(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    params = benchmark_params(repo_root, "liveresearchbench")
    demo = repo_root / "data" / "demo" / "liveresearchbench" / "systems"
    parent = tmp_path / "models"
    shutil.copytree(demo / "careful_analyst", parent / "careful_analyst")
    systems = params["benchmarks"]["liveresearchbench"]["systems"]
    systems["models"] = {"kind": "folder", "path": str(parent), "layout": "per_model"}
    root = run_benchmark(params, "liveresearchbench", tmp_path / "out")
    assert "models__careful_analyst" in params["plan"]["benchmarks"]["liveresearchbench"]["systems"]
    _same(_rows(root, "careful_analyst"), _rows(root, "models__careful_analyst"))
