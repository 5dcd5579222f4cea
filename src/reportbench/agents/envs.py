"""Isolated environments for the agent kinds: `reportbench agents install <kind>` and `reportbench agents ls`.

Why a venv per kind: the agents pin conflicting versions of litellm, langchain, dspy …; installing one must never
change reportbench's environment or another agent's. The venv is built for the interpreter running reportbench,
by uv when it is found (pip otherwise), from our pinned requirements file (every package pinned, `--no-deps`); the
venv's installed distributions become the lock, a DVC dependency of that kind's system stages
(`plan.runs.<b>.<S>.env_lock`): reinstalling other versions reruns only those systems. A build is kept while the
requirements file is unchanged and runs under a per-kind file lock, so concurrent callers share one build.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from reportbench.agents.protocol import AGENT_KINDS, AGENTS_HOME, BUILTIN_KINDS, VENV_KINDS, requirements_path

PACKAGE_ROOT = Path(__file__).resolve().parent


class AgentEnvError(RuntimeError):
    """An environment is missing or cannot be built; the message says which command fixes it."""


def repository_root(start: Path | None = None) -> Path:
    """The DVC repository holding `start` (default: the working directory), absolute: the nearest folder with a
    `.dvc/` directory, as `dvc` itself finds it; the working directory itself when there is none.

    Why: DVC runs a stage from the repository root, but an adapter runs in a temporary folder, so a relative
    path handed to it (the venv's python) would name nothing there."""
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        if (folder / ".dvc").is_dir():
            return folder
    return here


def agents_home() -> Path:
    """`$REPORTBENCH_AGENTS_HOME`, else `.reportbench/agents` in the repository root (`repository_root`); always
    absolute, so it names the same folder from an adapter's temporary working directory."""
    env = os.environ.get("REPORTBENCH_AGENTS_HOME")
    return Path(env).absolute() if env else repository_root() / AGENTS_HOME


def requirements_file(kind: str) -> Path:
    return PACKAGE_ROOT / "requirements" / f"{kind}.txt"


def adapter_file(kind: str) -> Path:
    return PACKAGE_ROOT / "adapters" / f"{kind}.py"


def venv_python(kind: str) -> Path:
    return agents_home() / kind / "venv" / "bin" / "python"


def lock_file(kind: str) -> Path:
    return agents_home() / kind / "lock.txt"


def python_for(kind: str) -> Path:
    """The interpreter that runs a kind's adapter: its venv's, or reportbench's own for the built-in kinds."""
    if kind in BUILTIN_KINDS:
        return Path(sys.executable)
    py = venv_python(kind)
    if not py.is_file() or not lock_file(kind).is_file():
        raise AgentEnvError(f"agent kind {kind!r} is not installed: run `reportbench agents install {kind}`")
    return py


def lock_hash(kind: str) -> str:
    """sha256 of the kind's lock (reportbench's constraints.txt for the built-in kinds; '' when absent)."""
    path = repository_root() / "constraints.txt" if kind in BUILTIN_KINDS else lock_file(kind)
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


INSTALLER_ENV = "REPORTBENCH_AGENTS_INSTALLER"  # uv | pip; default: uv when found, else pip
BUILD_TIMEOUT_S = 1800.0  # per installer command: a hung download must not hold the build lock for ever
# the venv's installed distributions as `Name==version` lines (pip freeze's form) less what `python -m venv` seeds
# and `uv venv` does not (pip, setuptools, wheel); run by the venv's own python, so the lock is the same whichever
# installer built the venv
FREEZE = """
import importlib.metadata as m
seen = {}
for d in m.distributions():
    name = d.metadata["Name"] or ""
    if name and name.lower() not in ("pip", "setuptools", "wheel", "distribute"):
        seen.setdefault(name.lower(), f"{name}=={d.version}")
print("\\n".join(seen[k] for k in sorted(seen)))
"""


def find_uv() -> str | None:
    """The uv binary (PATH, reportbench's own venv, or the `uv` package), or None to build with pip.

    Why uv: it builds these venvs 5-20x faster than pip (docs/agents.md §11.5). `REPORTBENCH_AGENTS_INSTALLER=pip`
    forces pip; `=uv` makes a missing uv an error."""
    choice = os.environ.get(INSTALLER_ENV, "").strip().lower()
    if choice not in ("", "uv", "pip"):
        raise AgentEnvError(f"{INSTALLER_ENV}={choice!r}: use uv or pip")
    if choice == "pip":
        return None
    beside = Path(sys.executable).parent / "uv"
    found = shutil.which("uv") or (str(beside) if beside.is_file() else None)
    if not found:
        try:
            from uv import find_uv_bin  # type: ignore[import-not-found]

            found = find_uv_bin()
        except Exception:
            found = None
    if choice == "uv" and not found:
        raise AgentEnvError(f"{INSTALLER_ENV}=uv but no uv was found: `pip install uv`")
    return found


def pip_sources() -> list[str]:
    """pip's configured package sources as uv arguments (uv reads no pip configuration).

    Why: where pip is configured with a find-links folder or a mirror (this machine's CPU torch wheel lies in
    pip's find-links), uv must look at the same places, or it builds a different venv (a CUDA torch from PyPI).
    Per key the last value pip lists wins, as in pip (environment over user over global files)."""
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                             timeout=60, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    conf: dict[str, str] = {}
    for line in out.splitlines():
        key, sep, raw = line.partition("=")
        if not sep:
            continue
        try:
            value = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError):
            continue
        conf[key.rsplit(".", 1)[-1]] = str(value)
    args: list[str] = []
    # `cert`: the CA bundle pip trusts (a TLS-inspecting proxy's CA); uv's built-in roots would refuse the index
    flags = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
             "constraint": "--constraint", "cert": "--cert"}
    for key, flag in flags.items():
        for value in conf.get(key, "").split():
            args += [flag, value]
    if "extra-index-url" in conf or "find-links" in conf:
        args += ["--index-strategy", "unsafe-best-match"]  # pip's rule: the best match across every source
    return args


