"""`reportbench check-judge`: the judge's credentials and model for every role, checked without a network call.

The checks live in the judge layer (judges/client.py: `check_judge`, `preflight`); this command composes the
config first, so it sits above configuration composition.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reportbench.config import composed_params, load_params
from reportbench.judges.client import check_judge, judge_roles
from reportbench.judges.errors import EXIT_CODE


def _cmd_check_judge(args: argparse.Namespace) -> int:
    params = load_params(Path(args.params)) if args.params else composed_params(args.overrides)
    judge = params.get("judge") or {}
    problems = check_judge(judge)
    for line in problems:
        print(f"error: {line}", file=sys.stderr, flush=True)
    if problems:
        return EXIT_CODE
    backend = judge.get("backend")
    if backend != "litellm":
        print(f"judge {judge.get('name')!r}: backend {backend} makes no API calls; nothing to check")
    else:
        models = ", ".join(sorted({str(c.get('model')) for _, c in judge_roles(judge)}))
        print(f"judge {judge.get('name')!r}: preflight ok for {models} (credentials checked without a network call)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `reportbench check-judge` to the CLI."""
    p = sub.add_parser(
        "check-judge",
        help="check the judge's credentials/model for every role without a network call (exit 2 on a problem)",
    )
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. judge=llm judge.model=openai/gpt-4.1")
    p.add_argument("--params", default=None, help="check this composed params file instead of composing conf/")
    p.set_defaults(func=_cmd_check_judge)
