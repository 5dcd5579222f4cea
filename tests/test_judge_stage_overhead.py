"""The judge stage's per-judgment machinery outside the judge (issue 36: <= 50 µs per judgment), bounded by counts:
what each speedup stops doing is counted here, and the records it produces are compared with the old path's.
The figure itself is `python bench/judge_overhead.py` (docs/scale.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from reportbench.judges import runner
from reportbench.judges.base import JudgeTask, OfflineVerdict
from reportbench.judges.errors import FatalError
from reportbench.judges.offline import OfflineJudge
from reportbench.judges.tasks import get_task

pytestmark = pytest.mark.core


def _support_items(n: int) -> list[runner.Item]:
    model = get_task("support").input_model
    inputs = [model(claim=f"claim {i} about topic {i % 3}", reference=f"topic {i % 3} passage {i}") for i in range(n)]
    return [(f"q{i}", x, {"q": str(i)}) for i, x in enumerate(inputs)]


def _task_with_rule(rule: Any) -> JudgeTask:
    support = get_task("support")
    return JudgeTask(name="support", prompt_id=support.prompt_id, input_model=support.input_model,
                     output_model=support.output_model, parse=support.parse, offline=rule)  # fmt: skip


def _awaited(judge: Any, items: list[runner.Item]) -> list[Any]:
    """The records the event-loop runner produced (awaiting each item), for comparison."""
    return list(asyncio.run(runner.run_judgments(judge, items, progress=False)))


def test_offline_judge_runs_in_a_plain_loop_with_the_same_records(monkeypatch: pytest.MonkeyPatch) -> None:
    judge = OfflineJudge(get_task("support"), {})
    items = _support_items(40)
    expected = _awaited(judge, items)
    loops: list[int] = []
    real_run = asyncio.run

    def counting_run(*args: Any, **kwargs: Any) -> Any:
        loops.append(1)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(asyncio, "run", counting_run)
    got = runner.run_judgments_sync(judge, items, progress=False)
    assert loops == []  # no event loop, no worker tasks, no awaited call per item
    assert [j.model_dump() for j in got] == [j.model_dump() for j in expected]
    assert got.wall_s is not None


def test_plain_loop_keeps_failures_as_values() -> None:
    calls: list[str] = []

    def rule(inputs: Any, params: dict[str, Any]) -> OfflineVerdict:
        calls.append(inputs.claim)
        if "topic 1" in inputs.claim:
            raise RuntimeError("odd input")
        return get_task("support").offline(inputs, params)

    judge = OfflineJudge(_task_with_rule(rule), {})
    items = _support_items(9)
    expected = _awaited(judge, items)
    got = runner.run_judgments_sync(judge, items, progress=False)
    assert [j.model_dump() for j in got] == [j.model_dump() for j in expected]
    failed = [j for j in got if not j.ok]
    assert len(failed) == 3 and all("odd input" in (j.error or "") for j in failed)

    class Exploding(OfflineJudge):  # an exception out of the judge itself: a failed record with its reason
        def judge_now(self, item_id: str, inputs: Any, input_ids: dict[str, str]) -> Any:
            if item_id == "q4":
                raise ValueError("judge bug")
            return super().judge_now(item_id, inputs, input_ids)

    run = runner.run_judgments_sync(Exploding(get_task("support"), {}), items, progress=False)
    assert len(run) == 9 and run[4].status == "failed" and run[4].error == "internal: ValueError: judge bug"


def test_plain_loop_stops_on_a_fatal_failure_with_what_it_judged() -> None:
    class Quota(OfflineJudge):
        def judge_now(self, item_id: str, inputs: Any, input_ids: dict[str, str]) -> Any:
            done = super().judge_now(item_id, inputs, input_ids)
            return done.model_copy(update={"status": "failed", "value": None, "error": "call: quota: no credit"})

    with pytest.raises(FatalError) as stop:
        runner.run_judgments_sync(Quota(get_task("support"), {}), _support_items(10), progress=False, fatal_after=3)
    assert stop.value.judgments is not None and len(stop.value.judgments) == 3  # stopped at the third


def test_records_are_framed_column_by_column_with_the_same_table(monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import polars as pl

    from reportbench.judges.base import Judgment

    judge = OfflineJudge(get_task("support"), {})
    judgments = list(runner.run_judgments_sync(judge, _support_items(6), progress=False))
    judgments.append(Judgment(task="support", item_id="x", input_ids={"b": "é", "a": "1"}, judge_id="j",
                              status="failed", error="call: timeout: slow", latency_s=1.5, attempts=3))  # fmt: skip
    rows = []
    for j in judgments:  # the table as it was built before: one dict per judgment
        row = j.model_dump()
        row["input_ids"] = json.dumps(row["input_ids"], sort_keys=True, ensure_ascii=False)
        rows.append(row)
    expected = pl.DataFrame(rows, schema=runner.JUDGMENT_SCHEMA)

    def no_dump(self: Judgment, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("model_dump per judgment")

    monkeypatch.setattr(Judgment, "model_dump", no_dump)
    encoders: list[int] = []
    real_init = json.JSONEncoder.__init__
    monkeypatch.setattr(
        json.JSONEncoder, "__init__", lambda self, *a, **k: encoders.append(1) or real_init(self, *a, **k)
    )
    got = runner.judgments_frame(judgments)
    assert got.equals(expected) and got.schema == expected.schema
    assert encoders == []  # the input ids encoded by one encoder, not one built per judgment (json.dumps)


def test_an_offline_judge_config_is_parsed_without_importing_the_llm_client() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from reportbench.judges.settings import JudgeSettings; "
        "s = JudgeSettings.parse({'backend': 'offline', 'runtime': {'max_failure_rate': 0.2}}); "
        "print(s.max_failure_rate, 'reportbench.judges.client' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0.2", "False"]


def test_a_folder_digest_reads_its_memo_in_one_query(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from reportbench import digest

    folder = tmp_path / "run"
    (folder / "sub").mkdir(parents=True)
    for i in range(12):
        (folder / ("sub" if i % 2 else ".") / f"f{i}.txt").write_text(f"file {i}\n")
    memo = tmp_path / "memo.sqlite"
    later = time.time_ns() + 10**10
    first = digest.memo_tree_digest(folder, memo=memo, now_ns=later)
    assert first == digest.memo_tree_digest(folder, memo=None)

    def per_file(*args: Any) -> Any:
        raise AssertionError("one query per file")

    monkeypatch.setattr(digest, "_memo_get", per_file)
    hashed: list[Path] = []
    real = digest._file_sha256
    monkeypatch.setattr(digest, "_file_sha256", lambda p: hashed.append(p) or real(p))
    assert digest.memo_tree_digest(folder, memo=memo, now_ns=later) == first and hashed == []  # all memoised
    (folder / "f0.txt").write_text("changed\n")
    assert digest.memo_tree_digest(folder, memo=memo, now_ns=later) != first and hashed == [folder / "f0.txt"]


def test_reading_stored_reports_triggers_no_garbage_collection(tmp_path: Path) -> None:
    import gc

    from reportbench.reports.stored import read_stored_reports
    from reportbench.systems import write_run
    from reportbench.types import Report, Source

    reports = [
        Report(report_id=f"s/t{i}", task_id=f"t{i}", system="s", format="markdown", body=f"body {i} [1]",
               sources={str(k): Source(key=str(k), raw=f"[{k}] ref") for k in range(12)})  # fmt: skip
        for i in range(400)
    ]
    write_run(tmp_path, reports, [])
    runs: list[str] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            runs.append(phase)

    gc.callbacks.append(count)
    try:
        got = read_stored_reports(tmp_path)
    finally:
        gc.callbacks.remove(count)
    assert len(got) == 400 and len(runs) <= 1 and gc.isenabled()  # at most the one deferred to the end


def test_the_offline_judges_records_get_their_member_without_a_copy_each(monkeypatch: pytest.MonkeyPatch) -> None:
    from reportbench import pipeline
    from reportbench.judges.base import Judgment
    from reportbench.judges.settings import JudgeSettings
    from reportbench.protocols import JudgeItem

    items = [JudgeItem("support", f"q{i}", {"claim": f"claim {i}", "reference": f"passage {i}"}, {"q": str(i)})
             for i in range(5)]  # fmt: skip
    cfg = JudgeSettings.parse({"backend": "offline", "name": "offline"})
    typed = [(i.item_id, i.typed(), dict(i.input_ids)) for i in items]
    awaited = _awaited(OfflineJudge(get_task("support"), {}), typed)  # the records as they were made before
    expected = [j.model_copy(update={"member": "m1"}).model_dump() for j in awaited]
    copies: list[int] = []
    real = Judgment.model_copy

    def counting(self: Judgment, *args: Any, **kwargs: Any) -> Any:
        copies.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Judgment, "model_copy", counting)
    got = pipeline._judge("support", cfg, items, "support@test", "m1")
    assert copies == [] and [j.model_dump() for j in got] == expected
    assert all(j.model_fields_set >= {"member"} for j in got) and got.wall_s is not None


def test_content_hash_hashes_a_long_first_part_without_a_joined_copy() -> None:
    """ResearchQA's coverage item id hashes the ~20 KB answer with its questions: the same digest as hashing the
    joined text, with one encoded copy of the answer instead of a joined text and its encoding (counted bytes)."""
    import hashlib
    import tracemalloc

    from reportbench.protocols import content_hash

    def joined(*parts: str, n: int = 16) -> str:  # the definition the ids were made with
        return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:n]

    cases = [(), ("",), ("a",), ("", ""), ("é\x1f", "ü", ""), ("answer " * 5, "q1", "q2 ☃", "")]
    assert all(content_hash(*c) == joined(*c) and content_hash(*c, n=10) == joined(*c, n=10) for c in cases)
    answer = "word " * 400_000  # 2 MB
    tracemalloc.start()
    try:
        content_hash(answer, "question one", "question two", n=10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * len(answer)  # the joined way holds the joined text and its bytes: 2x
