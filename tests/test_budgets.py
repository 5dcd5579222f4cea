"""Output budgets per judge step (issue 22 §2): no global 1,024-token cap, a cut answer is its own failure kind
with a one-line fix, and the DEER authors' own gpt-5.2 answers for csai/1 replayed through the stub server parse
under both prompt packs with the default budgets (and fail as `truncated`, not as a bare parse NaN, when cut)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from reportbench.judges.budgets import STEP_BUDGETS, is_cut, resolve_budget, truncation_error
from reportbench.judges.errors import failure_class
from reportbench.judges.runner import reason_class
from reportbench.validate import ConfigError, judge_identity, validate_judge

pytestmark = pytest.mark.core


# ------------------------------------------------------------------------------------------------ units
def test_every_registered_judge_task_declares_a_budget() -> None:
    from builtin_tasks import builtin_tasks
    from reportbench.benchmarks import get_benchmark

    for b in ("deepscholar", "researcherbench", "deer", "researchqa", "liveresearchbench"):
        get_benchmark(b)  # registers the benchmark's tasks
    # reportbench's own tasks; a plug-in's steps get FALLBACK_BUDGET or `judge.output_budgets.<task>`
    missing = sorted(set(builtin_tasks()) - set(STEP_BUDGETS))
    assert missing == [], f"judge tasks without an output budget in judges/budgets.py: {missing}"
    assert all(b.tokens >= 2048 and b.source for b in STEP_BUDGETS.values())


def test_precedence_step_override_then_global_then_table() -> None:
    assert resolve_budget("deer_extract", {})[0] == 16384
    assert resolve_budget("deer_extract", {"max_tokens": None})[0] == 16384
    assert resolve_budget("deer_extract", {"max_tokens": 1024}) == (1024, "judge.max_tokens")
    cfg = {"max_tokens": 1024, "output_budgets": {"deer_extract": 32000}}
    assert resolve_budget("deer_extract", cfg) == (32000, "judge.output_budgets.deer_extract")
    assert resolve_budget("unknown_task", {})[0] == 4096


def test_the_shipped_llm_judges_have_no_global_cap(repo_root: Path) -> None:
    import yaml

    for name in ("llm", "llm_paper", "stub"):
        cfg = yaml.safe_load((repo_root / "conf" / "judge" / f"{name}.yaml").read_text())
        assert cfg["max_tokens"] is None, name
        validate_judge(cfg)
        assert judge_identity(cfg)["output_budgets"]["deer_request_fulfillment"] == 16384


def test_budgets_are_validated() -> None:
    base = {"backend": "litellm", "model": "openai/gpt-4.1"}
    with pytest.raises(ConfigError, match="output_budgets.deer_extract"):
        validate_judge({**base, "output_budgets": {"deer_extract": 0}})
    with pytest.raises(ConfigError, match="output_budgets"):
        validate_judge({**base, "output_budgets": [1]})


def test_truncation_is_its_own_failure_kind_with_the_fix() -> None:
    err = truncation_error("deer_format_style", 1024, "judge.max_tokens", "length")
    assert reason_class(err) == "truncated"
    assert failure_class("failed", err) == "final"  # a rerun with the same budget is cut the same way
    assert "judge.output_budgets.deer_format_style" in err and "1024" in err
    assert is_cut("length") and is_cut("max_tokens") and not is_cut("stop") and not is_cut(None)


def test_stub_cuts_at_max_tokens() -> None:
    from reportbench.stub_server import cap_output, output_tokens

    text = " ".join(f"word{i}" for i in range(600))
    assert cap_output(text, {}, 1) == (text, "stop", 1)
    assert cap_output(text, {"max_tokens": 100_000}, 1)[1] == "stop"
    cut, reason, n = cap_output(text, {"max_tokens": 50}, 1)
    assert reason == "length" and n == 50 and text.startswith(cut) and len(output_tokens(cut)) <= 50
    assert cap_output(text, {"max_completion_tokens": 50}, 1)[1] == "length"


# ------------------------------------------------------------------------------------------------ replay
def _authors_answers(shared_dir: Path) -> dict[str, str]:
    """The authors' gpt-5.2 answer of each rubric call for csai/1, rebuilt from their stored `scores`."""
    from reportbench.protocols.deer.rubric import CALLS

    path = shared_dir / "data" / "deer" / "csai" / "gpt5.2_fast" / "others" / "0001.json"
    if not path.is_file():
        pytest.skip("../shared/data/deer (the authors' csai/1 judgments) is not present")
    scores = json.loads(path.read_text())["scores"]
    return {
        call: json.dumps({"scores": {g: scores[g] for g in groups}}, ensure_ascii=False)
        for call, (groups, _) in CALLS.items()
    }


