"""What keeping failed judge runs out of DVC costs a no-op `dvc repro` (docs/reliability.md).

Run from the repo root with the venv active:  `python bench/judge_failure_noop.py [--repeat 3]`

A small pipeline (DeepScholar demo release, one system, the offline judge: release, system, judge, score) in a
temp copy of the repo is reproduced once (`dvc repro score@deepscholar`), then a no-op of it is timed `--repeat`
times with the mechanism we use (a judge stage with unanswered calls exits 3, so DVC records nothing; complete
stages are ordinary stages). For comparison the same no-op is timed with `always_changed: true` on the judge stages (the
alternative that reruns every judge stage on every repro). Prints both figures.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SKIP = {".venv", ".git", ".pytest_cache", ".ruff_cache", ".reportbench", "outputs", "multirun", "data", "metrics"}
ONE_SYSTEM = (
    "# @package benchmarks.deepscholar.systems\n"
    "careful_writer:\n  kind: folder\n  path: data/demo/deepscholar/systems/careful_writer\n  format: auto\n"
)


def _copy(src: Path, dst: Path) -> Path:
    def ignore(folder: str, names: list[str]) -> list[str]:
        top = Path(folder) == src
        return [n for n in names if n == "__pycache__" or (top and (n in SKIP or n == "dvc.lock"))]

    shutil.copytree(src, dst, ignore=ignore)
    shutil.copytree(src / "data" / "demo", dst / "data" / "demo")
    (dst / "conf" / "deepscholar" / "systems" / "one.yaml").write_text(ONE_SYSTEM)
    subprocess.run(["git", "init", "-q"], cwd=dst, check=True)
    return dst


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_MODE="PRODUCTION", DVC_NO_ANALYTICS="1")
    return env


def _repro(repo: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "dvc", "repro", "score@deepscholar"],
        cwd=repo,
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - t0, proc.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from reportbench.config import compose_params

    with tempfile.TemporaryDirectory(prefix="rb-noop-") as tmp:
        repo = _copy(Path.cwd(), Path(tmp) / "repo")
        overrides = ["benchmarks=[deepscholar]", "deepscholar/systems=one", "judge.runtime.progress=false"]
        compose_params(overrides, out=repo / "params.yaml", conf_dir=repo / "conf")
        cold, _ = _repro(repo)
        ours = [_repro(repo)[0] for _ in range(args.repeat)]
        dvc_yaml = repo / "dvc.yaml"
        text = dvc_yaml.read_text()
        marker = "  judge:\n    foreach: ${plan.judges}\n    do:\n"
        if marker not in text:
            print("dvc.yaml's judge stage has changed shape; update this script", file=sys.stderr)
            return 1
        dvc_yaml.write_text(text.replace(marker, marker + "      always_changed: true\n"))
        _repro(repo)
        runs = [_repro(repo) for _ in range(args.repeat)]
        ran = sorted(set(re.findall(r"Running stage '([^']+)'", runs[-1][1])))
    print(f"cold dvc repro (4 stages): {cold:.2f} s")
    print(f"no-op dvc repro, exit-code mechanism: median {statistics.median(ours):.2f} s {[round(t, 2) for t in ours]}")
    times = [t for t, _ in runs]
    print(f"no-op dvc repro, always_changed judge: median {statistics.median(times):.2f} s (reruns {', '.join(ran)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
