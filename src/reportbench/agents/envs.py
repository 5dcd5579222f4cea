"""Isolated environments for the agent kinds: `reportbench agents install <kind>` and `reportbench agents ls`.

Why a venv per kind: the agents pin conflicting versions of litellm, langchain, dspy …; installing one must never
change reportbench's environment or another agent's. The venv is built with the interpreter running reportbench
(`python -m venv`), from our pinned requirements file, and `pip freeze` becomes the lock, a DVC dependency of that
kind's system stages (`plan.runs.<b>.<S>.env_lock`): reinstalling other versions reruns only those systems.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from reportbench.agents.protocol import AGENT_KINDS, AGENTS_HOME, BUILTIN_KINDS, VENV_KINDS, requirements_path

PACKAGE_ROOT = Path(__file__).resolve().parent


class AgentEnvError(RuntimeError):
    """An environment is missing or cannot be built; the message says which command fixes it."""


def agents_home() -> Path:
    """`.reportbench/agents` under the working directory (the repository root in DVC stages), or
    `$REPORTBENCH_AGENTS_HOME`."""
    return Path(os.environ.get("REPORTBENCH_AGENTS_HOME") or AGENTS_HOME)


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
    path = Path("constraints.txt") if kind in BUILTIN_KINDS else lock_file(kind)
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def install(kind: str, *, pip_args: list[str] | None = None, echo: bool = True) -> Path:
    """Build `<home>/<kind>/venv` from our pinned requirements and write the lock; returns the lock path."""
    if kind in BUILTIN_KINDS:
        raise AgentEnvError(f"{kind} runs in reportbench's own environment: nothing to install")
    if kind not in VENV_KINDS:
        raise AgentEnvError(f"unknown agent kind {kind!r}; known: {', '.join(AGENT_KINDS)}")
    req = requirements_file(kind)
    if not req.is_file():
        raise AgentEnvError(f"{requirements_path(kind)} is missing: this kind has no pinned requirements yet")
    home = agents_home() / kind
    venv = home / "venv"
    home.mkdir(parents=True, exist_ok=True)
    run_kw: dict[str, Any] = {"check": True} if echo else {"check": True, "capture_output": True}
    if not (venv / "bin" / "python").is_file():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], **run_kw)
    py = str(venv / "bin" / "python")
    try:
        subprocess.run(
            [py, "-m", "pip", "install", "--disable-pip-version-check", "-r", str(req), *(pip_args or [])], **run_kw
        )
        frozen = subprocess.run([py, "-m", "pip", "freeze", "--all"], check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as exc:
        raise AgentEnvError(
            f"installing {kind} into {venv} failed (pip exit {exc.returncode}); see pip's output"
        ) from exc
    lock = lock_file(kind)
    tmp = lock.with_suffix(".tmp")
    tmp.write_text(f"# reportbench agents install {kind}; python {sys.version.split()[0]}\n" + frozen.stdout)
    os.replace(tmp, lock)
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
    return 0


def _cmd_install(args: argparse.Namespace) -> int:
    kinds = list(VENV_KINDS) if args.kind == "all" else [args.kind]
    for kind in kinds:
        lock = install(kind, pip_args=list(args.pip_arg or []))
        print(f"{kind}: installed; lock {lock} ({lock_hash(kind)[:12]})")
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("agents", help="install and list the agent kinds' isolated environments")
    sub = p.add_subparsers(dest="agents_command", required=True)
    ls = sub.add_parser("ls", help="kinds, installed or not, versions, lock hashes")
    ls.set_defaults(func=_cmd_ls)
    ins = sub.add_parser("install", help="build .reportbench/agents/<kind>/venv from our pinned requirements")
    ins.add_argument("kind", choices=[*VENV_KINDS, "all"])
    ins.add_argument("--pip-arg", action="append", help="extra argument for pip install (repeatable)")
    ins.set_defaults(func=_cmd_install)
