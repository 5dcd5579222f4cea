"""The fetch proxy reads HTTPS pages itself (reportbench.systems.fetch_proxy, `fetch_intercept`, on by default): a
CONNECT is answered with a certificate from the run's own CA (trusted inside the sandbox, its key never there),
each GET goes through the spine's fetcher (guard, real upstream certificate check) and the page cache: the second
read of a page is served without a request. Upstream here: an HTTPS server on loopback with a test CA of its own,
reached through the guard's TEST-ONLY `allow_hosts` for the name `pages.example` (no config key reaches it)."""

from __future__ import annotations

import datetime as dt
import http.server
import json
import shutil
import socket
import ssl
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from reportbench.systems import run_system, sandbox
from reportbench.systems.fetch_proxy import FetchProxy
from reportbench.types import Task

pytestmark = pytest.mark.integration

HOST = "pages.example"
PAGE = b"<html><head><title>Upstream</title></head><body><p>the upstream page, read once</p></body></html>"


@dataclass
class Upstream:
    port: int
    ca_file: Path
    hits: dict[str, int] = field(default_factory=dict)


def _test_ca_and_leaf(tmp: Path) -> tuple[Path, Path]:
    """A test CA (the upstream's, unknown to the sandbox) and its leaf for `pages.example`: (CA file, chain file)."""
    now = dt.datetime.now(dt.UTC)
    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "upstream test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
          .not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))  # fmt: skip
    leaf = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOST)]))
            .issuer_name(ca_name).public_key(leaf_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(HOST)]), critical=False)
            .sign(ca_key, hashes.SHA256()))  # fmt: skip
    ca_file, chain = tmp / "upstream-ca.pem", tmp / "upstream-leaf.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    chain.write_bytes(leaf.public_bytes(serialization.Encoding.PEM) + leaf_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return ca_file, chain


@pytest.fixture()
def upstream(tmp_path: Path) -> Iterator[Upstream]:
    folder = tmp_path / "upstream"
    folder.mkdir()
    ca_file, chain = _test_ca_and_leaf(folder)
    hits: dict[str, int] = {}

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            hits[self.path] = hits.get(self.path, 0) + 1
            api = self.path.startswith("/api")  # JSON: not a page the spine's fetcher reads
            body = json.dumps({"api": True, "auth": self.headers.get("Authorization")}).encode() if api else PAGE
            self.send_response(200)
            self.send_header("Content-Type", "application/json" if api else "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802 - an API call: echoes what it got
            hits[f"POST {self.path}"] = hits.get(f"POST {self.path}", 0) + 1
            got = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.dumps({"got": got.decode(), "auth": self.headers.get("Authorization")}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(chain)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    server.daemon_threads = True
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield Upstream(server.server_address[1], ca_file, hits)
    finally:
        server.shutdown()
        server.server_close()


def _resolve(host: str, port: int) -> list[str]:
    """Test DNS: the upstream's name is loopback (allowed by name, test-only), `internal.example` is private."""
    return {HOST: ["127.0.0.1"], "internal.example": ["10.0.0.5"]}.get(host, ["192.0.2.1"])


def _proxy(tmp_path: Path, up: Upstream, **kw: Any) -> FetchProxy:
    cfg = {"cache_path": str(tmp_path / "cache" / "pages.sqlite"), "per_host_interval_s": 0.0, "retries": 0}
    kw.setdefault("intercept", True)
    kw.setdefault("upstream_ca", str(up.ca_file))
    return FetchProxy(_resolve, allow_hosts=frozenset({HOST}), fetch_cfg=cfg, **kw)


def _get(proxy_url: str, url: str, cafile: str, method: str = "GET") -> tuple[int, str, bytes]:
    """(status, X-Reportbench-Fetch, body) through the proxy, trusting only `cafile`."""
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({"https": proxy_url, "http": proxy_url}),
        urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=cafile)),
    )
    data = b"x=1" if method == "POST" else None
    try:
        with opener.open(urllib.request.Request(url, data=data, method=method), timeout=20) as resp:
            return resp.status, resp.headers.get("X-Reportbench-Fetch", ""), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("X-Reportbench-Fetch", ""), exc.read()


