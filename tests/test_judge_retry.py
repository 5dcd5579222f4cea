"""Judge-stage failure semantics (docs/reliability.md), without DVC: failure classes, the stage's bounds and
its exit code, the process guard, and `reportbench retry --list`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

import toy_benchmark as toy
from reportbench import pipeline
from reportbench.config import ConfigError
from reportbench.judges.base import Judgment
from reportbench.judges.errors import IncompleteJudgeStage, failure_class
from reportbench.judges.runner import read_judgments, write_judgments
from reportbench.retry import scan
from reportbench.stage_errors import exit_on_error
from spine_helpers import run_benchmark
from test_toy_benchmark import _installed, toy_params  # noqa: F401 - fixtures


def _j(status: str = "ok", error: str | None = None) -> Judgment:
    return Judgment(task="t", item_id="i", judge_id="j", status=status, error=error)  # type: ignore[arg-type]


@pytest.mark.core
@pytest.mark.parametrize(
    ("status", "error", "expected"),
    [
        ("ok", None, "ok"),
        ("failed", "call: timeout: Timeout", "unanswered"),
        ("failed", "call: server: InternalServerError", "unanswered"),
        ("failed", "call: rate_limit: 429", "unanswered"),
        ("failed", "call: connection: reset", "unanswered"),
        ("failed", "call: other: ???", "unanswered"),
        ("failed", "call: auth: Incorrect API key", "unanswered"),  # fix the key, then it gets answered
        ("failed", "call: bad_request: invalid schema", "final"),
        ("failed", "call: context_length: too long", "final"),
        ("failed", "parse: not JSON", "parse"),
        ("failed", "internal: RuntimeError: rule broke", "final"),
        ("failed", None, "unanswered"),  # no reason recorded: never mistaken for a result
    ],
)
def test_failure_classes(status: str, error: str | None, expected: str) -> None:
    assert failure_class(status, error) == expected


@pytest.mark.core
def test_bounds() -> None:
    cfg = {"runtime": {}}
    ok, parse, timeout = _j(), _j("failed", "parse: x"), _j("failed", "call: timeout: t")
    assert pipeline._bound_problems("s", [ok] * 19 + [parse], cfg) == []  # 5 % parse failures <= 10 %
    [p] = pipeline._bound_problems("s", [ok] * 8 + [parse] * 2 + [ok], cfg)  # 18 % > 10 %
    assert p.over_rate and not p.unanswered and "2 of 11 items failed (parse=2)" in p.line
    [p] = pipeline._bound_problems("s", [ok] * 99 + [timeout], cfg)  # any unanswered call by default
    assert p.unanswered == 1 and not p.over_rate and "1 got no answer" in p.line
    tolerant = {"runtime": {"max_call_failure_rate": 0.02}}
    assert pipeline._bound_problems("s", [ok] * 99 + [timeout], tolerant) == []
    assert pipeline._bound_problems("s", [], cfg) == []


@pytest.mark.core
@pytest.mark.parametrize("value", ["hot", 1.5, -0.1, True, None])
def test_bad_bounds_are_one_line_config_errors(value: object) -> None:
    with pytest.raises(ConfigError, match=r"judge\.runtime\.max_failure_rate must be a number in \[0, 1\]"):
        pipeline._failure_bounds({"runtime": {"max_failure_rate": value}})


@pytest.mark.integration
def test_stage_over_the_failure_bound_exits_3_and_keeps_its_records(
    toy_params: dict,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    original = toy._check_offline

    def broken(inputs, params):  # noqa: ANN001, ANN202 - one of three checks fails: 33 % > 10 %
        if "wavelengths" in inputs.item:
            raise RuntimeError("rule broke")
        return original(inputs, params)

    task = toy.get_task_for_tests("toy_check")
    object.__setattr__(task, "offline", broken)
    try:
        root = run_benchmark(toy_params, "toy", tmp_path / "out")  # in-process: failures are logged, not fatal
        out, usage = tmp_path / "again", tmp_path / "usage.json"

        def stage(**runtime: float) -> dict:
            params = json.loads(json.dumps(toy_params))
            params["judge"]["runtime"].update(runtime)
            return pipeline.run_judge_stage(
                params, "toy", "thorough", "gpt", root / "releases", root / "runs" / "thorough", out, usage,
                pages_dir=root / "pages", enforce_bounds=True,
            )  # fmt: skip

        with pytest.raises(SystemExit) as exit_info, exit_on_error():
            stage()
        assert exit_info.value.code == IncompleteJudgeStage.exit_code == 3
        err = capsys.readouterr().err
        assert (
            "error: judge@toy (thorough/gpt) is incomplete: step check: 1 of 3 items failed "
            "(internal/offline rule raised"
            in err
        )
        assert "more than max_failure_rate=0.1" in err and "DVC records nothing" in err
        failed = [j for j in read_judgments(out / "check.parquet") if not j.ok]  # the records stay inspectable
        assert len(failed) == 1 and failed[0].error == "internal: offline rule raised RuntimeError: rule broke"
        assert json.loads(usage.read_text())["incomplete"][0].startswith("step check: 1 of 3 items failed")
        summary = stage(max_failure_rate=0.5)  # a bound the user chose: the stage is a result
        assert "incomplete" not in summary and "incomplete" not in json.loads(usage.read_text())
    finally:
        object.__setattr__(task, "offline", original)


@pytest.mark.integration
def test_cross_stage_with_unanswered_judge_calls_exits_3(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ResearchQA's battles are judged in its cross stage: the same bounds apply there."""
    from reportbench.stub_server import stub_server_thread
    from spine_helpers import benchmark_params

    monkeypatch.chdir(repo_root)
    params = benchmark_params(repo_root, "researchqa", "judge=stub")
    with stub_server_thread(faults={"500": 1.0}) as s:
        params["judge"]["api_base"] = s.base_url
        params["judge"]["runtime"].update(max_retries=0, cache_path=None, fatal_after=0)
        root = run_benchmark(params, "researchqa", tmp_path / "out")  # in-process: logged, not fatal
        with pytest.raises(IncompleteJudgeStage, match=r"cross@researchqa is incomplete: step pairwise: (\d+) of \1 "):
            pipeline.cross_stage(
                params, "researchqa", root / "releases", root / "runs", tmp_path / "cross", enforce_bounds=True
            )
    assert (tmp_path / "cross" / "pairwise.parquet").is_file()  # the tables stay inspectable


