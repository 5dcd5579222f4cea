"""`reportbench` command line: each module that offers a subcommand exposes `register(subparsers)`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import NoReturn

# subcommand -> the module whose register(subparsers) adds it: `reportbench <command>` imports only that module
# (importing all of them costs ~1 s of CPU per run: aiohttp, polars, bibtexparser…); `--help`, no command or an
# unknown one builds the full parser. tests/test_cli_names.py checks each module adds exactly the commands listed.
COMMAND_MODULES: dict[str, str] = {
    "parse": "reportbench.reports.cli",
    "compose": "reportbench.config",
    "systems": "reportbench.systems_cli",  # systems add
    "stub-server": "reportbench.stub_server",
    "check-judge": "reportbench.check_judge",
    "latex": "reportbench.live_builder.cli",
    "ls": "reportbench.ls",  # ls benchmarks|metrics|tasks
    "retry": "reportbench.retry",  # retry (failed judge items)
    "estimate": "reportbench.scale_cli",  # estimate, batch status|retry, cache export|import (docs/scale.md)
    "batch": "reportbench.scale_cli",
    "cache": "reportbench.scale_cli",
    "live": "reportbench.live_pipeline",  # live init
    "label": "reportbench.live_pipeline",  # label init
    "annotate": "reportbench.agreement.annotate",  # annotate (human-label page)
    "view": "reportbench.site.cli",
    "board": "reportbench.site.board",  # board: each benchmark's leaderboard in 160 columns
    "check": "reportbench.systems.check",  # check (a system's folder before scoring; docs/mapping.md)
    "reproduce": "reportbench.reproduce",  # reproduce <benchmark>/<table> | --list (published tables, presets)
    "export": "reportbench.interop.export",  # export <benchmark>: results in the authors' result formats
    "agents": "reportbench.agents.envs",  # agents install|ls (docs/agents.md)
    "stub-search": "reportbench.agents.search.stub",
}
SUBCOMMAND_MODULES = list(dict.fromkeys(COMMAND_MODULES.values()))  # the full parser's order (--help)


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse's usage errors as one `error:` line that names the bad value and where to see the choices."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see `{self.prog} --help`)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand, or with `command`'s module alone when it is a known subcommand."""
    parser = OneLineArgumentParser(
        prog="reportbench",
        description="Benchmark harness for deep-research systems. The pipeline itself runs through DVC "
        "(`dvc repro`, `dvc exp run -S judge=...`); these commands inspect inputs and manage config.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    modules = [COMMAND_MODULES[command]] if command in COMMAND_MODULES else SUBCOMMAND_MODULES
    for mod_name in modules:
        importlib.import_module(mod_name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand. Every error is one `error:` line on stderr (exit 2), never a traceback
    (`REPORTBENCH_DEBUG=1` shows it); a closed pipe (`reportbench parse ... | head`) ends quietly."""
    args_in = sys.argv[1:] if argv is None else argv
    parser = build_parser(args_in[0] if args_in else None)
    try:
        args = parser.parse_args(args_in)
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
