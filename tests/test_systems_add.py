"""Bringing your own system sticks (issue 24, item 1): `reportbench systems add` writes a correct group file and
composes; overrides are remembered so compose, compose --check and estimate agree; nothing is deleted without
`--prune` (which names what goes); a group file without its package line is an error naming it; unknown names
are refused with the valid choices (exit 2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from reportbench.cli import main

pytestmark = pytest.mark.core


@pytest.fixture
def repo(tmp_path: Path, repo_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """conf/, dvc.yaml and the DeepScholar demo reports in a temp folder, with only DeepScholar enabled."""
    shutil.copytree(repo_root / "conf", tmp_path / "conf")
    shutil.copy2(repo_root / "dvc.yaml", tmp_path / "dvc.yaml")
    shutil.copytree(repo_root / "prompts", tmp_path / "prompts")  # estimate renders the judge prompts
    shutil.copytree(repo_root / "data" / "demo" / "deepscholar", tmp_path / "data" / "demo" / "deepscholar")
    shutil.copytree(tmp_path / "data" / "demo" / "deepscholar" / "systems" / "careful_writer", tmp_path / "mine")
    monkeypatch.chdir(tmp_path)
    assert main(["compose", "benchmarks=[deepscholar]"]) == 0
    return tmp_path


def _params(repo: Path) -> dict:
    return yaml.safe_load((repo / "params.yaml").read_text())


def test_add_folder_system_writes_group_composes_and_is_remembered(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["systems", "add", "deepscholar", "my_system", "--folder", "mine"]) == 0
    out = capsys.readouterr().out
    assert "dvc repro" in out and "reportbench view --benchmark deepscholar --system my_system" in out
    group = (repo / "conf" / "deepscholar" / "systems" / "my_systems.yaml").read_text()
    assert group.splitlines()[0] == "# @package benchmarks.deepscholar.systems"
    data = yaml.safe_load(group)
    assert data["defaults"] == ["demo", "_self_"]
    assert data["my_system"] == {"kind": "folder", "path": "mine", "format": "auto"}
    systems = _params(repo)["benchmarks"]["deepscholar"]["systems"]
    assert "my_system" in systems and "careful_writer" in systems  # the demo systems stay
    assert "my_system" in _params(repo)["plan"]["benchmarks"]["deepscholar"]["systems"]
    remembered = yaml.safe_load((repo / "overrides.yaml").read_text())["overrides"]
    assert remembered == ["benchmarks=[deepscholar]", "deepscholar/systems=my_systems"]
    # compose --check agrees, and a bare compose (the advice it used to give) keeps the system
    assert main(["compose", "--check"]) == 0
    assert main(["compose"]) == 0
    assert "my_system" in _params(repo)["benchmarks"]["deepscholar"]["systems"]
    # a second system goes into the same file; a duplicate name is refused
    assert main(["systems", "add", "deepscholar", "agent", "--command", "python tool.py {task_json} {output}"]) == 2
    assert "name it with --path" in capsys.readouterr().err  # tool.py does not exist: nothing to track
    (repo / "tool.py").write_text("print('hi')\n")
    assert main(["systems", "add", "deepscholar", "agent", "--command", "python tool.py {task_json} {output}"]) == 0
    entry = yaml.safe_load((repo / "conf" / "deepscholar" / "systems" / "my_systems.yaml").read_text())["agent"]
    assert entry["kind"] == "command" and entry["cmd"] == ["python", "tool.py", "{task_json}", "{output}"]
    assert entry["path"] == "tool.py"
    assert main(["systems", "add", "deepscholar", "my_system", "--folder", "mine"]) == 2
    assert "already has a system 'my_system'" in capsys.readouterr().err


def test_add_endpoint_and_bad_arguments(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--endpoint", "openai/my-agent", "--api-base", "http://127.0.0.1:8000/v1", "--api-key-env", "MY_KEY"]
    assert main(["systems", "add", "deepscholar", "ep", *args]) == 0
    entry = _params(repo)["benchmarks"]["deepscholar"]["systems"]["ep"]
    assert entry["kind"] == "endpoint" and entry["model"] == "openai/my-agent" and entry["api_key_env"] == "MY_KEY"
    capsys.readouterr()
    assert main(["systems", "add", "nope", "x", "--folder", "mine"]) == 2
    assert "deepscholar" in capsys.readouterr().err.split("choices:", 1)[1]
    assert main(["systems", "add", "deepscholar", "x", "--folder", "no_such_dir"]) == 2
    assert "no_such_dir: no such directory" in capsys.readouterr().err
    assert main(["systems", "add", "deepscholar", "x", "--folder", "mine", "--format", "nope"]) == 2
    assert "choices: auto" in capsys.readouterr().err


def test_group_file_without_package_line_is_an_error(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "conf" / "deepscholar" / "systems" / "bad.yaml").write_text("x:\n  kind: folder\n  path: mine\n")
    assert main(["compose", "deepscholar/systems=bad"]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "# @package benchmarks.deepscholar.systems" in err
    assert "deepscholar/systems=bad" not in (repo / "overrides.yaml").read_text()  # a failed compose is not kept


def test_nothing_is_deleted_without_prune(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ghost_run = repo / "data" / "runs" / "deepscholar" / "demo" / "ghost"
    ghost_judged = repo / "data" / "judgments" / "deepscholar" / "demo" / "ghost"
    for d in (ghost_run, ghost_judged):
        d.mkdir(parents=True)
        (d / "reports.jsonl").write_text("")
    (repo / "data" / "runs" / "deepscholar" / "demo" / "careful_writer").mkdir()
    capsys.readouterr()
    assert main(["compose"]) == 0
    out = capsys.readouterr().out
    assert ghost_run.is_dir() and ghost_judged.is_dir()
    assert "kept 2 outputs" in out and str(Path("data/runs/deepscholar/demo/ghost")) in out and "--prune" in out
    assert main(["compose", "--prune"]) == 0
    out = capsys.readouterr().out
    assert not ghost_run.exists() and not ghost_judged.exists()
    assert "deleted 2 outputs" in out and "ghost" in out
    assert (repo / "data" / "runs" / "deepscholar" / "demo" / "careful_writer").is_dir()  # configured: kept


def test_estimate_refuses_unknown_names_and_takes_overrides(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "--system", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown --system 'nope'" in err and "careful_writer" in err
    assert main(["estimate", "--benchmark", "nope"]) == 2
    assert "deepscholar" in capsys.readouterr().err.split("choices:", 1)[1]
    assert main(["systems", "add", "deepscholar", "my_system", "--folder", "mine"]) == 0
    capsys.readouterr()
    # positional overrides (like compose), on top of the remembered ones: the added system is estimated
    code = main(["estimate", "judge=llm", "judge.model=openai/gpt-4.1", "--system", "my_system"])
    out = capsys.readouterr().out
    assert code == 0 and "judge@deepscholar (my_system)" in out and "openai/gpt-4.1" in out


def test_ls_and_other_filters_read_the_same_configuration(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["systems", "add", "deepscholar", "my_system", "--folder", "mine"]) == 0
    capsys.readouterr()
    assert main(["ls", "systems"]) == 0
    out = capsys.readouterr().out
    assert "-S deepscholar/systems=my_systems" in out and "my_system (folder) + demo" in out
    assert "selected now (remembered in overrides.yaml): " in out and "deepscholar/systems=my_systems" in out
    # commands that filter by a name refuse an unknown one with the choices (exit 2)
    assert main(["retry", "--benchmark", "nope"]) == 2
    assert "deepscholar" in capsys.readouterr().err.split("choices:", 1)[1]
    assert main(["ls", "metrics", "--benchmark", "nope"]) == 2
    assert main(["view", "--benchmark", "deepscholar", "--system", "nope"]) == 2
    err = capsys.readouterr().err
    assert "my_system" in err and "careful_writer" in err  # the choices include the added system


def test_add_folder_that_maps_onto_no_task_says_so_now(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A newcomer added the authors' LRB reports (qid_<id>_report.md) to the demo release: `systems add` said
    nothing and `dvc repro` stopped later. Now it warns at once with the stage's own message and where to go."""
    other = repo / "elsewhere"
    other.mkdir()
    for name in ("2501.00001v1.md", "2501.00002v1.md"):  # ids of no task of the demo release
        (other / name).write_text("## Related Work\n\nText [1].\n\n## References\n\n[1] A. https://example.org/a\n")
    assert main(["systems", "add", "deepscholar", "theirs", "--folder", "elsewhere"]) == 0  # written all the same
    err = capsys.readouterr().err
    assert "warning: systems.theirs: the reports in elsewhere do not map onto the release's 3 tasks" in err
    assert "2 file(s) map to no task" in err and "reportbench ls releases" in err
    assert "reportbench check elsewhere -b deepscholar" in err
    assert main(["systems", "add", "deepscholar", "mine2", "--folder", "mine"]) == 0  # the demo's own: no warning
    assert "warning" not in capsys.readouterr().err


