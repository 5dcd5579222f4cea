"""bench/judge_throughput.py's `--stage` figure: the judge's own CPU is taken out of the stage's, whichever way the
runner calls the judge (the offline judge's `judge_now` in a plain loop, an LLM judge awaited). When only the
awaited path was timed, the offline judge's whole cost was printed as the stage's overhead (2,506 µs a judgment)."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from typing import Any

import pytest

from reportbench.judges.base import Judgment
from reportbench.judges.runner import run_judgments_sync

pytestmark = pytest.mark.core
BENCH = Path(__file__).resolve().parent.parent / "bench" / "judge_throughput.py"


@pytest.fixture(scope="module")
def bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_judge_throughput", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _judgment(item_id: str) -> Judgment:
    return Judgment(task="t", item_id=item_id, judge_id="j", status="ok", value=1.0)


class _Computing:
    """A judge like the offline one: the runner calls `judge_now`, never awaits it."""

    progress = False

    def __init__(self) -> None:
        self.calls = 0

    def judge_now(self, item_id: str, inputs: Any, input_ids: dict[str, str]) -> Judgment:
        self.calls += 1
        return _judgment(item_id)

    async def __call__(self, item_id: str, inputs: Any, input_ids: dict[str, str]) -> Judgment:
        raise AssertionError("the runner awaits a judge with judge_now")


class _Awaiting:
    """A judge like the LLM one: awaited."""

    progress = False

    async def __call__(self, item_id: str, inputs: Any, input_ids: dict[str, str]) -> Judgment:
        return _judgment(item_id)


@pytest.mark.parametrize("kind", [_Computing, _Awaiting])
def test_every_judge_call_is_timed_as_the_judges_own(bench: Any, monkeypatch: pytest.MonkeyPatch, kind: Any) -> None:
    ticks = itertools.count()  # a clock that advances one second per reading: each timed call adds exactly 1 s
    monkeypatch.setattr(bench.time, "process_time", lambda: float(next(ticks)))
    spent = [0.0]
    items = [(f"i{n}", None, {}) for n in range(5)]
    run = run_judgments_sync(bench._TimedJudge(kind(), spent), items, desc="t", progress=False)
    assert [j.item_id for j in run] == [f"i{n}" for n in range(5)]
    assert spent[0] == 5.0  # one timed second per judgment: none of them counted as the stage's overhead