def _judge_cfg(base_url: str, prompts: str, **extra: Any) -> dict[str, Any]:
    return {
        "backend": "litellm",
        "model": "openai/stub-judge",
        "api_base": base_url,
        "max_tokens": None,
        "structured_output": "none",
        "prompts": prompts,
        "runtime": {"max_retries": 0, "parse_retries": 1, "cache_path": None, "progress": False, "timeout_s": 30},
        **extra,
    }


def _replay(answers: dict[str, str], prompts: str, **extra: Any) -> dict[str, Any]:
    """Every rubric call judged once by LLMJudge through litellm, the stub answering the authors' answer."""
    from reportbench.judges.llm import LLMJudge
    from reportbench.protocols.deer.tasks import RUBRIC_TASKS, TASKS, RubricInput
    from reportbench.stub_server import stub_server_thread

    by_name = {t.name: t for t in TASKS}
    current: dict[str, str] = {}
    out: dict[str, Any] = {}
    with stub_server_thread(responder=lambda m, f: current["answer"]) as server:
        for call, answer in answers.items():
            current["answer"] = answer
            judge = LLMJudge(by_name[RUBRIC_TASKS[call]], _judge_cfg(server.base_url, prompts, **extra), cache=False)
            inputs = RubricInput(call=call, query="a self-authored query", report="a report", guidance="an EG")
            out[call] = asyncio.run(judge(f"csai-1:{call}", inputs, {}))
        out["_length_cuts"] = server.counts["length"]
    return out


@pytest.mark.integration
@pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")
def test_authors_answers_parse_with_default_budgets_and_fail_as_truncated_when_cut(shared_dir: Path) -> None:
    from reportbench.stub_server import output_tokens

    answers = _authors_answers(shared_dir)
    sizes = sorted(len(output_tokens(a)) for a in answers.values())
    assert sizes[0] > 1024  # every one of their answers is longer than the old global cap
    packs = ["ours"]
    from reportbench.prompt_packs import get_step

    if get_step("deer", "j1").available():
        packs.append("authors")
    for prompts in packs:
        ok = _replay(answers, prompts)
        assert ok.pop("_length_cuts") == 0
        for call, j in ok.items():
            assert j.status == "ok", (prompts, call, j.error)
            assert j.completion_tokens is not None and j.completion_tokens > 1024
        cut = _replay(answers, prompts, max_tokens=1024)
        assert cut.pop("_length_cuts") == len(answers)
        for j in cut.values():
            assert j.status == "failed" and j.value is None
            assert j.error.startswith("truncated: step deer_"), j.error
            assert "judge.output_budgets." in j.error and "1024" in j.error
            assert j.attempts == 1  # not re-asked: the same budget cuts the same answer
    if "authors" not in packs and os.environ.get("REPORTBENCH_AUTHORS_MIRROR"):
        pytest.fail("REPORTBENCH_AUTHORS_MIRROR is set but the DEER authors' sources are not in it")


# ------------------------------------------------------------------------------------------------ estimate
def test_estimate_prices_the_output_budget_as_the_ceiling(tmp_path: Path) -> None:
    from reportbench.estimate import EstimatingJudge, Ledger, _CacheProbe, summarise
    from reportbench.protocols.deer.tasks import TASKS, ExtractInput

    task = next(t for t in TASKS if t.name == "deer_extract")
    cfg = {"backend": "litellm", "model": "openai/gpt-4.1", "max_tokens": None, "runtime": {"cache_path": None}}
    ledger = Ledger()
    judge = EstimatingJudge(task, cfg, ledger, "judge@deer.s", _CacheProbe(None))
    for i in range(3):
        inputs = ExtractInput(report=f"L1.S1: Claim {i} [1].", targets=[f"L1.S1: Claim {i} [1]."])
        asyncio.run(judge(f"x{i}", inputs, {}))
    summary = summarise(ledger, {"judge": cfg})
    row = next(r for r in summary["rows"] if r["task"] == "deer_extract")
    assert row["output_budget"] == 16384 and row["budget_tokens"] == 3 * 16384
    assert row["usd_online_max"] > row["usd_online"] > 0
    assert summary["totals"]["budget_tokens"] == 3 * 16384


