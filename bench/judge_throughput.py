"""Judge throughput per process, three ways in one run, against the loopback stub (200 ms latency):

- litellm path: LLMJudge -> LLMClient -> litellm -> stub (`judge.runtime.transport: litellm`, the default)
- fast path:    LLMJudge -> FastClient (aiohttp) -> stub (`judge.runtime.transport: fast`)
- trivial:      a bare aiohttp loop posting the same request and reading the JSON (no judge layer): the limit

The stub runs in a *separate process* (`python -m reportbench.stub_server`) so it does not compete
with the judge for this process's event loop or GIL. Every call misses the cache (disabled, or a
fresh temp cache with --cache), so this measures the full per-call overhead: prompt render, cache
key, litellm request/response handling, cost, strict parse, record building.

    python bench/judge_throughput.py                 # N=2000, C=256, no cache, all three paths
    python bench/judge_throughput.py --cache --n 4000 --json
    python bench/judge_throughput.py --paths fast     # one path only

Targets on the 2-core dev machine: litellm >= 150 calls/s; fast path >= 3x litellm.

`--stage` measures the whole judge stage instead (`pipeline.run_judge_stage`: load the release and the reports,
build every item, judge, write records and usage), on a ResearchQA-shaped release of N tasks grown from the demo
(8 rubric items per task, one folder system of ~2,000-word reports; self-authored synthetic text):

    python bench/judge_throughput.py --stage --n 1000

- offline judge: the stage's CPU outside the judge itself, per judgment (target <= 50 us);
- stub fast path at 0 ms and at --latency-ms (default 200): calls/s over the whole stage and their ratio
  (target >= 80 %: the stage must not be what limits a slow provider).
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import urllib.request  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from reportbench.judges.llm import LLMJudge  # noqa: E402
from reportbench.judges.runner import format_usage, run_judgments, usage_summary  # noqa: E402
from reportbench.stub_server import StubSupportInput, stub_support_task  # noqa: E402


def start_stub(latency_ms: float, fault_rate: float) -> tuple[subprocess.Popen[str], str]:
    """Start the stub in a child process and return it with its base URL (printed once it listens)."""
    cmd = [
        sys.executable,
        "-m",
        "reportbench.stub_server",
        "--port",
        "0",
        "--latency-ms",
        str(latency_ms),
        "--fault-rate",
        str(fault_rate),
        "--timeout-sleep-s",
        "5",
        "--max-seconds",
        "3600",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError(f"stub did not start: {line!r}")
    return proc, line.removeprefix("listening on ")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def bench(args: argparse.Namespace, base_url: str, workdir: Path, transport: str) -> dict[str, Any]:
    task = stub_support_task(workdir / "prompts")
    cfg = {
        "backend": "litellm",
        "model": "openai/stub-judge",
        "api_base": base_url,
        "structured_output": "json_schema",
        "input_cost_per_token": 1e-6,
        "output_cost_per_token": 2e-6,
        "runtime": {
            "max_concurrency": args.concurrency,
            "timeout_s": 30,
            "max_retries": 4,
            "backoff_base_s": 0.1,
            "backoff_max_s": 2,
            "parse_retries": 2,
            "progress": args.progress,
            "cache_path": str(workdir / f"cache-{transport}.sqlite") if args.cache else None,
            "transport": transport,
        },
    }
    judge = LLMJudge(task, cfg, prompts_dir=workdir / "prompts")
    # Warm-up outside the timing: litellm import (~3 s), client/session creation, cost registration.
    await judge("warmup", StubSupportInput(claim="warm up", evidence="warm up"), {})
    items = [
        (
            f"i{i}",
            StubSupportInput(claim=f"claim number {i} about topic {i % 97}", evidence=f"evidence {i}"),
            {},
        )
        for i in range(args.n)
    ]
    t0 = time.perf_counter()
    run = await run_judgments(
        judge, items, desc="bench", concurrency=args.concurrency, progress=args.progress
    )
    wall = time.perf_counter() - t0
    judge.close()
    lat = [j.latency_s for j in run if j.ok]
    summary = usage_summary(run)
    return {
        "path": transport,
        "n": args.n,
        "concurrency": args.concurrency,
        "latency_ms_stub": args.latency_ms,
        "cache": bool(args.cache),
        "wall_s": round(wall, 3),
        "calls_per_s": round(args.n / wall, 1),
        "p50_ms": round(1000 * statistics.median(lat), 1) if lat else None,
        "p95_ms": round(1000 * percentile(lat, 0.95), 1) if lat else None,
        "ok": summary["ok"],
        "failed": summary["failed"],
        "summary": format_usage(summary),
    }


async def trivial(args: argparse.Namespace, base_url: str, workdir: Path) -> dict[str, Any]:
    """The limit: the same requests through one aiohttp session with nothing above the wire."""
    import aiohttp

    from reportbench.judges.fastpath import strict_response_format
    from reportbench.stub_server import StubSupportOutput

    task = stub_support_task(workdir / "prompts")
    from reportbench.prompts import load_prompt

    prompt = load_prompt(task.prompt_id, workdir / "prompts")
    fmt = strict_response_format(StubSupportOutput)
    bodies = [
        {
            "model": "stub-judge",
            "messages": prompt.render(claim=f"claim number {i} about topic {i % 97}", evidence=f"evidence {i}"),
            "temperature": 0.0,
            "seed": 0,
            "max_tokens": 1024,
            "response_format": fmt,
        }
        for i in range(args.n)
    ]
    url = base_url + "/chat/completions"
    sem = asyncio.Semaphore(args.concurrency)
    ok = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=args.concurrency)) as session:

        async def one(body: dict[str, Any]) -> None:
            nonlocal ok
            async with sem, session.post(url, json=body) as resp:
                data = await resp.json()
                ok += bool(data["choices"][0]["message"]["content"])

        await one(bodies[0])  # warm-up
        ok = 0
        t0 = time.perf_counter()
        await asyncio.gather(*(one(b) for b in bodies))
        wall = time.perf_counter() - t0
    return {"path": "trivial", "n": args.n, "concurrency": args.concurrency, "wall_s": round(wall, 3),
            "calls_per_s": round(args.n / wall, 1), "ok": ok, "failed": args.n - ok}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=256)
    p.add_argument("--latency-ms", type=float, default=200.0)
    p.add_argument("--fault-rate", type=float, default=0.0)
    p.add_argument("--cache", action="store_true", help="use a fresh temp cache instead of none")
    p.add_argument("--progress", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--paths", default="litellm,fast,trivial", help="comma list of litellm, fast, trivial")
    p.add_argument("--stage", action="store_true", help="the whole judge stage on a grown ResearchQA release")
    args = p.parse_args(argv)
    if args.stage:
        return stage_bench(args)
    paths = [x.strip() for x in args.paths.split(",") if x.strip()]
    proc, base_url = start_stub(args.latency_ms, args.fault_rate)
    results: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="rb-bench-") as tmp:
            for path in paths:
                if path == "trivial":
                    results.append(asyncio.run(trivial(args, base_url, Path(tmp))))
                else:
                    results.append(asyncio.run(bench(args, base_url, Path(tmp), path)))
        with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=5) as resp:
            stub_counts = json.loads(resp.read())
    finally:
        proc.terminate()
        proc.wait(10)
    rate = {r["path"]: r["calls_per_s"] for r in results}
    if args.json:
        print(json.dumps({"results": results, "stub_counts": stub_counts}, indent=2))
    else:
        for r in results:
            extra = f"  p50 {r['p50_ms']} ms  p95 {r['p95_ms']} ms" if "p50_ms" in r else ""
            print(
                f"{r['path']:>8}: {r['calls_per_s']:7.1f} calls/s  (n={r['n']}, C={r['concurrency']}, "
                f"stub {args.latency_ms:.0f} ms, cache={'fresh' if args.cache else 'off'}){extra}  "
                f"ok={r['ok']} failed={r['failed']}"
            )
        if "litellm" in rate and "fast" in rate:
            print(f"fast path / litellm path = {rate['fast'] / rate['litellm']:.2f}x (target >= 3x)")
    failed = sum(r["failed"] for r in results)
    return 0 if failed == 0 or args.fault_rate > 0 else 1


# ------------------------------------------------------------------------------------------------ --stage
REPO = Path(__file__).resolve().parents[1]


def grow_researchqa(out: Path, n: int) -> Path:
    """A ResearchQA-shaped release of `n` tasks (the demo's questions and rubrics, renamed; 8 rubric items each)
    and one folder system of ~2,000-word reports drawn from the demo's report words (seeded)."""
    import random

    base = json.loads((REPO / "data/demo/researchqa/test.json").read_text())
    words = (REPO / "data/demo/researchqa/systems/thorough_reviewer/demo-0001-s3.md").read_text().split()
    rng = random.Random(0)
    tasks = []
    for i in range(n):
        t = dict(base[i % len(base)], id=f"grow-{i:05d}")
        rubric = (list(t["rubric"]) * 8)[:8]
        t["rubric"] = [dict(r, rubric_item=f"{r['rubric_item']} (variant {k})") for k, r in enumerate(rubric)]
        tasks.append(t)
    out.mkdir(parents=True, exist_ok=True)
    (out / "test.json").write_text(json.dumps(tasks))
    folder = out / "systems" / "grown"
    folder.mkdir(parents=True, exist_ok=True)
    for t in tasks:
        body = " ".join(rng.choice(words) for _ in range(2000))
        paras = "\n\n".join(body[i : i + 600] for i in range(0, len(body), 600))
        (folder / f"{t['id']}.md").write_text(f"# Report\n\n{paras}\n")
    return out


class _TimedJudge:
    """Wraps a judge: CPU seconds spent inside its calls. The offline judge computes without awaiting, and the
    runner calls its `judge_now` in a plain loop (runner.run_computed), never `__call__`: both are timed (timing
    only `__call__` counted the whole offline judge as the stage's overhead)."""

    def __init__(self, judge: Any, spent: list[float]) -> None:
        self._judge, self._spent = judge, spent

    def __getattr__(self, name: str) -> Any:
        return getattr(self._judge, name)

    async def __call__(self, *args: Any) -> Any:
        t0 = time.process_time()
        try:
            return await self._judge(*args)
        finally:
            self._spent[0] += time.process_time() - t0

    @property
    def judge_now(self) -> Any:
        inner = self._judge.judge_now  # AttributeError for a judge without one: the runner awaits `__call__`

        def timed(*args: Any) -> Any:
            t0 = time.process_time()
            try:
                return inner(*args)
            finally:
                self._spent[0] += time.process_time() - t0

        return timed


def stage_bench(args: argparse.Namespace) -> int:
    """The whole judge stage at N tasks: offline overhead per judgment, stub calls/s at 0 ms and at latency."""
    import logging

    from reportbench import pipeline
    from reportbench.config import composed_params
    from reportbench.judges import factory

    logging.getLogger("reportbench").setLevel(logging.WARNING)
    os.chdir(REPO)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rb-stage-") as tmp:
        work = grow_researchqa(Path(tmp) / "src", args.n)

        def params(judge: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
            p = composed_params(["benchmarks=[researchqa]", f"judge={judge}"], conf_dir=REPO / "conf", remembered=False)
            b = p["benchmarks"]["researchqa"]
            b["release"].update(source=str(work), path=str(work / "test.json"))
            b["systems"] = {"grown": {"kind": "folder", "path": str(work / "systems/grown"), "format": "auto"}}
            p["judge"]["runtime"].update(progress=False, **(extra or {}))
            return p

        base = params("offline")
        release, run = Path(tmp) / "release", Path(tmp) / "runs" / "grown"
        pipeline.build_release(base, "researchqa", release)
        pipeline.run_system(base, "researchqa", "grown", release, run)

        def one(label: str, p: dict[str, Any]) -> dict[str, Any]:
            spent = [0.0]
            real = factory.make_judge
            factory.make_judge = lambda *a, **k: _TimedJudge(real(*a, **k), spent)  # type: ignore[assignment]
            out = Path(tmp) / f"j-{label}"
            try:
                c0, w0 = time.process_time(), time.perf_counter()
                summary = pipeline.run_judge_stage(p, "researchqa", "grown", "main", release, run, out, out / "u.json")
                cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            finally:
                factory.make_judge = real  # type: ignore[assignment]
            items = sum(int(v.get("items") or 0) for v in summary["steps"].values())
            calls = sum(int(v.get("calls") or 0) for v in summary["steps"].values())
            failed = sum(int(v.get("failed") or 0) for v in summary["steps"].values())
            return {"run": label, "n_tasks": args.n, "items": items, "calls": calls, "failed": failed,
                    "stage_cpu_s": round(cpu, 3), "judge_cpu_s": round(spent[0], 3), "wall_s": round(wall, 3),
                    "overhead_us_per_item": round(1e6 * (cpu - spent[0]) / max(items, 1), 1),
                    "calls_per_s": round(calls / wall, 1) if calls else None}  # fmt: skip

        rows.append(one("offline", params("offline", {"cache_path": None})))
        for latency in (0.0, args.latency_ms):
            proc, url = start_stub(latency, 0.0)
            try:
                fast = {"cache_path": None, "transport": "fast", "max_concurrency": args.concurrency}
                stub = params("stub", fast)
                stub["judge"]["api_base"] = url
                rows.append(one(f"stub {latency:.0f} ms", stub))
            finally:
                proc.terminate()
                proc.wait(10)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        head = f"{r['run']:>14}: N={r['n_tasks']} items={r['items']} failed={r['failed']}"
        head += f"  stage CPU {r['stage_cpu_s']} s"
        if r["run"] == "offline":  # the offline judge computes without awaiting: its calls' CPU is its own
            print(f"{head} (judge {r['judge_cpu_s']} s), wall {r['wall_s']} s  "
                  f"overhead {r['overhead_us_per_item']} us/judgment")  # fmt: skip
        else:  # awaiting calls interleave: only the stage's totals mean something
            print(f"{head}, wall {r['wall_s']} s  {r['calls']} calls, {r['calls_per_s']} calls/s, "
                  f"{1e3 * r['stage_cpu_s'] / max(r['calls'], 1):.2f} ms CPU per call")  # fmt: skip
    fast0, slow = rows[1]["calls_per_s"], rows[2]["calls_per_s"]
    if fast0 and slow:
        print(f"stage calls/s at {args.latency_ms:.0f} ms / at 0 ms = {100 * slow / fast0:.0f} % (target >= 80 %)")
    print(f"offline judge: stage overhead {rows[0]['overhead_us_per_item']} us per judgment (target <= 50 us)")
    if any(r["failed"] for r in rows[1:]):
        print("note: the stub's answers did not parse as this benchmark's (failed items were asked again: parse "
              "retries); calls/s still counts every call the stage made")
    return 0


if __name__ == "__main__":
    sys.exit(main())
