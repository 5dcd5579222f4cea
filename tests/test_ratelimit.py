"""Rate limits shared across processes (sqlite token bucket), Retry-After, and single-flight of identical calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from reportbench.judges.ratelimit import SharedRateLimiter, provider_key
from reportbench.stub_server import StubSupportInput, stub_server_thread

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")


# ------------------------------------------------------------------------------------------------ core


@pytest.mark.core
def test_bucket_allows_a_burst_then_spaces_requests_to_the_limit(tmp_path: Path) -> None:
    lim = SharedRateLimiter(tmp_path / "rl.sqlite", "openai", requests_per_minute=600)
    cap, rate = lim.limits["openai:rpm"]
    assert cap == 10 and rate == pytest.approx(578 / 60)  # 2 % headroom for late sends
    waits = [lim.reserve(now=1000.0) for _ in range(30)]
    assert waits[:10] == [0.0] * 10
    assert waits[10] == pytest.approx(1 / rate) and waits[29] == pytest.approx(20 / rate)
    # any 60 s window: burst + rate * 60 == 98 % of the limit
    assert cap + rate * 60 == pytest.approx(588)


@pytest.mark.core
def test_two_limiters_on_one_file_share_the_bucket_and_retry_after(tmp_path: Path) -> None:
    a = SharedRateLimiter(tmp_path / "rl.sqlite", "openai", requests_per_minute=60)  # burst 1, then 59/min
    b = SharedRateLimiter(tmp_path / "rl.sqlite", "openai", requests_per_minute=60)  # another process's handle
    assert a.reserve(now=50.0) == 0.0
    assert b.reserve(now=50.0) == pytest.approx(60 / (58.8 - 1))  # a took the burst
    other = SharedRateLimiter(tmp_path / "rl.sqlite", "anthropic", requests_per_minute=60)
    assert other.reserve(now=50.0) == 0.0  # another provider's bucket is its own
    b.block(5.0)  # a 429 with Retry-After: 5 seen by b
    assert a.reserve() >= 4.0
    unlimited = SharedRateLimiter(tmp_path / "rl.sqlite", "openai")  # no limits configured: still honours it
    assert unlimited.reserve() >= 4.0


@pytest.mark.core
def test_tokens_per_minute_counts_prompt_and_completion_budget(tmp_path: Path) -> None:
    lim = SharedRateLimiter(tmp_path / "rl.sqlite", "openai", tokens_per_minute=6000)  # burst 100 tokens
    assert lim.reserve(tokens=100, now=0.0) == 0.0
    assert lim.reserve(tokens=100, now=0.0) == pytest.approx(100 / ((5880 - 100) / 60))
    big = SharedRateLimiter(tmp_path / "rl2.sqlite", "openai", tokens_per_minute=600)
    assert big.reserve(tokens=5000, now=0.0) == 0.0  # bigger than the burst: sent when the bucket is full
    assert big.reserve(tokens=10, now=0.0) > 400  # ... and the debt is paid before anything else goes


@pytest.mark.core
def test_provider_key_separates_endpoints() -> None:
    assert provider_key("openai/gpt-4.1", None) == "openai"
    assert provider_key("gpt-4.1", None) == "openai"
    assert provider_key("openai/x", "http://127.0.0.1:8000/v1") == "openai@127.0.0.1:8000"


# ------------------------------------------------------------------------------------------------ integration

_CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from reportbench.judges.llm import LLMJudge
    from reportbench.judges.runner import run_judgments_sync
    from reportbench.stub_server import StubSupportInput, stub_support_task
    tmp, base, transport, tag, n = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    task = stub_support_task(tmp / "prompts")
    cfg = {{"backend": "litellm", "model": "openai/stub-judge", "api_base": base, "structured_output": "json_schema",
           "runtime": {{"max_concurrency": 32, "timeout_s": 10, "progress": False, "cache_path": None,
                       "transport": transport, "requests_per_minute": 600,
                       "rate_limit_path": str(tmp / "ratelimit.sqlite")}}}}
    judge = LLMJudge(task, cfg, prompts_dir=tmp / "prompts")
    items = [(f"{{tag}}{{i}}", StubSupportInput(claim=f"{{tag}} claim {{i}}", evidence="e"), {{}}) for i in range(n)]
    run = run_judgments_sync(judge, items, progress=False)
    print(json.dumps({{"ok": sum(j.ok for j in run)}}))
    """
)


