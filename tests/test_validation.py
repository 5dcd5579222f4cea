"""Config validation and CLI errors (issue 15 defect 8, issue 13 "Discoverability"): one line naming the bad value
and the valid choices, never a traceback; offline ablations that change nothing real rerun nothing; a closed pipe
ends `reportbench parse` quietly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dvc_helpers import subprocess_env
from reportbench.cli import main
from reportbench.config import composed_params

pytestmark = pytest.mark.core


def _compose_error(repo_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *overrides: str) -> str:
    """The stderr of a failing `reportbench compose`, asserted to be exactly one `error:` line with exit 2."""
    code = main(["compose", "--out", str(tmp_path / "params.yaml"), *overrides])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert "Traceback" not in err
    return err


def test_offline_judge_ablations_that_change_nothing_do_not_change_judge_identity(
    repo_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = repo_root / "conf"
    base = composed_params(conf_dir=conf)["judge_identity"]
    for override in ("judge.model=", "judge.model=openai/gpt-4.1", "judge.temperature=0.7", "judge.seed=7"):
        assert composed_params([override], conf_dir=conf)["judge_identity"] == base, override
    err = capsys.readouterr().err
    assert "offline judge ignores model=''" in err and "temperature=0.7" in err
    # what the offline judge does read still changes its identity (and so reruns the judge stages)
    strict = composed_params(["judge=offline_strict"], conf_dir=conf)["judge_identity"]
    assert strict != base and strict["offline"]
    assert composed_params(["judge.prompts=authors"], conf_dir=conf)["judge_identity"] != base
    # a real judge: every setting that can change an answer is in its identity
    llm = composed_params(["judge=llm", "judge.temperature=0.7"], conf_dir=conf)["judge_identity"]
    assert llm["temperature"] == 0.7 and llm["model"] == "openai/gpt-4o"


@pytest.mark.parametrize(
    ("overrides", "must_contain"),
    [
        (["judge.temperature=hot"], ["judge.temperature", "'hot'"]),
        (["judge.temperature=9"], ["judge.temperature", "9"]),
        (["judge.max_tokens=0"], ["judge.max_tokens", "0"]),
        (["judge.structured_output=maybe"], ["'maybe'", "json_schema"]),
        (["judge.prompts=theirs"], ["'theirs'", "ours", "authors"]),
        (["judge=llm", "judge.model="], ["judge.model", "''"]),
        (["judge.backend=gpt"], ["'gpt'", "offline", "litellm"]),
        (["judge.runtime.max_concurrency=0"], ["judge.runtime.max_concurrency"]),
        (["+judge.offline.support.threshhold=0.3"], ["threshhold", "threshold"]),
        (["judge=nope"], ["'nope'", "offline_strict", "llm_paper"]),
        (["deepscholar/systems=nope"], ["'nope'", "with_ref", "oracles"]),
        (["benchmarks=[nope]"], ["'nope'", "researchqa"]),
        (["judge.tempurature=1"], ["judge.tempurature", "temperature"]),
        (["nonsense"], ["nonsense"]),
        (["benchmarks.deepscholar.release.name=a/b"], ["release.name", "'a/b'"]),
        (["benchmarks.deepscholar.release.max_tasks=-1"], ["max_tasks", "-1"]),
        (["benchmarks.deepscholar.systems.careful_writer.format=xml"], ["careful_writer.format", "'xml'", "markdown"]),
        (["benchmarks.deepscholar.systems.careful_writer.kind=magic"], ["'magic'", "folder", "endpoint"]),
        (["+agents.bot={kind:command,cmd:notalist}"], ["agents.bot.cmd"]),
    ],
)
def test_invalid_config_is_one_line_naming_value_and_choices(
    repo_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], overrides: list[str], must_contain: list[str]
) -> None:
    err = _compose_error(repo_root, tmp_path, capsys, *overrides)
    for text in must_contain:
        assert text in err, (text, err)


def test_argparse_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["parse", "x.md", "--format", "xml"])  # main returns argparse's exit code (the CLI exits with it)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "'xml'" in err and "markdown" in err, err


def test_parse_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    report = tmp_path / "big.md"
    body = [f"Sentence {i} says something about topic {i} [{i % 50 + 1}]." for i in range(4000)]
    refs = [f"[{i}] Title of paper {i}. arXiv:2401.{i:05d}" for i in range(1, 51)]
    report.write_text("\n".join(["# Report", "", *body, "", "## References", *refs]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "reportbench.cli", "parse", str(report), "--indent"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=subprocess_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(10)  # like `| head -c 10`: read a little, then go away
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert code in (0, 141), code


@pytest.mark.core
def test_validator_knows_every_registered_system_kind() -> None:
    """A kind registered in reportbench.systems but unknown to the validator would be refused at compose time."""
    import importlib

    from reportbench import systems, validate

    for module in ("command", "deepscholar_exemplar", "deepscholar_ref", "endpoint", "folder", "offline_baseline"):
        importlib.import_module(f"reportbench.systems.{module}")
    # kinds that protocols register (e.g. researcherbench_responses) are validated through the protocol instead
    built_in = {k for k, fn in systems.SYSTEM_KINDS.items() if fn.__module__.startswith("reportbench.systems.")}
    assert set(validate.SYSTEM_KINDS) == built_in
