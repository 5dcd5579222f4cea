"""The open-source agents through `dvc repro`: each kind on a demo benchmark, its adapter in its own venv, its LLM
calls through reportbench's budget proxy to the scripted stub, its searches through the search proxy to the
search stub; the reports parsed, scored by the offline judge and on the leaderboard.

STORM runs on the DeepScholar demo (as in DeepScholar-bench's Table 2); the three others each on another
benchmark's demo. Runs in a copy of the working tree with `git init`, so it never touches the repository; the
agent venvs come from the shared cache (tests/agent_stubs.agent_python: built once per CI run).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent_stubs import ScriptedLLM, SearchStub, agent_python
from dvc_helpers import copy_tree, copy_working_tree, run_ok, subprocess_env
from reportbench.config import compose_params
from test_agent_gpt_researcher import gptr_script
from test_agent_open_deep_research import odr_script
from test_agent_smolagents_deep_research import smol_script
from test_agent_storm import OFFLINE as STORM_OFFLINE
from test_agent_storm import storm_script

pytestmark = pytest.mark.integration
NEEDS_AGENT_VENV = True  # run last: CI builds the venvs in the background meanwhile (tests/conftest.py)

CASES: list[tuple[str, str, Callable[[dict[str, Any]], dict[str, Any]], dict[str, Any]]] = [
    ("storm", "deepscholar", storm_script, STORM_OFFLINE),
    ("smolagents_deep_research", "researcherbench", smol_script, {}),
    ("open_deep_research", "liveresearchbench", odr_script, {}),
    ("gpt_researcher", "deer", gptr_script, {"settings": {"COMPRESSION_THRESHOLD": "0"}}),
]


@pytest.mark.parametrize(("kind", "bench", "script", "options"), CASES, ids=[c[0] for c in CASES])
def test_oss_agent_through_dvc_repro_lands_on_the_leaderboard(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    kind: str, bench: str, script: Any, options: dict[str, Any],
) -> None:
    py = Path(os.path.abspath(agent_python(kind)))  # the shared venv, built on first use (abspath: not resolved)
    repo = copy_tree(repo_root, tmp_path / "repo")
    run_ok(["git", "init", "-q"], repo)
    # the stage declares <repo>/.reportbench/agents/<kind>/lock.txt: the copy gets the lock and a link to the venv
    home = repo / ".reportbench" / "agents" / kind
    home.mkdir(parents=True)
    (home / "venv").symlink_to(py.parent.parent, target_is_directory=True)
    shutil.copy(py.parent.parent.parent / "lock.txt", home / "lock.txt")
    # the user's default: no REPORTBENCH_AGENTS_HOME, the stage finds <repo>/.reportbench/agents (issue 32)
    monkeypatch.delenv("REPORTBENCH_AGENTS_HOME", raising=False)
    name = f"stub_{kind}"
    with ScriptedLLM(script) as llm, SearchStub() as search:
        entry = {
            "kind": kind,
            "model": "openai/stub-agent",
            "api_base": llm.base_url,
            "price": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
            "search": {"backend": "tavily", "api_base": f"{search.base_url}/tavily", "max_results": 3},
            "budget": {"llm_calls": 200, "search_calls": 50, "wall_s": 600},
            "concurrency": 2,  # tasks in parallel, as configured for real runs
            "options": options,
            # sandboxed (the default); the stand-in web is the search stub's loopback pages, which the fetch proxy
            # would refuse as loopback: its port is bridged in (tests/test_sandbox_hostile.py: the proxy's refusal)
            "sandbox": {"allow_ports": [search.port]},
        }
        conf = repo / "conf" / bench / "systems" / "agents_stub.yaml"
        conf.write_text(f"# @package benchmarks.{bench}.systems\n" + yaml.safe_dump({name: entry}))
        # one demo task: what is proven (venv, proxies, report parsed, judged, ranked) does not grow with tasks
        overrides = [f"benchmarks=[{bench}]", f"{bench}/systems=agents_stub", f"benchmarks.{bench}.release.max_tasks=1"]
        compose_params(overrides, out=repo / "params.yaml", conf_dir=repo / "conf")
        run_ok([sys.executable, "-m", "dvc", "repro", f"score@{bench}"], repo, timeout=1500)
        assert llm.chat_bodies() and search.search_count() > 0
        pages = f"{search.base_url}/page/"
    run = repo / "data" / "runs" / bench / "demo" / name
    outcomes = [json.loads(line) for line in (run / "outcomes.jsonl").read_text().splitlines()]
    records = [json.loads(p.read_text()) for p in sorted((run / "agent").glob("*.json"))]
    assert len(outcomes) == 1 and all(o["status"] == "ok" for o in outcomes), outcomes
    assert len(records) == len(outcomes)
    assert all(r["outcome"] == "ok" and r["queries"] and r["usage"]["llm_calls"] > 0 for r in records)
    # the parsed report: its sentences cite, by number, pages the agent found through our search proxy
    parsed = [json.loads(line) for line in (run / "reports.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in parsed] == [o["task_id"] for o in outcomes]
    for report in parsed:
        numbered = {k for sent in report["sentences"] for k in sent["citation_keys"] if k.isdigit()}  # not links
        assert numbered and not report["unresolved_citations"], report
        assert all(report["sources"][k]["url"].startswith(pages) for k in numbered), report["sources"]
    if kind == "storm":  # offline STORM is labelled, never passed off as STORM as published (docs/agents.md §11.1)
        assert records[0]["agent_version"] == "knowledge-storm 1.1.1 (encoder: hashed)"
        assert "how agents verify citations" in records[0]["queries"]  # the scripted question-asker's query
        assert "Verification" in {sent["section"] for sent in parsed[0]["sentences"]}  # the scripted outline
    box = json.loads((run / "sandbox.json").read_text())
    assert box["backend"] == "bwrap" and box["fetch_proxy"] and box["tasks"][outcomes[0]["task_id"]]["exit"] == 0, box
    assert json.loads((repo / "metrics" / bench / "demo" / "systems.json").read_text())[name]["sandbox"] == "bwrap"
    board = json.loads((repo / "metrics" / bench / "demo" / "leaderboard.json").read_text())
    rows = [row for row in board["rows"] if row["system"] == name]
    assert len(rows) == 1 and rows[0]["n_tasks"] == len(outcomes) and rows[0]["n_missing_reports"] == 0
    # the variant travels (issue 35): wherever the row scores, it says how it departs from the agent as published
    variant = {"storm": "encoder: hashed", "smolagents_deep_research": "tools: 2 of ours; prompt: ours"}.get(kind)
    assert records[0]["variant"] == variant and rows[0].get("variant") == variant
    if variant:
        label = f"{name} [{variant}]"
        mdir = repo / "metrics" / bench / "demo"
        assert f"| {label} |" in (mdir / "leaderboard.md").read_text()
        assert f"{label}," in (mdir / "leaderboard.csv").read_text()
        assert f">{label}<" in (mdir / "leaderboard.html").read_text()
        assert json.loads((mdir / "systems.json").read_text())[name]["label"] == label
        assert (mdir / "summary" / f"{label}.json").is_file() and not (mdir / "summary" / f"{name}.json").exists()
        assert label in next(iter(json.loads((mdir / "brief.json").read_text()).values()))
        assert label in run_ok([sys.executable, "-m", "dvc", "metrics", "show"], repo).stdout


def _serve(cmd: list[str], cwd: Path) -> tuple[subprocess.Popen[str], str]:
    """Start a documented loopback server (`reportbench stub-server` / `stub-search`); (process, its base URL)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # `listening on <url> ...` once ready (blocks until then; EOF if it died)
    if not line.startswith("listening on "):
        proc.kill()
        pytest.fail(f"{' '.join(cmd)} did not start: {line}{proc.stdout.read()[-2000:]}")
    return proc, line.split()[2].removesuffix("/v1")


