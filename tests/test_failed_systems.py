"""Issue 32 on the ResearcherBench demo, through the real stage functions in the repository's layout and the site
builder: a system that failed every task is a failed stage (non-zero exit naming the first error); a system that
failed some tasks shows "k failed" with the first reason on every leaderboard output and the site, never a bare 0;
failed is counted apart from missing; the two full systems are ranked... (ResearcherBench has no overall score,
so nothing is ranked and the page says why); and the per-task page holds the value the leaderboard counted
(link_writer's q3: "0 — no_report", the drill-down's leaderboard row equals the leaderboard)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from reportbench import pipeline
from reportbench.plan import judge_units
from spine_helpers import benchmark_params, refresh_plan

pytestmark = pytest.mark.integration

B, R = "researcherbench", "demo"

# A command system: exits 2 (with a message on stderr) for the tasks named in FAIL_TASKS, else copies the demo's
# footnote_writer report for the task.
SYSTEM = r"""
import json, os, shutil, sys
task = json.load(open(sys.argv[1], encoding="utf-8"))
if task["task_id"] in os.environ.get("FAIL_TASKS", "").split(","):
    print("Traceback: my_system crashed on purpose", file=sys.stderr)
    sys.exit(2)
shutil.copy(os.path.join(os.environ["DEMO"], task["task_id"] + ".md"), sys.argv[2])
"""


def command_system(script: Path, repo_root: Path, fail: str) -> dict[str, Any]:
    return {
        "kind": "command",
        "cmd": [sys.executable, str(script), "{task_json}", "{output}"],
        "env": {"FAIL_TASKS": fail, "DEMO": str(repo_root / "data/demo/researcherbench/systems/footnote_writer")},
        "timeout_s": 60,
        "format": "markdown",
    }


def run_in_repo_layout(params: dict[str, Any], root: Path) -> None:
    """Every stage of the benchmark with dvc.yaml's paths under `root` (data/..., metrics/<b>/<R>)."""
    refresh_plan(params)
    release, runs = root / "data/releases" / B / R, root / "data/runs" / B / R
    pipeline.build_release(params, B, release)
    for system in params["plan"]["benchmarks"][B]["systems"]:
        pipeline.run_system(params, B, system, release, runs / system)
    pages = root / "data/pages" / B / R
    pipeline.fetch_stage(params, B, runs, release, pages / "pages.parquet")
    for j in judge_units(params["plan"]).values():
        if j["benchmark"] == B:
            pipeline.run_judge_stage(
                params, B, j["system"], j["member"], release, runs / j["system"],
                root / "data/judgments" / B / R / j["system"] / j["member"],
                root / "metrics" / B / R / "usage" / f"{j['system']}.{j['member']}.json", pages_dir=pages,
            )  # fmt: skip
    judgments, scores = root / "data/judgments" / B / R, root / "data/scores" / B / R
    pipeline.score_stage(params, B, release, runs, judgments, scores, root / "metrics" / B / R)


