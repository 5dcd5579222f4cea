"""A sixth benchmark, defined entirely in tests/toy_benchmark.py, runs through the real stage functions: its
own release table, a derived (claims) table from chained judges, a two-member ensemble, a cross-system stage,
and failed-vs-undefined-vs-zero kept apart in its summaries."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import toy_benchmark
from reportbench.config import composed_params
from reportbench.judges.runner import read_judgments
from reportbench.plan import judge_units
from reportbench.release.format import read_release
from spine_helpers import refresh_plan, run_benchmark

pytestmark = pytest.mark.integration

REPORTS = {
    "thorough": {
        "t1": "The sky is blue because of scattering of sunlight by air molecules [1]. Shorter blue "
        "wavelengths scatter more than red ones [1].\n\n## References\n[1] Sky colour explained. "
        "https://example.org/sky#:~:text=blue\n",
        "t2": "Trees shed leaves to save water in winter [1].\n\n## References\n[1] Why trees shed leaves: "
        "deciduous trees save water in winter.\n",
    },
    "terse": {"t1": "The sky is blue [1].\n\n## References\n[1] Gone. https://example.org/missing\n"},  # no t2
}


@pytest.fixture(autouse=True)
def _installed() -> object:
    toy_benchmark.install()
    yield
    toy_benchmark.uninstall()


@pytest.fixture()
def toy_params(tmp_path: Path, repo_root: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.chdir(repo_root)
    params = composed_params(conf_dir=repo_root / "conf")
    params["judge"]["runtime"]["progress"] = False
    systems = {}
    for system, reports in REPORTS.items():
        folder = tmp_path / "reports" / system
        folder.mkdir(parents=True)
        for task_id, text in reports.items():
            (folder / f"{task_id}.md").write_text(text)
        systems[system] = {"kind": "folder", "path": str(folder), "format": "markdown"}
    seeds = tmp_path / "pages.jsonl"
    page = (
        "<html><head><title>Sky</title></head><body><p>Rayleigh scattering of sunlight by air molecules: "
        "shorter blue wavelengths scatter more strongly than red ones.</p></body></html>"
    )
    seeds.write_text(
        json.dumps({"url": "https://example.org/sky", "status": 200, "content_type": "text/html", "body": page}) + "\n"
    )
    params["fetch"]["cache_path"] = str(tmp_path / "pages.sqlite")
    params["benchmarks"]["toy"] = {
        "release": {"name": "toy-r1", "kind": "toy"},  # validate_release: every release names its kind
        "systems": systems,
        "judges": {"gpt": {}, "gemini": {}},
        "judging": {},
        "scoring": {},
        "stages": {"cross": True, "fetch": True},
        "fetch_seeds": [str(seeds)],
    }
    return refresh_plan(params)


def test_plan_fans_out_per_system_and_member(toy_params: dict) -> None:
    plan = toy_params["plan"]
    assert {"toy.terse.gemini", "toy.terse.gpt", "toy.thorough.gemini", "toy.thorough.gpt"} <= set(judge_units(plan))
    assert "toy" in plan["cross"] and "toy" in plan["fetch"]
    assert plan["benchmarks"]["toy"]["cross_dep"] == "data/cross/toy/toy-r1"


def test_toy_benchmark_runs_through_the_real_stages(toy_params: dict, tmp_path: Path) -> None:
    root = run_benchmark(toy_params, "toy", tmp_path / "out")
    release = read_release(root / "releases")
    assert [c.item_id for c in release.table("toy_checks")] == ["c1", "c2", "c1"]
    assert json.loads((root / "releases" / "release.json").read_text())["tables"]["toy_checks"]["rows"] == 3

    for member in ("gpt", "gemini"):
        jdir = root / "judgments" / "thorough" / member
        claims = pl.read_parquet(jdir / "derived" / "claims.parquet")
        verified = read_judgments(jdir / "verify.parquet")
        assert claims.height == 3 and len(verified) == claims.height  # the chained step read the derived table
        assert {j.input_ids["claim_id"] for j in verified} == set(claims["claim_id"])
        assert all(j.member == member for j in verified)

    pages = pl.read_parquet(root / "pages" / "pages.parquet")
    status = dict(zip(pages["url"].to_list(), pages["error_class"].to_list(), strict=True))
    assert status == {"https://example.org/sky": "ok", "https://example.org/missing": "not_fetched"}
    battles = pl.read_parquet(root / "cross" / "battles.parquet")
    assert battles.height == 2 and set(battles["winner"]) == {"thorough"}

    summary = json.loads((root / "metrics" / "systems.json").read_text())
    thorough, terse = summary["thorough"]["metrics"], summary["terse"]["metrics"]
    assert thorough["coverage"]["mean"] == 1.0 and thorough["claim_support"]["mean"] == 1.0
    assert thorough["win_rate"]["mean"] == 1.0 and terse["win_rate"]["mean"] == 0.0
    # terse has no report for t2: coverage's protocol scores it 0 (counted), claim support leaves it undefined
    assert terse["coverage"]["n_zero_missing"] == 1 and terse["coverage"]["mean"] == 0.0
    # its one claim cites a page the fetch stage could not get (not_fetched): judged unsupported, not skipped
    assert terse["claim_support"]["mean"] == 0.0
    assert terse["claim_support"]["n_undefined"] == 1 and terse["claim_support"]["n_failed"] == 0
    board = json.loads((root / "metrics" / "leaderboard.json").read_text())
    assert [r["system"] for r in board["rows"]] == ["thorough", "terse"]
    assert board["metrics"] == ["coverage", "claim_support", "win_rate"]


def test_a_failed_judgment_is_counted_as_failed_never_zero(toy_params: dict, tmp_path: Path) -> None:
    import toy_benchmark as toy

    original = toy._check_offline

    def broken(inputs, params):  # the rule fails on one item: a failure record, not a crash or a 0
        if "wavelengths" in inputs.item:
            raise RuntimeError("rule broke")
        return original(inputs, params)

    task = toy.get_task_for_tests("toy_check")
    object.__setattr__(task, "offline", broken)
    try:
        root = run_benchmark(toy_params, "toy", tmp_path / "out")
    finally:
        object.__setattr__(task, "offline", original)
    thorough = json.loads((root / "metrics" / "systems.json").read_text())["thorough"]["metrics"]["coverage"]
    assert thorough["n_failed"] == 1 and thorough["mean"] == 1.0  # t1 failed (NaN, excluded), t2 covered
    board = (root / "metrics" / "leaderboard.md").read_text()
    assert "[1 failed]" in board
