"""The sandbox every `command` system and every agent kind runs in (docs/reliability.md, "Sandbox").

Built on bubblewrap (`bwrap`, Debian/Ubuntu package `bubblewrap`): per task, a new PID namespace with its own
/proc (no parent's environment or command line is readable), a new network namespace with only loopback (the
allowed ports, i.e. the budget/search proxy, are bridged in through Unix sockets), new IPC/UTS namespaces, the
environment the caller built and nothing else, the whole filesystem read-only, the user's home, /tmp, /run and
the project's data folders (`data`, `.reportbench`, `.dvc`, `.git`) replaced by empty folders, and only what the
system needs bound back: its code and interpreter read-only, its own output folder (a fresh per-task folder
mounted where its outputs go) and working folder read-write, a private size-limited /tmp. Resource limits
(address space, CPU seconds, processes, open files, file size; disk use of the writable folders and wall time,
watched from outside) are set per task and recorded with how the task ended.

`sandbox:` in a system entry: omitted or `bwrap` (the default), `none` (opt out: the run is recorded and shown as
"unsandboxed"), or a mapping `{backend: bwrap, memory_mb: 8192, cpu_s: ..., processes: 256, open_files: 1024,
file_size_mb: 512, disk_mb: 2048, tmp_mb: 512, allow_ports: [8765], fetch: true, fetch_intercept: true}`
(`fetch`: pages reach the web only through the guarded fetch proxy, reportbench.systems.fetch_proxy; on for agent
kinds, off for commands; `fetch_intercept`: the proxy reads HTTPS pages itself with the run's own CA, trusted
inside the sandbox, so they go through the page cache; false: HTTPS is tunnelled unseen, as before).
`REPORTBENCH_SANDBOX=none` opts out for every system. Where bwrap cannot run (not Linux, not installed, no user
namespaces) a sandboxed system stops its stage with one message naming the fix.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from reportbench.systems._sandbox_inside import splice
from reportbench.systems.base import SystemError_
from reportbench.systems.fetch_proxy import CA_FILE_NAME, FetchProxy, proxy_env, trust_env

GLOBAL_ENV = "REPORTBENCH_SANDBOX"
BACKENDS = ("bwrap", "none")
# As root, each sandbox runs as a user of its own (root is exempt from RLIMIT_NPROC, which counts per user: one
# shared user would let concurrent sandboxes exhaust each other's process limit), named in its /etc/passwd.
SANDBOX_UIDS = (3_000_000_000, 1_000_000_000)  # (first, how many): far above any system or subuid range
SOCKDIR_INSIDE = "/run/reportbench-net"
# project folders hidden from every system: other systems' inputs and outputs, agent runs, caches, history
HIDDEN_PROJECT_DIRS = ("data", ".reportbench", ".dvc", ".git")
LIMIT_KEYS = ("memory_mb", "cpu_s", "processes", "open_files", "file_size_mb", "disk_mb", "tmp_mb")
_INSIDE = Path(__file__).with_name("_sandbox_inside.py")
_POLL_S = 0.1


@dataclass
class SandboxConfig:
    """What a system entry's `sandbox:` resolves to; `limits` are per task."""

    backend: str = "bwrap"
    memory_mb: float | None = 8192  # address space, not RSS: agents that load torch map several GB they never touch
    cpu_s: float | None = None  # default: the task's wall time x the CPUs (threads may use every core)
    processes: int | None = 256
    open_files: int | None = 1024
    file_size_mb: float | None = 512
    disk_mb: float | None = 2048
    tmp_mb: float | None = 512
    allow_ports: list[int] = field(default_factory=list)
    fetch: bool | None = None  # the guarded fetch proxy (reportbench.systems.fetch_proxy); None: the kind decides
    fetch_intercept: bool = True  # the proxy terminates HTTPS (the run's CA) so pages go through the page cache
    opted_out_by: str | None = None  # "config" or GLOBAL_ENV when backend is none

    def limits(self, wall_s: float) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(self, k) for k in LIMIT_KEYS}
        cpus = os.cpu_count() or 1
        out["cpu_s"] = self.cpu_s if self.cpu_s is not None else max(1.0, float(wall_s) * cpus)
        out["wall_s"] = float(wall_s)
        return out

    def record(self, wall_s: float) -> dict[str, Any]:
        """What outcomes and systems.json carry: the backend and (sandboxed) the limits in force."""
        if self.backend == "none":
            return {"backend": "none", "unsandboxed": True, "opted_out_by": self.opted_out_by}
        return {
            "backend": self.backend,
            "limits": self.limits(wall_s),
            "allow_ports": list(self.allow_ports),
            "fetch_proxy": bool(self.fetch),
            "fetch_intercept": bool(self.fetch and self.fetch_intercept),
        }


