"""A private loopback for a test's subprocesses (not a test module): a new network namespace holding only `lo`,
up, so documented servers on fixed ports (`reportbench stub-server --port 8765`) can run in several tests at once,
each on its own 127.0.0.1:8765 — and nothing a command starts can reach the network.

Run by root (CI): a network namespace alone (`unshare --net`, `nsenter --net`), nothing else changes (the sandbox
can still hand its folders to a uid of its own). Otherwise `unshare --user --map-current-user --keep-caps --net`
keeps the caller's uid (no fake root) and gives the holder process the capability to bring `lo` up inside; every
command then enters both namespaces with `nsenter --preserve-credentials`. Where the kernel or util-linux does not
allow it (no unprivileged user namespaces, util-linux < 2.38), `private_loopback()` yields None and callers fall
back to taking turns on the shared ports."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator

# Brings `lo` up (SIOCGIFFLAGS / SIOCSIFFLAGS with IFF_UP), says "ready", then holds the namespace until stdin closes.
_HOLDER = """
import fcntl, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
req = struct.pack("16sH14s", b"lo", 0, b"")
flags = struct.unpack("16sH14s", fcntl.ioctl(s, 0x8913, req))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH14s", b"lo", flags | 0x1, b""))
probe = socket.socket()
probe.bind(("127.0.0.1", 0))
probe.close()
print("ready", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def private_loopback() -> Iterator[list[str] | None]:
    """The command prefix (`nsenter …`) that runs a program in a fresh namespace with only loopback, or None when
    this machine cannot make one. The namespace lives until the context exits."""
    unshare, nsenter = shutil.which("unshare"), shutil.which("nsenter")
    if not (unshare and nsenter):
        yield None
        return
    root = os.geteuid() == 0
    namespaces = ["--net"] if root else ["--user", "--map-current-user", "--keep-caps", "--net"]
    try:
        holder = subprocess.Popen([unshare, *namespaces, sys.executable, "-c", _HOLDER], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:
        yield None
        return
    try:
        assert holder.stdout is not None
        ready = holder.stdout.readline().strip() == "ready"
        enter = ["--net"] if root else ["--user", "--net", "--preserve-credentials"]
        yield [nsenter, f"--target={holder.pid}", *enter] if ready else None
    finally:
        with contextlib.suppress(OSError):
            assert holder.stdin is not None
            holder.stdin.close()
        try:
            holder.wait(timeout=10)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()