def _ca_file(tmp_path: Path, proxy: FetchProxy) -> str:
    assert proxy.ca is not None
    return str(proxy.ca.write_certificate(tmp_path / "ca.pem"))


def test_https_page_is_read_once_then_served_from_the_page_cache(tmp_path: Path, upstream: Upstream) -> None:
    url = f"https://{HOST}:{upstream.port}/doc?q=1"
    with _proxy(tmp_path, upstream) as proxy:
        ca = _ca_file(tmp_path, proxy)
        first = _get(f"http://127.0.0.1:{proxy.port}", url, ca)
        second = _get(f"http://127.0.0.1:{proxy.port}", url, ca)
        assert proxy.pages is not None and proxy.pages.upstream_requests == 1
    assert first == (200, "fetched", PAGE) and second == (200, "cache", PAGE)
    assert upstream.hits == {"/doc?q=1": 1}
    # a later run (a new proxy, a new CA) reads the same page cache: still no second request upstream
    with _proxy(tmp_path, upstream) as again:
        assert _get(f"http://127.0.0.1:{again.port}", url, _ca_file(tmp_path, again))[:2] == (200, "cache")
    assert upstream.hits == {"/doc?q=1": 1}
    # the spine's snapshot of the page is in the same cache (the fetch stage needs no request of its own)
    from reportbench.fetch.cache import PageCache

    cache = PageCache(tmp_path / "cache" / "pages.sqlite")
    try:
        snap = cache.get("direct", url)
        assert snap is not None and snap.ok and "read once" in snap.text
    finally:
        cache.close()


def _send(proxy_url: str, url: str, cafile: str, method: str, body: bytes | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, str, bytes]:
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({"https": proxy_url, "http": proxy_url}),
        urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=cafile)),
    )
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    with opener.open(req, timeout=20) as resp:
        return resp.status, resp.headers.get("X-Reportbench-Fetch", ""), resp.read()


def test_what_is_not_a_public_page_is_forwarded_through_the_guard_and_never_cached(
    tmp_path: Path, upstream: Upstream
) -> None:
    """POST (an API call), a GET with credentials, a GET whose answer is JSON: forwarded as made, twice = twice."""
    base = f"https://{HOST}:{upstream.port}"
    with _proxy(tmp_path, upstream) as proxy:
        ca, purl = _ca_file(tmp_path, proxy), f"http://127.0.0.1:{proxy.port}"
        for _ in range(2):
            status, source, body = _send(purl, f"{base}/v1/chat", ca, "POST", b'{"q": 1}',
                                         {"Authorization": "Bearer test-not-a-key", "Content-Type": "application/json"})
            assert (status, source) == (200, "forwarded")
            assert json.loads(body) == {"got": '{"q": 1}', "auth": "Bearer test-not-a-key"}
            status, source, body = _send(purl, f"{base}/page-with-auth", ca, "GET",
                                         headers={"Authorization": "Bearer test-not-a-key"})  # fmt: skip
            assert (status, source, body) == (200, "forwarded", PAGE)
            status, source, body = _send(purl, f"{base}/api/items", ca, "GET")
            assert (status, source) == (200, "forwarded") and json.loads(body)["api"] is True
        # plain HTTP POST: the same guard; a private target is refused before anything is sent
        with pytest.raises(urllib.error.HTTPError, match="403"):
            _send(purl, "http://internal.example/v1", ca, "POST", b"x")
        with pytest.raises(OSError, match="403"):
            _send(purl, "https://10.1.2.3/v1", ca, "POST", b"x")
    # JSON: the spine's fetcher asked once (stopped at the headers; the cache remembers "not a page"), then forwarded
    assert upstream.hits == {"POST /v1/chat": 2, "/page-with-auth": 2, "/api/items": 3}