def _stamp(kind: str, pip_args: list[str]) -> str:
    """What a venv was built from: our requirements file, the extra installer arguments and the Python."""
    h = hashlib.sha256(requirements_file(kind).read_bytes())
    h.update(json.dumps([pip_args, sys.version_info[:3]]).encode())
    return h.hexdigest()


def _state_file(kind: str) -> Path:
    return agents_home() / kind / "build.json"


def build_log(kind: str) -> Path:
    return agents_home() / kind / "build.log"


def _read_state(kind: str) -> dict[str, Any]:
    try:
        state = json.loads(_state_file(kind).read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _write_state(kind: str, state: dict[str, Any]) -> None:
    path = _state_file(kind)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1) + "\n")
    os.replace(tmp, path)


def is_current(kind: str, pip_args: list[str] | None = None) -> bool:
    """True when the kind's venv was built, successfully, from the current requirements file."""
    state = _read_state(kind)
    return (state.get("status") == "ok" and state.get("stamp") == _stamp(kind, list(pip_args or []))
            and venv_python(kind).is_file() and lock_file(kind).is_file())


def _log_tail(kind: str, lines: int = 25) -> str:
    try:
        text = build_log(kind).read_text(errors="replace").rstrip().splitlines()
    except OSError:
        return "(no build log)"
    return "\n".join(text[-lines:])


@contextlib.contextmanager
def _build_lock(kind: str) -> Iterator[None]:
    """One build of a kind at a time across processes: a second `install` (a test while CI's background build
    runs) waits here, then finds the venv current and returns at once."""
    home = agents_home() / kind
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".build.lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run_logged(cmd: list[str], log: Any) -> None:
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=True, timeout=BUILD_TIMEOUT_S)


