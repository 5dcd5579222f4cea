"""The fast path (aiohttp, OpenAI-compatible api_base) under the same cache/retry/parse/record layer."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from reportbench.judges.errors import FatalError
from reportbench.judges.fastpath import FastClient, strict_response_format
from reportbench.judges.llm import LLMJudge
from reportbench.judges.runner import run_judgments_sync
from reportbench.stub_server import (
    FAULT_KINDS,
    StubSupportInput,
    StubSupportOutput,
    stub_server_thread,
    stub_support_task,
)

pytestmark = pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning")


def _cfg(base: str, transport: str, cache: Path | None, **runtime: Any) -> dict[str, Any]:
    return {
        "backend": "litellm",
        "model": "openai/stub-judge",
        "api_base": base,
        "structured_output": "json_schema",
        "input_cost_per_token": 1e-6,
        "output_cost_per_token": 2e-6,
        "runtime": {
            "max_concurrency": 16,
            "timeout_s": 1.0,
            "max_retries": 6,
            "backoff_base_s": 0.01,
            "backoff_max_s": 0.05,
            "progress": False,
            "cache_path": str(cache) if cache else None,
            "transport": transport,
            **runtime,
        },
    }


def _items(n: int = 30) -> list[tuple[str, StubSupportInput, dict[str, str]]]:
    return [(f"i{i}", StubSupportInput(claim=f"claim {i}", evidence=f"evidence {i % 5}"), {}) for i in range(n)]


def _run(tmp: Path, cfg: dict[str, Any], items: list[Any] | None = None) -> list[Any]:
    task = stub_support_task(tmp / "prompts")
    judge = LLMJudge(task, cfg, prompts_dir=tmp / "prompts")
    try:
        return list(run_judgments_sync(judge, items or _items(), progress=False))
    finally:
        judge.close()


def _view(run: list[Any]) -> list[tuple[Any, ...]]:
    return [(j.item_id, j.status, j.value, j.label, j.parsed, j.raw_output) for j in run]


@pytest.mark.core
def test_fast_path_needs_an_api_base() -> None:
    with pytest.raises(FatalError, match="judge.api_base"):
        FastClient({"model": "openai/gpt-4.1", "runtime": {"transport": "fast"}})


@pytest.mark.core
def test_response_format_is_litellms(tmp_path: Path) -> None:
    from litellm.llms.base_llm.base_utils import type_to_response_format_param

    assert strict_response_format(StubSupportOutput) == type_to_response_format_param(StubSupportOutput)


@pytest.mark.integration
def test_fast_path_answers_equal_the_litellm_path_and_share_its_cache(tmp_path: Path) -> None:
    with stub_server_thread() as s:
        slow = _run(tmp_path, _cfg(s.base_url, "litellm", tmp_path / "a.sqlite"))
        fast = _run(tmp_path, _cfg(s.base_url, "fast", tmp_path / "b.sqlite"))
        assert s.counts["requests"] == 60
        assert _view(fast) == _view(slow)
        assert [(j.prompt_tokens, j.completion_tokens) for j in fast] == [
            (j.prompt_tokens, j.completion_tokens) for j in slow
        ]
        assert all(j.cost_usd and j.cost_usd > 0 for j in fast)
        s.reset_counts()
        again = _run(tmp_path, _cfg(s.base_url, "litellm", tmp_path / "b.sqlite"))  # the fast path's cache
        assert s.counts["requests"] == 0 and all(j.cache_hit for j in again)


@pytest.mark.integration
def test_fast_path_with_faults_gives_the_fault_free_answers(tmp_path: Path) -> None:
    with stub_server_thread() as s:
        clean = _run(tmp_path, _cfg(s.base_url, "fast", None))
    faults = {k: 0.25 / len(FAULT_KINDS) for k in FAULT_KINDS}
    with stub_server_thread(faults=faults, seed=11, timeout_sleep_s=3) as s:
        faulty = _run(tmp_path, _cfg(s.base_url, "fast", None, parse_retries=4))
        assert sum(s.counts[k] for k in FAULT_KINDS) > 0
    assert _view(faulty) == _view(clean)
    assert any(j.attempts > 1 for j in faulty)


@pytest.mark.integration
@pytest.mark.parametrize(("fault", "kind"), [("401", "auth"), ("404", "model_not_found"), ("quota", "quota")])
def test_fast_path_fatal_errors_are_typed_and_not_retried(tmp_path: Path, fault: str, kind: str) -> None:
    from reportbench.judges.errors import FatalJudgeError

    with stub_server_thread(faults={fault: 1.0}) as s:
        with pytest.raises(FatalJudgeError, match=kind):
            _run(tmp_path, _cfg(s.base_url, "fast", None), _items(5))
        assert s.counts["requests"] <= 5  # one attempt per item at most, no retries


@pytest.mark.integration
def test_fast_path_never_imports_litellm(tmp_path: Path) -> None:
    with stub_server_thread() as s:
        script = textwrap.dedent(
            f"""
            import json, sys
            sys.path.insert(0, {str(Path(__file__).parent)!r})
            from pathlib import Path
            from test_fastpath import _cfg, _run
            run = _run(Path({str(tmp_path)!r}), _cfg({s.base_url!r}, "fast", None))
            print(json.dumps({{"ok": sum(j.ok for j in run), "litellm": "litellm" in sys.modules}}))
            """
        )
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"ok": 30, "litellm": False}
