"""The fetcher end to end against a loopback HTTP server (real sockets, real client code, no internet).

The server listens on 127.0.0.1 only; the fetcher reaches it through the explicit test allowance
(`allow_hosts`), or through an injected resolver mapping a made-up name to 127.0.0.1. The conftest's network
guard would fail any test that resolved or connected anywhere else.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from reportbench.fetch.client import Fetcher, make_pool
from reportbench.fetch.guard import Target
from reportbench.fetch.snapshot import snapshot_from_raw

pytestmark = pytest.mark.integration  # (one opt-in test is also `live`)

Route = Callable[["Handler"], tuple[int, dict[str, str], bytes] | None]


def tiny_pdf(text: str, title: str = "A Tiny Test PDF") -> bytes:
    """A valid one-page PDF written by hand (self-authored test data): Helvetica text + an Info title."""
    stream = f"BT /F1 12 Tf 72 712 Td ({text}) Tj ET".encode()
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({title}) >>".encode(),
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


HTML = b"""<!doctype html><html><head><title>Cats and Dogs</title></head><body>
<nav>Home | About | Contact</nav>
<article><h1>Cats and Dogs</h1>
<p>Cats sleep for about fifteen hours a day, according to the self-authored test page used here.</p>
<p>Dogs were domesticated earlier than cats, and this paragraph exists to give the extractor real content.</p>
</article><footer>Copyright nobody</footer></body></html>"""


@dataclass
class Server:
    base: str
    port: int
    routes: dict[str, Route]
    log: list[dict[str, str]] = field(default_factory=list)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


class Handler(BaseHTTPRequestHandler):
    server_state: Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet test server
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        st: Server = self.server.state  # type: ignore[attr-defined]
        st.log.append({"path": self.path, "host": self.headers.get("Host", ""),
                       "auth": self.headers.get("Authorization", ""), "ua": self.headers.get("User-Agent", "")})
        route = None
        for prefix in sorted(st.routes, key=len, reverse=True):
            if self.path.startswith(prefix):
                route = st.routes[prefix]
                break
        if route is None:
            self._send(404, {"Content-Type": "text/html"}, b"<html><body>not here</body></html>")
            return
        result = route(self)
        if result is not None:
            self._send(*result)

    def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        if "Content-Length" not in headers and "X-No-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture
def server() -> Iterator[Server]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    port = httpd.server_address[1]
    state = Server(base=f"http://127.0.0.1:{port}", port=port, routes={})
    httpd.state = state  # type: ignore[attr-defined]
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


def no_dns(host: str, port: int) -> list[str]:
    raise AssertionError(f"unexpected resolve of {host!r}")


def fetcher(**kw: object) -> Fetcher:
    """A fast test fetcher: loopback allowed by exact spelling, no pacing, no real sleeping."""
    defaults: dict[str, object] = dict(
        allow_hosts={"127.0.0.1"}, resolver=no_dns, per_host_interval_s=0.0, retries=0,
        timeout_s=2.0, connect_timeout_s=2.0, sleep=lambda s: None,
    )
    defaults.update(kw)
    return Fetcher(**defaults)  # type: ignore[arg-type]


def snap(f: Fetcher, url: str):  # noqa: ANN201
    return snapshot_from_raw(f.fetch(url), f.fetcher_id)


# --- happy paths ------------------------------------------------------------------------------------------------


def test_html_page_main_text_and_title(server: Server) -> None:
    server.routes["/page"] = lambda h: (200, {"Content-Type": "text/html; charset=utf-8"}, HTML)
    s = snap(fetcher(), server.url("/page?utm_source=x"))
    assert s.ok and s.http_status == 200 and s.content_type == "text/html"
    assert s.title == "Cats and Dogs"
    assert "fifteen hours a day" in s.text and "Copyright nobody" not in s.text
    assert s.n_bytes == len(HTML) and len(s.sha256 or "") == 64
    assert s.fetcher.startswith("direct/v")
    assert server.log[0]["ua"].startswith("reportbench/")


def test_pdf_is_extracted(server: Server) -> None:
    pdf = tiny_pdf("Hello from a self authored PDF")
    server.routes["/paper.pdf"] = lambda h: (200, {"Content-Type": "application/pdf"}, pdf)
    s = snap(fetcher(), server.url("/paper.pdf"))
    assert s.ok and s.content_type == "application/pdf"
    assert "Hello from a self authored PDF" in s.text
    assert s.title == "A Tiny Test PDF"


def test_pdf_served_as_octet_stream_is_sniffed(server: Server) -> None:
    pdf = tiny_pdf("Sniffed body")
    server.routes["/dl"] = lambda h: (200, {"Content-Type": "application/octet-stream"}, pdf)
    s = snap(fetcher(), server.url("/dl"))
    assert s.ok and "Sniffed body" in s.text


def test_redirect_is_followed_and_final_url_recorded(server: Server) -> None:
    server.routes["/old"] = lambda h: (301, {"Location": "/mid"}, b"")
    server.routes["/mid"] = lambda h: (302, {"Location": server.url("/new")}, b"")
    server.routes["/new"] = lambda h: (200, {"Content-Type": "text/plain"}, b"plain page text")
    s = snap(fetcher(), server.url("/old"))
    assert s.ok and s.text == "plain page text"
    assert s.final_url == server.url("/new")
    assert [e["path"] for e in server.log] == ["/old", "/mid", "/new"]


def test_too_many_redirects(server: Server) -> None:
    server.routes["/loop"] = lambda h: (302, {"Location": "/loop"}, b"")
    s = snap(fetcher(max_redirects=3), server.url("/loop"))
    assert s.error_class == "http_error" and "redirects" in (s.error or "")
    assert len(server.log) == 4


# --- failures as values -----------------------------------------------------------------------------------------


def test_404_is_http_error_with_status(server: Server) -> None:
    s = snap(fetcher(), server.url("/missing"))
    assert (s.error_class, s.http_status) == ("http_error", 404)


@pytest.mark.parametrize("status", [401, 403, 451])
def test_access_denied_is_its_own_class(server: Server, status: int) -> None:
    server.routes["/paywall"] = lambda h: (status, {"Content-Type": "text/html"}, b"<p>subscribe</p>")
    s = snap(fetcher(), server.url("/paywall"))
    assert (s.error_class, s.http_status) == ("access_denied", status)
    assert s.access_denied


def test_timeout(server: Server) -> None:
    # the answer comes 30 s late (a daemon thread): getting "timeout", not the answer, is the proof, whatever
    # the machine's load (a wall-clock bound of 0.9 s on a 0.2 s timeout was not)
    def slow(h: Handler) -> tuple[int, dict[str, str], bytes]:
        time.sleep(30.0)
        return 200, {"Content-Type": "text/plain"}, b"too late"

    server.routes["/slow"] = slow
    t0 = time.monotonic()
    s = snap(fetcher(timeout_s=0.2), server.url("/slow"))
    assert s.error_class == "timeout" and s.http_status is None
    assert time.monotonic() - t0 < 30.0  # stopped by the timeout, before the answer


def test_connection_refused_is_connection_error() -> None:
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    s = snap(fetcher(), f"http://127.0.0.1:{port}/")
    assert s.error_class == "connection"
    assert "0x" not in (s.error or "")  # no object addresses in records


def test_oversize_by_content_length_and_by_stream(server: Server) -> None:
    big = b"x" * 5000
    server.routes["/declared"] = lambda h: (200, {"Content-Type": "text/plain"}, big)
    server.routes["/undeclared"] = lambda h: (200, {"Content-Type": "text/plain", "X-No-Length": "1"}, big)
    f = fetcher(max_bytes=1000)
    assert snap(f, server.url("/declared")).error_class == "too_large"
    s = snap(f, server.url("/undeclared"))
    assert s.error_class == "too_large" and "max_bytes" in (s.error or "")


def test_unsupported_type_is_not_downloaded(server: Server) -> None:
    server.routes["/img"] = lambda h: (200, {"Content-Type": "image/png"}, b"\x89PNG" + b"\x00" * 100)
    s = snap(fetcher(), server.url("/img"))
    assert s.error_class == "unsupported_type" and "image/png" in (s.error or "")


def test_empty_body_and_empty_text(server: Server) -> None:
    server.routes["/empty"] = lambda h: (200, {"Content-Type": "text/html"}, b"")
    blank_html = b"<html><head><title>T</title><script>x()</script></head><body> </body></html>"
    server.routes["/blank"] = lambda h: (200, {"Content-Type": "text/html"}, blank_html)
    assert snap(fetcher(), server.url("/empty")).error_class == "empty"
    blank = snap(fetcher(), server.url("/blank"))
    assert blank.error_class == "empty" and blank.title == "T"


def test_retries_on_503_with_backoff_then_succeeds(server: Server) -> None:
    hits = {"n": 0}

    def flaky(h: Handler) -> tuple[int, dict[str, str], bytes]:
        hits["n"] += 1
        if hits["n"] < 3:
            return 503, {"Content-Type": "text/plain"}, b"busy"
        return 200, {"Content-Type": "text/plain"}, b"finally"

    server.routes["/flaky"] = flaky
    slept: list[float] = []
    s = snap(fetcher(retries=2, backoff_s=0.5, sleep=slept.append), server.url("/flaky"))
    assert s.ok and s.text == "finally" and hits["n"] == 3
    assert slept == [0.5, 1.0]


def test_retries_are_bounded_and_final_status_kept(server: Server) -> None:
    server.routes["/busy"] = lambda h: (429, {"Content-Type": "text/plain", "Retry-After": "7"}, b"slow down")
    slept: list[float] = []
    s = snap(fetcher(retries=1, backoff_s=0.1, sleep=slept.append), server.url("/busy"))
    assert (s.error_class, s.http_status) == ("http_error", 429)
    assert slept == [7.0] and len(server.log) == 2


def test_per_host_rate_limit(server: Server) -> None:
    server.routes["/p"] = lambda h: (200, {"Content-Type": "text/plain"}, b"ok")
    slept: list[float] = []
    f = fetcher(per_host_interval_s=5.0, sleep=slept.append, clock=lambda: 100.0)
    f.fetch(server.url("/p"))
    f.fetch(server.url("/p"))
    assert slept == [5.0]


# --- SSRF: redirects, pinning -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "location",
    [
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/iam/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://127.1/",
        "http://localhost/",
        "file:///etc/passwd",
        "gopher://127.0.0.1:6379/_INFO",
        "http://private.example/",  # resolves (injected) to 192.168.1.1
    ],
)
def test_redirect_to_internal_target_is_refused(server: Server, location: str) -> None:
    server.routes["/go"] = lambda h: (302, {"Location": location}, b"")

    def resolver(host: str, port: int) -> list[str]:
        assert host == "private.example", host
        return ["192.168.1.1"]

    s = snap(fetcher(resolver=resolver), server.url("/go"))
    assert s.error_class == "refused", s
    assert len(server.log) == 1  # nothing else was contacted


def test_direct_refusals_make_no_request() -> None:
    f = fetcher(allow_hosts=set())
    for url in ("http://127.0.0.1/", "http://10.0.0.1/", "http://0177.0.0.1/", "file:///etc/passwd"):
        assert snap(f, url).error_class == "refused"
    assert f.n_requests == 0


def test_connection_goes_to_the_checked_ip_with_original_host_header(server: Server) -> None:
    """DNS is asked once per hop; the socket goes to that answer, the Host header keeps the name."""
    server.routes["/pinned"] = lambda h: (200, {"Content-Type": "text/plain"}, b"pinned page")
    calls: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        calls.append(host)
        return ["127.0.0.1"]

    pools: list[Target] = []

    def spy_pool(target: Target, c: float, r: float):  # noqa: ANN202
        pools.append(target)
        return make_pool(target, c, r)

    f = fetcher(resolver=resolver, allow_hosts={"pinned.example"}, pool_factory=spy_pool)
    s = snap(f, f"http://pinned.example:{server.port}/pinned")
    assert s.ok and s.text == "pinned page"
    assert calls == ["pinned.example"]
    assert [(t.ip, t.host) for t in pools] == [("127.0.0.1", "pinned.example")]
    assert server.log[0]["host"] == f"pinned.example:{server.port}"


def test_no_second_lookup_so_rebinding_cannot_redirect_the_socket(server: Server) -> None:
    """A rebinding resolver answers loopback (allowed here) once, then a private address: the fetch connects
    to the first, checked answer because the HTTP layer never resolves again (the conftest forbids it, too)."""
    server.routes["/r"] = lambda h: (200, {"Content-Type": "text/plain"}, b"first answer")
    answers = iter([["127.0.0.1"], ["10.0.0.7"], ["10.0.0.7"]])
    calls: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return next(answers)

    s = snap(fetcher(resolver=rebinding, allow_hosts={"rebind.example"}), f"http://rebind.example:{server.port}/r")
    assert s.ok and s.text == "first answer" and calls == ["rebind.example"]


def test_dns_failure_is_recorded(server: Server) -> None:
    from reportbench.fetch.guard import DnsError

    def fail(host: str, port: int) -> list[str]:
        raise DnsError(f"cannot resolve {host!r}")

    s = snap(fetcher(resolver=fail), "https://nxdomain.example/")
    assert s.error_class == "dns" and "nxdomain.example" in (s.error or "")


def test_unexpected_resolver_crash_is_a_value_not_an_exception() -> None:
    def broken(host: str, port: int) -> list[str]:
        raise KeyError("resolver bug")

    s = snap(fetcher(resolver=broken), "https://example.org/")
    assert s.error_class == "connection" and "internal error: KeyError" in (s.error or "")


# --- reader backend ---------------------------------------------------------------------------------------------

FAKE_KEY = "test-reader-key-not-a-real-secret"


def test_reader_backend_sends_key_from_env_and_never_records_it(
    server: Server, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    body = (b"Title: Cats and Dogs\nURL Source: https://example.org/cats\n\nMarkdown Content:\n"
            b"Cats sleep for about fifteen hours a day.\n")
    server.routes["/reader/"] = lambda h: (200, {"Content-Type": "text/plain; charset=utf-8"}, body)
    f = fetcher(backend="reader", reader_base_url=server.url("/reader/"), api_key_env="TEST_READER_KEY",
                env={"TEST_READER_KEY": FAKE_KEY})
    caplog.set_level("DEBUG")
    s = snap(f, "https://example.org/cats?utm_source=feed")
    assert s.ok and s.title == "Cats and Dogs" and s.text == "Cats sleep for about fifteen hours a day."
    assert s.final_url == "https://example.org/cats"
    assert s.fetcher.startswith("reader:127.0.0.1/v")
    assert server.log[0]["path"] == "/reader/https://example.org/cats?utm_source=feed"
    assert server.log[0]["auth"] == f"Bearer {FAKE_KEY}"
    from reportbench.fetch.snapshot import write_snapshots

    out = tmp_path / "pages.parquet"
    write_snapshots([s], out)
    assert FAKE_KEY.encode() not in out.read_bytes()
    assert FAKE_KEY not in repr(s) and FAKE_KEY not in caplog.text


def test_reader_key_not_forwarded_across_hosts(server: Server) -> None:
    server.routes["/reader/"] = lambda h: (302, {"Location": f"http://other.example:{server.port}/landing"}, b"")
    server.routes["/landing"] = lambda h: (200, {"Content-Type": "text/plain"}, b"landed")
    f = fetcher(backend="reader", reader_base_url=server.url("/reader/"), api_key_env="TEST_READER_KEY",
                env={"TEST_READER_KEY": FAKE_KEY}, resolver=lambda h, p: ["127.0.0.1"],
                allow_hosts={"127.0.0.1", "other.example"})
    s = snap(f, "https://example.org/x")
    assert s.ok
    assert server.log[0]["auth"] == f"Bearer {FAKE_KEY}" and server.log[1]["auth"] == ""


def test_reader_backend_refuses_internal_targets_without_asking_the_reader(server: Server) -> None:
    f = fetcher(backend="reader", reader_base_url=server.url("/reader/"))
    for url in ("http://169.254.169.254/latest/meta-data/", "http://0x7f.1/", "file:///etc/passwd"):
        assert snap(f, url).error_class == "refused"
    assert server.log == []


def test_reader_without_key_sends_no_authorization(server: Server) -> None:
    server.routes["/reader/"] = lambda h: (200, {"Content-Type": "text/plain"}, b"no header format here")
    f = fetcher(backend="reader", reader_base_url=server.url("/reader/"), api_key_env="TEST_READER_KEY", env={})
    assert snap(f, "https://example.org/").text == "no header format here"
    assert server.log[0]["auth"] == ""


# --- TLS: connect to the pinned IP, verify the certificate for the original name ---------------------------------


def _self_signed(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A throwaway self-signed certificate for `name` (test data generated on the fly)."""
    pytest.importorskip("cryptography")
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[Server, Path, list[str]]]:
    """HTTPS on 127.0.0.1 with a certificate for `secure.example`; records the SNI each handshake sent."""
    import ssl

    cert, key = _self_signed(tmp_path, "secure.example")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    snis: list[str] = []
    ctx.sni_callback = lambda sock, name, c: snis.append(str(name))  # type: ignore[assignment]
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    port = httpd.server_address[1]
    state = Server(base=f"https://127.0.0.1:{port}", port=port, routes={})
    httpd.state = state  # type: ignore[attr-defined]
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    try:
        yield state, cert, snis
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_https_pinned_ip_keeps_sni_and_certificate_check(tls_server: tuple[Server, Path, list[str]]) -> None:
    server, cert, snis = tls_server
    server.routes["/s"] = lambda h: (200, {"Content-Type": "text/plain"}, b"secure text")

    def pool(target: Target, c: float, r: float):  # noqa: ANN202
        return make_pool(target, c, r, ca_certs=str(cert))

    f = fetcher(resolver=lambda h, p: ["127.0.0.1"], allow_hosts={"secure.example", "wrong.example"},
                pool_factory=pool)
    ok = snap(f, f"https://secure.example:{server.port}/s")
    assert ok.ok and ok.text == "secure text"
    assert snis == ["secure.example"] and server.log[0]["host"] == f"secure.example:{server.port}"
    # same IP, other name: the certificate does not match, so nothing is read
    bad = snap(f, f"https://wrong.example:{server.port}/s")
    assert bad.error_class == "connection" and len(server.log) == 1


# --- opt-in: the real internet ----------------------------------------------------------------------------------


@pytest.mark.live
def test_live_fetch_of_a_public_page() -> None:
    """Real DNS + HTTPS through the guard (skipped unless REPORTBENCH_LIVE_NETWORK=1)."""
    import os

    if os.environ.get("REPORTBENCH_LIVE_NETWORK") != "1":
        pytest.skip("set REPORTBENCH_LIVE_NETWORK=1 to fetch https://example.com/")
    f = Fetcher(per_host_interval_s=0.0, retries=1)
    s = snapshot_from_raw(f.fetch("https://example.com/"), f.fetcher_id)
    assert s.ok and "Example Domain" in (s.title or "")
