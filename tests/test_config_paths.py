"""Every path that composes params.yaml gives the same answer, and a stage stops before doing work on what no retry
fixes (issue 32): the default selection is every installed benchmark; a group file without its package line, a
YAML syntax error and a stray top-level key are one `error:` line (exit 2) on `reportbench compose`, `dvc exp
run` and `live init`, and at the first stage of `dvc repro`; a remembered system of an unselected benchmark does
not block choosing benchmarks; a missing judge key stops `dvc repro` at its first stage. docs/systems.md,
docs/presets.md."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from dvc_helpers import copy_working_tree, run_ok, subprocess_env
from reportbench import benchmarks, config
from reportbench.errors import ConfigError
from reportbench.judges.errors import FatalJudgeError

RB = [sys.executable, "-m", "reportbench.cli"]
DVC = [sys.executable, "-m", "dvc"]
NO_HEADER = "my_deer:\n  kind: folder\n  path: data/demo/deer/systems/careful_writer\n"
PARAM_STAGES = ("release@", "system@", "fetch@", "judge@", "cross@", "score@", "agreement@", "site")


def run(cmd: list[str], cwd: Path, **env: str | None) -> subprocess.CompletedProcess[str]:
    """`cmd` in `cwd` with the test environment, minus every variable given as None."""
    e = subprocess_env()
    for k, v in env.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return subprocess.run(cmd, cwd=cwd, env=e, capture_output=True, text=True, timeout=600)


def stages_run(stdout: str) -> list[str]:
    """The stages `dvc repro` started that read params.yaml (not `code` or `plots_template`)."""
    return [ln for ln in stdout.splitlines() if ln.startswith("Running stage") and any(s in ln for s in PARAM_STAGES)]


def error_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("error:")]


@pytest.fixture(scope="module")
def clone(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The working tree as a fresh clone (one commit); `repo` puts it back after each test."""
    if not (repo_root / ".git").exists():
        pytest.skip("not a git checkout")
    return copy_working_tree(repo_root, tmp_path_factory.mktemp("paths") / "repo")


@pytest.fixture()
def repo(clone: Path) -> Iterator[Path]:
    base = run_ok(["git", "rev-parse", "HEAD"], clone).stdout.strip()
    yield clone
    run_ok(["git", "reset", "-q", "--hard", base], clone)  # the fresh clone's commit, whatever a test committed
    run_ok(["git", "clean", "-qfdx", "-e", ".dvc/cache"], clone)


def commit(repo: Path) -> None:
    run_ok(["git", "add", "-A"], repo)
    run_ok(["git", "commit", "-qm", "edit"], repo)


# ------------------------------------------------------------------------------------------- item 1: installed


@pytest.mark.core
def test_the_plugin_ships_with_the_first_install_command(repo_root: Path) -> None:
    """`pip install -e '.[test]'` alone installs DeepResearch Bench: reportbench's own distribution packages the
    plug-in's source folder and declares its entry point (the README's two-command set-up)."""
    project = tomllib.loads((repo_root / "pyproject.toml").read_text())
    eps = project["project"]["entry-points"]["reportbench.benchmarks"]
    assert eps["deepresearch_bench"] == "reportbench_deepresearch_bench.benchmark:BENCHMARK"
    assert "plugins/deepresearch_bench/src" in project["tool"]["setuptools"]["packages"]["find"]["where"]
    ep = benchmarks.benchmark_entry_points()["deepresearch_bench"]
    assert ep.dist is not None and ep.dist.name == "reportbench"


@pytest.mark.integration
def test_the_default_selection_is_every_installed_benchmark(monkeypatch: pytest.MonkeyPatch) -> None:
    everything = set(config.composed_params(remembered=False)["benchmarks"])
    assert everything == set(benchmarks.benchmark_entry_points()) and "deepresearch_bench" in everything
    # without the plug-in installed the default composes without it (it used to name it: "unknown benchmark")
    real = dict(benchmarks.benchmark_entry_points())
    without = {k: v for k, v in real.items() if k != "deepresearch_bench"}
    monkeypatch.setattr(benchmarks, "benchmark_entry_points", lambda: without)
    assert set(config.composed_params(remembered=False)["benchmarks"]) == everything - {"deepresearch_bench"}


@pytest.mark.core
def test_a_params_file_selecting_an_uninstalled_benchmark_is_refused_before_work() -> None:
    from reportbench import preflight

    assert preflight.ENTRY_POINT_GROUP == benchmarks.ENTRY_POINT_GROUP
    params = config.load_params()
    params["benchmarks"] = {**params["benchmarks"], "nope": {}}
    with pytest.raises(ConfigError, match=r"benchmark 'nope' is selected but not installed.*reportbench compose"):
        preflight.check_params(params, credentials=False)


