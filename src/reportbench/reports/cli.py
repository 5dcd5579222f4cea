"""`reportbench parse PATH`: parse one system output and print the Report as JSON (summary on stderr)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from reportbench.reports.base import DEFAULT_MAX_BYTES, ReportParseError, list_formats, load_report
from reportbench.types import Report


def summarize(report: Report) -> str:
    """One human line per aspect, so a glance tells whether the citations resolved."""
    n_markers = sum(len(s.citation_keys) for s in report.sentences)
    cited = report.cited_keys
    resolved = [k for k in cited if k in report.sources]
    arxiv_ids = report.retrieved_arxiv_ids
    with_citations = sum(1 for s in report.sentences if s.citation_keys)
    lines = [
        f"{report.report_id} [{report.format}] {report.path}",
        f"  sentences: {len(report.sentences)} ({with_citations} with citations)",
        f"  citations: {n_markers} sentence-key pairs, {len(cited)} distinct keys, "
        f"{len(resolved)} resolved, {len(report.unresolved_citations)} unresolved",
        f"  sources: {len(report.sources)}; arXiv ids: {len(arxiv_ids)}",
    ]
    lines.extend(f"  warning: {w}" for w in report.warnings)
    return "\n".join(lines)


def run_parse(args: argparse.Namespace) -> int:
    """Print the parsed report; exit 2 when the output cannot be parsed."""
    try:
        report = load_report(
            args.path, args.format, task_id=args.task_id, system=args.system, max_bytes=args.max_bytes
        )
    except (ReportParseError, ValueError) as exc:
        print(f"reportbench parse: {exc}", file=sys.stderr)
        return 2
    payload: dict[str, Any] = report.model_dump(mode="json")
    json.dump(payload, sys.stdout, ensure_ascii=False, indent=2 if args.indent else None)
    sys.stdout.write("\n")
    print(summarize(report), file=sys.stderr)
    return 0


def register(subparsers: Any) -> None:
    """Add the `parse` subcommand to the top-level reportbench CLI."""
    parser = subparsers.add_parser(
        "parse",
        help="parse one system output into a Report (JSON on stdout)",
        description=__doc__,
    )
    parser.add_argument("path", help="report file or folder (e.g. baselines_results/storm/0)")
    parser.add_argument(
        "--format",
        default="auto",
        choices=["auto", *list_formats()],
        help="adapter name; 'auto' picks the first that recognises PATH",
    )
    parser.add_argument("--task-id", default=None, help="task id (default: file stem or folder name)")
    parser.add_argument("--system", default=None, help="system name (default: parent folder name)")
    parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES, help="refuse larger files")
    parser.add_argument("--indent", action="store_true", help="pretty-print the JSON")
    parser.set_defaults(func=run_parse)
