#!/usr/bin/env python3
"""A minimal "bring your own system" command for reportbench (kind: command). Copy it and put your system
in `write_related_work`.

Contract (docs/systems.md): the harness runs
    python examples/byo_command_system.py --task <task.json> --out <report.md>
once per task. task.json holds task_id and task_prompt (the benchmark's exact prompt; never the exemplar) and
the benchmark's own task fields (DeepScholar: title, abstract, published_date, categories). Write the report
to --out (markdown with `[n]` citations and a numbered reference list, or any format reportbench has an adapter
for) and exit 0. A non-zero exit, a
timeout or an empty file is recorded as a failed task; the other tasks still run.

This example uses no model and no network: it restates the abstract as a related-work stub that cites
nothing. It exists to show the plumbing, and it scores accordingly.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path


def write_related_work(task: dict) -> str:
    """Your system goes here: return the report text for one task. Every benchmark's task JSON has task_id and
    task_prompt; DeepScholar's adds title, abstract and published_date (agents run on every enabled benchmark)."""
    source = task.get("abstract") or task.get("task_prompt") or ""
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(str(source).split()))
    problem = " ".join(sentences[:2])
    topic = task.get("title") or task["task_id"]
    when = f", published {str(task['published_date'])[:10]}" if task.get("published_date") else ""
    return (
        "## Related Works\n\n"
        f'This section would review prior work for "{topic}"{when}. '
        f"The task asks about the following: {problem}\n\n"
        "An example system without retrieval cannot name prior work, so this section cites no sources.\n"
    )

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", type=Path, required=True, help="task JSON written by the harness")
    ap.add_argument("--out", type=Path, required=True, help="where to write the report")
    args = ap.parse_args()
    task = json.loads(args.task.read_text(encoding="utf-8"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(write_related_work(task), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