def _build(kind: str, pip_args: list[str]) -> str:
    """A fresh venv from our requirements file (every package pinned: `--no-deps`); returns the installer."""
    venv = agents_home() / kind / "venv"
    if venv.is_symlink() or venv.is_file():
        venv.unlink()
    elif venv.exists():
        shutil.rmtree(venv)
    req = str(requirements_file(kind))
    uv = find_uv()
    with open(build_log(kind), "w") as log:
        if uv:
            installer = subprocess.run([uv, "--version"], capture_output=True, text=True).stdout.strip() or "uv"
            _run_logged([uv, "venv", "--python", sys.executable, str(venv)], log)
            # --compile-bytecode as pip does: the agents' first imports (torch, transformers, langchain …) would
            # otherwise compile inside the first tasks (~70 s of the CI agent tests), not in the (background) build
            _run_logged([uv, "pip", "install", "--python", str(venv / "bin" / "python"), "--compile-bytecode",
                         "--no-deps", *pip_sources(), "-r", req, *pip_args], log)
        else:
            installer = "pip"
            _run_logged([sys.executable, "-m", "venv", str(venv)], log)
            _run_logged([str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
                         "--no-deps", "-r", req, *pip_args], log)
    return installer


def install(kind: str, *, pip_args: list[str] | None = None, echo: bool = True, force: bool = False,
            retry_failed: bool = True) -> Path:
    """Build `<home>/<kind>/venv` from our pinned requirements and write the lock; returns the lock path.

    A venv already built from the same requirements is kept (one build per CI run, shared by every test); a
    build another process is running is waited for. `retry_failed=False` (the tests) reports an earlier failed
    build of the same requirements with its log's tail instead of building again."""
    if kind in BUILTIN_KINDS:
        raise AgentEnvError(f"{kind} runs in reportbench's own environment: nothing to install")
    if kind not in VENV_KINDS:
        raise AgentEnvError(f"unknown agent kind {kind!r}; known: {', '.join(AGENT_KINDS)}")
    if not requirements_file(kind).is_file():
        raise AgentEnvError(f"{requirements_path(kind)} is missing: this kind has no pinned requirements yet")
    args = list(pip_args or [])
    stamp = _stamp(kind, args)
    with _build_lock(kind):
        if not force and is_current(kind, args):
            return lock_file(kind)
        state = _read_state(kind)
        if not retry_failed and state.get("status") == "failed" and state.get("stamp") == stamp:
            raise AgentEnvError(f"the {kind} venv build failed ({state.get('reason')}); retry with `reportbench "
                                f"agents install {kind}`. {build_log(kind)} ends:\n{_log_tail(kind)}")
        lock_file(kind).unlink(missing_ok=True)  # a failed build leaves the kind not installed, never stale
        if echo:
            print(f"{kind}: building {agents_home() / kind / 'venv'} from {requirements_path(kind)}", flush=True)
        started = time.monotonic()
        try:
            installer = _build(kind, args)
            venv_py = str(venv_python(kind))
            frozen = subprocess.run([venv_py, "-c", FREEZE], check=True, capture_output=True, text=True).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            reason = (f"exit {exc.returncode}" if isinstance(exc, subprocess.CalledProcessError)
                      else type(exc).__name__)
            _write_state(kind, {"status": "failed", "stamp": stamp, "reason": reason,
                                "seconds": round(time.monotonic() - started, 1)})
            raise AgentEnvError(f"installing {kind} into {agents_home() / kind / 'venv'} failed ({reason}); "
                                f"{build_log(kind)} ends:\n{_log_tail(kind)}") from exc
        lock = lock_file(kind)
        tmp = lock.with_suffix(".tmp")
        tmp.write_text(f"# reportbench agents install {kind}; python {sys.version.split()[0]}\n" + frozen)
        os.replace(tmp, lock)
        _write_state(kind, {"status": "ok", "stamp": stamp, "installer": installer,
                            "seconds": round(time.monotonic() - started, 1)})
        return lock


def _version_from_lock(kind: str) -> str:
    """The agent package's pinned version, read from the lock (the first requirement of our file)."""
    req = requirements_file(kind)
    lock = lock_file(kind)
    if not (req.is_file() and lock.is_file()):
        return ""
    first = next(
        (
            ln.split("==")[0].split(">=")[0].split("[")[0].strip()
            for ln in req.read_text().splitlines()
            if ln.strip() and not ln.lstrip().startswith(("#", "-"))
        ),
        "",
    )
    norm = first.lower().replace("_", "-")
    for line in lock.read_text().splitlines():
        name, _, version = line.partition("==")
        if name.strip().lower().replace("_", "-") == norm:
            return f"{first} {version.strip()}"
    return ""