DOC_RECIPE = "An agent kind tried offline, end to end"


def documented_recipe(repo: Path) -> list[str]:
    """The shell lines of docs/agents.md's offline agent recipe (the first bash block after its heading line)."""
    text = (repo / "docs" / "agents.md").read_text()
    assert DOC_RECIPE in text, f"docs/agents.md lost its recipe {DOC_RECIPE!r}"
    block = text[text.index(DOC_RECIPE):].split("```bash\n", 1)[1].split("\n```", 1)[0]
    return block.splitlines()


def test_the_documented_agent_path_with_the_default_home(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/agents.md's offline recipe run as written (issue 32): `reportbench agents install storm`, the documented
    stubs (`reportbench stub-server`, `reportbench stub-search`; on free ports, each documented port replaced by
    the one it got), the system file, `dvc exp run -S`; no REPORTBENCH_AGENTS_HOME anywhere. Every task an `ok`,
    scored report (it was FileNotFoundError for the relative `.reportbench/agents/storm/venv/bin/python`, with the
    stage green).

    The venv is CI's one shared build, placed where `install` puts it in this clone (its venv a link, its lock and
    build record copies): `reportbench agents install storm` then finds it current, as on a user's second call."""
    shared = Path(os.path.abspath(agent_python("storm"))).parent.parent.parent  # <shared home>/storm
    monkeypatch.delenv("REPORTBENCH_AGENTS_HOME", raising=False)
    repo = copy_working_tree(repo_root, tmp_path / "clone")
    home = repo / ".reportbench" / "agents" / "storm"
    home.mkdir(parents=True)
    (home / "venv").symlink_to(shared / "venv", target_is_directory=True)
    for name in ("lock.txt", "build.json"):
        shutil.copy(shared / name, home / name)
    lines = documented_recipe(repo)
    servers: list[subprocess.Popen[str]] = []
    urls: dict[str, str] = {}  # documented http://127.0.0.1:<port> -> the server's
    ran: list[str] = []
    try:
        while lines:
            line = lines.pop(0)
            if line.endswith(" &"):  # a documented server, on a free port
                argv = shlex.split(line[:-2])
                port = argv[argv.index("--port") + 1]
                argv[argv.index("--port") + 1] = "0"
                proc, url = _serve(argv, repo)
                servers.append(proc)
                urls[f"http://127.0.0.1:{port}"] = url
            elif "<<'EOF'" in line:  # cat > FILE <<'EOF' ... EOF
                target = repo / shlex.split(line)[2]
                body = lines[: lines.index("EOF")]
                del lines[: len(body) + 1]
                text = "\n".join(body) + "\n"
                for documented, actual in urls.items():
                    text = text.replace(documented, actual)
                target.write_text(text)
            else:
                out = run_ok(shlex.split(line), repo, timeout=1500)
                if line.startswith("reportbench agents install"):  # the clone's own home, absolute
                    assert f"lock {home / 'lock.txt'}" in out.stdout, out.stdout
            ran.append(line.split()[0] + " " + line.split()[1])
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(timeout=30)
    assert ran == ["reportbench agents", "reportbench stub-server", "reportbench stub-search", "cat >", "dvc exp"]
    run = repo / "data" / "runs" / "deepscholar" / "demo" / "my_storm"
    outcomes = [json.loads(line) for line in (run / "outcomes.jsonl").read_text().splitlines()]
    assert len(outcomes) == 3 and all(o["status"] == "ok" for o in outcomes), outcomes
    records = [json.loads(p.read_text()) for p in sorted((run / "agent").glob("*.json"))]
    assert [r["outcome"] for r in records] == ["ok"] * 3 and all(r["usage"]["llm_calls"] > 0 for r in records)
    assert all(r["agent_version"] == "knowledge-storm 1.1.1 (encoder: hashed)" for r in records)
    assert len(list((repo / ".reportbench" / "agents" / "runs").glob("*/*.json"))) == 3  # the clone's own home
    board = json.loads((repo / "metrics" / "deepscholar" / "demo" / "leaderboard.json").read_text())
    rows = [row for row in board["rows"] if row["system"] == "my_storm"]
    assert len(rows) == 1 and rows[0]["n_tasks"] == 3 and rows[0]["n_missing_reports"] == 0, rows