def parse_sandbox(name: str, value: Any, environ: Mapping[str, str] | None = None) -> SandboxConfig:
    """A system entry's `sandbox:` (None, 'bwrap', 'none' or a mapping), or REPORTBENCH_SANDBOX=none for all."""
    environ = os.environ if environ is None else environ
    global_choice = environ.get(GLOBAL_ENV, "").strip()
    if global_choice and global_choice not in BACKENDS:
        raise SystemError_(f"{GLOBAL_ENV}={global_choice!r}: expected one of {list(BACKENDS)}")
    if value is None or value == "":
        value = global_choice or "bwrap"
        source = GLOBAL_ENV if global_choice == "none" else "config"
    else:
        source = "config"
        if global_choice == "none":
            value, source = "none", GLOBAL_ENV
    if isinstance(value, str):
        value = {"backend": value}
    if not isinstance(value, Mapping):
        raise SystemError_(f"systems.{name}.sandbox: expected 'bwrap', 'none' or a mapping, got {value!r}")
    unknown = set(value) - {"backend", "allow_ports", "fetch", "fetch_intercept", *LIMIT_KEYS}
    if unknown:
        raise SystemError_(
            f"systems.{name}.sandbox: unknown key(s) {sorted(unknown)}; "
            f"known: backend, allow_ports, fetch, fetch_intercept, {', '.join(LIMIT_KEYS)}"
        )
    backend = value.get("backend", "bwrap")
    if backend not in BACKENDS:
        raise SystemError_(f"systems.{name}.sandbox.backend: {backend!r} is not one of {list(BACKENDS)}")
    cfg = SandboxConfig(backend=str(backend), opted_out_by=source if backend == "none" else None)
    for key in LIMIT_KEYS:
        if key in value:
            v = value[key]
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or v <= 0):
                raise SystemError_(f"systems.{name}.sandbox.{key}: expected a positive number or null, got {v!r}")
            setattr(cfg, key, v)
    ports = value.get("allow_ports") or []
    if not isinstance(ports, list | tuple) or not all(isinstance(p, int) and 0 < p < 65536 for p in ports):
        raise SystemError_(f"systems.{name}.sandbox.allow_ports: expected a list of loopback port numbers")
    cfg.allow_ports = [int(p) for p in ports]
    fetch = value.get("fetch")
    if fetch is not None and not isinstance(fetch, bool):
        raise SystemError_(f"systems.{name}.sandbox.fetch: expected true or false, got {fetch!r}")
    cfg.fetch = fetch
    intercept = value.get("fetch_intercept", True)
    if not isinstance(intercept, bool):
        raise SystemError_(f"systems.{name}.sandbox.fetch_intercept: expected true or false, got {intercept!r}")
    cfg.fetch_intercept = intercept
    return cfg


# ------------------------------------------------------------------------------------------- availability
FIX = (
    "install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`) and allow user namespaces "
    "(`sudo sysctl -w kernel.unprivileged_userns_clone=1`, or on Ubuntu 24.04+ "
    "`sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`), or opt out explicitly with "
    f"`sandbox: none` on the system (or {GLOBAL_ENV}=none for every system): it then runs unsandboxed and is "
    "shown as such"
)


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