def status() -> list[dict[str, str]]:
    """One row per kind: environment, installed or not, version, lock hash."""
    rows = []
    for kind in AGENT_KINDS:
        if kind in BUILTIN_KINDS:
            rows.append(
                {
                    "kind": kind,
                    "environment": "reportbench's own",
                    "installed": "yes",
                    "version": "built-in",
                    "lock": lock_hash(kind)[:12],
                }
            )
            continue
        installed = venv_python(kind).is_file() and lock_file(kind).is_file()
        rows.append(
            {
                "kind": kind,
                "environment": str(agents_home() / kind / "venv"),
                "installed": "yes" if installed else "no",
                "version": _version_from_lock(kind) if installed else "",
                "lock": lock_hash(kind)[:12] if installed else "",
            }
        )
    return rows


def _cmd_ls(args: argparse.Namespace) -> int:
    rows = status()
    cols = ["kind", "installed", "version", "lock", "environment"]
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in cols}
    print("  ".join(c.ljust(widths[c]) for c in cols))
    for r in rows:
        print("  ".join(r[c].ljust(widths[c]) for c in cols))
    missing = [r["kind"] for r in rows if r["installed"] == "no"]
    for kind in missing:  # a failed build says why, where its log is and how to retry (build.json)
        state = _read_state(kind)
        if state.get("status") == "failed":
            print(f"{kind}: the last build failed ({state.get('reason')}): {build_log(kind)}; retry with "
                  f"`reportbench agents install {kind}`")
    if missing:
        print(f"not installed: {', '.join(missing)}: `reportbench agents install <kind>` (or `all`) builds them "
              "(needs: network); a system of such a kind stops until then")
    from reportbench.agents.provider import backend_rows  # lazy: +1 ms to import (python -X importtime)

    backends = backend_rows()
    cols = ["backend", "installed", "client", "models"]
    widths = {c: max(len(c), *(len(r[c]) for r in backends)) for c in cols}
    print("backends of provider_deep_research (the model's prefix chooses one):")
    print("  ".join(c.ljust(widths[c]) for c in cols))
    for r in backends:
        print("  ".join(r[c].ljust(widths[c]) for c in cols))
    return 0


def _cmd_install(args: argparse.Namespace) -> int:
    """Build the kinds concurrently (downloads and unpacking, not CPU, are what a build waits on)."""
    kinds = list(VENV_KINDS) if args.kind == "all" else [args.kind]
    pip_args = list(args.pip_arg or [])

    def one(kind: str) -> str:
        started = time.monotonic()
        lock = install(kind, pip_args=pip_args, force=args.force)
        state = _read_state(kind)
        return (f"{kind}: installed with {state.get('installer', '?')} in {state.get('seconds', '?')} s "
                f"(this call {time.monotonic() - started:.1f} s); lock {lock} ({lock_hash(kind)[:12]})")

    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, min(args.jobs, len(kinds)))) as pool:
        for kind, fut in [(k, pool.submit(one, k)) for k in kinds]:
            try:
                print(fut.result(), flush=True)
            except AgentEnvError as exc:
                failed += 1
                print(f"error: {kind}: {exc}", file=sys.stderr, flush=True)
    return 1 if failed else 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("agents", help="install and list the agent kinds' isolated environments")
    sub = p.add_subparsers(dest="agents_command", required=True)
    ls = sub.add_parser("ls", help="kinds, installed or not, versions, lock hashes")
    ls.set_defaults(func=_cmd_ls)
    ins = sub.add_parser("install", help="build .reportbench/agents/<kind>/venv from our pinned requirements "
                         "(uv when found, else pip; kept when current)")
    ins.add_argument("kind", choices=[*VENV_KINDS, "all"], help="the agent kind to install, or all")
    ins.add_argument("--pip-arg", action="append",
                     help="extra argument for the installer (`uv pip install` or `pip install`; repeatable)")
    ins.add_argument("--force", action="store_true", help="rebuild even when the venv is current")
    ins.add_argument("--jobs", type=int, default=len(VENV_KINDS), help="kinds built at once (with `all`)")
    ins.set_defaults(func=_cmd_install)
