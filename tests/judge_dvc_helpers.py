"""Shared by the judge-reliability DVC tests (test_judge_retry_dvc.py, test_kill_judge.py); not a test module.

A small real pipeline in a temp copy of the working tree: DeepScholar's demo release, one system
(careful_writer), the stub judge on a loopback server run by the test, so the test can count and match
every call by its request digest (`StubServer.chat_log`)."""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dvc_helpers import run_ok, subprocess_env
from reportbench.config import compose_params, composed_params
from reportbench.stub_server import default_responder
from spine_helpers import refresh_plan, run_benchmark

SKIP_TOP = {".venv", ".git", ".pytest_cache", ".ruff_cache", ".reportbench", "outputs", "multirun", "data", "metrics"}
KEEP_DATA = ("data/demo",)
STAGE = "judge@deepscholar"  # every deepscholar system's judging, one stage
TARGET = "score@deepscholar"  # release, system, judge, score: not the stages that judge again (agreement)
JUDGMENTS = Path("data/judgments/deepscholar/demo/careful_writer/main")
USAGE = Path("metrics/deepscholar/demo/usage/careful_writer.main.json")
SYSTEMS_JSON = Path("metrics/deepscholar/demo/systems.json")
DVC = [sys.executable, "-m", "dvc"]
LABELS = ("support", "partial_support", "not_support")


def copy_repo(src: Path, dst: Path) -> Path:
    """The working tree without venv, git, caches and generated outputs (only the shipped demo data), `git init`."""

    def ignore(folder: str, names: list[str]) -> list[str]:
        rel = Path(folder).relative_to(src)
        skip = [n for n in names if n == "__pycache__"]
        if rel == Path("."):
            skip += [n for n in names if n in SKIP_TOP or n == "dvc.lock"]
        if rel == Path(".dvc"):
            skip += [n for n in names if n in ("cache", "tmp")]
        return skip

    shutil.copytree(src, dst, ignore=ignore)
    for keep in KEEP_DATA:
        shutil.copytree(src / keep, dst / keep)
    (dst / "conf" / "deepscholar" / "systems" / "one.yaml").write_text(
        "# @package benchmarks.deepscholar.systems\n"
        "careful_writer:\n  kind: folder\n  path: data/demo/deepscholar/systems/careful_writer\n  format: auto\n"
    )
    run_ok(["git", "init", "-q"], dst)
    return dst


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def make_responder(state: dict[str, bool]) -> Callable[[list[dict[str, Any]], dict[str, Any] | None], str]:
    """Valid answers for every DeepScholar judge prompt; while `state['prose']`, about 1 in 12 support
    questions gets a prose answer that does not parse (the same one every time: a deterministic judge)."""

    def responder(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
        user = str(messages[-1].get("content", ""))
        m = re.search(r"label each of the (\d+) nuggets", user)
        if m:
            rng = random.Random(user)
            return json.dumps({"labels": [rng.choice(LABELS) for _ in range(int(m.group(1)))]})
        if state.get("prose") and response_format and "support" in json.dumps(response_format) and _h(user) % 12 == 0:
            return "I believe the citation supports the sentence."
        return default_responder(messages, response_format)

    return responder


def overrides(base_url: str, *extra: str) -> list[str]:
    return [
        "benchmarks=[deepscholar]",
        "deepscholar/systems=one",
        "judge=stub",
        f"judge.api_base={base_url}",
        "judge.runtime.max_retries=0",
        "judge.runtime.parse_retries=0",  # one request per item: the stub log counts items
        "judge.runtime.backoff_base_s=0.01",
        "judge.runtime.timeout_s=5",
        "judge.runtime.progress=false",
        *extra,
    ]


def compose(repo: Path, base_url: str, *extra: str) -> None:
    compose_params(overrides(base_url, *extra), out=repo / "params.yaml", conf_dir=repo / "conf")


def dvc(repo: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*DVC, *args], cwd=repo, env=subprocess_env(), capture_output=True, text=True, timeout=timeout
    )


def metrics(repo: Path) -> dict[str, Any]:
    return json.loads((repo / SYSTEMS_JSON).read_text())["careful_writer"]["metrics"]


def in_process_metrics(repo: Path, base_url: str, out: Path) -> dict[str, Any]:
    """The same pipeline through the stage functions, without DVC or a response cache: the reference result.
    The working directory must be `repo` (params hold repo-relative paths)."""
    params = composed_params(overrides(base_url), conf_dir=repo / "conf")
    params["judge"]["runtime"]["cache_path"] = None
    root = run_benchmark(refresh_plan(params), "deepscholar", out)
    return json.loads((root / "metrics" / "systems.json").read_text())["careful_writer"]["metrics"]
