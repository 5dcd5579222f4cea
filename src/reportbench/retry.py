"""`reportbench retry`: re-ask exactly the judge items that failed, then bring what depends on them up to date.

Why a command when `dvc repro` already reruns an incomplete judge stage: a stage is only incomplete (exit 3,
not recorded by DVC) while *unanswered* calls remain beyond `judge.runtime.max_call_failure_rate`. Records
DVC did record can still hold failures worth another ask: unanswered calls a user chose to tolerate, and
unparseable answers, which a deterministic judge is never re-asked for on its own (docs/reliability.md).
This command reads every configured judge stage's records, lists what failed and why, and reruns only the
stages that hold such items with `dvc repro --force --single-item`: answered items come from the response
cache, so exactly the failed items are paid for; `--parse` also re-asks unparseable answers. Then it runs
`dvc repro score@<b>` for the benchmarks it touched.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reportbench.benchmark_arg import add_benchmark_argument
from reportbench.judges.errors import failure_class
from reportbench.plan import judge_units


@dataclass
class StageFailures:
    """What one judge unit's records say (a (system, member) of the DVC stage `judge@<b>`): item counts by
    failure class (errors.failure_class)."""

    stage: str
    benchmark: str
    out_dir: Path
    unit: str = ""
    items: int = 0
    classes: Counter[str] = field(default_factory=Counter)
    missing: bool = False

    @property
    def unanswered(self) -> int:
        return self.classes["unanswered"]

    @property
    def parse(self) -> int:
        return self.classes["parse"]

    @property
    def label(self) -> str:
        """`judge@<b> (<system>[/<member>])`, as the stage's own messages name the unit."""
        return f"{self.stage} ({self.unit})" if self.unit else self.stage

    def describe(self) -> str:
        if self.missing:
            return f"{self.label}: no records yet (`dvc repro` runs it)"
        failed = self.items - self.classes["ok"]
        detail = ", ".join(f"{k} {v}" for k, v in sorted(self.classes.items()) if k != "ok")
        return f"{self.label}: {failed} of {self.items} items failed" + (f" ({detail})" if detail else "")


def scan(params: dict[str, Any], root: Path = Path(".")) -> list[StageFailures]:
    """Every configured judge unit (`plan.judge_units`) with its records' failure counts, in plan order."""
    import polars as pl

    out = []
    plan = params.get("plan") or {}
    for item in judge_units(plan).values():
        b = item["benchmark"]
        out_dir = root / "data" / "judgments" / b / item["release"] / item["system"] / item["member"]
        ensemble = list((plan.get("benchmarks") or {}).get(b, {}).get("members") or ["main"]) != ["main"]
        unit = f"{item['system']}/{item['member']}" if ensemble else item["system"]
        stage = StageFailures(stage=f"judge@{b}", benchmark=b, out_dir=out_dir, unit=unit)
        files = sorted(out_dir.glob("*.parquet")) if out_dir.is_dir() else []
        stage.missing = not files
        for path in files:
            frame = pl.read_parquet(path, columns=["status", "error"], glob=False)
            stage.items += frame.height
            stage.classes.update(failure_class(s, e) for s, e in frame.iter_rows())
        out.append(stage)
    return out


def _dvc(args: list[str], env: dict[str, str]) -> int:
    cmd = [sys.executable, "-m", "dvc", *args]
    print("+ dvc " + " ".join(args), file=sys.stderr, flush=True)
    return subprocess.run(cmd, env=env, check=False).returncode


def _cmd_retry(args: argparse.Namespace) -> int:
    from reportbench.config import ConfigError, load_params  # lazy: +12 ms to import (python -X importtime)
    from reportbench.judges.llm import REASK_ENV  # lazy: +478 ms to import (python -X importtime)

    try:
        params = load_params(args.params)
    except (ConfigError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    enabled = list((params.get("plan") or {}).get("benchmarks") or {})
    unknown = [b for b in args.benchmark if b not in enabled]
    if unknown:  # a typo must not read as "nothing to retry"
        print(f"error: unknown --benchmark {unknown[0]!r}; choices: {', '.join(enabled)}", file=sys.stderr)
        return 2
    stages = scan(params, Path(args.params).resolve().parent)
    if args.benchmark:
        stages = [s for s in stages if s.benchmark in args.benchmark]
    for s in stages:
        if s.missing or s.items != s.classes["ok"]:
            print(s.describe())
    targets = [s for s in stages if not s.missing and (s.unanswered or (args.parse and s.parse))]
    if not targets:
        unparsed = sum(s.parse for s in stages)
        hint = f" ({unparsed} unparseable answers kept; `--parse` re-asks them)" if unparsed and not args.parse else ""
        print(f"nothing to retry{hint}")
        return 0
    if args.list:
        return 0
    env = dict(os.environ)
    if args.parse:
        env[REASK_ENV] = "1"
    code = _dvc(["repro", "--force", "--single-item", *sorted({s.stage for s in targets})], env)
    if code != 0:
        return code
    env.pop(REASK_ENV, None)
    benchmarks = sorted({s.benchmark for s in targets})
    return _dvc(["repro", *[f"score@{b}" for b in benchmarks]], env)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "retry",
        help="re-ask the judge items that failed (unanswered calls; --parse: unparseable answers too)",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    p.add_argument("--parse", action="store_true", help="also re-ask answers that did not parse")
    p.add_argument("--list", action="store_true", help="only list the failed items per stage")
    add_benchmark_argument(p, repeatable=True)
    p.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    p.set_defaults(func=_cmd_retry)
