"""The sandbox's fetch proxy (reportbench.systems.fetch_proxy): the only way a sandboxed agent reads pages. It
refuses what the SSRF guard refuses (loopback, private, metadata addresses; by any spelling) for plain HTTP and
CONNECT alike, and forwards the rest to exactly the checked address; a sandboxed command with `fetch: true` gets
it through its proxy variables and nothing else."""

from __future__ import annotations

import http.server
import json
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from reportbench.systems import run_system
from reportbench.systems.fetch_proxy import FetchProxy
from reportbench.systems.sandbox import parse_sandbox, unavailable_reason
from reportbench.types import Task

pytestmark = pytest.mark.integration


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = b"<html><body>a page</body></html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def page_server() -> Iterator[http.server.HTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _via(proxy_port: int, url: str) -> tuple[int, str]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxy_port}"}))
    try:
        with opener.open(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.parametrize("spelling", ["127.0.0.1", "localhost", "127.1", "0x7f.1", "2130706433"])
def test_loopback_is_refused_by_every_spelling(page_server: http.server.HTTPServer, spelling: str) -> None:
    port = page_server.server_address[1]
    with FetchProxy() as proxy:
        status, body = _via(proxy.port, f"http://{spelling}:{port}/secret")
    assert status == 403 and "refused by reportbench's fetch guard" in body, (status, body)
    assert proxy.refused


def test_metadata_and_private_addresses_are_refused() -> None:
    with FetchProxy() as proxy:
        for url in ("http://169.254.169.254/latest/meta-data/", "http://10.0.0.8/", "http://[::1]:80/"):
            status, body = _via(proxy.port, url)
            assert status == 403 and "fetch guard" in body, (url, status, body)


def test_a_connect_tunnel_to_loopback_is_refused(page_server: http.server.HTTPServer) -> None:
    import socket

    with FetchProxy() as proxy, socket.create_connection(("127.0.0.1", proxy.port)) as s:
        s.sendall(f"CONNECT 127.0.0.1:{page_server.server_address[1]} HTTP/1.1\r\n\r\n".encode())
        reply = s.recv(4096).decode()
    assert reply.startswith("HTTP/1.1 403") and "fetch guard" in reply


def test_an_allowed_host_is_forwarded_to_the_checked_address(page_server: http.server.HTTPServer) -> None:
    """`allow_hosts` is the guard's TEST-ONLY escape hatch (no config key reaches it): the forward path itself."""
    port = page_server.server_address[1]
    with FetchProxy(allow_hosts=frozenset({"127.0.0.1"})) as proxy:
        status, body = _via(proxy.port, f"http://127.0.0.1:{port}/page")
    assert status == 200 and "a page" in body


def test_fetch_is_off_for_commands_and_a_bool() -> None:
    from reportbench.systems.base import SystemError_

    assert parse_sandbox("s", None).fetch is None  # the kind decides: commands off, agents on
    with pytest.raises(SystemError_, match="sandbox.fetch"):
        parse_sandbox("s", {"fetch": "yes"})


def test_a_sandboxed_command_reaches_pages_only_through_the_guard(
    tmp_path: Path, page_server: http.server.HTTPServer
) -> None:
    if unavailable_reason():
        pytest.fail(f"the sandbox is required here: {unavailable_reason()}")
    port = page_server.server_address[1]
    script = tmp_path / "reader.py"
    script.write_text(
        "import json, os, sys, urllib.request, urllib.error\n"
        "seen = {'proxy': bool(os.environ.get('HTTP_PROXY'))}\n"
        "os.environ.pop('NO_PROXY'); os.environ.pop('no_proxy')  # loopback through the proxy too (else direct)\n"
        f"for url in ['http://127.0.0.1:{port}/direct', 'http://localhost.:{port}/x', 'http://10.1.2.3/']:\n"
        "    opener = urllib.request.build_opener(urllib.request.ProxyHandler({'http': os.environ['HTTP_PROXY']}))\n"
        "    try:\n"
        "        seen[url] = opener.open(url, timeout=5).status\n"
        "    except urllib.error.HTTPError as exc:\n"
        "        seen[url] = exc.code\n"
        "    except OSError as exc:\n"
        "        seen[url] = type(exc).__name__\n"
        "try:\n"
        f"    urllib.request.urlopen('http://127.0.0.1:{port}/direct', timeout=5)\n"
        "    seen['direct'] = 'reached'\n"
        "except OSError as exc:\n"
        "    seen['direct'] = type(exc).__name__\n"
        "open(sys.argv[2], 'w').write('## Work\\n\\nSeen: ' + json.dumps(seen) + '\\n')\n"
    )
    spec = {"kind": "command", "cmd": [sys.executable, str(script), "{task_json}", "{output}"],
            "sandbox": {"fetch": True}}  # fmt: skip
    outcomes = run_system("reader", spec, [Task(task_id="t1", title="t", task_prompt="q")], tmp_path / "run")
    assert outcomes[0].status == "ok", outcomes[0].reason
    body = (tmp_path / "run" / "raw" / "t1.md").read_text()
    seen = json.loads(body.split("Seen: ", 1)[1])
    assert seen["proxy"] is True
    assert seen[f"http://127.0.0.1:{port}/direct"] == 403 and seen[f"http://localhost.:{port}/x"] == 403
    assert seen["http://10.1.2.3/"] == 403
    assert seen["direct"] != "reached"  # no network of its own: loopback outside the proxies is unreachable
    record = json.loads((tmp_path / "run" / "sandbox.json").read_text())
    assert record["backend"] == "bwrap" and record["fetch_proxy"] is True
