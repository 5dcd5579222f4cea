"""Where the default `dvc repro` spends its time: stage count, per-script start-up, DVC's overhead, wall time.

Run from the repo root with the venv active:  `python bench/pipeline_startup.py [--repeat 3] [--no-repro]`

What it measures, and how (generic: it reads whatever dvc.yaml and stages/*.py are current):

1. **Stages**: `dvc stage list` in a fresh copy of the repo (one line per expanded stage).
2. **Start-up per stage script**: wall time of `python stages/<s>.py --help`, best of `--repeat`, minus a bare
   `python -c pass`. `--help` runs every top-level import and the argument parser, then exits before any work,
   so it is the fixed cost each stage process pays before doing anything (imports a stage makes lazily inside
   its function are not included; they show up in the per-stage run time below). The heaviest top-level
   imports come from `python -X importtime` on the same command.
3. **Default run**: the repo's files (`git ls-files --cached --others --exclude-standard`, i.e. tracked plus new
   not-ignored files, as they are in the working tree) are copied to a temp dir with `git init` and a copy of
   `.dvc/config` (no `dvc init`, no cache: a cold run), then `dvc repro` is timed, then `--noop-runs` more
   (no-ops: best, median and every value are printed).
4. **CPU**: user + sys seconds of `dvc repro` and everything it waited for (`resource.getrusage(RUSAGE_CHILDREN)`
   before and after), the main figure on a shared machine (wall time there is inflated by other load); the
   1-minute load average is printed with every figure.
5. **Per-stage cost and DVC's own overhead**: during the cold run `python` on PATH is a shell shim that logs
   the start/end and the CPU (`times`) of every stage command, so the table shows each script's mean run time,
   the five slowest stage runs are listed, and DVC's overhead is the wall time minus the time spent inside
   stage commands, per stage run. (Stage commands that do not start with `python` are not timed and count as
   DVC overhead.)
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_IMPORT_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|( *)(\S+)")


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def _timed(cmd: list[str], cwd: Path, repeat: int) -> float:
    """Best-of-`repeat` wall time (the least disturbed by other load on a shared machine)."""
    best = float("inf")
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        _run(cmd, cwd)
        best = min(best, time.perf_counter() - t0)
    return best


def top_imports(script: Path, cwd: Path, n: int = 3) -> str:
    """The `n` heaviest top-level imports of `python -X importtime <script> --help` (cumulative ms)."""
    proc = _run([sys.executable, "-X", "importtime", str(script), "--help"], cwd)
    tops: list[tuple[int, str]] = []
    for line in proc.stderr.splitlines():
        m = _IMPORT_LINE.match(line)
        if m and len(m.group(3)) == 1:  # one space after '|': imported by the script itself
            tops.append((int(m.group(2)), m.group(4)))
    tops.sort(reverse=True)
    return ", ".join(f"{name} {us / 1000:.0f}ms" for us, name in tops[:n])


def copy_repo(dest: Path, rev: str | None = None) -> int:
    """Copy the working tree's tracked and new (not ignored) files, or the files of commit `rev` (useful
    while the working tree is mid-edit); `git init`; copy `.dvc/config`."""
    n = 0
    if rev is not None:
        archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        n = len(_run(["git", "ls-tree", "-r", "--name-only", rev], ROOT).stdout.splitlines())
    listed = (
        ""
        if rev is not None
        else _run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], ROOT).stdout
    )
    for rel in filter(None, listed.split("\0")):
        src = ROOT / rel
        if not src.is_file():  # deleted in the working tree
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)
        n += 1
    (dest / ".dvc").mkdir(exist_ok=True)
    for name in ("config", ".gitignore"):
        if (ROOT / ".dvc" / name).is_file():
            shutil.copy2(ROOT / ".dvc" / name, dest / ".dvc" / name)
    _run(["git", "init", "-q"], dest)
    return n


def python_shim(bindir: Path, log: Path) -> None:
    """A `python` first on PATH that logs start/end (ns), the children's CPU (`times`, second line: user and
    sys of the stage's python) and the arguments of each stage command."""
    bindir.mkdir(parents=True, exist_ok=True)
    shim = bindir / "python"
    shim.write_text(
        "#!/bin/sh\n"
        "s=$(date +%s%N)\n"
        f'"{sys.executable}" "$@"\n'
        "rc=$?\n"
        "e=$(date +%s%N)\n"
        f"times > '{log}.$$'\n"  # no subshell: a forked shell's `times` starts from zero
        f"c=$(tail -n 1 '{log}.$$' | tr ' ' ,); rm -f '{log}.$$'\n"
        f'printf \'%s %s %s %s\\n\' "$s" "$e" "$c" "$*" >> \'{log}\'\n'
        "exit $rc\n"
    )
    shim.chmod(0o755)


_TIMES = re.compile(r"(?:(\d+)m)?([\d.]+)s")


def shell_times_cpu(field: str) -> float:
    """`0m1.23s,0m0.20s` (a shell's `times` line) -> user + sys seconds."""
    return sum(int(m or 0) * 60 + float(sec) for m, sec in _TIMES.findall(field))


# stage script -> the dvc.yaml stage it runs (for the labels of the slowest stage runs)
SCRIPT_STAGE = {
    "build_release": "release",
    "run_system": "system",
    "fetch_pages": "fetch",
    "build_site": "site",
    "code_digest": "code",
}


def stage_label(cmd: list[str]) -> str:
    """A readable name for one stage command, like its dvc.yaml name: stage@benchmark.system.member."""
    script = next((Path(c).name.removesuffix(".py") for c in cmd if c.endswith(".py")), " ".join(cmd[:2]))
    keys = [cmd[i + 1] for i, c in enumerate(cmd[:-1]) if c in ("--benchmark", "--system", "--member")]
    return SCRIPT_STAGE.get(script, script) + ("@" + ".".join(keys) if keys else "")


