"""Checks every composition of `conf/` runs, whoever composes it: `reportbench compose`, `live init` and `dvc exp
run` (DVC's Hydra mode, which reaches reportbench only through `hydra_plugins/reportbench_resolvers`).

Why here and not in `compose`: DVC composes params.yaml itself, so a check only `compose` made let the same
mistake through `dvc exp run -S ...` (a system file without its `# @package` line put its entries at a top-level
`deer:` key, exit 0, the system never ran). Every check below runs from the Hydra search-path plugin
(`hydra_search.BenchmarkConfSearchPath`, before Hydra reads a file) or the `rb_plan` resolver (after composing),
which both paths call. In reportbench's own compositions (`composing()`) an error is raised as ConfigError (the
CLI prints one `error:` line, exit 2); inside DVC it is printed as that same line and the process exits 2
(`fail`), instead of DVC's "unexpected error" with a Hydra traceback and exit 255.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import yaml

from reportbench.errors import ConfigError

EXIT_CONFIG = 2
PARAMS_FILE = "params.yaml"
CONF_DIR = Path("conf")
OVERRIDES_FILE = "overrides.yaml"  # next to conf/: the overrides `reportbench compose` remembers
REMEMBERED_CONF = Path("remembered") / "overrides.yaml"  # under conf/: the same, as a Hydra config for dvc exp run
_own = 0  # >0 while reportbench itself composes (compose_params); 0: someone else (DVC's exp run)


@contextmanager
def composing() -> Iterator[None]:
    """Mark a composition as reportbench's own: checks raise ConfigError instead of exiting the process."""
    global _own
    _own += 1
    try:
        yield
    finally:
        _own -= 1


def fail(exc: Exception) -> NoReturn:
    """Raise `exc` in reportbench's own compositions; inside DVC print it as one `error:` line and exit 2."""
    if _own:
        raise exc
    print(f"error: {exc}", file=sys.stderr, flush=True)
    raise SystemExit(EXIT_CONFIG)