def _windows_ok(
    times: list[float], burst: float, rate: float, slack: float, min_window: float
) -> tuple[bool, str]:
    """Every window [t_i, t_j] at least `min_window` long holds at most burst + rate * (t_j - t_i) + slack
    requests. Windows shorter than a scheduling stall say little: on a loaded 2-CPU box a process (the stub that
    timestamps arrivals, or a judge between its slot and the wire) can be descheduled for a while, and requests
    spaced over that time are then seen together; `slack` covers about half a second of that."""
    times = sorted(times)
    for i in range(len(times)):
        for j in range(i, len(times)):
            span = times[j] - times[i]
            if span >= min_window and j - i + 1 > burst + rate * span + slack:
                return False, f"{j - i + 1} requests in {span:.3f}s"
    return True, ""


@pytest.mark.integration
def test_two_judge_processes_under_600_rpm_never_exceed_it_together(tmp_path: Path) -> None:
    n = 45  # per process: 90 requests at 578/min after a burst of 10 take >= 8 s
    script = _CHILD.format()
    with stub_server_thread(latency_ms=5) as s:
        env = {**os.environ}
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", script, str(tmp_path), s.base_url, transport, tag, str(n)],
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            for transport, tag in (("fast", "a"), ("litellm", "b"))
        ]
        outs = [json.loads(p.communicate(timeout=180)[0].strip().splitlines()[-1]) for p in procs]
        times = [t for t, method, path in s.request_log if path.endswith("/chat/completions")]
    assert [o["ok"] for o in outs] == [n, n]
    assert len(times) == 2 * n
    # every window of 1 s or more: at most the bucket's 10 + 9.63 * W plus half a second's worth of late or
    # late-stamped sends (slack 6); a limiter that were not shared puts 20 + 19.3 * W there (39 at W = 1 s)
    ok, why = _windows_ok(times, burst=10, rate=578 / 60, slack=6, min_window=1.0)
    assert ok, why
    span = max(times) - min(times)
    assert span >= (2 * n - 10 - 6) / (578 / 60)  # together, not each at its own full rate (which takes ~4 s)
    per_minute = 60 * (len(times) - 10) / span
    assert per_minute <= 600


def _judge_cfg(base: str, transport: str) -> dict[str, Any]:
    return {
        "backend": "litellm",
        "model": "openai/stub-judge",
        "api_base": base,
        "structured_output": "json_schema",
        "runtime": {
            "max_concurrency": 16,
            "timeout_s": 10,
            "progress": False,
            "cache_path": None,
            "transport": transport,
        },
    }


@pytest.mark.integration
@pytest.mark.parametrize("transport", ["fast", "litellm"])
def test_identical_requests_in_flight_reach_the_stub_once(tmp_path: Path, transport: str) -> None:
    from reportbench.judges.llm import LLMJudge
    from reportbench.judges.runner import run_judgments_sync
    from reportbench.stub_server import stub_support_task

    task = stub_support_task(tmp_path / "prompts")
    same = StubSupportInput(claim="the same claim", evidence="the same evidence")
    items = [(f"dup{i}", same, {}) for i in range(8)] + [
        ("other", StubSupportInput(claim="another claim", evidence="x"), {})
    ]
    with stub_server_thread(latency_ms=300) as s:
        judge = LLMJudge(task, _judge_cfg(s.base_url, transport), prompts_dir=tmp_path / "prompts")
        run = list(run_judgments_sync(judge, items, progress=False))
        assert s.counts["requests"] == 2  # 8 identical in flight -> 1, plus the other one
    assert all(j.ok for j in run)
    assert len({(j.value, j.label) for j in run[:8]}) == 1
    assert judge.client._flight.shared == 7
