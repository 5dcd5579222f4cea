"""`reportbench estimate` (calls, tokens, dollars before spending; no network) and `judge.runtime.max_cost_usd`
(stops a stage cleanly, keeps what was paid for, resumes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportbench.estimate import count_messages, estimate, summarise
from reportbench.judges.client import BUDGET, BudgetExceeded
from reportbench.judges.pricing import price_for
from reportbench.judges.runner import read_judgments
from reportbench.stub_server import stub_server_thread
from spine_helpers import benchmark_params, run_benchmark
from test_researcherbench_stub import _params, _snapshot, responder

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")


@pytest.mark.core
def test_prices_and_tokens_come_from_local_files() -> None:
    p = price_for("openai/gpt-4.1")
    assert p is not None and p.batch_input == pytest.approx(p.input / 2)
    assert p.cost(1000, 100, batch=True) == pytest.approx(p.cost(1000, 100) / 2)
    assert price_for("anthropic/claude-sonnet-4-5") is not None
    assert price_for("openai/no-such-model") is None
    assert price_for("x/y", input_cost_per_token=1e-6, output_cost_per_token=2e-6).cost(10, 10) == pytest.approx(3e-5)
    assert count_messages([{"role": "user", "content": "hello world"}]) == 3 + 3 + 2  # o200k: "hello", " world"


@pytest.mark.integration
def test_estimate_counts_calls_then_subtracts_the_cache(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    params = benchmark_params(repo_root, "researcherbench", "judge=llm", "judge.model=openai/gpt-4.1")
    cache = tmp_path / "cache" / "judge.sqlite"
    ledger = estimate(params, benchmarks=["researcherbench"], cache_path=str(cache))
    summary = summarise(ledger, params)
    rubric = {r["stage"]: r for r in summary["rows"] if r["task"] == "researcherbench_rubric" and r["items"]}
    assert rubric and all(r["items_exact"] and r["calls"] == r["items"] for r in rubric.values())
    t = summary["totals"]
    assert t["calls"] == t["items"] > 0 and t["prompt_tokens"] > 0 and t["cache_hits"] == 0
    assert 0 < t["usd_batch"] < t["usd_online"]

    # judge for real (stub) into that cache: the first step's item counts were exact
    with stub_server_thread(responder=responder) as s:
        run_params = _params(repo_root, s.base_url, max_retries=2)
        run_params["judge"]["runtime"]["cache_path"] = str(cache)
        root = run_benchmark(run_params, "researcherbench", tmp_path / "run")
        paid = s.counts["ok"]
    for stage, row in rubric.items():
        system = stage.removeprefix("judge@researcherbench (").removesuffix(")")
        assert len(read_judgments(root / "judgments" / system / "main" / "rubric.parquet")) == row["items"]
    # ... and estimating the judge that ran: every call is now a cache hit
    stub_params = _params(repo_root, s.base_url, max_retries=2)
    after = summarise(estimate(stub_params, benchmarks=["researcherbench"], cache_path=str(cache)), stub_params)
    assert after["totals"]["cache_hits"] == after["totals"]["items"] > 0
    assert after["totals"]["calls"] == 0 and after["totals"]["prompt_tokens"] == 0
    first_steps = [r for r in after["rows"] if r["items_exact"]]
    assert sum(r["items"] for r in first_steps) <= paid


@pytest.mark.integration
def test_estimate_cli_is_one_table_and_errors_are_one_line(
    repo_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from reportbench.cli import main

    monkeypatch.chdir(repo_root)
    args = ["estimate", "-S", "judge=llm", "-S", "judge.model=openai/gpt-4.1", "--benchmark", "researchqa"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["stage"] for r in out["rows"]} >= {"cross@researchqa"}  # the pairwise battles are judge calls too
    assert out["totals"]["usd_online"] > 0
    # the JSON carries what its figures rest on, as the table's notes do (it had `notes: []` and no basis)
    assert any(b.startswith("completion tokens: the offline judge's answer size (a floor") for b in out["basis"])
    assert any(b.startswith("~ = a later step") for b in out["basis"])
    assert main([*args, "--json", "--completion-tokens", "300"]) == 0
    assert "completion tokens: 300 per call (--completion-tokens)" in json.loads(capsys.readouterr().out)["basis"]
    assert main(["estimate", "-S", "judge=nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()  # the offline notice comes first (docs/scale.md)
    assert len(err) == 2 and err[0].startswith("estimate: offline: ")
    assert err[1].startswith("error: ") and "judge=nope" in err[1]


def _budget_run(repo_root: Path, out: Path, base_url: str, cache: Path, max_cost: float | None) -> Path:
    params = _params(repo_root, base_url, max_retries=2)
    params["judge"].update({"input_cost_per_token": 1e-4, "output_cost_per_token": 1e-4})
    params["judge"]["runtime"].update({"cache_path": str(cache), "max_cost_usd": max_cost, "max_concurrency": 2})
    BUDGET.reset()
    return run_benchmark(params, "researcherbench", out)


@pytest.mark.integration
def test_max_cost_stops_cleanly_keeps_answers_and_resumes(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    with stub_server_thread(responder=responder) as s:
        clean = _snapshot(_budget_run(repo_root, tmp_path / "clean", s.base_url, tmp_path / "c0.sqlite", None))
        total = s.counts["ok"]
        s.reset_counts()
        cache = tmp_path / "c1.sqlite"
        with pytest.raises(BudgetExceeded) as err:
            _budget_run(repo_root, tmp_path / "capped", s.base_url, cache, 0.05)
        msg = str(err.value)
        assert "judge.runtime.max_cost_usd=0.05 reached" in msg and "rerun `dvc repro`" in msg
        assert "\n" not in msg
        spent_calls = s.counts["ok"]
        assert 0 < spent_calls < total
        assert BUDGET.spent_usd < 0.05 + 2 * 0.1  # at most max_concurrency (2) calls in flight go over
        from reportbench.judges.cache import ResponseCache

        with ResponseCache(cache) as c:
            assert len(c) == spent_calls  # every paid answer is kept
        s.reset_counts()
        resumed = _snapshot(_budget_run(repo_root, tmp_path / "resumed", s.base_url, cache, None))
        assert s.counts["ok"] == total - spent_calls  # only the rest is paid
    assert resumed == clean