@functools.cache
def unavailable_reason() -> str | None:
    """Why bwrap cannot sandbox here (None when it can): checked once per process by running it."""
    if not sys.platform.startswith("linux"):
        return f"the sandbox needs Linux (this is {sys.platform})"
    exe = bwrap_path()
    if exe is None:
        return "bubblewrap (bwrap) is not installed"
    probe = [exe, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--proc", "/proc", "--dev", "/dev", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap does not run: {exc}"
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", errors="replace").strip()[-300:]
        return f"bwrap cannot create its namespaces here ({err or f'exit {done.returncode}'})"
    return None


def require(name: str, cfg: SandboxConfig) -> None:
    """Stop the stage with one message naming the fix when the configured sandbox cannot be had."""
    if cfg.backend == "none":
        return
    why = unavailable_reason()
    if why:
        raise SystemError_(f"systems.{name}: cannot sandbox this system: {why}. Fix: {FIX}")


# ------------------------------------------------------------------------------------------ port bridge
class PortBridge:
    """Host side of the network bridge: one Unix socket per allowed port, each connection forwarded to
    127.0.0.1:<port> on the host. The folder of sockets is what the sandbox gets instead of a network."""

    def __init__(self, ports: Iterable[int]) -> None:
        self.ports = sorted({int(p) for p in ports})
        self.sockdir = Path(tempfile.mkdtemp(prefix="rb-sandbox-net-"))
        os.chmod(self.sockdir, 0o755)
        self.fetch_proxy: FetchProxy | None = None  # set by `network` when the run has one
        self._listeners: list[socket.socket] = []
        for port in self.ports:
            path = self.sockdir / f"{port}.sock"
            srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            srv.bind(str(path))
            os.chmod(path, 0o777)  # the sandbox's user may differ from ours (as root, a uid of its own)
            srv.listen(64)
            self._listeners.append(srv)
            threading.Thread(target=self._serve, args=(srv, port), daemon=True).start()

    @staticmethod
    def _serve(srv: socket.socket, port: int) -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            try:
                out = socket.create_connection(("127.0.0.1", port), timeout=10)
                out.settimeout(None)
            except OSError:
                conn.close()
                continue
            threading.Thread(target=splice, args=(conn, out), daemon=True).start()

    def close(self) -> None:
        for srv in self._listeners:
            srv.close()
        shutil.rmtree(self.sockdir, ignore_errors=True)


@contextmanager
def port_bridge(ports: Iterable[int]) -> Iterator[PortBridge | None]:
    ports = list(ports)
    if not ports:
        yield None
        return
    bridge = PortBridge(ports)
    try:
        yield bridge
    finally:
        bridge.close()


@contextmanager
def network(
    cfg: SandboxConfig, ports: Iterable[int] = (), *, fetch_default: bool, fetch_cfg: Mapping[str, Any] | None = None
) -> Iterator[tuple[PortBridge | None, dict[str, str]]]:
    """(the bridge of the ports a sandboxed run may reach, the environment pointing its HTTP clients at the fetch
    proxy and their trust at its CA); nothing for an unsandboxed run (it has the host's network). `fetch_cfg`:
    the pipeline's `fetch` params (the page cache the proxy reads and fills)."""
    if cfg.backend == "none":
        yield None, {}
        return
    if cfg.fetch is None:
        cfg.fetch = fetch_default
    with ExitStack() as stack:
        reach = [*ports, *cfg.allow_ports]
        env: dict[str, str] = {}
        proxy: FetchProxy | None = None
        if cfg.fetch:
            proxy = stack.enter_context(FetchProxy(intercept=cfg.fetch_intercept, fetch_cfg=fetch_cfg))
            reach.append(proxy.port)
            env = proxy_env(proxy.port)
        bridge = stack.enter_context(port_bridge(reach))
        if proxy is not None and bridge is not None:
            bridge.fetch_proxy = proxy
            if proxy.ca is not None:  # the CA's certificate (never its key) beside the sockets, bound read-only
                proxy.ca.write_certificate(bridge.sockdir / CA_FILE_NAME)
                env.update(trust_env(f"{SOCKDIR_INSIDE}/{CA_FILE_NAME}"))
        yield bridge, env


# --------------------------------------------------------------------------------------------- the run
@dataclass
class SandboxResult:
    """How one sandboxed (or unsandboxed) process ended, with what it used."""

    returncode: int
    stdout: bytes
    stderr: bytes
    killed: str | None = None  # why we killed it (wall time, disk), None when it ended by itself
    usage: dict[str, Any] = field(default_factory=dict)

    def limit_reason(self, limits: Mapping[str, Any]) -> str | None:
        """The resource limit a failure points at (a signal or error the kernel gives at that limit), or None."""
        sig = self.usage.get("signal")
        err = self.stderr.decode("utf-8", errors="replace")[-4000:]
        if self.killed:
            return self.killed
        cpu_limit = limits.get("cpu_s")
        if sig == "SIGXCPU" or (sig == "SIGKILL" and cpu_limit and (self.usage.get("cpu_s") or 0) >= cpu_limit):
            return f"sandbox: cpu_s limit {cpu_limit:g} s reached (killed by {sig})"
        if sig == "SIGXFSZ" or "File too large" in err:
            return f"sandbox: file_size_mb limit {limits.get('file_size_mb')} MB reached"
        if "MemoryError" in err or "Cannot allocate memory" in err or "std::bad_alloc" in err:
            return f"sandbox: memory_mb limit {limits.get('memory_mb')} MB reached"
        if "Resource temporarily unavailable" in err or "can't start new thread" in err:
            return f"sandbox: processes limit {limits.get('processes')} reached"
        if "No space left on device" in err:
            return f"sandbox: tmp_mb limit {limits.get('tmp_mb')} MB reached (private /tmp full)"
        if "Too many open files" in err:
            return f"sandbox: open_files limit {limits.get('open_files')} reached"
        return None


def _du(paths: Iterable[Path], cap: int) -> int:
    """Bytes under `paths` (stops counting past `cap`)."""
    total = 0
    for root in paths:
        stack = [str(root)]
        while stack and total <= cap:
            try:
                with os.scandir(stack.pop()) as it:
                    for entry in it:
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                stack.append(entry.path)
                            elif entry.is_file(follow_symlinks=False):
                                total += entry.stat(follow_symlinks=False).st_blocks * 512
                        except OSError:
                            continue
            except OSError:
                continue
    return total


def _existing(paths: Iterable[str | Path]) -> list[str]:
    out: list[str] = []
    for p in paths:
        try:
            real = os.path.realpath(p)
        except (OSError, ValueError):
            continue
        if os.path.exists(real) and real != "/" and real not in out:
            out.append(real)
    return out


def python_roots(python: str | Path) -> list[str]:
    """What an interpreter needs to start: its venv (if any), and the install its symlinks and pyvenv.cfg lead to."""
    p = Path(python)
    roots = [p.parent.parent]
    cfg = p.parent.parent / "pyvenv.cfg"
    if cfg.is_file():
        for line in cfg.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, val = line.partition("=")
            if key.strip() == "home" and val.strip():
                roots.append(Path(val.strip()).parent)
    real = Path(os.path.realpath(p))
    roots.append(real.parent.parent)
    return _existing(roots)


def _editable_finder_paths(site_dirs: Iterable[str]) -> list[str]:
    """Source folders of editable installs made with an import finder (setuptools' strict/PEP 660 mode: they are
    not on sys.path, only named in `__editable___*_finder.py`)."""
    import re

    out: list[str] = []
    for site in site_dirs:
        for finder in Path(site).glob("__editable___*_finder.py"):
            try:
                text = finder.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                if line.startswith("MAPPING"):
                    out += [os.path.dirname(p) for p in re.findall(r"'(/[^']+)'", line)]
    return out


@functools.cache
def own_python_paths() -> tuple[str, ...]:
    """This interpreter's install and import path (its venv, editable installs, plug-ins): read-only code."""
    paths = [*python_roots(sys.executable), sys.prefix, sys.base_prefix, *(p for p in sys.path if p)]
    return tuple(_existing([*paths, *_editable_finder_paths(p for p in sys.path if p.endswith("site-packages"))]))


def _hidden_roots() -> list[str]:
    homes = {os.path.expanduser("~"), "/root", "/home"}
    return sorted(h for h in homes if os.path.isdir(h))


def sandbox_uid() -> int | None:
    """A fresh uid for one sandbox when we are root (None otherwise: the sandbox keeps the user's uid)."""
    if os.geteuid() != 0:
        return None
    import secrets

    return SANDBOX_UIDS[0] + secrets.randbelow(SANDBOX_UIDS[1])


def _identity_files(uid: int, home: str) -> Path:
    """A folder with /etc/passwd and /etc/group copies that name the sandbox's user (programs look themselves up)."""
    folder = Path(tempfile.mkdtemp(prefix="rb-sandbox-id-"))
    os.chmod(folder, 0o755)
    for name, line in (("passwd", f"sandbox:x:{uid}:{uid}:sandbox:{home}:/usr/sbin/nologin\n"),
                       ("group", f"sandbox:x:{uid}:\n")):  # fmt: skip
        try:
            base = Path("/etc", name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            base = ""
        (folder / name).write_text(base.rstrip("\n") + "\n" + line, encoding="utf-8")
        os.chmod(folder / name, 0o644)
    return folder


def closed_ancestors(paths: Iterable[Path], emptied: Iterable[str]) -> list[str]:
    """The folders above `paths` that other users cannot walk through (no o+x, e.g. a 0700 `mktemp -d` or home),
    outermost first. As root the sandboxed program runs as a uid of its own, which the kernel would stop there
    ("Permission denied" on its own project); each becomes an empty, walkable tmpfs and the binds below it are
    made again, so the program reaches exactly what it was given and nothing else that folder holds."""
    skip = [e.rstrip("/") + "/" for e in emptied]
    out: set[str] = set()
    for path in paths:
        for parent in reversed(path.parents[:-1]):  # outermost first, without "/"
            p = str(parent)
            if any((p + "/").startswith(e) for e in skip) or any((p + "/").startswith(o + "/") for o in out):
                continue
            try:
                closed = not os.stat(p).st_mode & 0o001
            except OSError:
                continue
            if closed:
                out.add(p)
    return sorted(out, key=lambda p: (p.count("/"), p))


def bwrap_argv(
    inner: list[str],
    *,
    cwd: Path,
    project: Path,
    ro: Iterable[str | Path],
    rw: Iterable[tuple[str | Path, str | Path]],
    hidden: Iterable[str | Path] = (),
    sockdir: Path | None,
    limits: Mapping[str, Any],
    ports: Iterable[int],
    status_fd: int,
    uid: int | None = None,
    identity: Path | None = None,
    ca_file: Path | None = None,
) -> list[str]:
    """The bwrap command line: namespaces, the read-only root, the hidden folders, the binds, the launcher.
    `ca_file`: the fetch proxy's CA certificate, bound over every certifi bundle the program's Python can import
    (code that passes `certifi.where()` itself ignores SSL_CERT_FILE; its only HTTPS peer is the proxy anyway)."""
    exe = bwrap_path() or "bwrap"
    root = os.geteuid() == 0
    args = [exe, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    args += ["--die-with-parent", "--new-session", "--hostname", "sandbox"]
    if root:  # the launcher drops to the sandbox's uid itself (root ignores RLIMIT_NPROC); it needs these two
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        args += ["--unshare-user", "--disable-userns"]
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    tmp_bytes = str(int(float(limits.get("tmp_mb") or 512) * 1024 * 1024))
    emptied = [d for d in ["/tmp", "/var/tmp", "/run", "/dev/shm", *_hidden_roots()] if os.path.isdir(d)]
    for d in emptied:
        args += ["--perms", "1777", "--size", tmp_bytes, "--tmpfs", d]
    for f in ("/etc/shadow", "/etc/gshadow"):
        if os.path.exists(f):
            args += ["--ro-bind", "/dev/null", f]
    if identity is not None:
        for name in ("passwd", "group"):
            args += ["--ro-bind", str(identity / name), f"/etc/{name}"]
    project = Path(os.path.realpath(project))
    if root and uid is not None:  # the program runs as a uid of its own: it must be able to walk to its binds
        dests = [project, Path(os.path.abspath(cwd)), *map(Path, _existing([*own_python_paths(), *ro]))]
        dests += [Path(os.path.abspath(d)) for _, d in rw]
        for d in closed_ancestors(dests, emptied):
            args += ["--perms", "0755", "--size", tmp_bytes, "--tmpfs", d]  # walkable; its other entries hidden
            emptied.append(d)
    made: set[str] = set()

    def bind(flag: str, src: str, dest: str) -> None:
        # bwrap makes missing mount points 0700: make each one inside an emptied folder 0755 (as root, a uid of its own)
        for parent in reversed(Path(dest).parents):
            p = str(parent)
            if p not in made and any(p.startswith(e.rstrip("/") + "/") for e in emptied):
                made.add(p)
                args.extend(["--perms", "0755", "--dir", p])
        args.extend([flag, src, dest])

    bind("--ro-bind", str(project), str(project))
    hide = _existing([project / d for d in HIDDEN_PROJECT_DIRS] + [Path(h) for h in hidden])
    for d in hide:  # empty and not writable (0555; a tmpfs that vanishes with the sandbox in any case)
        is_dir = os.path.isdir(d)
        args += ["--perms", "0555", "--size", tmp_bytes, "--tmpfs", d] if is_dir else ["--ro-bind", "/dev/null", d]
    emptied += [d for d in hide if os.path.isdir(d)]
    for p in _existing([*own_python_paths(), *ro]):
        bind("--ro-bind", p, p)
    if ca_file is not None:
        for bundle in certifi_bundles(_existing([*own_python_paths(), *ro])):
            args += ["--ro-bind", str(ca_file), bundle]
    for src, dest in rw:
        bind("--bind", os.path.realpath(src), os.path.abspath(dest))
    if sockdir is not None:
        bind("--ro-bind", str(sockdir), SOCKDIR_INSIDE)
    args += ["--chdir", os.path.abspath(cwd)]
    config = [f"status_fd={status_fd}", f"ports={','.join(str(p) for p in sorted({int(p) for p in ports}))}"]
    config += [f"sockdir={SOCKDIR_INSIDE}", f"drop_to={uid if root and uid is not None else ''}"]
    config += [f"{k}={limits.get(k)}" for k in ("memory_mb", "cpu_s", "processes", "open_files", "file_size_mb")]
    return [*args, "--", sys.executable, "-I", "-S", str(_INSIDE), *config, "--", *inner]


def certifi_bundles(roots: Iterable[str]) -> list[str]:
    """certifi's `cacert.pem` files under these import paths or installs (site-packages, venvs, prefixes)."""
    found: set[str] = set()
    for root in roots:
        for pattern in ("certifi/cacert.pem", "lib/python*/site-packages/certifi/cacert.pem"):
            found.update(os.path.realpath(f) for f in Path(root).glob(pattern) if f.is_file())
    return sorted(found)


def _read_all(stream: Any, sink: list[bytes]) -> None:
    for chunk in iter(lambda: stream.read(65536), b""):
        sink.append(chunk)


def _give_to_sandbox_user(paths: Iterable[Path], uid: int | None) -> None:
    """As root, the writable folders go to the sandbox's user so that it can write there, and nowhere else."""
    if uid is None:
        return
    for top in paths:
        for dirpath, dirnames, filenames in os.walk(top):
            for n in [*dirnames, *filenames]:
                os.lchown(os.path.join(dirpath, n), uid, uid)
        os.chown(top, uid, uid)


def reclaim(paths: Iterable[Path]) -> None:
    """Give what the sandbox wrote back to us (as root: files owned by a sandbox uid would surprise DVC's cache)."""
    if os.geteuid() != 0:
        return
    for top in paths:
        for dirpath, dirnames, filenames in os.walk(top):
            for n in [*dirnames, *filenames]:
                try:
                    os.lchown(os.path.join(dirpath, n), 0, 0)
                except OSError:
                    pass
        try:
            os.lchown(top, 0, 0)
        except OSError:
            pass


def run(
    argv: list[str],
    cfg: SandboxConfig,
    *,
    env: Mapping[str, str],
    cwd: Path,
    wall_s: float,
    stdin: bytes | None = None,
    ro: Iterable[str | Path] = (),
    rw: Iterable[tuple[Path, Path]] = (),
    hidden: Iterable[str | Path] = (),
    bridge: PortBridge | None = None,
    project: Path | None = None,
) -> SandboxResult:
    """Run argv (in the sandbox unless cfg.backend is none) with the wall-time and disk watch; never raises for
    what the program does. `rw` is (host folder, where the program sees it) pairs: the only writable places."""
    rw = [(Path(s), Path(d)) for s, d in rw]
    limits = cfg.limits(wall_s)
    started = time.monotonic()
    pass_fds: tuple[int, ...] = ()
    status_r = status_w = -1
    identity: Path | None = None
    token: str | None = None
    proxy = bridge.fetch_proxy if bridge is not None and cfg.backend == "bwrap" else None
    if proxy is not None and "HTTPS_PROXY" in env:  # credentials of its own: what it reads is logged per task
        token = proxy.new_task()
        env = {**env, **proxy_env(proxy.port, token)}
    if cfg.backend == "bwrap":
        uid = sandbox_uid()
        _give_to_sandbox_user([s for s, _ in rw], uid)
        if uid is not None:
            identity = _identity_files(uid, env.get("HOME", "/"))
        status_r, status_w = os.pipe()
        full = bwrap_argv(
            argv,
            cwd=cwd,
            project=project or Path.cwd(),
            ro=ro,
            rw=rw,
            hidden=hidden,
            sockdir=bridge.sockdir if bridge else None,
            limits=limits,
            ports=bridge.ports if bridge else (),
            status_fd=status_w,
            uid=uid,
            identity=identity,
            ca_file=bridge.sockdir / CA_FILE_NAME if proxy is not None and proxy.ca is not None else None,
        )
        pass_fds = (status_w,)
    else:
        full = list(argv)
    try:
        proc = subprocess.Popen(
            full,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(cwd) if cfg.backend == "none" else None,
            env=dict(env),
            start_new_session=True,  # its own process group: a kill takes everything it started
            pass_fds=pass_fds,
        )
    finally:
        if status_w >= 0:
            os.close(status_w)
    out: list[bytes] = []
    err: list[bytes] = []
    readers = [
        threading.Thread(target=_read_all, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_read_all, args=(proc.stderr, err), daemon=True),
    ]
    for t in readers:
        t.start()
    if stdin is not None and proc.stdin is not None:
        try:
            proc.stdin.write(stdin)
        except OSError:
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass
    disk_cap = int(float(limits["disk_mb"]) * 1024 * 1024) if limits.get("disk_mb") and cfg.backend != "none" else 0
    killed: str | None = None
    rusage: Any = None
    status = 0
    next_du = 0.0
    pause = 0.002
    while True:
        pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        now = time.monotonic()
        if killed is None and now - started > wall_s:
            killed = f"timeout: no exit after {wall_s:g} s (killed)"
            _kill_group(proc.pid)
        elif killed is None and disk_cap and now >= next_du:
            next_du = now + 0.25
            if _du([s for s, _ in rw], disk_cap) > disk_cap:
                killed = f"sandbox: disk_mb limit {limits['disk_mb']} MB reached in its writable folders (killed)"
                _kill_group(proc.pid)
        time.sleep(pause)
        pause = min(_POLL_S, pause * 2)  # short tasks end within a few ms of exiting, long ones cost 10 wakeups/s
    proc.returncode = os.waitstatus_to_exitcode(status)
    for t in readers:
        t.join(timeout=5)
    usage: dict[str, Any] = {"wall_s": round(time.monotonic() - started, 3)}
    if status_r >= 0:
        with os.fdopen(status_r, "rb") as f:
            line = f.read(4096).decode("utf-8", errors="replace").strip()
        try:
            usage.update(json.loads(line) if line else {})
        except ValueError:
            pass
        code = int(usage.get("exit", proc.returncode)) if "exit" in usage else proc.returncode
    else:
        code = proc.returncode
        usage["cpu_s"] = round(rusage.ru_utime + rusage.ru_stime, 3) if rusage else None
        usage["max_rss_mb"] = round(rusage.ru_maxrss / 1024, 1) if rusage else None
    if proxy is not None and token is not None:
        usage["fetch_proxy"] = proxy.task_record(token)
    if cfg.backend == "bwrap":
        reclaim([s for s, _ in rw])
    if identity is not None:
        shutil.rmtree(identity, ignore_errors=True)
    return SandboxResult(code, b"".join(out), b"".join(err), killed, usage)


def _kill_group(pid: int) -> None:
    import signal

    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


UNIT_PARTS = ".units"  # a fanned-out unit's share of a run's stage files (runtime.executor: ray), merged after


def write_record(out_dir: Path, record: Mapping[str, Any], tasks: Mapping[str, Any], *, unit: bool = False) -> None:
    """`<run>/sandbox.json`: the backend, the limits and, per task, how it ended and what it used. A `unit` (one
    task of a fanned-out stage, on any node) writes its share under `.units/`; `merge_unit_records` joins them."""
    if unit:
        import hashlib

        parts = Path(out_dir) / UNIT_PARTS
        parts.mkdir(parents=True, exist_ok=True)
        for task_id, usage in tasks.items():
            name = f"sandbox.{hashlib.sha256(task_id.encode()).hexdigest()[:16]}.json"
            part = {"record": dict(record), "task_id": task_id, "usage": usage}
            (parts / name).write_text(json.dumps(part, sort_keys=True), encoding="utf-8")
        return
    data = {**record, "tasks": dict(tasks)}
    (Path(out_dir) / "sandbox.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def merge_unit_records(out_dir: Path, task_ids: list[str]) -> None:
    """`sandbox.json` from the units' shares, tasks in stage order (what the in-process run writes); shares go."""
    parts = Path(out_dir) / UNIT_PARTS
    found = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(parts.glob("sandbox.*.json"))]
    if not found:
        return
    usage = {part["task_id"]: part["usage"] for part in found}
    write_record(out_dir, found[0]["record"], {t: usage.get(t) for t in task_ids})
    for p in parts.glob("sandbox.*.json"):
        p.unlink()


__all__ = [
    "FIX",
    "GLOBAL_ENV",
    "PortBridge",
    "SandboxConfig",
    "SandboxResult",
    "asdict",
    "bwrap_argv",
    "parse_sandbox",
    "port_bridge",
    "python_roots",
    "require",
    "run",
    "unavailable_reason",
    "write_record",
    "merge_unit_records",
]
