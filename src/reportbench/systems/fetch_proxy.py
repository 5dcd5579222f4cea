"""The sandbox's only way to the web: a forward HTTP proxy applying the spine's SSRF guard (reportbench.fetch.guard).

An agent kind that reads pages itself (smolagents' `visit_page`, GPT Researcher's scraper) gets
`HTTP_PROXY`/`HTTPS_PROXY` pointing here (bridged into its sandbox like the budget proxy). Each request names
its target (`GET http://host/...` or `CONNECT host:443`); the guard resolves the host and refuses anything but
a public internet address (loopback, private, link-local/metadata, ...: docs/reliability.md "Fetching"), then the
proxy connects to exactly the checked address, so DNS cannot be re-bound in between. HTTPS is tunnelled
(CONNECT): the proxy never sees the page, so it cannot cache it; plain HTTP is forwarded as is.
"""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Callable

from reportbench.fetch.guard import GuardError, Resolver, check_url, system_resolver
from reportbench.systems._sandbox_inside import splice

MAX_HEAD = 64 * 1024
CONNECT_TIMEOUT_S = 15.0


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        conn: socket.socket = self.request
        conn.settimeout(60)
        head = b""
        try:
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(8192)
                if not chunk:
                    return
                head += chunk
                if len(head) > MAX_HEAD:
                    return self._refuse(conn, 431, "request head too large")
        except OSError:
            return
        head_end = head.index(b"\r\n\r\n") + 4
        first, *header_lines = head[:head_end - 4].decode("latin-1").split("\r\n")
        rest = head[head_end:]
        parts = first.split(" ")
        if len(parts) != 3:
            return self._refuse(conn, 400, "malformed request line")
        method, target, version = parts
        url = f"https://{target}/" if method.upper() == "CONNECT" else target
        try:
            checked = check_url(url, self.server.resolver, allow_hosts=self.server.allow_hosts)
        except GuardError as exc:
            self.server.refused.append(f"{method} {target}: {exc}")
            return self._refuse(conn, 403, f"refused by reportbench's fetch guard: {exc}")
        try:
            upstream = socket.create_connection((checked.ip, checked.port), timeout=CONNECT_TIMEOUT_S)
            upstream.settimeout(None)
            conn.settimeout(None)
        except OSError as exc:
            return self._refuse(conn, 502, f"cannot connect to {checked.host}:{checked.port}: {exc}")
        if method.upper() == "CONNECT":
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                upstream.sendall(rest)
        else:
            kept = [h for h in header_lines if not h.lower().startswith(("proxy-", "connection:", "keep-alive:"))]
            line = f"{method} {checked.path or '/'} {version}\r\n"
            upstream.sendall((line + "\r\n".join([*kept, "Connection: close"]) + "\r\n\r\n").encode("latin-1") + rest)
        self.server.forwarded.append(f"{method} {checked.host}:{checked.port}")
        splice(conn, upstream)

    @staticmethod
    def _refuse(conn: socket.socket, status: int, reason: str) -> None:
        body = (reason + "\n").encode("utf-8", errors="replace")
        msg = f"HTTP/1.1 {status} Refused\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
        try:
            conn.sendall(msg.encode() + b"Connection: close\r\n\r\n" + body)
        except OSError:
            pass


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    resolver: Resolver
    allow_hosts: frozenset[str]
    refused: list[str]
    forwarded: list[str]


class FetchProxy:
    """A guarded forward proxy on 127.0.0.1:<port> (context manager)."""

    def __init__(
        self, resolver: Callable[[str, int], list[str]] = system_resolver, *, allow_hosts: frozenset[str] = frozenset()
    ) -> None:
        """`allow_hosts`: TEST-ONLY, as in reportbench.fetch.guard (never a config key)."""
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.resolver = resolver
        self._server.allow_hosts = allow_hosts
        self._server.refused = []
        self._server.forwarded = []
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def refused(self) -> list[str]:
        return self._server.refused

    def __enter__(self) -> FetchProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def proxy_env(port: int) -> dict[str, str]:
    """What points a process's HTTP clients at the fetch proxy; loopback (the bridged proxies) stays direct."""
    url = f"http://127.0.0.1:{port}"
    no_proxy = "127.0.0.1,localhost,::1"
    return {"HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
            "NO_PROXY": no_proxy, "no_proxy": no_proxy}
