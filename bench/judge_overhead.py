"""Judge-stage overhead per judgment: the CPU `judge@researchqa` spends outside the judge itself (issue 36 target:
<= 50 us per judgment), on bench/scale.py's ResearchQA-shaped release (N queries with 6-8 rubric items, 3 folder
systems of ~2,000-word reports; one coverage judgment per report), offline judge and loopback stub fast path.

    python bench/judge_overhead.py --n 100,1000                  # offline and stub (fast path, 0 ms latency)
    python bench/judge_overhead.py --n 1000 --work /tmp/jo --runs offline --json
    python bench/judge_overhead.py --n 1000 --work /tmp/jo --runs offline --digests warm   # run folders memoised
    python bench/judge_overhead.py --n 1000 --work /tmp/jo --profile /tmp/jo/judge.prof   # cProfile the stage
    python bench/judge_overhead.py --n 1000 --work /tmp/jo --src /tmp/before/src   # other code, the same runs

The release and the three `system@` runs are built once per N by bench/scale.py's code (kept with `--work`, so a
second run measures the judge stage only; `shift_check: off`: the check is system@'s cost).
Then `pipeline.run_benchmark_judge_stage` runs (the function `stages/judge.py` calls) in a fresh child
process, unit reuse on with an empty unit cache (every unit judged, as on a first run), and the child reports:

- stage CPU: process CPU (all threads) of the stage function, imports done before it excluded (stated apart:
  the per-process constant);
- judge CPU: offline, the CPU inside the judge's calls (it computes without awaiting, so that is exactly its
  own); stub, the CPU of the whole judging phase (`run_judgments_sync`: the client, the event loop, the HTTP
  wire), since interleaved awaiting calls cannot be told apart;
- overhead per judgment = (stage CPU - judge CPU) / judgments, and the slope between two N (the per-judgment
  cost with every per-stage constant cancelled out). A judgment here is one judge call: ResearchQA's coverage
  step asks one call per answer with all of its 6-8 rubric items (the authors' batch of <= 8). The same overhead
  is also shown per rubric item labelled, the unit issue 36 counts ResearchQA's judging in ("~1.35 M coverage
  judgments" = queries x systems x rubric items; its "µs per item" figures are per rubric item).

What the stages before the judge leave (as `dvc repro` leaves it) stays between runs: the sha256 and line layout
of each `reports.jsonl` `system@` wrote (`.reportbench/cache/written-reports.sqlite`: such a file is read without
validating it again, each line's head at its stored offsets), the release `release@` stored validated
(`.reportbench/cache/releases/`, keyed by the release's bytes and the code: after a code change the first run
stores it again, so take `--repeat 2`), and the digest memo as those stages left it (`--digests cold`, copied
right after the build's `system@` stages: the files `system@` memoised as it wrote them, and the code and release
`release@` hashed; code that memoised nothing there starts from what `release@` left).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import scale  # noqa: E402  (bench/scale.py: the release shape, the layout and the stage commands)

MEMO = ".reportbench/cache/digests.sqlite"  # digest.MEMO_PATH, relative to the work dir
AFTER_SYSTEM = ".digests-after-system.sqlite"  # a copy of the memo as the build's system@ stages left it


def _cpu() -> float:
    return time.process_time()  # user + system, all threads of this process


def build(work: Path, n: int, words: int) -> dict[str, Any]:
    """The ResearchQA-shaped release and its 3 system runs in `work` (reused when already there)."""
    import yaml

    done = work / ".built"
    if done.is_file():
        return yaml.safe_load((work / "params.yaml").read_text())
    scale._layout(work)
    folders = scale.make_researchqa(work / "synth", n, words)
    # shift_check off: the check is system@'s cost, not the judge stage's (bench/scale.py times it)
    scale.configure(work, "researchqa", folders, work / "synth")
    off = {"kind": "folder", "format": "auto", "shift_check": "off"}
    systems = {s: {**off, "path": str(d)} for s, d in folders.items()}
    scale._write_yaml(work / "conf/researchqa/systems/demo.yaml", "benchmarks.researchqa.systems", systems)
    params = _compose(work)
    for name, argv, outs in scale.stage_commands(params, "researchqa"):
        if not name.startswith(("release@", "system@")):
            continue
        print(f"[N={n}] {name} ...", file=sys.stderr, flush=True)
        cost = scale.run_measured(name, argv, work, [work / o for o in outs], scale._env())
        if cost.rc:
            raise SystemExit(f"{name} failed (rc {cost.rc}):\n{cost.tail}")
    memo = work / MEMO
    if memo.is_file():  # what system@ memoised of the files it wrote: a first judge run starts from it
        shutil.copyfile(memo, work / AFTER_SYSTEM)
    done.write_text("ok\n")
    return params


def _compose(work: Path) -> dict[str, Any]:
    import yaml

    code = (
        "from pathlib import Path; from reportbench.config import compose_params; "
        "compose_params(['benchmarks=[researchqa]'], Path('params.yaml'), Path('conf'))"
    )
    subprocess.run([sys.executable, "-c", code], cwd=work, check=True, env=scale._env())
    return yaml.safe_load((work / "params.yaml").read_text())


def start_stub(latency_ms: float) -> tuple[subprocess.Popen[str], str]:
    """`reportbench stub-server` (judge-format answers, the default) in its own process on a free port."""
    cmd = [sys.executable, "-m", "reportbench.stub_server", "--port", "0", "--latency-ms", str(latency_ms),
           "--max-seconds", "3600"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=scale._env())
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError(f"stub did not start: {line!r}")
    return proc, line.removeprefix("listening on ")


def measure(
    work: Path, mode: str, url: str | None, profile: Path | None, src: Path | None, digests: str = "cold"
) -> dict[str, Any]:
    """One judge stage in a fresh child process (cwd = work); its figures as a dict. `digests`: cold, the digest
    memo put back as the build's `system@` stages left it (a first run after `system@` wrote the run folders: what
    `system@` memoised of its own files is read, everything else hashed: the code, the release, and the run
    folders when the code that built them memoised nothing); warm, kept (a later run whose run folders did not
    change: the judge config, the code or the release did)."""
    for leftover in ("data/judgments", "metrics/researchqa", ".reportbench/cache/judge-units", ".jo-cache"):
        shutil.rmtree(work / leftover, ignore_errors=True)
    if digests == "cold":  # the memo as the build's system@ stages left it (empty when they memoised nothing)
        (work / MEMO).unlink(missing_ok=True)
        if (work / AFTER_SYSTEM).is_file():
            shutil.copyfile(work / AFTER_SYSTEM, work / MEMO)
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", mode]
    if url:
        argv += ["--url", url]
    if profile:
        argv += ["--profile", str(profile)]
    env = scale._env()
    if src is not None:  # another checkout's code (e.g. the commit before a change): `--src <checkout>/src`
        env["PYTHONPATH"] = str(src.resolve())
    env.pop("REPORTBENCH_UNIT_REUSE", None)  # the default: reuse on (its hashing is part of the stage's cost)
    out = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"judge stage ({mode}) failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def child(mode: str, url: str | None, profile: str | None) -> int:
    """Runs in the work dir: the judge stage, instrumented; prints one JSON line."""
    import logging

    # What the stage imports lazily too (the benchmark's protocol pulls numpy; the judges, the release format): a
    # per-process constant, reported apart from the per-judgment figure.
    from reportbench import pipeline
    from reportbench.benchmarks import get_benchmark
    from reportbench.config import composed_params
    from reportbench.judges import factory, offline, runner  # noqa: F401
    from reportbench.preflight import stage_params
    from reportbench.release import format as release_format  # noqa: F401

    get_benchmark("researchqa")
    imports_cpu = _cpu()
    logging.getLogger("reportbench").setLevel(logging.WARNING)
    if mode == "offline":
        params = stage_params()  # params.yaml as bench/scale.py composed it: the offline judge
    else:
        params = composed_params(["benchmarks=[researchqa]", "judge=stub"], conf_dir=Path("conf"), remembered=False)
        params["judge"]["api_base"] = url
        params["judge"]["runtime"].update(transport="fast", cache_path=".jo-cache/judge.sqlite")
    judge_cpu, phase_cpu = [0.0], [0.0]
    # CPU in the cyclic garbage collector outside the judge's calls (part of the overhead; shown apart)
    in_judge, gc_outside, gc_started = [False], [0.0], [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_started[0] = _cpu()
        elif not in_judge[0]:
            gc_outside[0] += _cpu() - gc_started[0]

    class TimedJudge:
        def __init__(self, judge: Any) -> None:
            self._judge = judge

        def __getattr__(self, name: str) -> Any:
            return getattr(self._judge, name)

        async def __call__(self, *args: Any) -> Any:
            t0 = _cpu()
            in_judge[0] = True  # the offline judge computes without awaiting: nothing else runs meanwhile
            try:
                return await self._judge(*args)
            finally:
                in_judge[0] = False
                judge_cpu[0] += _cpu() - t0

        def __dir__(self) -> list[str]:
            return dir(self._judge)

        @property
        def judge_now(self) -> Any:  # the offline judge's synchronous call (runner.run_computed), timed the same
            inner = self._judge.judge_now  # AttributeError for a judge without one: the runner awaits it

            def timed(*args: Any) -> Any:
                t0 = _cpu()
                in_judge[0] = True
                try:
                    return inner(*args)
                finally:
                    in_judge[0] = False
                    judge_cpu[0] += _cpu() - t0

            return timed

    real_make, real_run = factory.make_judge, runner.run_judgments_sync

    def timed_make(*a: Any, **k: Any) -> Any:
        return TimedJudge(real_make(*a, **k))

    def timed_run(*a: Any, **k: Any) -> Any:
        t0 = _cpu()
        try:
            return real_run(*a, **k)
        finally:
            phase_cpu[0] += _cpu() - t0

    factory.make_judge, runner.run_judgments_sync = timed_make, timed_run  # type: ignore[assignment]
    b = "researchqa"
    r = params["plan"]["benchmarks"][b]["release"]
    args = (params, b, Path(f"data/releases/{b}/{r}"), Path(f"data/runs/{b}/{r}"), Path(f"data/judgments/{b}/{r}"),
            Path(f"metrics/{b}/{r}/usage"))  # fmt: skip
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    import gc

    gc.callbacks.append(on_gc)
    c0, w0 = _cpu(), time.perf_counter()
    summaries = pipeline.run_benchmark_judge_stage(*args, pages_dir=Path(f"data/releases/{b}/{r}"))
    stage_cpu, wall = _cpu() - c0, time.perf_counter() - w0
    gc.callbacks.remove(on_gc)
    if prof is not None:
        prof.disable()
        prof.dump_stats(profile)
    steps = [s for summary in summaries for s in summary["steps"].values()]
    judged = (judge_cpu if mode == "offline" else phase_cpu)[0]
    items = sum(int(s.get("items") or 0) for s in steps)
    labels = _rubric_labels(Path(f"data/judgments/{b}/{r}"))
    print(json.dumps({
        "mode": mode, "judgments": items, "calls": sum(int(s.get("calls") or 0) for s in steps),
        "failed": sum(int(s.get("failed") or 0) for s in steps), "imports_cpu_s": round(imports_cpu, 3),
        "stage_cpu_s": round(stage_cpu, 3), "judge_cpu_s": round(judged, 3), "wall_s": round(wall, 3),
        "overhead_us": round(1e6 * (stage_cpu - judged) / max(items, 1), 1),
        "rubric_items": labels, "overhead_us_per_rubric_item": round(1e6 * (stage_cpu - judged) / max(labels, 1), 1),
        "gc_outside_judge_us": round(1e6 * gc_outside[0] / max(items, 1), 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }))  # fmt: skip
    return 0


def _rubric_labels(judgments_dir: Path) -> int:
    """The rubric items the stage's records label: each coverage judgment (one judge call, one per report) labels
    its batch's items (`input_ids.items`, comma-separated; <= 8 a call, so one call per answer). The issue counts
    ResearchQA's work in these (its "1.35 M coverage judgments" are queries x systems x rubric items), so the
    overhead is shown per call and per rubric item labelled."""
    import polars as pl

    total = 0
    for path in sorted(judgments_dir.rglob("coverage.parquet")):
        ids = pl.read_parquet(path, columns=["input_ids"])["input_ids"].to_list()
        total += sum(len(json.loads(x)["items"].split(",")) for x in ids)
    return total


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", default="100,1000", help="comma list of task counts (3 systems each)")
    p.add_argument("--words", type=int, default=2000)
    p.add_argument("--runs", default="offline,stub", help="offline, stub (fast path) or both")
    p.add_argument("--latency-ms", type=float, default=0.0, help="the stub's latency (default 0: CPU-bound)")
    p.add_argument("--repeat", type=int, default=1, help="runs per cell; the lowest overhead is shown")
    p.add_argument("--work", type=Path, default=None, help="keep the built releases and runs here (reused)")
    p.add_argument("--profile", type=Path, default=None, help="cProfile stats of the (last) stage run here")
    p.add_argument("--src", type=Path, default=None, help="measure the reportbench package under this src/ instead")
    p.add_argument(
        "--digests",
        choices=("cold", "warm"),
        default="cold",
        help="cold (default): the digest memo as system@ left it, as on the first run after system@ (the code "
        "and the release hashed too); warm: memoised by an earlier run (one untimed run first if none is)",
    )
    p.add_argument("--json", action="store_true")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--url", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args.child, args.url, str(args.profile) if args.profile else None)
    base = args.work or Path(tempfile.mkdtemp(prefix="rb-judge-overhead-"))
    rows: list[dict[str, Any]] = []
    try:
        for n in [int(x) for x in args.n.split(",") if x.strip()]:
            work = base.resolve() / f"researchqa-{n}"
            build(work, n, args.words)
            for mode in [m.strip() for m in args.runs.split(",") if m.strip()]:
                proc, url = start_stub(args.latency_ms) if mode == "stub" else (None, None)
                try:
                    if args.digests == "warm" and not (work / MEMO).is_file():
                        measure(work, mode, url, None, args.src, "warm")  # memoises the folders' digests
                    runs = [measure(work, mode, url, args.profile, args.src, args.digests)
                            for _ in range(args.repeat)]  # fmt: skip
                finally:
                    if proc is not None:
                        proc.terminate()
                        proc.wait(10)
                best = min(runs, key=lambda r: r["overhead_us"])
                rows.append({"n": n, "digests": args.digests, **best})
                print(f"[N={n}] {mode}: {best}", file=sys.stderr, flush=True)
    finally:
        if args.work is None:
            shutil.rmtree(base, ignore_errors=True)
    slopes = {}
    for mode in dict.fromkeys(r["mode"] for r in rows):
        cells = sorted((r for r in rows if r["mode"] == mode), key=lambda r: r["judgments"])
        if len(cells) >= 2 and cells[-1]["judgments"] > cells[0]["judgments"]:
            lo, hi = cells[0], cells[-1]
            d_over = (hi["stage_cpu_s"] - hi["judge_cpu_s"]) - (lo["stage_cpu_s"] - lo["judge_cpu_s"])
            slopes[mode] = round(1e6 * d_over / (hi["judgments"] - lo["judgments"]), 1)
            if hi["rubric_items"] > lo["rubric_items"]:
                slopes[f"{mode} per rubric item"] = round(1e6 * d_over / (hi["rubric_items"] - lo["rubric_items"]), 1)
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"rows": rows, "slope_us": slopes, "load": load}, indent=2))
        return 0
    print(f"\njudge@researchqa, 3 folder systems; run-folder digests {args.digests}; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n")  # fmt: skip
    print("| N | judge | judgments (calls) | rubric items labelled | stage CPU | judge CPU | outside the judge, per "
          "judgment | per rubric item | wall | peak RSS |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        judge = "offline" if r["mode"] == "offline" else "stub fast path (judging phase)"
        print(
            f"| {r['n']:,} | {judge} | {r['judgments']:,} | {r['rubric_items']:,} | {r['stage_cpu_s']:.2f} s | "
            f"{r['judge_cpu_s']:.2f} s | **{r['overhead_us']:,.0f} µs** | "
            f"**{r['overhead_us_per_rubric_item']:,.1f} µs** | {r['wall_s']:.1f} s | {r['peak_rss_mb']} MB |"
        )
    for mode, us in slopes.items():
        unit = "rubric item" if mode.endswith(" per rubric item") else "judgment"
        print(f"{mode.removesuffix(' per rubric item')}: marginal overhead between the smallest and largest N: "
              f"{us:,.0f} µs per {unit}")  # fmt: skip
    print(f"per-process constant before the stage (imports): {max(r['imports_cpu_s'] for r in rows):.2f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
