"""How a stage script or a CLI command ends on an error no retry can fix: one clear line on stderr, a non-zero
exit, no traceback.

Config and data errors (`ConfigError`, `ReleaseError`, `PlanError`, `BenchmarkError`, a system's or a judge's
config error, ...) name the file or key to fix; fatal judge errors (no key, unknown model, quota, context too
long) name the judge, the model and the environment variable; Hydra's composition errors (an unknown config
option, a key that does not exist, an override that does not parse) are condensed to one line that names the
bad value and lists the valid choices. In a stage, anything else is a bug and keeps its traceback; the CLI
prints it as one line too (`REPORTBENCH_DEBUG=1` shows the traceback).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from reportbench.judges.errors import FatalError  # judge and endpoint-system fatal errors
from reportbench.plan import PlanError

EXIT_FATAL = 2


def _fatal_types() -> tuple[type[BaseException], ...]:
    from reportbench.benchmarks import BenchmarkError  # lazy: +1380 ms to import (python -X importtime)
    from reportbench.config import ConfigError  # lazy: +50 ms to import (python -X importtime)
    from reportbench.judges.factory import JudgeConfigError  # lazy: +80 ms to import (python -X importtime)
    from reportbench.prompt_packs.judging import PromptsConfigError  # lazy: +31 ms to import (python -X importtime)
    from reportbench.prompts import PromptError  # lazy: +18 ms to import (python -X importtime)
    from reportbench.release.format import ReleaseError  # lazy: +727 ms to import (python -X importtime)
    from reportbench.systems import AllTasksFailed, SystemError_  # lazy: +144 ms to import (python -X importtime)

    return (
        ConfigError,
        ReleaseError,
        PlanError,
        BenchmarkError,
        FatalError,
        SystemError_,
        AllTasksFailed,
        JudgeConfigError,
        PromptsConfigError,
        PromptError,
    )


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        yield node
        node = node.__cause__ or node.__context__


def _message(exc: BaseException) -> str:
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


def _group_options(group: str, conf_dir: Path) -> list[str]:
    folder = conf_dir / group
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


def _hydra_line(exc: BaseException, conf_dir: Path) -> str | None:
    """One line for Hydra's composition and override errors (their messages span many lines)."""
    name = type(exc).__name__
    text = str(exc)
    if name == "MissingConfigException":
        m = re.search(r"Could not (?:find|load) '([^']+)/([^'/]+)'", text)
        if m:
            group, option = m.group(1), m.group(2)
            options = re.findall(r"^\t(\S+)$", text.split("Config search path")[0], flags=re.M)
            options = options or _group_options(group, conf_dir)
            return f"no option {option!r} in config group '{group}'; choose one of {', '.join(options) or '(none)'}"
    if name == "ConfigCompositionException":
        m = re.search(r"Could not override '([^']+)'", text)
        if m and "/" in m.group(1):
            return _group_not_selected(m.group(1), conf_dir)
        if m:
            key = m.group(1)
            parent, _, leaf = key.rpartition(".")
            known = _known_keys(parent, conf_dir)
            hint = f"; keys under {parent or 'the root'}: {', '.join(known)}" if known else ""
            return f"{key}: no such key (add it with +{key}=... only if you mean a new key){hint}"
    if name in ("OverrideParseException", "HydraException", "ConfigCompositionException", "MissingConfigException"):
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("See https://")]
        return "invalid override: " + "; ".join(lines) + " (syntax: key=value, group=option, +new_key=value)"
    return None


def _group_not_selected(group: str, conf_dir: Path) -> str:
    """`<b>/systems=x` when benchmark b is not selected: Hydra's "No match in the defaults list", said plainly."""
    from reportbench.config import (  # lazy: +50 ms to import (python -X importtime)
        benchmark_of,
        overrides_path,
        remembered_overrides,
    )

    b = benchmark_of(f"{group}=x", conf_dir)
    if b is None:
        return f"{group}: no such config group in this composition (is the group that holds it selected?)"
    remembered = [o for o in remembered_overrides(conf_dir) if o.split("=", 1)[0] == group]
    where = f" ({remembered[0]} is remembered in {overrides_path(conf_dir)})" if remembered else ""
    return (
        f"{group}: benchmark {b} is not selected{where}: select it too, e.g. 'benchmarks=[deepscholar,{b}]', "
        f"or leave out the {group} override"
    )


def _known_keys(parent: str, conf_dir: Path) -> list[str]:
    """The keys under `parent` in the default composition (best effort: [] if that fails too)."""
    try:
        from reportbench.config import composed_params  # lazy: +50 ms to import (python -X importtime)

        node = composed_params(conf_dir=conf_dir)
        for part in filter(None, parent.split(".")):
            node = node[part]
        return sorted(map(str, node)) if isinstance(node, dict) else []
    except Exception:  # noqa: BLE001 - only a hint
        return []


def one_line_error(exc: BaseException, conf_dir: Path | str = "conf") -> str | None:
    """The one-line message for a known error anywhere in `exc`'s chain, or None when it is not one of ours."""
    fatal = _fatal_types()
    for node in _chain(exc):
        if isinstance(node, fatal):
            return _message(node).strip().replace("\n", "; ")
    for node in _chain(exc):
        line = _hydra_line(node, Path(conf_dir))
        if line is not None:
            return line
    return None


@contextmanager
def exit_on_error() -> Iterator[None]:
    """For stage scripts: known errors become one `error:` line and exit 2; anything else keeps its traceback."""
    try:
        yield
    except Exception as exc:
        msg = one_line_error(exc)
        if msg is not None:
            print(f"error: {msg}", file=sys.stderr)
            raise SystemExit(getattr(exc, "exit_code", EXIT_FATAL)) from None
        raise
