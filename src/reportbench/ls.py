"""`reportbench ls benchmarks|metrics|tasks`: what is installed, where each piece lives (lm-eval style discovery)."""

from __future__ import annotations

import argparse
import sys


def _benchmarks() -> list[str]:
    from reportbench.benchmarks import get_benchmark, installed_benchmarks

    lines = []
    for name in installed_benchmarks():
        spec = get_benchmark(name)
        steps = ", ".join(f"{s.name}({s.kind})" for s in spec.judge_steps)
        cross = " + cross stage" if spec.cross else ""
        lines.append(f"{name:20s} {spec.title}: steps {steps}{cross}; metrics {', '.join(spec.metric_names)}")
    return lines


def _metrics(benchmark: str | None) -> list[str]:
    from reportbench.benchmarks import get_benchmark, installed_benchmarks
    from reportbench.metrics.registry import metrics_for

    lines = []
    for name in [benchmark] if benchmark else installed_benchmarks():
        get_benchmark(name)  # importing the protocol registers its metrics
        for m in metrics_for(name):
            arrow = "↑" if m.higher_is_better else "↓"
            lines.append(
                f"{m.key:45s} {arrow} {m.aggregation:10s} missing report: {m.missing_report:9s} {m.description}"
            )
    return lines


def _tasks() -> list[str]:
    from reportbench.benchmarks import installed_benchmarks
    from reportbench.judges.tasks import TASKS

    installed_benchmarks()  # protocol packages register their judge tasks on import
    return [f"{t.name:28s} prompts/{t.prompt_id:40s} {t.description}" for t in TASKS.values()]


def _cmd(args: argparse.Namespace) -> int:
    if args.what == "benchmarks":
        lines = _benchmarks()
    elif args.what == "metrics":
        lines = _metrics(args.benchmark)
    else:
        lines = _tasks()
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ls", help="list installed benchmarks, metrics (direction, aggregation) or judge tasks")
    p.add_argument("what", choices=["benchmarks", "metrics", "tasks"])
    p.add_argument("--benchmark", default=None, help="only this benchmark's metrics")
    p.set_defaults(func=_cmd)
