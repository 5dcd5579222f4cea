"""How a stage script ends on an error no retry can fix: one clear line on stderr, a non-zero exit, no traceback.

Config and data errors (`ConfigError`, `ReleaseError`, `PlanError`, `BenchmarkError`) name the file and key to fix;
fatal judge errors (no key, unknown model, quota, context too long) name the judge, the model and the
environment variable. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

EXIT_FATAL = 2


def _fatal_types() -> tuple[type[BaseException], ...]:
    from reportbench.benchmarks import BenchmarkError
    from reportbench.config import ConfigError
    from reportbench.plan import PlanError
    from reportbench.release.format import ReleaseError

    types: list[type[BaseException]] = [ConfigError, ReleaseError, PlanError, BenchmarkError]
    from reportbench.judges.errors import FatalError  # judge and endpoint-system fatal errors

    types.append(FatalError)
    return tuple(types)


@contextmanager
def exit_on_error() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        if isinstance(exc, _fatal_types()):
            msg = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
            print(f"error: {msg}", file=sys.stderr)
            raise SystemExit(getattr(exc, "exit_code", EXIT_FATAL)) from None
        raise