def test_a_compose_after_a_release_switch_names_a_few_stale_outputs_not_all(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Switching to a real release left 42 demo outputs; compose printed every one on one line, calling them
    "systems" (most were releases). Now: the count, the first few, what they are, and --prune."""
    for k in range(12):
        (repo / "data" / "runs" / "deepscholar" / "demo" / f"ghost{k:02d}").mkdir(parents=True)
    capsys.readouterr()
    assert main(["compose"]) == 0
    out = capsys.readouterr().out
    assert "kept 12 outputs of stages no longer planned" in out and "… (12 in all)" in out and "--prune" in out
    assert "ghost00" in out and "ghost11" not in out


def test_compose_warns_when_a_planned_release_reads_a_missing_source(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`researchqa/release=researchqa` without ../shared/data/researchqa: `dvc repro` stopped with DVC's bare
    "[Errno 2] No such file or directory". compose now names the key, the doc and the way back."""
    capsys.readouterr()
    assert main(["compose", "benchmarks=[researchqa]", "researchqa/release=researchqa"]) == 0
    err = capsys.readouterr().err
    assert "warning: release@researchqa reads ../shared/data/researchqa (benchmarks.researchqa.release.source)" in err
    assert "docs/researchqa.md" in err and "compose --reset" in err
    assert main(["compose", "--reset", "benchmarks=[deepscholar]"]) == 0  # the demo's data is here: no warning
    assert "warning: release@" not in capsys.readouterr().err