def test_the_upstream_certificate_is_still_verified(tmp_path: Path, upstream: Upstream) -> None:
    """Without the upstream's test CA among the fetcher's roots (certifi's, as for users) the page is not read."""
    with _proxy(tmp_path, upstream, upstream_ca=None) as proxy:
        status, source, body = _get(f"http://127.0.0.1:{proxy.port}", f"https://{HOST}:{upstream.port}/x",
                                    _ca_file(tmp_path, proxy))  # fmt: skip
    assert status == 502 and source == "failed" and b"connection" in body, body
    assert upstream.hits == {}


def test_private_addresses_are_refused_over_https_by_name_and_literal(tmp_path: Path, upstream: Upstream) -> None:
    with _proxy(tmp_path, upstream) as proxy:
        ca = _ca_file(tmp_path, proxy)
        for url in ("https://internal.example/", "https://10.1.2.3/", f"https://127.0.0.1:{upstream.port}/",
                    "https://[::1]/", "https://169.254.169.254/latest/meta-data/"):  # fmt: skip
            with pytest.raises(OSError, match="403"):
                _get(f"http://127.0.0.1:{proxy.port}", url, ca)
        assert len(proxy.refused) == 5
    assert upstream.hits == {}


def test_interception_off_keeps_the_old_tunnel(tmp_path: Path, upstream: Upstream) -> None:
    """`fetch_intercept: false`: CONNECT is a guarded tunnel; the program sees the real certificate, no cache."""
    with _proxy(tmp_path, upstream, intercept=False) as proxy:
        assert proxy.ca is None and proxy.pages is None
        for _ in range(2):
            status, source, body = _get(f"http://127.0.0.1:{proxy.port}", f"https://{HOST}:{upstream.port}/t",
                                        str(upstream.ca_file))  # fmt: skip
            assert (status, source, body) == (200, "", PAGE)
    assert upstream.hits == {"/t": 2}


def test_a_leaf_certificate_per_host_names_the_host(tmp_path: Path, upstream: Upstream) -> None:
    with _proxy(tmp_path, upstream) as proxy:
        ca = _ca_file(tmp_path, proxy)
        for _ in range(3):
            _get(f"http://127.0.0.1:{proxy.port}", f"https://{HOST}:{upstream.port}/c", ca)
        with socket.create_connection(("127.0.0.1", proxy.port)) as s:
            s.sendall(f"CONNECT {HOST}:{upstream.port} HTTP/1.1\r\n\r\n".encode())
            assert s.recv(4096).startswith(b"HTTP/1.1 200")
            ctx = ssl.create_default_context(cafile=ca)
            with ctx.wrap_socket(s, server_hostname=HOST) as tls:
                cert = tls.getpeercert()
        assert proxy.ca is not None and proxy.ca.leaf_certificates == 1
    assert ("DNS", HOST) in cert["subjectAltName"]


def _private_key_bytes(proxy: FetchProxy) -> list[bytes]:
    """The run CA's private key in the encodings a leak would take (PEM body lines, DER, the raw scalar)."""
    assert proxy.ca is not None
    key = proxy.ca._ca_key  # noqa: SLF001 - the test looks for the very key
    der = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())  # fmt: skip
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()  # fmt: skip
    scalar = key.private_numbers().private_value.to_bytes(32, "big")
    return [der, scalar, scalar.hex().encode(), *(line.encode() for line in pem.splitlines()[1:-1])]