# ------------------------------------------------------------------- item 2: the package line, on every path


@pytest.mark.integration
def test_a_system_file_without_its_package_line_is_refused_alike_on_every_path(repo: Path) -> None:
    (repo / "conf/deer/systems/mine.yaml").write_text(NO_HEADER)
    commit(repo)
    want = "error: conf/deer/systems/mine.yaml: missing the header line `# @package benchmarks.deer.systems`"
    outputs = {
        "compose": run([*RB, "compose", "deer/systems=mine"], repo),
        "dvc exp run": run([*DVC, "exp", "run", "--dry", "-S", "deer/systems=mine"], repo),
        "live init": run([*RB, "live", "init"], repo),
    }
    lines = {}
    for path, proc in outputs.items():
        assert proc.returncode == 2, (path, proc.stdout[-2000:], proc.stderr[-2000:])
        errors = error_lines(proc.stderr)
        assert len(errors) == 1 and errors[0].startswith(want), (path, proc.stderr[-2000:])
        lines[path] = errors[0]
    assert len(set(lines.values())) == 1, lines  # the same refusal, word for word
    assert "deer" not in yaml.safe_load((repo / "params.yaml").read_text())  # no top-level key was written
    listed = run([*RB, "ls", "systems"], repo)
    assert "warning: conf/deer/systems/mine.yaml has no `# @package benchmarks.deer.systems` line" in listed.stderr


@pytest.mark.integration
def test_a_stray_top_level_key_stops_the_first_stage(repo: Path) -> None:
    """A params.yaml with a top-level `deer:` (what `dvc exp run -S deer/systems=mine` wrote before the fix): the
    first stage that reads it exits 2 with one line naming the key and the file to fix; no later stage runs."""
    (repo / "conf/deer/systems/mine.yaml").write_text(NO_HEADER)
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["deer"] = {"systems": {"my_deer": {"kind": "folder", "path": "x"}}}
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    proc = run([*DVC, "repro"], repo)
    assert proc.returncode != 0
    errors = error_lines(proc.stderr)
    assert len(errors) == 1, proc.stderr[-3000:]
    assert "top-level key 'deer'" in errors[0] and "conf/deer/systems/mine.yaml" in errors[0], errors
    ran = stages_run(proc.stdout)
    assert len(ran) == 1, ran  # the first stage that reads params.yaml, and nothing after it


# ----------------------------------------------------------------------------- item 4: YAML syntax errors


@pytest.mark.integration
def test_a_yaml_syntax_error_in_conf_is_one_line_naming_file_and_line(repo: Path) -> None:
    path = repo / "conf/judge/llm.yaml"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, "oops: a: b"]) + "\n")
    commit(repo)
    where = f"error: conf/judge/llm.yaml:{len(lines) + 1}: not valid YAML (mapping values are not allowed"
    for cmd in ([*RB, "compose", "judge=llm"], [*DVC, "exp", "run", "--dry", "-S", "judge=llm"]):
        proc = run(cmd, repo)
        assert proc.returncode == 2, (cmd, proc.stderr[-2000:])
        errors = error_lines(proc.stderr)
        assert len(errors) == 1 and errors[0].startswith(where), (cmd, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr


@pytest.mark.core
def test_a_stage_reading_a_broken_params_file_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "params.yaml").write_text("judge:\n  name: x\nplan: a: b\n")
    with pytest.raises(ConfigError, match=r"params.yaml:3: not valid YAML \(mapping values"):
        config.load_params(tmp_path / "params.yaml")


# -------------------------------------------------------------------------- item 3: remembered overrides


