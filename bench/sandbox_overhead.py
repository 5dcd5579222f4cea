"""What the sandbox adds to each task's start-up (docs/reliability.md, "Sandbox").

Run from the repo root with the venv active:  `python bench/sandbox_overhead.py [--repeat 20]`

Times one `kind: command` task end to end through `reportbench.systems.sandbox.run` (the path the command kind
and the agent runner take) for a program that does nothing (`python -c pass`), with `sandbox: none` and with
the default bubblewrap sandbox (namespaces, mounts, the in-sandbox launcher, the rlimits, the watch loop), and
once more with one bridged port (the agents' case: the budget proxy). Prints the median and the 90th
percentile of each, and the median overhead per task.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from reportbench.systems.sandbox import parse_sandbox, port_bridge, run, unavailable_reason


def _time(repeat: int, **kw: object) -> list[float]:
    out = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            done = run([sys.executable, "-c", "pass"], env={"PATH": os.environ["PATH"]}, cwd=Path.cwd(), wall_s=60,
                       rw=[(Path(tmp), Path(tmp))], **kw)  # type: ignore[arg-type]  # fmt: skip
            out.append(time.perf_counter() - t0)
            assert done.returncode == 0, done.stderr[-500:]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    why = unavailable_reason()
    if why:
        raise SystemExit(f"cannot measure: {why}")
    rows = {"none": _time(args.repeat, cfg=parse_sandbox("bench", "none"))}
    rows["bwrap"] = _time(args.repeat, cfg=parse_sandbox("bench", None))
    with port_bridge([9]) as bridge:
        rows["bwrap + 1 bridged port"] = _time(args.repeat, cfg=parse_sandbox("bench", None), bridge=bridge)
    for name, xs in rows.items():
        xs = sorted(xs)
        p90 = xs[min(len(xs) - 1, int(0.9 * len(xs)))]
        print(f"{name:24s} median {statistics.median(xs) * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms   (n={len(xs)})")
    extra = statistics.median(rows["bwrap"]) - statistics.median(rows["none"])
    print(f"sandbox start-up overhead per task: {extra * 1000:.0f} ms (median)")


if __name__ == "__main__":
    main()
