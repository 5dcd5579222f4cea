"""A hostile folder system through the full DeepScholar pipeline under a memory cap (issue 26, Done-when).

One folder system holds two ordinary reports, one report with a 100 KB whitespace line and one with 10,000
sentences (all self-authored). `dvc repro score@deepscholar` must finish within 60 s under a 2 GB
address-space limit, score the two ordinary reports and record a reason naming the limit for the others.
Before the bounds, the whitespace line alone took minutes (quadratic reference-heading regex) and the
10k-sentence report grew the offline organisation judge to ~10 GB.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dvc_helpers import subprocess_env
from judge_dvc_helpers import copy_repo
from reportbench.config import compose_params

pytestmark = pytest.mark.integration

CAP_BYTES = 2 * 1024**3
SYSTEM = "hostile"
SENTENCE = "The agent records each tool call before it writes the report section. "


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP_BYTES, CAP_BYTES))


def _hostile_release(repo: Path) -> None:
    """A fourth task (a copy of demo-0003 under a new id) so the folder can hold four reports."""
    demo = repo / "data/demo/deepscholar"
    task = (demo / "tasks/demo-0003.yaml").read_text().replace("demo-0003", "demo-0004")
    (demo / "tasks/demo-0004.yaml").write_text(task)
    shutil.copy(demo / "tasks/demo-0003.tex", demo / "tasks/demo-0004.tex")
    manifest = demo / "release.yaml"
    manifest.write_text(manifest.read_text().replace("  - tasks/demo-0003.yaml\n", "  - tasks/demo-0003.yaml\n"
                                                     "  - tasks/demo-0004.yaml\n"))
    folder = repo / "data/hostile"
    folder.mkdir()
    ordinary = demo / "systems/careful_writer"
    shutil.copy(ordinary / "demo-0001.md", folder / "demo-0001.md")
    shutil.copy(ordinary / "demo-0002.md", folder / "demo-0002.md")
    (folder / "demo-0003.md").write_text(
        "## Related Work\n\n" + " " * 102_400 + "Agents keep traces of their tool calls.\n\n"
        "## References\n[1] A trace paper. https://arxiv.org/abs/2313.01655\n"
    )
    paragraphs = "\n\n".join(SENTENCE * 20 for _ in range(500))  # 10,000 sentences, ~700 KB
    (folder / "demo-0004.md").write_text(f"## Related Work\n\n{paragraphs}\n")
    (repo / "conf/deepscholar/systems/hostile.yaml").write_text(
        f"# @package benchmarks.deepscholar.systems\n{SYSTEM}:\n  kind: folder\n  path: data/hostile\n  format: auto\n"
    )


def test_hostile_folder_system_completes_bounded(repo_root: Path, tmp_path: Path) -> None:
    if not (repo_root / "data/demo/deepscholar").is_dir():
        pytest.skip("no demo release in this checkout")
    repo = copy_repo(repo_root, tmp_path / "repo")
    _hostile_release(repo)
    compose_params(["benchmarks=[deepscholar]", "deepscholar/systems=hostile"], out=repo / "params.yaml",
                   conf_dir=repo / "conf")
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "dvc", "repro", "score@deepscholar"], cwd=repo, env=subprocess_env(),
        capture_output=True, text=True, timeout=300, preexec_fn=_cap,
    )
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert elapsed < 60, f"dvc repro took {elapsed:.0f} s"

    outcomes = {}
    for line in (repo / f"data/runs/deepscholar/demo/{SYSTEM}/outcomes.jsonl").read_text().splitlines():
        row = json.loads(line)
        outcomes[row["task_id"]] = row
    assert {t: o["status"] for t, o in outcomes.items()} == {
        "demo-0001": "ok", "demo-0002": "ok", "demo-0003": "parse_error", "demo-0004": "parse_error",
    }
    assert "max_line_chars" in outcomes["demo-0003"]["reason"]
    assert f"systems.{SYSTEM}.limits.max_line_chars" in outcomes["demo-0003"]["reason"]
    # splitting stops one past the limit (issue 33): the count is a lower bound, not the 10,000 of the file
    assert "sentence count (5,001 or more: counting stopped there)" in outcomes["demo-0004"]["reason"]
    assert f"systems.{SYSTEM}.limits.max_sentences" in outcomes["demo-0004"]["reason"]

    systems = json.loads((repo / "metrics/deepscholar/demo/systems.json").read_text())
    metrics = systems[SYSTEM]["metrics"]
    assert metrics and all(m["n_defined"] == 2 for m in metrics.values()), metrics  # the ordinary two, scored
    print(f"hostile folder system: dvc repro in {elapsed:.1f} s under a {CAP_BYTES // 1024**3} GB address-space cap")
