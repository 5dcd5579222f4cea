"""`-b/--benchmark`: the one way every command names a benchmark, and the one check of the name.

Why one helper: each command used to spell the option its own way (`-b` on some, `--benchmark` only or a
positional on others) and to check the name against its own list (`export` knew four benchmarks of six, `ls
tasks` ignored it). Every command that takes a benchmark adds it with `add_benchmark_argument`, so the spelling,
the help text and the error are the same everywhere: an unknown name exits 2 with one line naming every
installed benchmark (built-ins and plug-ins: the `reportbench.benchmarks` entry points).

The name is checked when the command line is parsed (argparse `type=`), so a typo fails before any work; the
check loads only the named benchmark (the full list is built only for the error message).
"""

from __future__ import annotations

import argparse

HELP = "`reportbench ls benchmarks` lists the installed ones"


def unknown_benchmark_message(name: str, choices: list[str] | None = None) -> str:
    """One line: the bad name and every valid choice."""
    from reportbench.benchmarks import installed_benchmarks  # lazy: +600 ms to import (python -X importtime)

    names = installed_benchmarks() if choices is None else choices
    return f"unknown benchmark {name!r}; choices: {', '.join(names)}"


def benchmark_name(value: str) -> str:
    """argparse `type=`: the name of an installed benchmark, else a usage error (exit 2) naming the choices."""
    from reportbench.benchmarks import BenchmarkError, get_benchmark  # lazy: +600 ms to import (python -X importtime)

    try:
        get_benchmark(value)
    except BenchmarkError:
        raise argparse.ArgumentTypeError(unknown_benchmark_message(value)) from None
    return value


def add_benchmark_argument(
    parser: argparse.ArgumentParser, *, required: bool = False, repeatable: bool = False, help: str | None = None
) -> argparse.Action:
    """Add `-b/--benchmark NAME` (dest `benchmark`): a string, or a list when `repeatable` (default [])."""
    text = help or ("only this benchmark" + (" (repeatable)" if repeatable else ""))
    kwargs: dict[str, object] = {"type": benchmark_name, "metavar": "NAME", "required": required,
                                 "help": f"{text} ({HELP})"}
    if repeatable:
        kwargs |= {"action": "append", "default": []}
    return parser.add_argument("-b", "--benchmark", dest="benchmark", **kwargs)  # type: ignore[arg-type]
