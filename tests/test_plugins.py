"""The benchmark plug-in boundary (reportbench.benchmarks): the five built-ins come through the entry point group
`reportbench.benchmarks` like any plug-in, a benchmark's code and prompts are named as DVC dependencies through its
spec, and a plug-in's prompts folder serves its prompt ids. docs/plugins.md."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from reportbench import benchmarks, prompts
from reportbench.benchmarks import ENTRY_POINT_GROUP, BenchmarkError, benchmark_files, get_benchmark

pytestmark = pytest.mark.core

BUILT_IN = ("deepscholar", "researcherbench", "deer", "researchqa", "liveresearchbench")


def test_the_built_ins_are_entry_points_of_reportbench() -> None:
    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    for name in BUILT_IN:
        assert eps[name].value == f"reportbench.protocols.{name}:BENCHMARK"
        assert eps[name].dist is not None and eps[name].dist.name == "reportbench"
    assert set(BUILT_IN) <= set(benchmarks.installed_benchmarks())


def test_get_benchmark_loads_through_the_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(benchmarks, "_BENCHMARKS", {})
    monkeypatch.setattr(benchmarks, "_MODULES", {})
    calls = []
    real = benchmarks.benchmark_entry_points

    def spy() -> dict:
        calls.append(1)
        return real()

    monkeypatch.setattr(benchmarks, "benchmark_entry_points", spy)
    assert get_benchmark("deer").name == "deer" and calls
    with pytest.raises(BenchmarkError, match=r"unknown benchmark 'nope'.*installed: \["):
        get_benchmark("nope")


def test_a_wrong_entry_point_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = importlib.metadata.EntryPoint("mislabelled", "reportbench.protocols.deer:BENCHMARK", ENTRY_POINT_GROUP)
    broken = importlib.metadata.EntryPoint("broken", "no_such_module_xyz:BENCHMARK", ENTRY_POINT_GROUP)
    monkeypatch.setattr(benchmarks, "benchmark_entry_points", lambda: {"mislabelled": ep, "broken": broken})
    with pytest.raises(BenchmarkError, match="is a spec named 'deer'"):
        get_benchmark("mislabelled")
    with pytest.raises(BenchmarkError, match="does not import"):
        get_benchmark("broken")


def test_code_and_prompts_of_a_built_in_are_project_paths(repo_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo_root)
    files = benchmark_files("deepscholar")
    assert files.code == "src/reportbench/protocols/deepscholar"
    assert (files.prompts, files.conf) == ("prompts/deepscholar", None)


def test_a_plugins_prompts_folder_serves_its_prompt_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ask.yaml").write_text("id: mine/ask\nversion: 1\nuser: 'Q: {q}'\n")
    monkeypatch.setattr(prompts, "_PROMPT_DIRS", {})
    with pytest.raises(prompts.PromptError):
        prompts.load_prompt("mine/ask.yaml", tmp_path / "elsewhere")
    prompts.register_prompts_dir("mine", tmp_path)
    template = prompts.load_prompt("mine/ask.yaml", "prompts")
    assert template.path == (tmp_path / "ask.yaml").resolve() and template.render(q="x")[0]["content"] == "Q: x"


def test_declared_system_kinds_are_the_registered_ones() -> None:
    """The validator learns a benchmark's own system kinds from its spec (it never imports the systems package):
    what the specs declare is exactly what their packages register beyond the built-in kinds."""
    from reportbench import systems
    from reportbench.systems import (  # noqa: F401  (each kind module registers itself)
        command,
        deepscholar_exemplar,
        deepscholar_ref,
        endpoint,
        folder,
        offline_baseline,
    )
    from reportbench.validate import SYSTEM_KINDS

    declared = {k for name in benchmarks.installed_benchmarks() for k in get_benchmark(name).system_kinds}
    assert {k for name in BUILT_IN for k in get_benchmark(name).system_kinds} == {"researcherbench_responses"}
    assert declared <= set(systems.SYSTEM_KINDS)
    from reportbench.agents.protocol import AGENT_KINDS  # the validator reads the agent kinds from this data module

    assert set(systems.SYSTEM_KINDS) - set(SYSTEM_KINDS) - set(AGENT_KINDS) <= declared
