"""The sandbox's only way to the web: a forward HTTP proxy applying the spine's SSRF guard (reportbench.fetch.guard).

An agent kind that reads pages itself (smolagents' `visit_page`, GPT Researcher's scraper) gets
`HTTP_PROXY`/`HTTPS_PROXY` pointing here (bridged into its sandbox like the budget proxy). Each request names
its target (`GET http://host/...` or `CONNECT host:443`); the guard resolves the host and refuses anything but
a public internet address (loopback, private, link-local/metadata, ...: docs/reliability.md "Fetching").

With interception on (`sandbox: {fetch_intercept: true}`, the default), the proxy reads every page itself: a
`CONNECT host:port` is answered by the proxy, which speaks TLS to the program with a certificate for that host
from the run's own CA (reportbench.systems.fetch_proxy_tls; the sandbox trusts that CA through SSL_CERT_FILE and
its kin), and each GET/HEAD inside, like each plain-HTTP GET/HEAD, is served through the spine's fetch path and
page cache (reportbench.systems.fetch_proxy_pages). What is not a page anyone would read the same (another method,
a request carrying `Authorization`/`Cookie`/an API key header, an answer that is not HTML/PDF/text, e.g. an API's
JSON) is forwarded as the program made it, never cached: the guard checks it, the connection goes to the checked
address and the real site's certificate is verified (a command calling a hosted model API keeps working).
With `fetch_intercept: false` it is the old guarded forwarder: it connects to exactly the checked address (DNS
cannot be re-bound in between), HTTPS is tunnelled unseen (no cache), plain HTTP is forwarded as is.

Each sandboxed process gets proxy credentials of its own (`http://task:<token>@127.0.0.1:<port>`): the proxy
records, per task, what was served from the cache, fetched, refused or failed (sandbox.json, `fetch_proxy`).
"""

from __future__ import annotations

import base64
import functools
import http.server
import secrets
import socket
import socketserver
import ssl
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reportbench.fetch.client import make_pool
from reportbench.fetch.guard import GuardError, Resolver, Target, check_url, system_resolver
from reportbench.fetch.stage import make_fetcher, validate_fetch_config
from reportbench.systems._sandbox_inside import splice
from reportbench.systems.fetch_proxy_pages import ProxyPages, Served, TaskLog

if TYPE_CHECKING:
    from reportbench.systems.fetch_proxy_tls import RunCA  # cryptography: imported when a proxy intercepts

MAX_HEAD = 64 * 1024
CONNECT_TIMEOUT_S = 15.0
FORWARD_READ_TIMEOUT_S = 300.0  # between two bytes of a forwarded answer (a model API may think for minutes)
PAGE_METHODS = ("GET", "HEAD")
MAX_FORWARD_BODY = 32 * 1024 * 1024  # a forwarded request's body (an API call's JSON, an upload)
# credentials: a request carrying them is the program's own business (forwarded, never cached or shared)
PRIVATE_HEADERS = frozenset({"authorization", "cookie", "x-api-key", "api-key"})
HOP_HEADERS = frozenset({"connection", "keep-alive", "proxy-authorization", "proxy-authenticate", "proxy-connection",
                         "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length"})  # fmt: skip
NO_TASK = "(no task credentials)"
CA_FILE_NAME = "fetch-proxy-ca.pem"  # the run CA's certificate, beside the bridge's sockets in the sandbox


def _auth_token(headers: Mapping[str, str]) -> str | None:
    """The token of `Proxy-Authorization: Basic base64(task:<token>)`, or None."""
    value = headers.get("proxy-authorization", "")
    scheme, _, cred = value.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user_pass = base64.b64decode(cred.strip(), validate=True).decode("utf-8", errors="replace")
    except ValueError:
        return None
    return user_pass.partition(":")[2] or None


def _response(served: Served, *, head_only: bool, keep_alive: bool) -> bytes:
    lines = [f"HTTP/1.1 {served.status} {http.server.BaseHTTPRequestHandler.responses.get(served.status, ('',))[0]}"]
    if served.content_type:
        lines.append(f"Content-Type: {served.content_type}")
    lines += [f"Content-Length: {len(served.body)}", f"X-Reportbench-Fetch: {served.source}",
              f"Connection: {'keep-alive' if keep_alive else 'close'}"]  # fmt: skip
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", errors="replace")
    return head if head_only else head + served.body