@pytest.mark.integration
def test_a_remembered_system_does_not_block_choosing_benchmarks(repo: Path) -> None:
    """docs/systems.md: `systems add researcherbench ...`, then `compose 'benchmarks=[deepscholar]'` works; the
    remembered override is named (overrides.yaml) on compose and on dvc exp run, applied or not."""
    source = repo / "data/demo/researcherbench/systems"
    run_ok(["cp", "-r", str(next(p for p in sorted(source.iterdir()) if p.is_dir())), "my_reports"], repo)
    run_ok([*RB, "systems", "add", "researcherbench", "my_system", "--folder", "my_reports"], repo)
    proc = run([*RB, "compose", "benchmarks=[deepscholar]"], repo)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert set(yaml.safe_load((repo / "params.yaml").read_text())["benchmarks"]) == {"deepscholar"}
    assert "remembered: researcherbench/systems=my_systems not applied: benchmark researcherbench is not selected" in (
        proc.stderr
    )
    assert "overrides.yaml" in proc.stderr
    assert run([*RB, "compose", "--check"], repo).returncode == 0
    again = run([*RB, "compose", "benchmarks=[deepscholar,researcherbench]"], repo)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "remembered: researcherbench/systems=my_systems (from overrides.yaml" in again.stderr
    assert "my_system" in yaml.safe_load((repo / "params.yaml").read_text())["benchmarks"]["researcherbench"]["systems"]
    commit(repo)
    exp = run([*DVC, "exp", "run", "--dry", "-S", "judge=offline_strict"], repo)
    assert exp.returncode == 0, exp.stderr[-2000:]
    assert "remembered: researcherbench/systems=my_systems (from overrides.yaml" in exp.stderr
    # a -S selection that leaves the benchmark out skips the override with a note, as compose does; conf/'s file
    # stays as compose wrote it
    remembered = (repo / "conf" / "remembered" / "overrides.yaml").read_text()
    left_out = run([*DVC, "exp", "run", "--dry", "-S", "benchmarks=[deepscholar]"], repo)
    assert left_out.returncode == 0, left_out.stderr[-2000:]
    assert ("remembered: researcherbench/systems=my_systems not applied: benchmark researcherbench is not selected"
            in left_out.stderr and "overrides.yaml" in left_out.stderr)
    assert "Running stage 'system@deepscholar." in left_out.stdout and "researcherbench" not in left_out.stdout
    assert (repo / "conf" / "remembered" / "overrides.yaml").read_text() == remembered


# ------------------------------------------------------------------------------ item 5: no key fails early


@pytest.mark.integration
def test_no_key_stops_dvc_repro_at_its_first_stage(repo: Path) -> None:
    """`reportbench compose judge=llm`, then `dvc repro` without OPENAI_API_KEY: the first stage that reads
    params.yaml exits 2 with the one-line message naming the variable; no release or system stage does work."""
    run_ok([*RB, "compose", "judge=llm"], repo)
    proc = run([*DVC, "repro"], repo, OPENAI_API_KEY=None)
    assert proc.returncode != 0
    errors = error_lines(proc.stderr)
    assert len(errors) == 1, proc.stderr[-3000:]
    assert "OPENAI_API_KEY not set" in errors[0] and "Fix: set OPENAI_API_KEY in the environment" in errors[0]
    ran = stages_run(proc.stdout)
    assert len(ran) == 1, ran
    assert not (repo / "data/releases").exists() or not any((repo / "data/releases").rglob("release.json"))


@pytest.mark.core
def test_every_configured_judge_role_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    from reportbench import preflight

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000")
    params = config.load_params()
    params["judge"] = {**params["judge"], "backend": "litellm", "model": "openai/gpt-4o", "api_base": None}
    preflight.check_params(params, credentials=True)  # the key is there
    params["judge"]["task_models"] = {"nugget_assign": "anthropic/claude-sonnet-4-5"}
    with pytest.raises(FatalJudgeError, match=r"ANTHROPIC_API_KEY not set for judge.task_models.nugget_assign"):
        preflight.check_params(params, credentials=True)
    params["judge"]["task_models"] = {}
    members = {"main": {}, "second": {"model": "anthropic/claude-sonnet-4-5"}}
    params["benchmarks"]["deer"] = {**params["benchmarks"]["deer"], "judges": members}
    with pytest.raises(FatalJudgeError, match=r"ANTHROPIC_API_KEY not set for benchmarks.deer.judges.second.model"):
        preflight.check_params(params, credentials=True)
    params["benchmarks"]["deer"]["judges"] = {"main": {}, "second": {"api_base": "http://127.0.0.1:9/v1"}}
    preflight.check_params(params, credentials=True)  # a self-hosted endpoint needs no key


@pytest.mark.core
def test_the_provider_table_agrees_with_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    """preflight.PROVIDER_KEYS (checked without importing litellm) names exactly what litellm asks for."""
    from reportbench import preflight
    from reportbench.judges.litellm_loader import _litellm

    for name in preflight.PROVIDER_KEYS.values():
        monkeypatch.delenv(name, raising=False)
    litellm = _litellm()
    for provider, name in preflight.PROVIDER_KEYS.items():
        missing = litellm.validate_environment(model=f"{provider}/some-model").get("missing_keys")
        assert missing == [name], (provider, missing)


@pytest.mark.integration
def test_choosing_a_group_of_an_unselected_benchmark_names_the_fix(tmp_path: Path) -> None:
    """Hydra's "Could not override 'researcherbench/systems'" used to suggest `+researcherbench/systems=...`."""
    from reportbench.stage_errors import one_line_error

    with pytest.raises(Exception) as info:
        config.compose_params(["benchmarks=[deepscholar]", "researcherbench/systems=demo"], tmp_path / "p.yaml")
    line = one_line_error(info.value) or ""
    assert "benchmark researcherbench is not selected" in line and "'benchmarks=[deepscholar,researcherbench]'" in line
    assert "+researcherbench" not in line
