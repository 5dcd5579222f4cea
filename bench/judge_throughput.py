"""Throughput of the litellm judge path: LLMJudge -> LLMClient -> litellm -> loopback stub (200 ms).

The stub runs in a *separate process* (`python -m reportbench.stub_server`) so it does not compete
with the judge for this process's event loop or GIL. Every call misses the cache (disabled, or a
fresh temp cache with --cache), so this measures the full per-call overhead: prompt render, cache
key, litellm request/response handling, cost, strict parse, record building.

    python bench/judge_throughput.py                 # N=2000, C=128, no cache
    python bench/judge_throughput.py --cache --n 4000 --json

Target: >= 150 calls/s per process on the 2-core dev machine (litellm's own ceiling is ~185-260).
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


async def bench(args: argparse.Namespace, base_url: str, workdir: Path) -> dict[str, Any]:
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
            "cache_path": str(workdir / "cache.sqlite") if args.cache else None,
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=128)
    p.add_argument("--latency-ms", type=float, default=200.0)
    p.add_argument("--fault-rate", type=float, default=0.0)
    p.add_argument("--cache", action="store_true", help="use a fresh temp cache instead of none")
    p.add_argument("--progress", action="store_true")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    proc, base_url = start_stub(args.latency_ms, args.fault_rate)
    try:
        with tempfile.TemporaryDirectory(prefix="rb-bench-") as tmp:
            result = asyncio.run(bench(args, base_url, Path(tmp)))
        with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=5) as resp:
            result["stub_counts"] = json.loads(resp.read())
    finally:
        proc.terminate()
        proc.wait(10)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{result['calls_per_s']} calls/s  (n={result['n']}, C={result['concurrency']}, "
            f"stub {result['latency_ms_stub']:.0f} ms, cache={'fresh' if result['cache'] else 'off'})  "
            f"p50 {result['p50_ms']} ms  p95 {result['p95_ms']} ms  "
            f"ok={result['ok']} failed={result['failed']}"
        )
        print(result["summary"])
    return 0 if result["failed"] == 0 or args.fault_rate > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