class _PageHandler(http.server.BaseHTTPRequestHandler):
    """HTTP/1.1 inside an intercepted CONNECT (the stdlib's parser: bounded lines and headers, keep-alive)."""

    protocol_version = "HTTP/1.1"
    timeout = 120
    server: _Server  # type: ignore[assignment]

    def __init__(self, request: Any, client_address: Any, server: _Server, *, origin: str, task: str) -> None:
        self.origin, self.task = origin, task  # "https://host[:port]", the task whose process connected
        super().__init__(request, client_address, server)  # type: ignore[arg-type]

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self._request()

    do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_GET  # noqa: N815

    def do_CONNECT(self) -> None:  # noqa: N802
        self._write_status(405, "no CONNECT inside a tunnel")

    def _write_status(self, status: int, why: str) -> None:
        self.close_connection = True
        self.server.log(self.task).add(self.command, self.origin + self.path, status, "refused", why)
        served = Served(self.path, status, "text/plain", f"reportbench fetch proxy: {why}\n".encode(), "refused")
        self.wfile.write(_response(served, head_only=False, keep_alive=False))

    def _request(self) -> None:
        path = self.path
        if path.startswith(self.origin + "/"):  # absolute form inside the tunnel
            path = path[len(self.origin):]
        if not path.startswith("/"):
            return self._write_status(400, "bad request target")
        url = self.origin + path
        body: bytes | None = None
        length = (self.headers.get("Content-Length") or "0").strip()
        if self.headers.get("Transfer-Encoding"):
            return self._write_status(411, "a request body needs a Content-Length here")
        if not length.isdigit() or int(length) > MAX_FORWARD_BODY:
            return self._write_status(413, f"request body above {MAX_FORWARD_BODY} bytes")
        if int(length):
            body = self.rfile.read(int(length))
        if _is_page_request(self.command, self.headers.keys()):
            served = self.server.serve(self.command, url, self.task)
            if served.error_class != "unsupported_type":
                self.wfile.write(_response(served, head_only=self.command == "HEAD",
                                           keep_alive=not self.close_connection))  # fmt: skip
                return None
        self.close_connection = True  # a forwarded answer is streamed to its end, then the connection closes
        self.server.relay(self.wfile.write, self.command, url, list(self.headers.items()), body, self.task)
        return None

    def log_message(self, *args: object) -> None:
        pass