def shown(path: Path | str) -> str:
    """`path` relative to the working directory when inside it (what a user types), else absolute."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def yaml_problem(path: Path) -> str | None:
    """`<file>:<line>: not valid YAML (<problem>)` for a file PyYAML cannot parse, else None."""
    try:
        yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{shown(path)}:{mark.line + 1}" if mark is not None else shown(path)
        what = exc.problem or exc.context or "syntax error"
        return f"{where}: not valid YAML ({what}, column {mark.column + 1 if mark else '?'}); fix that line"
    except yaml.YAMLError as exc:
        return f"{shown(path)}: not valid YAML ({str(exc).splitlines()[0]})"
    return None


def check_yaml_syntax(roots: Iterable[Path | str]) -> None:
    """Every `*.yaml` under each config root parses (one error naming file and line, not Hydra's ScannerError)."""
    for root in roots:
        for path in sorted(Path(root).rglob("*.yaml")):
            problem = yaml_problem(path)
            if problem:
                raise ConfigError(problem)


def check_package_headers(conf_dir: Path | str) -> None:
    """Every option file of a benchmark's config group (`conf/<b>/<group>/*.yaml`) must start its package line
    `# @package benchmarks.<b>.<group>`. Why: without it Hydra puts the file at a top-level `<b>.<group>` key,
    the composition succeeds, and the system silently never runs."""
    problem = package_header_problem(conf_dir)
    if problem:
        raise ConfigError(problem)


def missing_headers(conf_dir: Path | str) -> list[tuple[Path, str]]:
    """(file, the header line it needs) for every group option file of `conf_dir` without its package line."""
    conf = Path(conf_dir)
    out: list[tuple[Path, str]] = []
    for bfile in sorted((conf / "benchmarks").glob("*.yaml")):
        b = bfile.stem
        for group_dir in sorted(p for p in (conf / b).glob("*") if p.is_dir()):
            want = f"# @package benchmarks.{b}.{group_dir.name}"
            for option in sorted(group_dir.glob("*.yaml")):
                lines = option.read_text(encoding="utf-8").splitlines()
                # `_global_` is an explicit choice too (presets set the judge and their benchmark's keys)
                if not any(ln.strip() in (want, "# @package _global_") for ln in lines[:5]):
                    out.append((option, want))
    return out


def package_header_problem(conf_dir: Path | str) -> str | None:
    """The one-line refusal for the first group file without its package line, or None."""
    missing = missing_headers(conf_dir)
    if not missing:
        return None
    option, want = missing[0]
    b = want.split(".")[1]
    return (
        f"{shown(option)}: missing the header line `{want}` (first line of the file); without it "
        f"Hydra puts its entries outside benchmarks.{b} and they are silently ignored"
    )


def allowed_top_level(conf_dir: Path | str) -> set[str] | None:
    """The top-level keys a composition of `conf_dir` may have: its primary config's own keys and the groups of
    its defaults list (`remembered` is `_global_`); None when there is no readable conf/config.yaml."""
    path = Path(conf_dir) / "config.yaml"
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(data, dict):
        return None
    keys = {str(k) for k in data if k != "defaults"}
    for entry in data.get("defaults") or []:
        if isinstance(entry, Mapping):
            for k in entry:
                group = str(k).replace("optional ", "").replace("override ", "").strip().lstrip("/")
                if group and group != "remembered":
                    keys.add(group.split("@")[0])
    return keys


def stray_keys_problem(
    params: Mapping[str, Any], conf_dir: Path | str = "conf", source: str = PARAMS_FILE
) -> str | None:
    """The one-line error for a top-level key that is no reportbench setting (e.g. `deer:` from a system file
    without its package line), naming the key, where it came from when that is known, and the fix."""
    allowed = allowed_top_level(conf_dir)
    if allowed is None:
        return None
    stray = [str(k) for k in params if str(k) not in allowed]
    if not stray:
        return None
    key = stray[0]
    sub = params.get(key)
    inner = f"{key}.{next(iter(sub))}" if isinstance(sub, Mapping) and sub else key
    culprits = [(f, want) for f, want in missing_headers(conf_dir) if f.parent.parent.name == key]
    if culprits:
        where, want = culprits[0]
        cause = (
            f"{shown(where)} has no `{want}` line, so Hydra put its entries at '{inner}': make that its first line, "
            "then run `reportbench compose` (or `dvc exp run` again)"
        )
    else:
        cause = "remove it from the conf/ file or override that added it, then run `reportbench compose`"
    others = f" (and {', '.join(repr(k) for k in stray[1:])})" if len(stray) > 1 else ""
    return (
        f"{source}: top-level key {key!r}{others} is not a reportbench setting (those are "
        f"{', '.join(sorted(allowed))}): {cause}"
    )


# ---------------------------------------------------------------- remembered overrides (`reportbench compose`)


def overrides_path(conf_dir: Path | str = CONF_DIR) -> Path:
    return Path(conf_dir).parent / OVERRIDES_FILE


def _override_key(override: str) -> str:
    """`+a.b=1` -> `a.b`: two overrides with one key are one choice (the later wins)."""
    return override.split("=", 1)[0].lstrip("+~")


def _known_benchmarks(conf_dir: Path | str) -> set[str]:
    """Installed benchmarks and those with a `conf/benchmarks/<b>.yaml` (their group folders are `<b>/...`)."""
    from reportbench.benchmarks import benchmark_entry_points  # lazy: +199 ms to import (python -X importtime)

    return set(benchmark_entry_points()) | {p.stem for p in (Path(conf_dir) / "benchmarks").glob("*.yaml")}


def selected_benchmarks(overrides: list[str]) -> set[str]:
    """The benchmarks a composition with `overrides` selects: the last `benchmarks=...` choice, else every
    installed one (conf/config.yaml's `benchmarks: [installed]`)."""
    from reportbench.benchmarks import benchmark_entry_points  # lazy: +199 ms to import (python -X importtime)

    choice: Any = None
    for text in overrides:
        if _override_key(text) == "benchmarks" and not text.startswith("~"):
            choice = text.split("=", 1)[1].strip() if "=" in text else None
    if choice is None:
        return set(benchmark_entry_points())
    names = {n.strip().strip("'\"") for n in choice.strip("[]").split(",") if n.strip()}
    return (names - {"installed"}) | (set(benchmark_entry_points()) if "installed" in names else set())


def benchmark_of(override: str, conf_dir: Path | str = CONF_DIR, known: set[str] | None = None) -> str | None:
    """The benchmark an override configures (`<b>/systems=x`, `benchmarks.<b>.scoring.mode=code`), or None."""
    key = _override_key(override).split("@")[0]
    known = _known_benchmarks(conf_dir) if known is None else known
    head = key.split("/", 1)[0] if "/" in key else None
    if head in known:
        return head
    parts = key.split(".")
    if len(parts) > 2 and parts[0] == "benchmarks" and parts[1] in known:
        return parts[1]
    return None


def split_applicable(
    overrides: list[str], explicit: list[str] | None = None, conf_dir: Path | str = CONF_DIR
) -> tuple[list[str], list[tuple[str, str]]]:
    """(the overrides to apply, [(override, benchmark)] left out): a remembered override of a benchmark the
    composition does not select is not applied (Hydra would refuse it: `researcherbench/systems` exists only
    when researcherbench is selected); it stays remembered and applies again once the benchmark is selected.
    An override in `explicit` (given on this command line) is always applied."""
    chosen = selected_benchmarks(overrides)
    known = _known_benchmarks(conf_dir)
    keep = set(explicit or [])
    applied: list[str] = []
    skipped: list[tuple[str, str]] = []
    for o in overrides:
        b = benchmark_of(o, conf_dir, known)
        if b is not None and b not in chosen and o not in keep:
            skipped.append((o, b))
        else:
            applied.append(o)
    return applied, skipped


def remembered_notes(
    remembered: list[str], applied: list[str], skipped: list[tuple[str, str]], conf_dir: Path | str = CONF_DIR
) -> list[str]:
    """One line per remembered override: applied (where from, how to drop it) or left out (why)."""
    where = overrides_path(conf_dir)
    drop = f"drop it by editing {where}, or forget all with `reportbench compose --reset`"
    out = [f"remembered: {o} (from {where}; {drop})" for o in remembered if o in applied]
    for o, b in skipped:
        if o in remembered:
            out.append(
                f"remembered: {o} not applied: benchmark {b} is not selected (kept in {where}; it applies again "
                f"with {b} selected, e.g. 'benchmarks=[...,{b}]'; {drop})"
            )
    return out


def remembered_overrides(conf_dir: Path | str = CONF_DIR) -> list[str]:
    """The overrides `reportbench compose` remembered (empty when there is no `overrides.yaml`)."""
    path = overrides_path(conf_dir)
    if not path.is_file():
        return []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    items = data.get("overrides") if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(o, str) for o in items):
        raise ConfigError(f"{path}: field 'overrides' must be a list of Hydra overrides (strings)")
    return list(items)
