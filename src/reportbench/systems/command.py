"""`kind: command` — bring your own system as a program: it reads a task JSON and writes a report file.

    my_system:
      kind: command
      path: examples/byo_command_system.py     # DVC dependency: the script (edit it -> only this reruns)
      cmd: [python, examples/byo_command_system.py, --task, "{task_json}", --out, "{output}"]
      timeout_s: 600
      format: markdown                         # any report adapter (`reportbench parse --help`)

`cmd` is an argv list, run without a shell (config is trusted, task data is not: a title can never become
shell syntax). Placeholders are replaced per argument: `{task_json}` (a JSON file with task_id, title,
abstract, published_date, categories and task_prompt; never the exemplar), `{output}` (where to write:
`<out>/raw/<task_id>.md`, or a folder when `output_suffix: ""`), `{task_id}`. Without placeholders the two
paths are appended. Non-zero exit, timeout (the whole process group is killed) and empty output are
recorded as `failed` outcomes with the reason; the run goes on with the next task.

The program is untrusted: it gets only `BASE_ENV` (PATH, HOME, locale, temp dir), the variables named in
`pass_env: [MY_AGENT_KEY]` and the `env:` mapping, never the rest of this process's environment (the judge's
key stays here). Its reports are read with the per-report bounds of `limits:` (reportbench.bounds).

It runs sandboxed (reportbench.systems.sandbox; `sandbox: none` opts out): no network (`sandbox: {allow_ports:
[8765]}` bridges a loopback port in), the project read-only with its data folders hidden, and one writable
place, a fresh folder mounted where `{output}` goes, from which only `{output}` is kept. Per task, the limits and
what it used go to `<run>/sandbox.json`; a limit it hit is named in the outcome's reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from reportbench.bounds import ReportLimits, report_limits
from reportbench.systems import sandbox
from reportbench.systems.base import SystemError_, TaskOutcome, register_kind
from reportbench.systems.common import RunCollector, parse_output, raw_path, safe_name, task_payload
from reportbench.systems.sandbox import PortBridge, SandboxConfig, network, parse_sandbox, require, write_record
from reportbench.types import Report, Task

DEFAULTS: dict[str, Any] = {
    "cmd": None,
    "timeout_s": 600.0,
    "format": "markdown",
    "output_suffix": ".md",
    "env": {},
    "pass_env": [],
    "limits": {},
    "cwd": None,
    "max_parallel": 1,
    "sandbox": None,  # bwrap (default) | none | a mapping of limits (reportbench.systems.sandbox)
}
_ALLOWED = set(DEFAULTS) | {"kind", "path", "release_dir", "benchmark"}  # release_dir, benchmark: set by the pipeline
STDERR_TAIL = 600


def payload_for(cfg: dict[str, Any]) -> Any:
    """The task JSON a command receives: its benchmark's `task_payload` when it defines one (an agent runs on
    every benchmark), else the generic payload (everything but the answer key)."""
    if cfg.get("benchmark"):
        from reportbench.benchmarks import get_benchmark  # lazy: +842 ms to import (python -X importtime)

        custom = get_benchmark(str(cfg["benchmark"])).task_payload
        if custom is not None:
            return custom
    return task_payload


def _config(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    unknown = {k for k in set(spec) - _ALLOWED if not str(k).startswith("_")}  # `_...`: added by the spine
    if unknown:
        raise SystemError_(f"systems.{name}: unknown key(s) {sorted(unknown)}; known: {sorted(_ALLOWED)}")
    cfg = {**DEFAULTS, **spec}
    cmd = cfg["cmd"]
    if (
        isinstance(cmd, str)
        or not isinstance(cmd, list | tuple)
        or not cmd
        or not all(isinstance(a, str | int | float) for a in cmd)
    ):
        raise SystemError_(
            f"systems.{name}.cmd: expected an argv list such as [python, my_system.py, '{{task_json}}', "
            f"'{{output}}'] (a shell string is not accepted), got {cmd!r}"
        )
    if not isinstance(cfg["env"], dict):
        raise SystemError_(f"systems.{name}.env: expected a mapping of environment variables")
    pass_env = cfg["pass_env"]
    if not isinstance(pass_env, list | tuple) or not all(isinstance(n, str) and n for n in pass_env):
        raise SystemError_(f"systems.{name}.pass_env: expected a list of environment variable NAMES, got {pass_env!r}")
    if float(cfg["timeout_s"]) <= 0:
        raise SystemError_(f"systems.{name}.timeout_s: must be positive")
    cfg["_sandbox"] = parse_sandbox(name, cfg["sandbox"])
    return cfg


def build_argv(cmd: list[Any], task_json: Path, output: Path, task_id: str) -> list[str]:
    """Substitute the placeholders in each argument (plain replace: no shell, no format-string parsing)."""
    args = [str(a) for a in cmd]
    has_placeholder = any("{task_json}" in a or "{output}" in a for a in args)
    out = [
        a.replace("{task_json}", str(task_json)).replace("{output}", str(output)).replace("{task_id}", task_id)
        for a in args
    ]
    return out if has_placeholder else [*out, str(task_json), str(output)]


_SECRET_ENV_NAME = re.compile(r"(?i)(?:key|token|secret|passw(?:or)?d|credential)")


# What any program needs to start (interpreter lookup, locale, temp files): never a key or a token.
BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TEMP", "TMP",
            "VIRTUAL_ENV", "PYTHONPATH", "SYSTEMROOT", "TERM")


def command_env(cfg: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """The command's environment: BASE_ENV, the variables its config names in `pass_env`, and its `env`
    mapping. Nothing else: the judge's OPENAI_API_KEY (or any other secret of this process) never reaches an
    untrusted program unless its config asks for it by name."""
    names = [*BASE_ENV, *(str(n) for n in cfg.get("pass_env") or [])]
    env = {n: environ[n] for n in names if n in environ}
    env.update({str(k): str(v) for k, v in (cfg.get("env") or {}).items()})
    return env


def _secret_env_values(env: Mapping[str, str]) -> tuple[str, ...]:
    """Values of secret-looking environment variables the command inherits (longest first)."""
    return tuple(sorted({v for k, v in env.items() if v and _SECRET_ENV_NAME.search(k)}, key=len, reverse=True))


def _tail(data: bytes | None, secrets: tuple[str, ...] = ()) -> str:
    """Last STDERR_TAIL chars of stderr, secrets redacted (any >= 8-char fragment of a secret-looking value,
    reversed or encoded: reportbench.redaction): it goes into the DVC-tracked outcomes.jsonl, and programs
    echo keys, or pieces of them, in auth errors."""
    from reportbench.redaction import redact  # lazy: +22 ms to import (python -X importtime)

    text = (data or b"").decode("utf-8", errors="replace").strip()
    return redact(text, secrets)[-STDERR_TAIL:]


def _path_args(argv: list[str], cwd: Path) -> list[Path]:
    """Arguments that name existing files or folders (the program, its script): bound read-only in the sandbox."""
    out = []
    for a in argv:
        if not a or a.startswith("-") or "\x00" in a:
            continue
        p = Path(a) if os.path.isabs(a) else cwd / a
        try:
            if p.exists():
                out.append(p)
        except OSError:
            continue
    return out


def run_one(
    name: str,
    cfg: dict[str, Any],
    task: Task,
    out_dir: Path,
    work: Path,
    bridge: PortBridge | None = None,
    usage: dict[str, Any] | None = None,
    net_env: Mapping[str, str] | None = None,
) -> tuple[Report | None, TaskOutcome]:
    """Run the command for one task and parse what it wrote; every failure becomes an outcome."""
    box: SandboxConfig = cfg["_sandbox"]
    task_json = work / f"{safe_name(task.task_id)}.json"
    task_json.write_text(json.dumps(payload_for(cfg)(task), indent=2, ensure_ascii=False), encoding="utf-8")
    output = raw_path(out_dir, task.task_id, str(cfg["output_suffix"]))
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.is_file():
        output.unlink()  # a stale file from an earlier run must never pass for this run's output
    elif output.is_dir():
        shutil.rmtree(output)
    argv = build_argv(list(cfg["cmd"]), task_json, output, task.task_id)
    env = command_env(cfg, os.environ)
    timeout = float(cfg["timeout_s"])
    cwd = Path(cfg["cwd"] or Path.cwd())
    staging = Path(tempfile.mkdtemp(prefix="rb-out-", dir=work.parent))
    try:
        if box.backend == "none":
            if cfg["output_suffix"] == "":
                output.mkdir(exist_ok=True)
            result = sandbox.run(argv, box, env=env, cwd=cwd, wall_s=timeout)
        else:
            if cfg["output_suffix"] == "":
                (staging / output.name).mkdir()
            env.update({"TMPDIR": "/tmp", "TEMP": "/tmp", "TMP": "/tmp", **(net_env or {})})  # its private /tmp
            ro = [task_json, cwd, *_path_args(argv, cwd)]
            if cfg.get("path"):
                ro.append(Path(str(cfg["path"])))
            # only the folder of {output} is writable: a fresh one per task, mounted over <run>/raw
            result = sandbox.run(
                argv, box, env=env, cwd=cwd, wall_s=timeout, ro=ro, rw=[(staging, output.parent)], bridge=bridge
            )
            produced = staging / output.name
            if produced.is_symlink() or produced.is_file():
                os.replace(produced, output)
            elif produced.is_dir():
                shutil.move(str(produced), str(output))
    except OSError as exc:
        return None, TaskOutcome(task_id=task.task_id, status="failed", reason=f"cannot start {argv[0]!r}: {exc}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    limits = box.limits(timeout)
    limit = result.limit_reason(limits) if box.backend != "none" else result.killed
    if usage is not None:
        usage[task.task_id] = {**result.usage, "limit": limit}
    if result.killed:
        return None, TaskOutcome(task_id=task.task_id, status="failed", reason=result.killed)
    if result.returncode != 0:
        tail = _tail(result.stderr, _secret_env_values(env))
        if result.returncode == 127 and "[sandbox] cannot start" in tail:
            reason = f"cannot start {argv[0]!r}: {tail.split(': ', 1)[-1]}"
        else:
            reason = (f"{limit}; " if limit else "") + f"exit code {result.returncode}"
            reason += f"; stderr: {tail}" if tail else ""
        return None, TaskOutcome(task_id=task.task_id, status="failed", reason=reason)

    try:
        limits_r = ReportLimits.from_spec(cfg, name)
    except ValueError as exc:
        raise SystemError_(str(exc)) from exc
    with report_limits(limits_r, name):
        return parse_output(output, system=name, task_id=task.task_id, fmt=str(cfg["format"]))


@register_kind("command")
def run_command_system(
    name: str, spec: dict[str, Any], tasks: list[Task], out_dir: Path
) -> tuple[list[Report], list[TaskOutcome]]:
    """Run `cmd` once per task (optionally a few at a time); one outcome per task."""
    cfg = _config(name, spec)
    box: SandboxConfig = cfg["_sandbox"]
    require(name, box)  # no sandbox and no explicit opt-out: one message naming the fix, before any task
    run = RunCollector([t.task_id for t in tasks])
    usage: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix=f"reportbench-{safe_name(name)}-") as tmp, network(
        box, fetch_default=False
    ) as (bridge, net_env):
        work = Path(tmp) / "tasks"
        work.mkdir()
        os.chmod(tmp, 0o755)  # the task JSON is read by the sandbox's user (its own uid when we are root)
        os.chmod(work, 0o755)

        def job(task: Task) -> None:
            try:
                run.add(*run_one(name, cfg, task, out_dir, work, bridge, usage, net_env))
            except Exception as exc:  # noqa: BLE001 - one broken task is a recorded failure
                run.fail(task.task_id, f"internal: {type(exc).__name__}: {exc}")

        workers = max(1, int(cfg["max_parallel"]))
        if workers == 1:
            for task in tasks:
                job(task)
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(job, tasks))
    write_record(out_dir, box.record(float(cfg["timeout_s"])), {t.task_id: usage.get(t.task_id) for t in tasks},
                 unit=bool(spec.get("_unit")))  # fmt: skip
    return run.result()