def _is_page_request(method: str, header_names: Any) -> bool:
    """A GET/HEAD without credentials: a page anyone would read the same (cacheable, read by the spine's fetcher).
    Anything else (other methods, `Authorization`/`Cookie`, an API's JSON) is forwarded as is, never cached."""
    names = {str(h).lower() for h in header_names}
    return method in PAGE_METHODS and not names & PRIVATE_HEADERS


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
        method = method.upper()
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
        task = self.server.task_of(_auth_token(headers))
        url = f"https://{target}/" if method == "CONNECT" else target
        try:
            checked = check_url(url, self.server.resolver, allow_hosts=self.server.allow_hosts)
        except GuardError as exc:
            self.server.refused.append(f"{method} {target}: {exc}")
            self.server.log(task).add(method, url, 403, "refused", f"refused by reportbench's fetch guard: {exc}")
            return self._refuse(conn, 403, f"refused by reportbench's fetch guard: {exc}")
        if self.server.pages is not None:  # interception: every page through the spine's fetch path and cache
            if method == "CONNECT":
                return self._intercept(conn, checked, rest, task)
            if not _is_page_request(method, headers):
                length = headers.get("content-length", "0")
                if headers.get("transfer-encoding") or not length.isdigit() or int(length) > MAX_FORWARD_BODY:
                    return self._refuse(conn, 411, "reportbench fetch proxy: a request body needs a bounded "
                                        f"Content-Length (at most {MAX_FORWARD_BODY} bytes)")
                body = rest
                while len(body) < int(length):
                    chunk = conn.recv(min(int(length) - len(body), 65536))
                    if not chunk:
                        return None
                    body += chunk
                pairs = [(k, v) for k, _, v in (h.partition(":") for h in header_lines)]
                self.server.relay(conn.sendall, method, target, pairs, body[: int(length)] or None, task)
                return None
            served = self.server.serve(method, target, task)
            if served.error_class != "unsupported_type":
                conn.sendall(_response(served, head_only=method == "HEAD", keep_alive=False))
            else:
                self.server.relay(conn.sendall, method, target, [], None, task)
            return None
        try:
            upstream = socket.create_connection((checked.ip, checked.port), timeout=CONNECT_TIMEOUT_S)
            upstream.settimeout(None)
            conn.settimeout(None)
        except OSError as exc:
            return self._refuse(conn, 502, f"cannot connect to {checked.host}:{checked.port}: {exc}")
        if method == "CONNECT":
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                upstream.sendall(rest)
        else:
            kept = [h for h in header_lines if not h.lower().startswith(("proxy-", "connection:", "keep-alive:"))]
            line = f"{method} {checked.path or '/'} {version}\r\n"
            upstream.sendall((line + "\r\n".join([*kept, "Connection: close"]) + "\r\n\r\n").encode("latin-1") + rest)
        self.server.forwarded.append(f"{method} {checked.host}:{checked.port}")
        splice(conn, upstream)

    def _intercept(self, conn: socket.socket, checked: Target, rest: bytes, task: str) -> None:
        """Answer the CONNECT ourselves, speak TLS as `checked.host` (the run's CA), serve the requests inside."""
        assert self.server.ca is not None
        if rest:  # bytes before our answer: not a client that waits for it
            return self._refuse(conn, 400, "data sent before the CONNECT was answered")
        try:
            ctx = self.server.ca.context_for(checked.host)
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            tls = ctx.wrap_socket(conn, server_side=True)
        except (OSError, ssl.SSLError, ValueError) as exc:
            self.server.log(task).add("CONNECT", f"https://{checked.host_header}/", 0, "failed",
                                      f"TLS with the program failed: {type(exc).__name__}: {exc}")
            return None
        try:
            _PageHandler(tls, self.client_address, self.server, origin=f"https://{checked.host_header}", task=task)
        except (OSError, ssl.SSLError):
            pass
        finally:
            try:
                tls.close()
            except OSError:
                pass
        return None

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
    pages: ProxyPages | None
    ca: RunCA | None
    tasks: dict[str, str]  # token -> task label
    logs: dict[str, TaskLog]  # task label -> what it read
    upstream_ca: str | None  # TEST-ONLY roots for upstream certificates (None: certifi's)
    lock: threading.Lock

    def task_of(self, token: str | None) -> str:
        with self.lock:
            return self.tasks.get(token or "", NO_TASK)

    def log(self, task: str) -> TaskLog:
        with self.lock:
            return self.logs.setdefault(task, TaskLog())

    def serve(self, method: str, url: str, task: str) -> Served:
        assert self.pages is not None
        try:
            served = self.pages.get(url)
        except Exception as exc:  # noqa: BLE001 - one broken page never takes the proxy down; the program is told
            why = f"reportbench fetch proxy: internal error: {type(exc).__name__}"
            served = Served(url, 502, "text/plain", (why + "\n").encode(), "failed", error=why)
        if served.source == "refused":
            self.refused.append(f"{method} {url}: {served.error}")
        self.log(task).add(method, url, served.status, served.source, served.error)
        return served


    def relay(self, write: Callable[[bytes], Any], method: str, url: str, headers: list[tuple[str, str]],
              body: bytes | None, task: str) -> None:
        """Forward one request as the program made it (no cache): the guard checks the URL, the connection goes to
        the checked address with the real site's certificate verified; the answer is streamed back (chunked)."""
        try:
            target = check_url(url, self.resolver, allow_hosts=self.allow_hosts)
        except GuardError as exc:
            self.refused.append(f"{method} {url}: {exc}")
            self.log(task).add(method, url, 403, "refused", f"refused by reportbench's fetch guard: {exc}")
            write(_response(Served(url, 403, "text/plain", f"refused by reportbench's fetch guard: {exc}\n".encode(),
                                   "refused"), head_only=False, keep_alive=False))  # fmt: skip
            return
        sent = {k.strip(): v.strip() for k, v in headers if k.strip().lower() not in HOP_HEADERS}
        sent["Host"] = target.host_header
        pool = make_pool(target, CONNECT_TIMEOUT_S, FORWARD_READ_TIMEOUT_S, ca_certs=self.upstream_ca)
        try:
            resp = pool.urlopen(method, target.path or "/", body=body, headers=sent, redirect=False, retries=False,
                                preload_content=False, decode_content=False, assert_same_host=False)  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - the program is told; the proxy goes on
            why = f"reportbench fetch proxy: cannot reach {target.host}: {type(exc).__name__}"
            self.log(task).add(method, url, 502, "failed", why)
            write(_response(Served(url, 502, "text/plain", (why + "\n").encode(), "failed"), head_only=False,
                            keep_alive=False))  # fmt: skip
            pool.close()
            return
        try:
            self.log(task).add(method, url, int(resp.status), "forwarded")
            reason = http.server.BaseHTTPRequestHandler.responses.get(int(resp.status), ("",))[0]
            lines = [f"HTTP/1.1 {resp.status} {reason}"]
            lines += [f"{k}: {v}" for k, v in resp.headers.items() if k.lower() not in HOP_HEADERS]
            lines += ["X-Reportbench-Fetch: forwarded", "Transfer-Encoding: chunked", "Connection: close"]
            write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", errors="replace"))
            if method != "HEAD":  # (a HEAD answer has no body, not even the last chunk)
                for chunk in resp.stream(65536, decode_content=False):
                    if chunk:
                        write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                write(b"0\r\n\r\n")
        except Exception:  # noqa: BLE001 - a broken stream ends the connection; the program sees it cut
            pass
        finally:
            resp.release_conn()
            pool.close()


