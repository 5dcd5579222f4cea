"""Fault injection through the real litellm stack: retries recover exact answers; without retries,
every fault becomes exactly one failure record with a reason and no value."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from reportbench.judges.errors import failure_class
from reportbench.judges.llm import LLMJudge
from reportbench.judges.runner import JudgmentRun, read_judgments, run_judgments_sync, usage_summary
from reportbench.stub_server import FAULT_KINDS, StubSupportInput, stub_server_thread, stub_support_task

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning"),
]

N_ITEMS = 120
# Which calls time out is set by the seeded faults alone, never by the machine's speed (issue 32: "118 == 120" under
# load with a 0.5 s client timeout; a healthy answer took up to 2.5 s at load 8 on the 2-core machine): the client
# timeout is generous, and a fault meant to time out stalls until the server stops (it cancels its handlers 1 s
# after), so it times out at any timeout. A run costs one TIMEOUT_S per chain of timed-out attempts, idle.
TIMEOUT_S = 5.0
STALL_S = 3600.0
SLOW_MS = 600.0  # the no-retry runs answer every request this late, as a loaded machine may: the counts hold
FAULTS = {kind: 0.2 / len(FAULT_KINDS) for kind in FAULT_KINDS}  # 20 % total: 429/500/timeout/malformed/truncated


def _cfg(base_url: str, *, max_retries: int, parse_retries: int, timeout_s: float = TIMEOUT_S) -> dict[str, Any]:
    return {
        "backend": "litellm",
        "model": "openai/stub-judge",
        "api_base": base_url,
        "structured_output": "json_schema",
        "runtime": {
            "max_concurrency": 32,
            "timeout_s": timeout_s,
            "max_retries": max_retries,
            "backoff_base_s": 0.01,
            "backoff_max_s": 0.05,
            "parse_retries": parse_retries,
            "cache_path": None,
            "progress": False,
        },
    }


def _items() -> list[tuple[str, StubSupportInput, dict[str, str]]]:
    return [
        (
            f"q{i}",
            StubSupportInput(claim=f"claim {i} on topic {i % 13}", evidence=f"passage {i % 17}"),
            {"q": str(i)},
        )
        for i in range(N_ITEMS)
    ]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[float | None, str | None]]:
    prompts = tmp_path_factory.mktemp("prompts")
    with stub_server_thread() as s:
        run = run_judgments_sync(
            LLMJudge(
                stub_support_task(prompts),
                # no faults here: a generous timeout keeps a busy machine from failing the reference run
                _cfg(s.base_url, max_retries=0, parse_retries=0, timeout_s=30),
                prompts_dir=prompts,
            ),
            _items(),
            "clean",
        )
        assert s.counts["requests"] == N_ITEMS
    assert all(j.ok for j in run)
    assert len({j.value for j in run}) > 20  # answers really vary, so equality below means something
    return [(j.value, j.parsed) for j in run]


def _faulty_run(
    prompts: Path, name: str, *, max_retries: int, parse_retries: int, latency_ms: float = 0.0
) -> tuple[JudgmentRun, dict[str, int]]:
    """(judgments, the stub's counters) of one run against the stub injecting FAULTS (seed 11)."""
    with stub_server_thread(faults=FAULTS, seed=11, timeout_sleep_s=STALL_S, latency_ms=latency_ms) as s:
        judge = LLMJudge(
            stub_support_task(prompts),
            _cfg(s.base_url, max_retries=max_retries, parse_retries=parse_retries),
            prompts_dir=prompts,
        )
        run = run_judgments_sync(judge, _items(), name)
        return run, dict(s.counts)


def test_faults_with_retries_give_identical_scores(tmp_path: Path, baseline: list[Any]) -> None:
    # Faults are seeded per request content + occurrence, so this run is reproducible under concurrency;
    # the retry budget makes a 9-in-a-row fault (p ~ 1e-7 per item) the only way to fail.
    run, counts = _faulty_run(tmp_path, "faulty", max_retries=8, parse_retries=4)
    for kind in FAULT_KINDS:
        assert counts.get(kind, 0) > 0, f"no {kind} fault was injected: {counts}"
    assert all(j.ok for j in run), [j.error for j in run if not j.ok]
    assert [(j.value, j.parsed) for j in run] == baseline
    assert [j.item_id for j in run] == [f"q{i}" for i in range(N_ITEMS)]
    summary = usage_summary(run)
    http_faults = sum(counts.get(k, 0) for k in ("429", "500", "timeout", "truncated"))
    assert summary["calls"] == counts["requests"] == N_ITEMS + http_faults + counts["malformed"]
    assert sum(j.attempts > 1 for j in run) > 0


def test_faults_without_retries_become_failure_records(tmp_path: Path, baseline: list[Any]) -> None:
    run, counts = _faulty_run(tmp_path, "no-retry", max_retries=0, parse_retries=0, latency_ms=SLOW_MS)
    assert counts["requests"] == N_ITEMS  # exactly one request per item: no hidden SDK retries
    failed = [j for j in run if not j.ok]
    assert len(failed) == sum(counts.get(k, 0) for k in FAULT_KINDS) > 0
    for j in failed:
        assert j.value is None and j.label is None and j.parsed is None and math.isnan(j.score)
        assert j.error and j.error.split(":")[0] in ("call", "parse") and j.attempts == 1
    summary = usage_summary(run)
    assert summary["failures"].get("call/rate_limit", 0) == counts.get("429", 0)
    assert summary["failures"].get("call/timeout", 0) == counts.get("timeout", 0)
    assert summary["failures"].get("parse", 0) == counts.get("malformed", 0)
    # a truncated body surfaces from litellm as a 500 "Connection error."
    server_like = summary["failures"].get("call/server", 0) + summary["failures"].get("call/connection", 0)
    assert server_like == counts.get("500", 0) + counts.get("truncated", 0)
    # the items that did succeed are exactly the fault-free answers
    for j, (value, parsed) in zip(run, baseline, strict=True):
        if j.ok:
            assert (j.value, j.parsed) == (value, parsed)
    parse_failures = [j for j in failed if j.error.startswith("parse:")]
    assert all(j.raw_output == '{"oops": ' for j in parse_failures)


# ------------------------------------------------------------------------------ transport faults (issue 15)

TRANSPORT = {"reset": 0.1, "drip": 0.1}  # connection reset before any byte; an answer sent in slow chunks


def _transport_run(
    prompts: Path, *, max_retries: int, drip_s: float, timeout_s: float = TIMEOUT_S, latency_ms: float = 0.0
) -> tuple[JudgmentRun, dict[str, int]]:
    with stub_server_thread(faults=TRANSPORT, seed=5, drip_s=drip_s, latency_ms=latency_ms) as s:
        judge = LLMJudge(
            stub_support_task(prompts),
            _cfg(s.base_url, max_retries=max_retries, parse_retries=0, timeout_s=timeout_s),
            prompts_dir=prompts,
        )
        return run_judgments_sync(judge, _items(), "transport"), dict(s.counts)


def test_resets_and_slow_drips_with_retries_give_identical_scores(tmp_path: Path, baseline: list[Any]) -> None:
    # a drip well within the client's timeout (25 ms gaps) is just slow; a reset is retried like any connection error
    run, counts = _transport_run(tmp_path, max_retries=8, drip_s=0.2)
    assert counts.get("reset", 0) > 0 and counts.get("drip", 0) > 0, counts
    assert all(j.ok for j in run), [j.error for j in run if not j.ok]
    assert [(j.value, j.parsed) for j in run] == baseline
    assert usage_summary(run)["calls"] == counts["requests"] == N_ITEMS + counts["reset"]


def test_resets_and_slow_drips_without_retries_are_explicit_call_failures(tmp_path: Path, baseline: list[Any]) -> None:
    # The client's timeout bounds each read, so a drip whose gaps exceed it (headers, then 8 chunks STALL_S apart)
    # is a timeout: an unanswered call, never a guessed value. (A steady drip with short gaps gets through, and
    # the client's backstop, timeout_s + 5 s, bounds its total.)
    run, counts = _transport_run(tmp_path, max_retries=0, drip_s=8 * STALL_S, latency_ms=SLOW_MS)
    assert counts["requests"] == N_ITEMS
    summary = usage_summary(run)
    assert summary["failed"] == counts["reset"] + counts["drip"] > 0
    assert summary["failures"].get("call/timeout", 0) == counts["drip"], summary
    reset_like = summary["failures"].get("call/connection", 0) + summary["failures"].get("call/server", 0)
    assert reset_like == counts["reset"], summary
    for j, (value, parsed) in zip(run, baseline, strict=True):
        if j.ok:
            assert (j.value, j.parsed) == (value, parsed)
        else:
            assert j.value is None and j.raw_output is None and failure_class(j.status, j.error) == "unanswered"


# ------------------------------------------------------------- every fault kind through a judge stage (issue 15)

ALL_FAULTS = {kind: 0.25 / 7 for kind in (*FAULT_KINDS, "reset", "drip")}


def _stage_metrics(repo_root: Path, out: Path, s: Any, *, retries: bool) -> dict[str, Any]:
    """DeepScholar (one system) through the real stage functions against the stub; the judge stage enforces
    its failure bounds as the DVC stage does."""
    from judge_dvc_helpers import make_responder, overrides
    from reportbench import pipeline
    from reportbench.config import composed_params
    from spine_helpers import refresh_plan

    s.responder = make_responder({"prose": False})
    chosen = [o for o in overrides(s.base_url) if not o.startswith("deepscholar/systems=")]  # one system below
    params = composed_params(chosen, conf_dir=repo_root / "conf")
    params["benchmarks"]["deepscholar"]["systems"] = {
        "careful_writer": params["benchmarks"]["deepscholar"]["systems"]["careful_writer"]
    }
    params["judge"]["runtime"].update(
        # with retries a spurious timeout is retried, so a short one keeps the stalls cheap; without, TIMEOUT_S
        timeout_s=0.5 if retries else TIMEOUT_S,
        max_retries=8 if retries else 0,
        parse_retries=4 if retries else 0,
        backoff_base_s=0.01,
        backoff_max_s=0.05,
        cache_path=None,
        max_concurrency=16,
    )
    refresh_plan(params)
    release, runs = out / "releases", out / "runs"
    pipeline.build_release(params, "deepscholar", release)
    pipeline.run_system(params, "deepscholar", "careful_writer", release, runs / "careful_writer")
    judgments = out / "judgments" / "careful_writer" / "main"
    pipeline.run_judge_stage(
        params, "deepscholar", "careful_writer", "main", release, runs / "careful_writer", judgments,
        out / "usage.json", enforce_bounds=True,
    )  # fmt: skip
    pipeline.score_stage(params, "deepscholar", release, runs, out / "judgments", out / "scores", out / "metrics")
    return json.loads((out / "metrics" / "systems.json").read_text())["careful_writer"]["metrics"]


def test_every_fault_kind_through_a_judge_stage(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """429/500/timeout/malformed/truncated/reset/drip at 25 %: with retries the stage's metrics equal the
    fault-free run; without, the stage refuses to be a result (exit 3) and every fault is an explicit record."""
    from judge_dvc_helpers import make_responder
    from reportbench.judges.errors import IncompleteJudgeStage

    monkeypatch.chdir(repo_root)
    with stub_server_thread(responder=make_responder({}), timeout_sleep_s=STALL_S, drip_s=0.2) as s:
        clean = _stage_metrics(repo_root, tmp_path / "clean", s, retries=True)
        assert s.counts["requests"] > 100 and set(s.counts) == {"requests", "ok"}
        s.faults = ALL_FAULTS
        s.reset_counts()
        faulty = _stage_metrics(repo_root, tmp_path / "faulty", s, retries=True)
        counts = dict(s.counts)
        assert all(counts.get(k, 0) > 0 for k in ALL_FAULTS), counts
        assert faulty == clean

        s.reset_counts()
        with pytest.raises(IncompleteJudgeStage, match="got no answer"):
            _stage_metrics(repo_root, tmp_path / "no-retry", s, retries=False)
        counts = dict(s.counts)
    records = [
        j
        for p in sorted((tmp_path / "no-retry" / "judgments" / "careful_writer" / "main").glob("*.parquet"))
        for j in read_judgments(p)
    ]
    classes = Counter(failure_class(j.status, j.error) for j in records)
    unanswered = sum(counts.get(k, 0) for k in ("429", "500", "timeout", "truncated", "reset"))
    # a drip (25 ms gaps) answers well within TIMEOUT_S: exactly the faults no answer survives are unanswered
    assert classes["unanswered"] == unanswered > 0 and counts.get("drip", 0) > 0, (classes, counts)
    assert classes["parse"] == counts.get("malformed", 0) > 0
    assert classes["ok"] == len(records) - unanswered - counts["malformed"]
    assert all(j.value is None for j in records if not j.ok)