READER = r'''
import glob, json, os, shutil, subprocess, sys, urllib.error, urllib.request
url, out = sys.argv[1], sys.argv[2]
seen = {"trust": os.environ.get("SSL_CERT_FILE"), "env": {k: k in os.environ for k in
        ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")}}
for n in (1, 2):  # python's urllib, from the environment alone (HTTPS_PROXY + SSL_CERT_FILE)
    with urllib.request.urlopen(url, timeout=30) as resp:
        seen[f"urllib{n}"] = [resp.status, resp.headers.get("X-Reportbench-Fetch"), resp.read().decode()]
import certifi, ssl  # code that hands certifi's bundle to ssl itself (trafilatura, google-auth, httpcore users)
seen["certifi_is_ca"] = open(certifi.where()).read() == open(os.environ["SSL_CERT_FILE"]).read()
explicit = urllib.request.build_opener(urllib.request.HTTPSHandler(
    context=ssl.create_default_context(cafile=certifi.where())))
with explicit.open(url, timeout=30) as resp:
    seen["certifi_fetch"] = [resp.status, resp.headers.get("X-Reportbench-Fetch")]
import asyncio, aiohttp, httpx, requests  # the agent kinds' clients (requirements/*.txt), from the environment
seen["requests"] = [(r := requests.get(url, timeout=30)).status_code, r.headers.get("X-Reportbench-Fetch")]
seen["httpx"] = [(r := httpx.get(url, timeout=30)).status_code, r.headers.get("X-Reportbench-Fetch")]
async def aio():
    async with aiohttp.ClientSession(trust_env=True) as session, session.get(url) as r:
        return [r.status, r.headers.get("X-Reportbench-Fetch")]
seen["aiohttp"] = asyncio.run(aio())
if shutil.which("curl"):
    done = subprocess.run(["curl", "-sS", "-D", "-", url], capture_output=True, text=True, timeout=60)
    seen["curl"] = [done.returncode, done.stdout[-2000:], done.stderr[-500:]]
for bad in ("https://internal.example/", "https://10.1.2.3/"):
    try:
        urllib.request.urlopen(bad, timeout=10)
        seen[bad] = "reached"
    except (urllib.error.URLError, OSError) as exc:
        seen[bad] = str(exc)
trust = open(os.environ["SSL_CERT_FILE"]).read()
seen["trust_has_key"] = "PRIVATE" in trust
seen["trust_folder"] = sorted(os.listdir(os.path.dirname(os.environ["SSL_CERT_FILE"])))
seen["key_folders"] = glob.glob("/tmp/rb-fetch-proxy-keys-*") + glob.glob("/var/tmp/rb-fetch-proxy-keys-*")
open(out, "w").write("## Work\n\nSeen: " + json.dumps(seen) + "\n")
'''


