"""The sandbox's first process (stdlib only: it runs as `python -I -S` inside bubblewrap, before the system).

It bridges the allowed loopback ports into the sandbox's empty network namespace (a listener on
127.0.0.1:<port> that forwards each connection to the Unix socket the host bound in for that port: the only way
out), then forks the system's command with its resource limits set and, when started as root, as an
unprivileged user (root ignores RLIMIT_NPROC). It waits for the command and writes one JSON line with how it
ended to the status descriptor, which the command never holds.

Usage: python -I -S _sandbox_inside.py key=value... -- argv...   (keys: status_fd, sockdir, ports (comma
separated), drop_to, and the limits memory_mb, cpu_s, processes, open_files, file_size_mb). No json, and socket
and threading only when a port is bridged: this runs before every task (bench/sandbox_overhead.py).
"""

from __future__ import annotations

import os
import resource
import signal
import sys
from typing import TYPE_CHECKING

_RLIMITS = {
    "memory_mb": (resource.RLIMIT_AS, 1024 * 1024),
    "cpu_s": (resource.RLIMIT_CPU, 1),
    "processes": (resource.RLIMIT_NPROC, 1),
    "open_files": (resource.RLIMIT_NOFILE, 1),
    "file_size_mb": (resource.RLIMIT_FSIZE, 1024 * 1024),
}


if TYPE_CHECKING:
    import socket


def pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy bytes from src to dst until EOF, then half-close dst (shared with the host-side bridge)."""
    import socket

    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def splice(a: socket.socket, b: socket.socket) -> None:
    """Forward both directions between two connected sockets, then close both."""
    import threading

    other = threading.Thread(target=pump, args=(b, a), daemon=True)
    other.start()
    pump(a, b)
    other.join()
    a.close()
    b.close()


def _serve_port(listener: socket.socket, target: str) -> None:
    import socket
    import threading

    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        out = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            out.connect(target)
        except OSError:
            conn.close()
            out.close()
            continue
        threading.Thread(target=splice, args=(conn, out), daemon=True).start()


def _set_limits(limits: dict[str, str]) -> None:
    for name, value in limits.items():
        if value in (None, "", "None") or name not in _RLIMITS:
            continue
        which, unit = _RLIMITS[name]
        n = max(1, int(float(value) * unit))
        _, hard = resource.getrlimit(which)
        # CPU: SIGXCPU at the limit, SIGKILL a second later (with soft == hard the kernel sends SIGKILL at once)
        top = n + 1 if which == resource.RLIMIT_CPU else n
        if hard != resource.RLIM_INFINITY:
            n, top = min(n, hard), min(top, hard)
        resource.setrlimit(which, (n, top))


def main(argv: list[str]) -> int:
    split = argv.index("--")
    config = dict(a.split("=", 1) for a in argv[1:split])
    cmd = argv[split + 1 :]
    status_fd = int(config.pop("status_fd"))
    ports = [int(p) for p in config.pop("ports", "").split(",") if p]
    sockdir = config.pop("sockdir", "")
    drop_to = config.pop("drop_to", "")
    if ports:
        import socket
        import threading

        for port in ports:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", port))
            listener.listen(64)
            target = os.path.join(sockdir, f"{port}.sock")
            threading.Thread(target=_serve_port, args=(listener, target), daemon=True).start()
    pid = os.fork()
    if pid == 0:  # the system's command
        try:
            os.close(status_fd)
            _set_limits(config)
            if drop_to:
                os.setgroups([])
                os.setgid(int(drop_to))
                os.setuid(int(drop_to))
            os.execvp(cmd[0], cmd)
        except BaseException as exc:  # noqa: BLE001 - the child must never return into the launcher
            sys.stderr.write(f"[sandbox] cannot start {cmd[0]!r}: {exc}\n")
            sys.stderr.flush()
            os._exit(127)
    signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGKILL))
    while True:
        try:
            _, status, usage = os.wait4(pid, 0)
            break
        except InterruptedError:
            continue
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + (sig or 0)
    name = f'"{signal.Signals(sig).name}"' if sig else "null"
    cpu, rss = round(usage.ru_utime + usage.ru_stime, 3), round(usage.ru_maxrss / 1024, 1)
    report = f'{{"exit": {code}, "signal": {name}, "cpu_s": {cpu}, "max_rss_mb": {rss}}}'
    try:
        os.write(status_fd, (report + "\n").encode())
    except OSError:
        pass
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