@pytest.fixture()
def rb_params(repo_root: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.chdir(repo_root)  # params hold repo-relative paths (the demo's systems folders)
    return benchmark_params(repo_root, B)


def test_a_system_that_failed_every_task_fails_its_stage(rb_params: dict, repo_root: Path, tmp_path: Path) -> None:
    from reportbench.systems import AllTasksFailed

    script = tmp_path / "my_system.py"
    script.write_text(SYSTEM)
    rb_params["benchmarks"][B]["systems"]["crash"] = command_system(script, repo_root, "q1,q2,q3")
    refresh_plan(rb_params)
    release = tmp_path / "release"
    pipeline.build_release(rb_params, B, release)
    with pytest.raises(AllTasksFailed) as err:
        pipeline.run_system(rb_params, B, "crash", release, tmp_path / "runs" / "crash")
    msg = str(err.value)
    assert "system@researcherbench.crash: every task failed (3 of 3 failed)" in msg
    assert "task q1: failed: exit code 2; stderr: Traceback: my_system crashed on purpose" in msg
    assert (tmp_path / "runs" / "crash" / "outcomes.jsonl").is_file()  # kept for inspection, named in the message

    # the stage script, as `dvc repro` runs it: exit 2 and the one line, so dvc repro fails
    (tmp_path / "params.yaml").write_text(json.dumps(rb_params))
    proc = subprocess.run(
        [sys.executable, str(repo_root / "stages" / "run_system.py"), "--benchmark", B, "--system", "crash",
         "--release", str(release), "--out", str(tmp_path / "runs2" / "crash")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    line = r"error: system@researcherbench\.crash: every task failed .*task q1: failed: exit code 2"
    assert re.search(line, proc.stderr), proc.stderr[-2000:]
    assert "Traceback (most recent call last)" not in proc.stderr


def test_failed_tasks_and_missing_reports_read_the_same_everywhere(
    rb_params: dict, repo_root: Path, tmp_path: Path
) -> None:
    from reportbench.site.build import build_benchmark_site

    script = tmp_path / "my_system.py"
    script.write_text(SYSTEM)
    rb_params["benchmarks"][B]["systems"]["flaky"] = command_system(script, repo_root, "q3")
    root = tmp_path / "repo"
    run_in_repo_layout(rb_params, root)
    mdir = root / "metrics" / B / R
    board = json.loads((mdir / "leaderboard.json").read_text())
    rows = {r["system"]: r for r in board["rows"]}

    # failed (the system crashed) apart from missing (no report supplied), with the first reason
    flaky, link = rows["flaky"], rows["link_writer"]
    assert (flaky["n_failed_tasks"], flaky["n_no_report"], flaky["n_missing_reports"]) == (1, 0, 1)
    assert (link["n_failed_tasks"], link["n_no_report"]) == (0, 1)
    assert flaky["first_failure"]["task_id"] == "q3" and "exit code 2" in flaky["first_failure"]["reason"]
    # no overall score in ResearcherBench: no row is ranked, and every row says why
    assert all(r["rank"] is None and r["unranked_reason"] for r in board["rows"])
    assert flaky["unranked_reason"].startswith("2/3 tasks: 1 failed (exit code 2)")
    md = (mdir / "leaderboard.md").read_text()
    assert md.startswith("| system |")  # no column of blank ranks
    assert "Not ranked: researcherbench has no overall score" in md
    assert "flaky: 1 of 3 tasks failed, first q3: exit code 2; stderr: Traceback: my_system crashed" in md
    assert "| 3 (1 failed) |" in md and "| 3 (1 no_report) |" in md
    csv = pl.read_csv(mdir / "leaderboard.csv").filter(pl.col("system") == "flaky").to_dicts()[0]
    assert csv["n_failed_tasks"] == 1 and "exit code 2" in csv["first_failure"]
    html = (mdir / "leaderboard.html").read_text()
    assert "Failed tasks" in html and 'failed <span class="cnt">exit code 2</span>' in html

    # one rule for a missing report: ResearcherBench scores it 0, so the per-task table holds 0, with the reason
    scores = pl.read_parquet(root / "data/scores" / B / R / "link_writer.parquet")
    q3 = scores.filter((pl.col("task_id") == "q3") & (pl.col("metric") == "coverage")).to_dicts()[0]
    assert (q3["value"], q3["status"]) == (0.0, "no_report")
    cov = scores.filter(pl.col("metric") == "coverage")["value"].to_list()
    assert sum(cov) / len(cov) == pytest.approx(link["metrics"]["coverage"])  # the drill-down's mean = leaderboard
    fq3 = pl.read_parquet(root / "data/scores" / B / R / "flaky.parquet").filter(
        (pl.col("task_id") == "q3") & (pl.col("metric") == "coverage")
    ).to_dicts()[0]
    assert fq3["value"] == 0.0 and fq3["reason"].startswith("system_failed: failed: exit code 2")
    # a protocol that leaves a missing report undefined keeps NaN (faithfulness: no claims to check)
    faith = scores.filter((pl.col("task_id") == "q3") & (pl.col("metric") == "faithfulness"))["value"][0]
    assert faith != faith

    build_benchmark_site(rb_params, B, root, root / "site")
    sdir = root / "site" / "benchmarks" / B / R
    page = (sdir / "samples" / "link_writer" / "index.html").read_text()
    q3_row = page.split('href="q3.html"')[1].split("</tr>")[0]
    assert re.search(r'data-metric="coverage"[^>]*>0\.000 <span class="cnt ">— no_report</span>', q3_row), q3_row
    board_row = page.split('<tr class="board">')[1].split("</tr>")[0]
    shown = re.search(r'data-metric="coverage"[^>]*><span class="num" data-src="([^"]+)"[^>]*>([0-9.]+)<', board_row)
    assert shown and float(shown.group(2)) == pytest.approx(link["metrics"]["coverage"], abs=5e-4)
    assert shown.group(1) == "metrics/researcherbench/demo/leaderboard.json#/rows/" + str(
        board["rows"].index(link)
    ) + "/metrics/coverage"
    per_task = [float(x) for x in re.findall(r'data-metric="coverage" data-sort="([0-9.]+)" title', page)]
    assert sorted(per_task) == pytest.approx(sorted(cov))  # 0.625, 0.375 and 0 as the mean counted them
    flaky_page = (sdir / "samples" / "flaky" / "index.html").read_text()
    assert '0.000 <span class="cnt fail">— system_failed</span>' in flaky_page
    index = (sdir / "index.html").read_text()
    assert "has no overall score" in index and "Failed tasks" in index and "first failed task q3" in index


CRASH_CONF = """# @package benchmarks.researcherbench.systems
footnote_writer:
  kind: folder
  path: data/demo/researcherbench/systems/footnote_writer
  format: auto
crash:
  kind: command
  cmd: [python, -c, "import sys; print('no model configured', file=sys.stderr); sys.exit(2)", "{task_json}", "{output}"]
  timeout_s: 60
  format: markdown
"""


def test_dvc_repro_stops_at_a_system_that_failed_every_task(reproduced_template: Any, tmp_path: Path) -> None:
    """The user's path: a command system exiting 2 on every task makes `dvc repro` fail at its stage, naming the
    first error, instead of a leaderboard row "partial: 0/3 | 0.000 | 3 no_report"."""
    from dvc_helpers import copy_repo_state, subprocess_env
    from reportbench.config import compose_params

    repo = copy_repo_state(reproduced_template.path, tmp_path / "repo")
    (repo / "conf" / "researcherbench" / "systems" / "crash.yaml").write_text(CRASH_CONF)
    compose_params(["researcherbench/systems=crash"], out=repo / "params.yaml", conf_dir=repo / "conf")
    proc = subprocess.run(
        [sys.executable, "-m", "dvc", "repro", "score@researcherbench"],
        cwd=repo, env=subprocess_env(), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert re.search(
        r"error: system@researcherbench\.crash: every task failed \(3 of 3 failed\); the first, task q1: failed: "
        r"exit code 2; stderr: no model configured", out
    ), out[-3000:]
    board = json.loads((repo / "metrics" / B / R / "leaderboard.json").read_text())
    assert "crash" not in {r["system"] for r in board["rows"]}  # the score stage never ran on it