def test_a_sandboxed_command_reads_https_pages_through_the_cache(
    tmp_path: Path, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real system stage code (run_system): urllib and curl, from the environment the sandbox gets."""
    if sandbox.unavailable_reason():
        pytest.fail(f"the sandbox is required here: {sandbox.unavailable_reason()}")
    made: list[FetchProxy] = []

    def test_proxy(*, intercept: bool, fetch_cfg: Any) -> FetchProxy:
        assert intercept is True  # the default of `sandbox: {fetch: true}`
        made.append(_proxy(tmp_path, upstream))
        return made[-1]

    monkeypatch.setattr(sandbox, "FetchProxy", test_proxy)  # TEST-ONLY guard allowance and upstream roots
    script = tmp_path / "reader.py"
    script.write_text(READER)
    url = f"https://{HOST}:{upstream.port}/paper"
    spec = {"kind": "command", "cmd": [sys.executable, str(script), url, "{output}"], "sandbox": {"fetch": True}}
    run_dir = tmp_path / "run"
    outcomes = run_system("reader", spec, [Task(task_id="t1", title="t", task_prompt="q")], run_dir)
    assert outcomes[0].status == "ok", outcomes[0].reason
    seen = json.loads((run_dir / "raw" / "t1.md").read_text().split("Seen: ", 1)[1])
    assert seen["trust"] == f"{sandbox.SOCKDIR_INSIDE}/fetch-proxy-ca.pem" and all(seen["env"].values()), seen
    page = PAGE.decode()
    assert seen["urllib1"] == [200, "fetched", page] and seen["urllib2"] == [200, "cache", page], seen
    assert seen["certifi_is_ca"] is True and seen["certifi_fetch"] == [200, "cache"], seen
    assert seen["requests"] == seen["httpx"] == seen["aiohttp"] == [200, "cache"], seen
    has_curl = shutil.which("curl") is not None
    if has_curl:
        code, out, err = seen["curl"]
        assert code == 0 and "x-reportbench-fetch: cache" in out.lower() and out.endswith(page), (out, err)
    assert upstream.hits == {"/paper": 1}  # seven reads by six clients: one request
    for bad in ("https://internal.example/", "https://10.1.2.3/"):
        assert "403" in seen[bad], seen[bad]
    assert seen["trust_has_key"] is False and seen["key_folders"] == []
    assert [n for n in seen["trust_folder"] if not n.endswith(".sock")] == ["fetch-proxy-ca.pem"]
    # per task: what was fetched, served from the cache, refused
    task_rec = json.loads((run_dir / "sandbox.json").read_text())["tasks"]["t1"]["fetch_proxy"]
    assert task_rec["counts"] == {"cache": 5 + has_curl, "fetched": 1, "refused": 2}, task_rec
    assert json.loads((run_dir / "sandbox.json").read_text())["fetch_intercept"] is True
    # no key material anywhere it could end up: the run folder, the page cache, the leaf-key folder is gone
    (proxy,) = made
    assert proxy.ca is not None and not proxy.ca._dir.exists()  # noqa: SLF001
    leaks = _private_key_bytes(proxy)
    for path in [*run_dir.rglob("*"), *(tmp_path / "cache").rglob("*")]:
        if path.is_file():
            data = path.read_bytes()
            assert b"PRIVATE KEY" not in data, path
            assert not any(leak in data for leak in leaks), path


def test_interception_is_on_by_default_and_can_be_turned_off() -> None:
    from reportbench.systems.base import SystemError_

    assert sandbox.parse_sandbox("s", {"fetch": True}).fetch_intercept is True
    off = sandbox.parse_sandbox("s", {"fetch": True, "fetch_intercept": False})
    assert off.fetch_intercept is False and off.record(10)["fetch_intercept"] is False
    with pytest.raises(SystemError_, match="fetch_intercept"):
        sandbox.parse_sandbox("s", {"fetch_intercept": "no"})


def test_network_gives_the_ca_certificate_and_never_the_key(tmp_path: Path) -> None:
    cfg = sandbox.parse_sandbox("s", {"fetch": True})
    with sandbox.network(cfg, fetch_default=False, fetch_cfg={"cache_path": str(tmp_path / "p.sqlite")}) as (
        bridge, env):  # fmt: skip
        assert bridge is not None and bridge.fetch_proxy is not None
        ca = (bridge.sockdir / "fetch-proxy-ca.pem").read_text()
        assert "BEGIN CERTIFICATE" in ca and "PRIVATE" not in ca
        assert env["SSL_CERT_FILE"] == env["REQUESTS_CA_BUNDLE"] == env["CURL_CA_BUNDLE"] == env["NODE_EXTRA_CA_CERTS"]
        key_dir = bridge.fetch_proxy.ca._dir  # noqa: SLF001
        assert key_dir.stat().st_mode & 0o777 == 0o700
    assert not key_dir.exists()
    off = sandbox.parse_sandbox("s", {"fetch": True, "fetch_intercept": False})
    with sandbox.network(off, fetch_default=False) as (bridge, env):
        assert "SSL_CERT_FILE" not in env and not (bridge.sockdir / "fetch-proxy-ca.pem").exists()  # type: ignore[union-attr]




def test_the_per_task_record_holds_no_credentials() -> None:
    from reportbench.systems.fetch_proxy_pages import _loggable

    assert _loggable("http://user:hunter2@pages.example/a?api_key=abc123&x=1") == (
        "http://pages.example/a?api_key=***&x=1")
    assert _loggable("https://pages.example/p@q") == "https://pages.example/p@q"