class FetchProxy:
    """A guarded forward proxy on 127.0.0.1:<port> (context manager); with `intercept`, it reads the pages itself
    (the run's CA for HTTPS) through the spine's fetcher and page cache."""

    def __init__(
        self,
        resolver: Callable[[str, int], list[str]] = system_resolver,
        *,
        allow_hosts: frozenset[str] = frozenset(),
        intercept: bool = False,
        fetch_cfg: Mapping[str, Any] | None = None,
        upstream_ca: str | None = None,
    ) -> None:
        """`fetch_cfg`: the pipeline's `fetch` params (its `cache_path`, timeouts, size bound; its `mode` is not
        used: a page not in the cache is fetched, as the tunnel did). `allow_hosts` and `upstream_ca` (the roots
        the fetcher verifies upstream certificates against, default certifi's) are TEST-ONLY, as in
        reportbench.fetch.guard (never config keys)."""
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.resolver = resolver
        self._server.allow_hosts = allow_hosts
        self._server.refused = []
        self._server.forwarded = []
        self._server.tasks = {}
        self._server.logs = {}
        self._server.lock = threading.Lock()
        self._server.pages = None
        self._server.ca = None
        self._server.upstream_ca = upstream_ca
        if intercept:
            # lazy (cryptography: only a run whose proxy intercepts pays)
            from reportbench.systems.fetch_proxy_tls import RunCA  # lazy: +80 ms to import (python -X importtime)

            cfg = {**validate_fetch_config(fetch_cfg), "backend": "direct"}  # the page itself, not a reader's text
            overrides: dict[str, Any] = {"resolver": resolver, "allow_hosts": allow_hosts}
            if upstream_ca:
                overrides["pool_factory"] = functools.partial(make_pool, ca_certs=upstream_ca)
            self._server.pages = ProxyPages(Path(cfg["cache_path"]), lambda: make_fetcher(cfg, **overrides))
            self._server.ca = RunCA()
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def refused(self) -> list[str]:
        return self._server.refused

    @property
    def intercepting(self) -> bool:
        return self._server.pages is not None

    @property
    def pages(self) -> ProxyPages | None:
        return self._server.pages

    @property
    def ca(self) -> RunCA | None:
        return self._server.ca

    def new_task(self) -> str:
        """A fresh credential token for one sandboxed process: its requests are logged under it."""
        token = secrets.token_urlsafe(12)
        with self._server.lock:
            self._server.tasks[token] = token
        return token

    def task_record(self, token: str) -> Mapping[str, Any]:
        """What the process holding `token` read through the proxy (counts by source, the pages)."""
        label = self._server.task_of(token)
        return self._server.log(label).record()

    def __enter__(self) -> FetchProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._server.pages is not None:
            self._server.pages.close()
        if self._server.ca is not None:
            self._server.ca.close()


def proxy_env(port: int, token: str | None = None) -> dict[str, str]:
    """What points a process's HTTP clients at the fetch proxy; loopback (the bridged proxies) stays direct. With
    `token`, the URL carries it as credentials (`task:<token>@`): the proxy knows which task asked."""
    url = f"http://task:{token}@127.0.0.1:{port}" if token else f"http://127.0.0.1:{port}"
    no_proxy = "127.0.0.1,localhost,::1"
    return {"HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
            "NO_PROXY": no_proxy, "no_proxy": no_proxy}


def trust_env(ca_file: str) -> dict[str, str]:
    """What points the usual HTTP clients' trust at the run's CA, instead of the system's roots: OpenSSL (Python's
    `ssl`, urllib, aiohttp, httpx, truststore on Linux) `SSL_CERT_FILE`, requests `REQUESTS_CA_BUNDLE`, curl
    `CURL_CA_BUNDLE`, Node `NODE_EXTRA_CA_CERTS` (added to its roots), git `GIT_SSL_CAINFO`."""
    return {"SSL_CERT_FILE": ca_file, "REQUESTS_CA_BUNDLE": ca_file, "CURL_CA_BUNDLE": ca_file,
            "NODE_EXTRA_CA_CERTS": ca_file, "GIT_SSL_CAINFO": ca_file}  # fmt: skip
