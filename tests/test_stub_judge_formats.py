"""`reportbench stub-server` answers every benchmark's judge steps in their own formats (issue 36), so a throughput
or plumbing run of any benchmark works offline against the documented stub, with our prompts and the authors'.

The end-to-end test starts the stub as a user does (`reportbench stub-server`, its defaults) and runs all six
benchmarks' demo pipelines in-process against it; every judgment must parse (the only failures allowed are
DeepResearch Bench's `too_short` articles, the authors' validity rule on a 24-character demo report) and the stub
must have recognised every request (`unrecognised` = 0 in its /stats)."""

from __future__ import annotations

import collections
import json
import os
import select
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from reportbench.stub_server import (
    JUDGE_FORMATS,
    RESEARCHQA_LABELS,
    UNRECOGNISED_PREFIX,
    judge_format_answer,
    stub_server_thread,
)

BENCHMARKS = ("deepscholar", "researcherbench", "deer", "researchqa", "liveresearchbench", "deepresearch_bench")
RATING_REQUEST = [{"role": "user", "content": "Rate each question.\nReply with exactly 3 lines, one rating per line "
                                              "in the order of the questions, and nothing else."}]


def _post(base_url: str, messages: list[dict[str, Any]], response_format: dict[str, Any] | None = None) -> str:
    body = {"model": "stub-judge", "messages": messages}
    if response_format is not None:
        body["response_format"] = response_format
    req = urllib.request.Request(f"{base_url}/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 - loopback stub
        return str(json.loads(resp.read())["choices"][0]["message"]["content"])


def _stats(base_url: str) -> dict[str, int]:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=30) as resp:  # noqa: S310
        return dict(json.loads(resp.read()))


def _cli_stub(*extra: str) -> Iterator[str]:
    """`reportbench stub-server` as documented (latency 0, a free port instead of 8765); yields its base URL."""
    exe = Path(sys.executable).parent / "reportbench"
    proc = subprocess.Popen([str(exe), "stub-server", "--port", "0", "--latency-ms", "0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if ready else ""
        assert line.startswith("listening on "), line
        yield line.split("listening on ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture()
def cli_stub() -> Iterator[str]:
    yield from _cli_stub()


# ------------------------------------------------------------------------------------------------ core
@pytest.mark.core
def test_researchqa_labels_are_the_protocols() -> None:
    from reportbench.protocols.researchqa.labels import LABELS

    assert RESEARCHQA_LABELS == LABELS


@pytest.mark.core
def test_an_unrecognised_request_gets_a_marked_answer_and_is_counted() -> None:
    with stub_server_thread(judge_formats=True) as s:
        answer = _post(s.base_url, [{"role": "user", "content": "Write a haiku about kettles."}])
        as_json = json.loads(_post(s.base_url, [{"role": "user", "content": "hi"}], {"type": "json_object"}))
        rated = _post(s.base_url, RATING_REQUEST)
        counts = dict(s.counts)
    assert answer.startswith(UNRECOGNISED_PREFIX)
    assert as_json["stub"] == UNRECOGNISED_PREFIX
    assert [ln in RESEARCHQA_LABELS for ln in rated.split("\n")] == [True] * 3
    assert counts["unrecognised"] == 2 and counts["format:rating_lines"] == 1


@pytest.mark.core
def test_answers_are_a_function_of_the_request() -> None:
    """Same request, same bytes (reruns are byte-identical); another request, another answer."""
    others = {judge_format_answer([{"role": "user", "content": RATING_REQUEST[0]["content"] + f" #{i}"}], None)[1]
              for i in range(40)}
    assert len(others) > 5
    with stub_server_thread(judge_formats=True) as a, stub_server_thread(judge_formats=True) as b:
        assert _post(a.base_url, RATING_REQUEST) == _post(b.base_url, RATING_REQUEST)
    assert len({name for name, _ in JUDGE_FORMATS}) == len(JUDGE_FORMATS)


@pytest.mark.integration
def test_the_cli_answers_in_judge_formats_by_default_and_plain_on_request(cli_stub: str) -> None:
    assert len(_post(cli_stub, RATING_REQUEST).split("\n")) == 3
    assert _stats(cli_stub).get("format:rating_lines") == 1
    for url in _cli_stub("--answers", "plain"):
        assert _post(url, RATING_REQUEST).startswith("stub answer ")


# ------------------------------------------------------------------------------------------- end to end
def _judgment_statuses(root: Path) -> collections.Counter[tuple[str, str, str]]:
    """(task, status, error head) of every judgment record the run wrote."""
    out: collections.Counter[tuple[str, str, str]] = collections.Counter()
    for f in sorted([*(root / "judgments").rglob("*"), *(root / "cross").rglob("*")]):  # cross: pairwise steps
        rows: list[dict[str, Any]] = []
        if f.suffix == ".parquet":
            rows = pq.read_table(f).to_pylist()
        elif f.suffix == ".jsonl":
            rows = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        for r in rows:
            if r.get("status"):
                out[(str(r.get("task") or f.stem), str(r["status"]), str(r.get("error") or "")[:12])] += 1
    return out


@pytest.mark.integration
@pytest.mark.parametrize("prompts", ["ours", "authors"])
def test_every_benchmark_is_judged_through_the_documented_stub(
    prompts: str, cli_stub: str, repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reportbench.config import composed_params
    from spine_helpers import refresh_plan, run_benchmark

    if prompts == "authors" and not os.environ.get("REPORTBENCH_AUTHORS_MIRROR"):
        pytest.skip("the authors' prompts need REPORTBENCH_AUTHORS_MIRROR (CI sets it)")
    monkeypatch.chdir(repo_root)
    for benchmark in BENCHMARKS:
        p = composed_params([f"benchmarks=[{benchmark}]", "judge=llm", "judge.model=openai/gpt-4.1",
                             f"judge.api_base={cli_stub}", f"judge.prompts={prompts}"], conf_dir=repo_root / "conf")
        p["judge"]["runtime"].update({"progress": False, "cache_path": None, "max_failure_rate": 1.0,
                                      "max_call_failure_rate": 1.0})
        root = run_benchmark(refresh_plan(p), benchmark, tmp_path / benchmark)
        statuses = _judgment_statuses(root)
        assert sum(n for k, n in statuses.items() if k[1] == "ok") > 0, (benchmark, statuses)
        failed = {k: n for k, n in statuses.items() if k[1] == "failed" and not k[2].startswith("too_short")}
        assert not failed, (benchmark, failed)
    stats = _stats(cli_stub)
    assert stats.get("unrecognised", 0) == 0, stats
