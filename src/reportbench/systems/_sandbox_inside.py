"""The sandbox's first process (stdlib only: it runs as `python -I -S` inside bubblewrap, before the system).

It bridges the allowed loopback ports into the sandbox's empty network namespace (a listener on
127.0.0.1:<port> that forwards each connection to the Unix socket the host bound in for that port: the only way
out), then forks the system's command with its resource limits set and, when started as root, as an
unprivileged user (root ignores RLIMIT_NPROC). It waits for the command and writes one JSON line with how it
ended to the status descriptor, which the command never holds.

Usage: python -I -S _sandbox_inside.py '<config json>' -- argv...
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import sys
import threading

_RLIMITS = {
    "memory_mb": (resource.RLIMIT_AS, 1024 * 1024),
    "cpu_s": (resource.RLIMIT_CPU, 1),
    "processes": (resource.RLIMIT_NPROC, 1),
    "open_files": (resource.RLIMIT_NOFILE, 1),
    "file_size_mb": (resource.RLIMIT_FSIZE, 1024 * 1024),
}


def pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy bytes from src to dst until EOF, then half-close dst (shared with the host-side bridge)."""
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
    other = threading.Thread(target=pump, args=(b, a), daemon=True)
    other.start()
    pump(a, b)
    other.join()
    a.close()
    b.close()


def _serve_port(listener: socket.socket, target: str) -> None:
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


def _set_limits(limits: dict[str, float]) -> None:
    for name, value in limits.items():
        if value is None or name not in _RLIMITS:
            continue
        which, unit = _RLIMITS[name]
        n = int(float(value) * unit)
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            n = min(n, hard)
        resource.setrlimit(which, (n, n))


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    cmd = argv[3:] if len(argv) > 2 and argv[2] == "--" else argv[2:]
    status_fd = int(config["status_fd"])
    for port in config.get("ports") or []:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(port)))
        listener.listen(64)
        target = os.path.join(config["sockdir"], f"{int(port)}.sock")
        threading.Thread(target=_serve_port, args=(listener, target), daemon=True).start()
    pid = os.fork()
    if pid == 0:  # the system's command
        try:
            os.close(status_fd)
            _set_limits(config.get("limits") or {})
            uid = config.get("drop_to")
            if uid is not None:
                os.setgroups([])
                os.setgid(int(uid))
                os.setuid(int(uid))
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
    report = {
        "exit": code,
        "signal": signal.Signals(sig).name if sig else None,
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "max_rss_mb": round(usage.ru_maxrss / 1024, 1),
    }
    try:
        os.write(status_fd, (json.dumps(report) + "\n").encode())
    except OSError:
        pass
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
