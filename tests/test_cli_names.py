"""One way to name things (issue 32): `-b/--benchmark` on every command that takes a benchmark, through one helper;
every listing offers every installed benchmark; unknown names exit 2 with the choices. `ls tasks` lists a
benchmark's task ids; the `systems add --command` help example runs with the shipped template; every option has
help; `check` explains `q9.md` and `9.md` the same way; `ls presets` cites only sources a user has."""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from reportbench.benchmark_arg import benchmark_name
from reportbench.benchmarks import installed_benchmarks
from reportbench.cli import build_parser, main

pytestmark = pytest.mark.core

# every command that takes a benchmark (`systems add` takes it as its first word, checked by the same function)
BENCHMARK_COMMANDS = {
    ("check",): ["check", "x", "-b", "nope"],
    ("view",): ["view", "-b", "nope"],
    ("estimate",): ["estimate", "-b", "nope"],
    ("retry",): ["retry", "-b", "nope"],
    ("ls",): ["ls", "tasks", "-b", "nope"],
    ("export",): ["export", "-b", "nope", "--scores", "x", "--out", "y"],
    ("reproduce",): ["reproduce", "--list", "-b", "nope"],
    ("annotate",): ["annotate", "-b", "nope"],
}


def _subparser(*path: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


def _every_parser() -> list[tuple[str, argparse.ArgumentParser]]:
    out = []

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        out.append((prefix, parser))
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sp in a.choices.items():
                    walk(sp, f"{prefix} {name}".strip())

    walk(build_parser(), "")
    return out


def test_every_benchmark_option_is_the_shared_one_and_refuses_unknown_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    installed = installed_benchmarks()
    assert "deepresearch_bench" in installed and len(installed) >= 6  # built-ins and the plug-in
    for path, argv in BENCHMARK_COMMANDS.items():
        action = next(a for a in _subparser(*path)._actions if "--benchmark" in a.option_strings)
        assert action.option_strings == ["-b", "--benchmark"] and action.type is benchmark_name, path
        assert main(argv) == 2, path
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "unknown benchmark 'nope'" in err, (path, err)
        assert err.split("choices: ", 1)[1].split(" (see")[0].split(", ") == installed, (path, err)
    assert main(["systems", "add", "nope", "x", "--folder", "."]) == 2
    assert "unknown benchmark 'nope'; choices: " + ", ".join(installed) in capsys.readouterr().err
    # no other spelling of a benchmark option is left anywhere
    for prefix, parser in _every_parser():
        for a in parser._actions:
            if a.dest == "benchmark" and a.option_strings:
                assert a.option_strings == ["-b", "--benchmark"] and a.type is benchmark_name, prefix


def test_listings_offer_every_installed_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    installed = installed_benchmarks()
    export = next(a for a in _subparser("export")._actions if "--benchmark" in a.option_strings)
    for b in installed:  # export accepts (and writes) every one of them
        assert export.type(b) == b
    assert main(["reproduce", "--list"]) == 0
    listed = {ln.split("/")[0] for ln in capsys.readouterr().out.splitlines()[1:] if "/" in ln.split()[0]}
    assert listed == set(installed)
    assert main(["reproduce", "--list", "-b", "deer"]) == 0
    assert {ln.split("/")[0] for ln in capsys.readouterr().out.splitlines()[1:] if ln.strip()[:1] != "n"} <= {"deer"}
    assert main(["ls", "benchmarks"]) == 0
    assert [ln.split()[0] for ln in capsys.readouterr().out.splitlines()] == installed


def test_export_writes_researchqa_and_deepresearch_bench_in_the_authors_formats(tmp_path: Path) -> None:
    from reportbench.interop.export import export
    from reportbench.interop.researchqa import read_leaderboard
    from reportbench.metrics.aggregate import metric_row, rows_frame

    scores = tmp_path / "data" / "scores" / "researchqa" / "demo"
    scores.mkdir(parents=True)
    rows_frame([metric_row("a", "*", "elo", 1100.0), metric_row("b", "*", "elo", 900.0)]).write_parquet(
        scores / "a.parquet"
    )
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    table = [{"system": "a", "boot_mean": 1100.0, "boot_std": 9.5}, {"system": "b", "boot_mean": None,
                                                                      "boot_std": None}]
    (metrics / "extra.json").write_text(json.dumps({"ratings": {"reported": "half", "value": "mean",
                                                                "tables": {"half": table}}}))
    path, notes = export("researchqa", scores, tmp_path / "out", metrics)
    assert read_leaderboard(path) == {"a": (1100.0, 9.5)}  # b has no bootstrap: not written as 0
    assert "b" in json.loads(notes.read_text())["rows_left_out"]  # ... and said why

    reproduce = pytest.importorskip("reportbench_deepresearch_bench.reproduce")
    drb = tmp_path / "drb"
    drb.mkdir()
    dims = ("comprehensiveness", "insight", "instruction_following", "readability")
    rows = [metric_row("sys", "1", "race_overall", 0.5), metric_row("sys", "2", "race_overall", 0.3)]
    rows += [metric_row("sys", t, f"race_{d}", v) for d in dims for t, v in (("1", 0.4), ("2", 0.2))]
    rows += [metric_row("sys", "3", "race_overall", float("nan"), "failed", "judge failed", n_failed=1)]
    rows_frame(rows).write_parquet(drb / "sys.parquet")
    written = export("deepresearch_bench", drb, tmp_path / "out2")
    ok, failed = reproduce.read_race_rows(written[0])
    assert len(ok) == 2 and failed == 1  # the failed task is their `error` row, never a 0
    means = reproduce.read_race_result(written[1])
    assert means["Overall Score"] == 0.4 and means["Insight"] == 0.3


def test_ls_tasks_lists_the_release_task_ids_and_judge_tasks_are_separate(
    capsys: pytest.CaptureFixture[str], repo_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    assert main(["ls", "tasks", "-b", "researcherbench"]) == 0
    out = capsys.readouterr().out
    ids = [ln.split()[0] for ln in out.splitlines() if ln.startswith("  ") and not ln.startswith("  name ")]
    assert ids == ["q1", "q2", "q3"], out
    assert "name report files <task id>.md: ids spelled q<id>" in out and "prompts/" not in out
    assert main(["ls", "judge-tasks", "-b", "researcherbench"]) == 0
    judge = capsys.readouterr().out
    assert "prompts/researcherbench/" in judge and "deepscholar" not in judge


def test_systems_add_help_example_runs_with_the_shipped_template(
    tmp_path: Path, repo_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from reportbench import pipeline
    from reportbench.config import load_params
    from reportbench.systems import read_outcomes

    help_text = " ".join(_subparser("systems", "add").format_help().split())
    example = re.search(r"--command COMMAND a program run once per task, e\.g\. '([^']+)'", help_text)
    assert example, help_text
    tmp_path.chmod(0o755)  # a project folder as `git clone` makes it (pytest's are 0700: the sandbox's uid can't enter)
    for folder in ("conf", "prompts", "examples"):
        shutil.copytree(repo_root / folder, tmp_path / folder)
    shutil.copytree(repo_root / "data" / "demo" / "deepscholar", tmp_path / "data" / "demo" / "deepscholar")
    shutil.copy2(repo_root / "dvc.yaml", tmp_path / "dvc.yaml")
    monkeypatch.chdir(tmp_path)
    assert main(["compose", "benchmarks=[deepscholar]"]) == 0
    assert main(["systems", "add", "deepscholar", "byo", "--command", example.group(1)]) == 0, capsys.readouterr()
    params = load_params()
    entry = yaml.safe_load((tmp_path / "conf" / "deepscholar" / "systems" / "my_systems.yaml").read_text())["byo"]
    assert entry["path"] == "examples/byo_command_system.py"
    pipeline.build_release(params, "deepscholar", tmp_path / "release")
    pipeline.run_system(params, "deepscholar", "byo", tmp_path / "release", tmp_path / "run")
    outcomes = read_outcomes(tmp_path / "run")
    assert outcomes and all(o.status == "ok" for o in outcomes), [(o.status, o.reason) for o in outcomes]


def test_every_option_of_every_command_has_help() -> None:
    missing = [
        f"reportbench {prefix} {a.option_strings or a.dest}"
        for prefix, parser in _every_parser()
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction) and not a.help
    ]
    assert missing == []
    assert "where to write the composed params" in _subparser("compose").format_help()


def test_check_explains_q9_and_9_the_same_way_with_valid_names(
    tmp_path: Path, repo_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report = (repo_root / "data" / "demo" / "researcherbench" / "systems" / "link_writer" / "q1.md").read_text()
    for name in ("q1", "q2", "q3", "q9", "9", "notes"):
        (tmp_path / f"{name}.md").write_text(report)
    monkeypatch.chdir(repo_root)
    main(["check", str(tmp_path), "-b", "researcherbench", "--release", "demo"])
    lines = {ln.split()[1]: ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  ") and ".md ->" in ln}
    valid = "valid names e.g. q1.md, q2.md, q3.md"
    for name in ("q9.md", "9.md"):  # the same task, the same status and the same explanation
        assert lines[name].split()[0] == "outside_release", lines[name]
        assert "names task q9: a task of the benchmark, not in this release" in lines[name] and valid in lines[name]
    assert lines["notes.md"].split()[0] == "unmapped"
    assert "'notes' is not a task id of this release (ids spelled q<id>;" in lines["notes.md"]
    assert valid in lines["notes.md"]


def test_ls_presets_cites_only_what_a_user_has(repo_root: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo_root)
    assert main(["ls", "presets"]) == 0
    out = capsys.readouterr().out
    assert "specs" not in out  # the implementation specs live outside the repository
    for path in set(re.findall(r"\b(docs/[\w./-]+\.md)", out)):  # (the authors' files are cited with repo@commit)
        assert (repo_root / path).is_file(), path  # a cited page of ours exists


def test_each_command_is_registered_by_the_module_listed_for_it() -> None:
    """cli.COMMAND_MODULES (which module a `reportbench <command>` run imports alone) is what each module adds."""
    import importlib

    from reportbench.cli import COMMAND_MODULES, SUBCOMMAND_MODULES

    for module in SUBCOMMAND_MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(module).register(sub)
        assert set(sub.choices) == {c for c, m in COMMAND_MODULES.items() if m == module}, module
    full = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(full.choices) == set(COMMAND_MODULES)


def test_a_command_imports_only_its_own_subcommand_module() -> None:
    """`reportbench ls …` does not import the other commands' modules (~1 s of CPU per run: aiohttp, polars…)."""
    import subprocess
    import sys

    code = ("import sys; from reportbench.cli import main; rc = main(['ls', 'benchmarks']); "
            "print(rc, [m for m in ('reportbench.stub_server', 'reportbench.live_builder.cli', 'reportbench.site.cli', "
            "'reportbench.agents.envs', 'reportbench.reproduce', 'aiohttp') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "0 []", out  # (ls itself needs config and systems_cli)