@pytest.mark.core
def test_retry_lists_failed_items_per_stage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from reportbench.cli import main

    plan = {"benchmarks": {"b": {"release": "r", "systems": ["s"], "members": ["main"]}}}
    (tmp_path / "params.yaml").write_text(json.dumps({"plan": plan}))
    out = tmp_path / "data" / "judgments" / "b" / "r" / "s" / "main"
    write_judgments(out / "one.parquet", [_j(), _j("failed", "call: timeout: t"), _j("failed", "parse: p")])
    write_judgments(out / "two.parquet", [_j("failed", "parse: p")])
    [stage] = scan({"plan": plan}, tmp_path)
    assert (stage.stage, stage.unit, stage.items, stage.unanswered, stage.parse) == ("judge@b", "s", 4, 1, 2)
    assert main(["retry", "--list", "--params", str(tmp_path / "params.yaml")]) == 0
    assert "judge@b (s): 3 of 4 items failed (parse 2, unanswered 1)" in capsys.readouterr().out


GUARDED_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from reportbench.stage_guard import guard_stage
    guard_stage(poll_s=0.1)
    Path(sys.argv[1]).write_text("started")
    try:
        time.sleep(60)
    finally:
        Path(sys.argv[1]).write_text("cleaned up")  # finally blocks run on SIGTERM
    """
)
PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])
    print(child.pid, flush=True)
    time.sleep(60)
    """
)


