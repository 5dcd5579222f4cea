"""`reportbench` command line: each module that offers a subcommand exposes `register(subparsers)`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import NoReturn

# module path -> provides register(subparsers) adding one or more subcommands
SUBCOMMAND_MODULES = [
    "reportbench.reports.cli",  # parse
    "reportbench.config",  # compose
    "reportbench.systems_cli",  # systems add
    "reportbench.stub_server",  # stub-server
    "reportbench.check_judge",  # check-judge
    "reportbench.live_builder.cli",  # latex
    "reportbench.ls",  # ls benchmarks|metrics|tasks
    "reportbench.retry",  # retry (failed judge items)
    "reportbench.scale_cli",  # estimate, batch status|retry, cache export|import (docs/scale.md)
    "reportbench.live_pipeline",  # live init
    "reportbench.agreement.annotate",  # annotate (human-label page)
    "reportbench.site.cli",  # view
    "reportbench.site.board",  # board: each benchmark's leaderboard in 160 columns
    "reportbench.systems.check",  # check (a system's folder before scoring; docs/mapping.md)
    "reportbench.reproduce",  # reproduce <benchmark>/<table> | --list (published tables under their presets)
    "reportbench.interop.export",  # export <benchmark>: results in the authors' result formats
    "reportbench.agents.envs",  # agents install|ls (docs/agents.md)
    "reportbench.agents.search.stub",  # stub-search
]


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse's usage errors as one `error:` line that names the bad value and where to see the choices."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(
        prog="reportbench",
        description="Benchmark harness for deep-research systems. The pipeline itself runs through DVC "
        "(`dvc repro`, `dvc exp run -S judge=...`); these commands inspect inputs and manage config.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for mod_name in SUBCOMMAND_MODULES:
        importlib.import_module(mod_name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand. Every error is one `error:` line on stderr (exit 2), never a traceback
    (`REPORTBENCH_DEBUG=1` shows it); a closed pipe (`reportbench parse ... | head`) ends quietly."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a usage error (exit 2, its one line already printed) or --help (0): a code, as below
        return exc.code if isinstance(exc.code, int) else 2
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _closed_pipe()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get("REPORTBENCH_DEBUG"):
            raise
        from reportbench.stage_errors import one_line_error  # lazy: +15 ms to import (python -X importtime)

        msg = one_line_error(exc)
        if msg is None:  # not one of ours: still one line, with the way to the traceback
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            msg = f"{type(exc).__name__}: {first} (unexpected; REPORTBENCH_DEBUG=1 shows the traceback)"
        print(f"error: {msg}", file=sys.stderr)
        return 2


def _closed_pipe() -> int:
    """The reader went away (`| head`): stop writing, say nothing, exit like a process killed by SIGPIPE.

    Python would otherwise report the failed flush of stdout at exit; pointing stdout at /dev/null avoids it.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
    return 141


if __name__ == "__main__":
    sys.exit(main())
