"""`reportbench ls`: every installed benchmark, its metrics (direction, aggregation) and judge tasks are listed."""

from __future__ import annotations

import pytest

from reportbench.cli import main

pytestmark = pytest.mark.core


def test_ls_lists_benchmarks_metrics_and_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ls", "benchmarks"]) == 0
    assert "deepscholar" in capsys.readouterr().out
    assert main(["ls", "metrics", "--benchmark", "deepscholar"]) == 0
    out = capsys.readouterr().out
    assert "deepscholar/citation_precision" in out and "↑" in out
    assert main(["ls", "judge-tasks"]) == 0  # `ls tasks` lists a benchmark's task ids (tests/test_cli_names.py)
    assert "prompts/deepscholar/support.yaml" in capsys.readouterr().out


def test_ls_lists_every_configurable_choice(capsys: pytest.CaptureFixture[str]) -> None:
    expected = {
        "releases": ["-S deepscholar/release=demo", "-S researchqa/release=researchqa", "kind="],
        "systems": ["-S deepscholar/systems=with_ref", "deepscholar_ref (deepscholar_ref)", "-S agents=byo_examples"],
        "judges": ["-S judge=offline_strict", "backend=litellm model=openai/gpt-4o"],
        "prompt-packs": ["-S judge.prompts=ours", "authors:guestrin-lab/deepscholar-bench@"],
        "formats": ["auto", "openai_deep_research", "markdown"],
        "metrics": ["deepscholar/organization", "missing report:", "[0, 10]"],
    }
    for what, needles in expected.items():
        assert main(["ls", what]) == 0
        out = capsys.readouterr().out
        for needle in needles:
            assert needle in out, (what, needle)
    assert main(["ls"]) == 0
    summary = capsys.readouterr().out
    assert all(f"reportbench ls {w}" in summary for w in expected)


def test_ls_unknown_benchmark_names_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ls", "metrics", "--benchmark", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'nope'" in err and "researcherbench" in err


def test_ls_prompt_packs_names_the_judge_tasks_a_pack_serves(capsys: pytest.CaptureFixture[str]) -> None:
    """ResearcherBench's tasks name their authors' step (JudgeTask.authors_step), not the other way round: the
    listing said "4 prompts (judge tasks: )"."""
    assert main(["ls", "prompt-packs", "-b", "researcherbench"]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert "judge tasks: )" not in line
    assert "researcherbench_rubric" in line and "researcherbench_verify" in line


def test_ls_releases_shows_required_and_copied_values_readably(capsys: pytest.CaptureFixture[str]) -> None:
    """`ls releases` printed raw OmegaConf: `source=???` (DEER's folder release) and `source=${.path}`."""
    assert main(["ls", "releases"]) == 0
    out = capsys.readouterr().out
    assert "???" not in out and "${" not in out
    assert "source=(required: set benchmarks.deer.release.source)" in out
    assert "name=researchqa-<split>" in out