def cpu_children() -> float:
    """User + sys seconds of every waited-for descendant of this process so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def load() -> str:
    return f"load average {os.getloadavg()[0]:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="start-up timings: best of N")
    ap.add_argument("--noop-runs", type=int, default=5, help="no-op `dvc repro` runs after the cold one")
    ap.add_argument("--no-repro", action="store_true", help="skip the timed dvc repro runs")
    ap.add_argument("--rev", help="copy this commit (e.g. HEAD) instead of the working tree")
    ap.add_argument("--keep", action="store_true", help="keep the temp copy (its path is printed)")
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="rb-startup-"))
    work = tmp / "repo"
    work.mkdir()
    n_files = copy_repo(work, args.rev)
    dvc = shutil.which("dvc") or "dvc"
    listing = _run([dvc, "stage", "list"], work)
    stages = [ln.split()[0] for ln in listing.stdout.splitlines() if ln.strip()]
    print(f"copied {n_files} files ({args.rev or 'working tree'}) to {work}")
    if listing.returncode != 0:
        print(f"dvc stage list failed: {listing.stderr.strip()[-1500:]}", file=sys.stderr)
    print(f"stages in dvc.yaml: {len(stages)}")

    bare = _timed([sys.executable, "-c", "pass"], work, args.repeat)
    scripts = sorted((work / "stages").glob("*.py"))
    startup = {s.name: _timed([sys.executable, str(s), "--help"], work, args.repeat) - bare for s in scripts}
    heavy = {s.name: top_imports(s, work) for s in scripts}

    runs: dict[str, list[float]] = defaultdict(list)
    per_run: list[tuple[float, float, str]] = []  # (wall, cpu, label) of every stage command
    wall = noop = cpu = noop_cpu = None
    load_run = load_noop = ""
    ok = True
    if not args.no_repro:
        log = tmp / "stage_times.log"
        python_shim(tmp / "bin", log)
        env = {**os.environ, "PATH": f"{tmp / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "DVC_NO_ANALYTICS": "1"}
        load_run = load()
        c0, t0 = cpu_children(), time.perf_counter()
        proc = _run([dvc, "repro"], work, env)
        wall, cpu = time.perf_counter() - t0, cpu_children() - c0
        load_run += f" at start, {load()} at end"
        ok = proc.returncode == 0
        if not ok:
            print(f"dvc repro failed (rc={proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}", file=sys.stderr)
        n_logged = len(log.read_text().splitlines()) if log.exists() else 0
        noops = []  # (wall, cpu): nothing to do, so all the spread is the machine's noise
        for _ in range(max(1, args.noop_runs)):
            c0, t0 = cpu_children(), time.perf_counter()
            _run([dvc, "repro"], work, env)
            noops.append((time.perf_counter() - t0, cpu_children() - c0))
        noop, noop_cpu = min(noops)
        load_noop = load()
        for line in (log.read_text().splitlines() if log.exists() else [])[:n_logged]:
            start, end, times, *cmd = line.split()
            script = next((Path(c).name for c in cmd if c.endswith(".py")), " ".join(cmd[:2]))
            secs = (int(end) - int(start)) / 1e9
            runs[script].append(secs)
            per_run.append((secs, shell_times_cpu(times), stage_label(cmd)))

    print(f"\nbare interpreter start-up: {bare:.2f}s (subtracted below)\n")
    print(f"| {'stage script':<22} | start-up (s) | runs | mean run (s) | heaviest top-level imports")
    print(f"|{'-' * 24}|-------------|------|--------------|---------------------------")
    for name in sorted(set(startup) | set(runs)):
        r = runs.get(name, [])
        mean = f"{statistics.mean(r):12.2f}" if r else f"{'-':>12}"
        print(f"| {name:<22} | {startup.get(name, float('nan')):11.2f} | {len(r):4d} | {mean} | {heavy.get(name, '')}")
    if wall is not None and noop is not None:
        in_stages = sum(sum(v) for v in runs.values())
        n_runs = sum(len(v) for v in runs.values())
        state = "" if ok else " (FAILED, see above)"
        print("\nfive slowest stage runs (wall s, cpu s):")
        for secs, c, label in sorted(per_run, reverse=True)[:5]:
            print(f"  {label:<48} {secs:6.2f} {c:6.2f}")
        print(f"\nstages: {len(stages)} in dvc.yaml, {n_runs} ran")
        print(f"default `dvc repro` (cold){state}: {wall:.1f}s wall, {cpu:.1f}s CPU (user+sys) [{load_run}]")
        stage_cpu = sum(c for _, c, _ in per_run)
        print(
            f"  {in_stages:.1f}s wall and {stage_cpu:.1f}s CPU inside {n_runs} stage commands; "
            f"DVC's own CPU {cpu - stage_cpu:.1f}s ({(cpu - stage_cpu) / max(1, n_runs):.2f}s per stage run)"
        )
        if n_runs:
            per = (wall - in_stages) / n_runs
            print(f"DVC overhead: {wall - in_stages:.1f}s ({per:.2f}s per stage run)")
            fixed = sum(startup.get(k, 0.0) * len(v) for k, v in runs.items()) + bare * n_runs
            print(f"interpreter + top-level import start-up across stage runs: {fixed:.1f}s")
        print(
            f"no-op `dvc repro` (best of {len(noops)}): {noop:.2f}s wall, {noop_cpu:.2f}s CPU "
            f"({noop / max(1, len(stages)):.3f}s per stage); median {statistics.median(w for w, _ in noops):.2f}s, "
            f"all: {' '.join(f'{w:.2f}' for w, _ in noops)} [{load_noop}]"
        )
    if args.keep:
        print(f"kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