def test_authors_request_kwargs_are_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under prompts=authors DEER's extractor gets the authors' max_completion_tokens and reasoning_effort; a
    budget the user set for the step wins over theirs."""
    from reportbench.judges.llm import LLMJudge
    from reportbench.prompt_packs import get_step
    from reportbench.protocols.deer.tasks import TASKS

    if not get_step("deer", "claim_extraction").available():
        pytest.skip("the DEER authors' sources are not in REPORTBENCH_AUTHORS_MIRROR or the cache")
    task = next(t for t in TASKS if t.name == "deer_extract")
    cfg = {"backend": "litellm", "model": "openai/gpt-5-mini", "prompts": "authors", "runtime": {"cache_path": None}}
    judge = LLMJudge(task, cfg, cache=False)
    assert judge.cfg.max_tokens == 16384 and "max_completion_tokens" in judge.budget_source
    body = judge.client.request_kwargs([{"role": "user", "content": "x"}], None)
    assert body["reasoning_effort"] == "low" and body["max_tokens"] == 16384
    mine = LLMJudge(task, {**cfg, "output_budgets": {"deer_extract": 30000}}, cache=False)
    assert mine.cfg.max_tokens == 30000 and mine.budget_source == "judge.output_budgets.deer_extract"
    ours = LLMJudge(task, {**cfg, "prompts": "ours"}, cache=False)
    assert "reasoning_effort" not in ours.client.request_kwargs([{"role": "user", "content": "x"}], None)
    assert ours.key_for([{"role": "user", "content": "x"}]) != judge.key_for([{"role": "user", "content": "x"}])


@pytest.mark.integration
@pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")
def test_a_cut_answer_is_kept_as_truncated_and_a_raised_budget_asks_again(tmp_path: Path) -> None:
    """A deterministic judge's cut answer is stored (a rerun pays nothing and still says `truncated`); raising
    the step's budget changes the cache key, so the next run asks and gets the whole answer."""
    from reportbench.judges.cache import ResponseCache
    from reportbench.judges.llm import LLMJudge
    from reportbench.protocols.deer.rubric import call_factors
    from reportbench.protocols.deer.tasks import TASKS, RubricInput
    from reportbench.stub_server import stub_server_thread

    call = "format_style"
    scores: dict = {}
    for f in call_factors(call):  # a self-authored long answer: every factor with a 60-word rationale
        why = " ".join(f"reason{i}" for i in range(60))
        scores.setdefault(f.group, {}).setdefault(f.sub, {}).setdefault(f.element, {})[f.fid] = {
            "description": why, "score": 7
        }
    answer = json.dumps({"scores": scores})
    task = next(t for t in TASKS if t.name == f"deer_{call}")
    inputs = RubricInput(call=call, query="q", report="r", guidance="")
    cache = ResponseCache(tmp_path / "judge.sqlite")
    with stub_server_thread(responder=lambda m, f: answer) as server:
        def run(**extra: Any) -> Any:
            judge = LLMJudge(task, _judge_cfg(server.base_url, "ours", **extra), cache=cache)
            return asyncio.run(judge("x", inputs, {}))

        first = run(output_budgets={f"deer_{call}": 256})
        assert first.error.startswith("truncated: step deer_format_style") and server.counts["requests"] == 1
        again = run(output_budgets={f"deer_{call}": 256})
        assert again.error == first.error and again.cache_hit and server.counts["requests"] == 1
        whole = run()  # the default budget (16,384): a new key, one more call, the whole answer
        assert whole.status == "ok" and server.counts["requests"] == 2 and server.counts["length"] == 1
    cache.close()


@pytest.mark.integration
@pytest.mark.parametrize("model", ["openai/stub-judge", "anthropic/claude-stub"])
def test_batch_mode_reports_a_cut_answer_as_truncated(tmp_path: Path, model: str) -> None:
    """Batch lines carry finish_reason / stop_reason too: a cut answer in batch mode is `truncated`, not `parse`."""
    from reportbench.judges.llm import LLMJudge
    from reportbench.judges.runner import run_judgments_sync
    from reportbench.stub_server import StubSupportInput, stub_server_thread, stub_support_task

    long = json.dumps({"supported": "yes", "score": 0.5, "note": " ".join(f"w{i}" for i in range(400))})
    with stub_server_thread(responder=lambda m, f: long) as server:
        cfg = {
            "backend": "litellm",
            "model": model,
            "api_base": server.base_url,
            "structured_output": "none",
            "output_budgets": {"stub_support": 50},
            "runtime": {
                "progress": False,
                "max_retries": 1,
                "cache_path": str(tmp_path / "cache" / "judge.sqlite"),
                "mode": "batch",
                "batch": {"poll_interval_s": 0.05, "quiet_s": 0.05},
            },
        }
        task = stub_support_task(tmp_path / "prompts")
        judge = LLMJudge(task, cfg, prompts_dir=tmp_path / "prompts")
        try:
            items = [("i0", StubSupportInput(claim="c", evidence="e"), {"task": "t0"})]
            (j,) = list(run_judgments_sync(judge, items, desc="t", progress=False))
        finally:
            judge.close()
    assert j.status == "failed" and j.error.startswith("truncated: step stub_support"), j.error
