"""Where the CPU of one documented stub-judge run goes: `dvc exp run -S judge=llm -S judge.model=openai/gpt-4.1`
against `reportbench stub-server` (README, docs/judges.md), split by process.

Run from the repo root with the venv active:  `python bench/exp_run_cpu.py [--exp "-S judge=llm ..."]`

How: the working tree is copied into a temp git repository (bench/pipeline_startup.py `copy_repo`, committed),
`dvc repro` runs once, then the stub server starts, `reportbench compose judge.api_base=…` points the judge at
it and the experiment runs. A `sitecustomize.py` on PYTHONPATH (inherited by DVC and every stage it starts)
appends, at each Python process's exit, its own user + system CPU (`RUSAGE_SELF`, children excluded) and whether
it imported litellm. The experiment's total is `RUSAGE_CHILDREN` before and after (everything it waited for);
"outside Python" is that total minus every Python process logged (git, sh, and DVC's queue daemons if any).
CPU, not wall, is the figure: the machine may be shared. The litellm line is the import alone
(`python -c "import litellm"`, best of 3), so "litellm imports" = that × the processes that imported it.

Why (the CI budget): each judge-changing experiment of tests/test_docs_commands.py costs this much; the figures
printed here are what a cut in DVC's lockfile churn, litellm imports per stage process or stage start-up saves.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline_startup import copy_repo  # noqa: E402 - a sibling script

HOOK = """
import atexit, json, os, resource, sys
def _rb_cpu_log():
    r = resource.getrusage(resource.RUSAGE_SELF)
    with open(os.environ["RB_CPU_LOG"], "a") as f:
        f.write(json.dumps({"argv": sys.argv[:3], "cpu": r.ru_utime + r.ru_stime,
                            "litellm": "litellm" in sys.modules}) + "\\n")
if os.environ.get("RB_CPU_LOG"):
    atexit.register(_rb_cpu_log)
    _rb_real_exit = os._exit
    def _rb_logged_exit(code):  # a finished stage exits by os._exit after its exit hooks (stage_guard.exit_ok)
        _rb_cpu_log()
        _rb_real_exit(code)
    os._exit = _rb_logged_exit
"""


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def kind(rec: dict) -> str:
    """A process's row: DVC itself, a stage script (by name, `+litellm` when it imported it), or the CLI."""
    argv = rec["argv"] or [""]
    name = Path(argv[0]).name
    if argv[0].startswith("stages/"):
        return f"stage {name}" + (" (+litellm)" if rec["litellm"] else "")
    if name in ("dvc", "reportbench") or argv[0].endswith("dvc/__main__.py"):
        return " ".join(["dvc" if "dvc" in name or "dvc" in argv[0] else name, *argv[1:3]])
    return f"python {name}"


def litellm_import_cpu() -> float:
    best = float("inf")
    for _ in range(3):
        before = children_cpu()
        subprocess.run([sys.executable, "-c", "import litellm"], check=True)
        best = min(best, children_cpu() - before)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exp", default="-S judge=llm -S judge.model=openai/gpt-4.1", help="dvc exp run's flags")
    ap.add_argument("--port", type=int, default=18765, help="the stub server's port (loopback)")
    ap.add_argument("--rev", default=None, help="copy this commit's files instead of the working tree (A/B runs)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rb-exp-cpu-") as tmp:
        work, hook_dir, log = Path(tmp) / "repo", Path(tmp) / "hook", Path(tmp) / "cpu.jsonl"
        work.mkdir()
        hook_dir.mkdir()
        (hook_dir / "sitecustomize.py").write_text(HOOK)
        copy_repo(work, args.rev)
        env = {**os.environ, "PYTHONPATH": str(hook_dir), "DVC_NO_ANALYTICS": "1", "OPENAI_API_KEY": "dummy",
               "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@invalid", "GIT_COMMITTER_NAME": "bench",
               "GIT_COMMITTER_EMAIL": "bench@invalid"}
        for cmd in (["git", "add", "-A"], ["git", "commit", "-qm", "bench"], ["dvc", "repro"]):
            subprocess.run(cmd, cwd=work, env=env, check=True, capture_output=True)
        stub = subprocess.Popen(["reportbench", "stub-server", "--port", str(args.port), "--latency-ms", "0"],
                                cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            assert stub.stdout is not None
            print(stub.stdout.readline().strip(), file=sys.stderr)
            subprocess.run(["reportbench", "compose", f"judge.api_base=http://127.0.0.1:{args.port}/v1"], cwd=work,
                           env=env, check=True, capture_output=True)
            log.unlink(missing_ok=True)
            env["RB_CPU_LOG"] = str(log)
            before, t0 = children_cpu(), time.perf_counter()
            proc = subprocess.run(["dvc", "exp", "run", *shlex.split(args.exp)], cwd=work, env=env,
                                  capture_output=True, text=True)
            total, wall = children_cpu() - before, time.perf_counter() - t0
            if proc.returncode != 0:
                print((proc.stdout + proc.stderr)[-3000:], file=sys.stderr)
                return 1
        finally:
            stub.terminate()
            stub.wait(timeout=30)
        rows: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
        litellm_procs = 0
        for line in log.read_text().splitlines():
            rec = json.loads(line)
            rows[kind(rec)][0] += 1
            rows[kind(rec)][1] += rec["cpu"]
            litellm_procs += rec["litellm"]
    logged = sum(cpu for _n, cpu in rows.values())
    per_import = litellm_import_cpu()
    print(f"dvc exp run {args.exp}: {total:.1f} s CPU ({wall:.0f} s wall, load {os.getloadavg()[0]:.1f})")
    for name, (n, cpu) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
        print(f"  {cpu:6.1f} s  {100 * cpu / total:4.0f}%  {n:3d}x  {name}")
    print(f"  {total - logged:6.1f} s  {100 * (total - logged) / total:4.0f}%        outside Python (git, sh, ...)")
    print(f"litellm imports: {litellm_procs} processes x {per_import:.2f} s = {litellm_procs * per_import:.1f} s "
          f"({100 * litellm_procs * per_import / total:.0f}% of the run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
