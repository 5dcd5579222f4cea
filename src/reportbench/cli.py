"""`reportbench` command line: each module that offers a subcommand exposes `register(subparsers)`."""

from __future__ import annotations

import argparse
import importlib
import sys

# module path -> provides register(subparsers) adding one or more subcommands
SUBCOMMAND_MODULES = [
    "reportbench.reports.cli",  # parse
    "reportbench.config",  # compose
    "reportbench.stub_server",  # stub-server
    "reportbench.judges.errors",  # check-judge
    "reportbench.live_builder.cli",  # latex
    "reportbench.ls",  # ls benchmarks|metrics|tasks
    "reportbench.site.cli",  # view
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reportbench",
        description="Benchmark harness for deep-research systems. The pipeline itself runs through DVC "
        "(`dvc repro`, `dvc exp run -S judge=...`); these commands inspect inputs and manage config.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for mod_name in SUBCOMMAND_MODULES:
        importlib.import_module(mod_name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