def _start_chain(tmp_path: Path, *, via_shell: bool) -> tuple[subprocess.Popen[str], psutil.Process, Path]:
    marker = tmp_path / "marker"
    child_cmd = [sys.executable, "-c", GUARDED_CHILD, str(marker)]
    if via_shell:  # a shell that does not exec the command stays between dvc and the stage
        script = " ".join(f"'{a}'" for a in child_cmd) + "; true"
        parent_code = PARENT.replace(
            '[sys.executable, "-c", sys.argv[1], sys.argv[2]]', f"['/bin/sh', '-c', {script!r}]"
        )
    else:
        parent_code = PARENT
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code, GUARDED_CHILD, str(marker)],
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    assert parent.stdout is not None
    first = psutil.Process(int(parent.stdout.readline()))
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.read_text() == "started"
    return parent, first, marker


@pytest.mark.integration
@pytest.mark.parametrize("via_shell", [False, True])
def test_guarded_stage_dies_with_its_parent(tmp_path: Path, via_shell: bool) -> None:
    parent, first, marker = _start_chain(tmp_path, via_shell=via_shell)
    descendants = [first, *first.children(recursive=True)]
    try:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        _, alive = psutil.wait_procs(descendants, timeout=5)
        assert not alive, [p.cmdline()[:3] for p in alive]
        assert marker.read_text() == "cleaned up"
    finally:
        for p in descendants:
            if p.is_running():
                p.kill()


def _running(p: psutil.Process) -> bool:
    """Alive and not a zombie (the exited child of a parent that has not reaped it yet)."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.integration
def test_sigterm_is_a_clean_exit(tmp_path: Path) -> None:
    parent, child, marker = _start_chain(tmp_path, via_shell=False)
    try:
        child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while _running(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(child) and marker.read_text() == "cleaned up"
    finally:
        parent.kill()
        parent.wait(10)


@pytest.mark.core
@pytest.mark.parametrize("parse", [False, True])
def test_retry_reruns_only_the_stages_with_failed_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parse: bool
) -> None:
    import reportbench.retry as retry
    from reportbench.cli import main
    from reportbench.judges.llm import REASK_ENV

    plan = {"benchmarks": {"b": {"release": "r", "systems": ["clean", "timeouts", "prose"], "members": ["main"]}}}
    (tmp_path / "params.yaml").write_text(json.dumps({"plan": plan}))
    base = tmp_path / "data" / "judgments" / "b" / "r"
    write_judgments(base / "clean" / "main" / "x.parquet", [_j(), _j()])
    write_judgments(base / "timeouts" / "main" / "x.parquet", [_j(), _j("failed", "call: timeout: t")])
    write_judgments(base / "prose" / "main" / "x.parquet", [_j(), _j("failed", "parse: p")])
    calls: list[tuple[list[str], str | None]] = []
    monkeypatch.setattr(retry, "_dvc", lambda args, env: calls.append((args, env.get(REASK_ENV))) or 0)
    assert main(["retry", "--params", str(tmp_path / "params.yaml"), *(["--parse"] if parse else [])]) == 0
    # one judge stage per benchmark: a forced rerun re-asks only the failed items (the rest are cache hits)
    assert calls == [
        (["repro", "--force", "--single-item", "judge@b"], "1" if parse else None),
        (["repro", "score@b"], None),
    ]


@pytest.mark.core
@pytest.mark.parametrize(
    ("runtime", "message"),
    [
        ({"max_failure_rate": "hot"}, r"judge\.runtime\.max_failure_rate: 'hot' is not a number"),
        ({"max_call_failure_rate": 2}, r"judge\.runtime\.max_call_failure_rate: 2 is out of range"),
        ({"reask_parse_failures": "maybe"}, r"judge\.runtime\.reask_parse_failures: 'maybe' must be true or false"),
    ],
)
def test_bad_failure_settings_fail_at_compose(runtime: dict, message: str) -> None:
    from reportbench.validate import validate_judge

    with pytest.raises(ConfigError, match=message):
        validate_judge({"backend": "offline", "runtime": runtime})
