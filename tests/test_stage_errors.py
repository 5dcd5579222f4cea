"""Stage scripts end errors no retry can fix with one clear line and exit code 2, within seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from reportbench import pipeline
from reportbench.config import composed_params

pytestmark = pytest.mark.integration


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_MODE="PRODUCTION", DVC_NO_ANALYTICS="1")
    return env


def test_judge_stage_without_a_key_fails_fast_with_one_message(repo_root: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(repo_root)
    params = composed_params(["judge=llm"], conf_dir=repo_root / "conf")
    params["judge"]["prompts_dir"] = str(repo_root / "prompts")
    params["judge"]["runtime"].update(cache_path=str(tmp_path / "judge.sqlite"), progress=False)
    release, runs = tmp_path / "release", tmp_path / "runs"
    pipeline.build_release(params, "deepscholar", release)
    pipeline.run_system(params, "deepscholar", "careful_writer", release, runs / "careful_writer")  # judged first
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    cmd = [
        sys.executable, str(repo_root / "stages" / "judge.py"), "--benchmark", "deepscholar",
        "--release", str(release), "--runs", str(runs),
        "--out", str(tmp_path / "j"), "--usage", str(tmp_path / "u"),
    ]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    took = time.perf_counter() - t0
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "OPENAI_API_KEY" in errors[0] and "openai/" in errors[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert took < 30, f"took {took:.1f}s"


def test_a_config_error_names_the_key_without_a_traceback(repo_root: Path, tmp_path: Path) -> None:
    params = composed_params(conf_dir=repo_root / "conf")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    cmd = [sys.executable, str(repo_root / "stages" / "build_release.py"), "--benchmark", "nosuch", "--out", "x"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "benchmarks.nosuch" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.core
def test_known_errors_anywhere_in_the_chain_become_one_line() -> None:
    from reportbench.stage_errors import one_line_error
    from reportbench.systems import SystemError_

    try:
        try:
            raise SystemError_("systems.x.max_words: expected a non-negative integer, got 'many'")
        except SystemError_ as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as exc:
        assert one_line_error(exc) == "systems.x.max_words: expected a non-negative integer, got 'many'"
    assert one_line_error(ZeroDivisionError("a bug")) is None  # a bug keeps its traceback in stages
