"""Page-fetch deadlines hold on every read: a server dripping 1 byte per second cannot hold a worker.

A socket read timeout only bounds the gap between two bytes, so before the watchdog a 60-byte header at
1 B/s took 60 s against a 12 s bound (issue 26, defect 3). Loopback only, self-authored server.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from reportbench.fetch.client import Fetcher

pytestmark = pytest.mark.integration


def _drip_server(head: bytes, drip: bytes, gap_s: float = 1.0) -> Iterator[str]:
    """Send `head` at once, then `drip` one byte every `gap_s`, then close; returns the URL."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.recv(65536)
                    conn.sendall(head)
                    for byte in drip:
                        if stop.wait(gap_s):
                            return
                        conn.sendall(bytes([byte]))
                except OSError:
                    continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/page"
    finally:
        stop.set()
        listener.close()


def _fetcher() -> Fetcher:
    return Fetcher(
        allow_hosts={"127.0.0.1"}, per_host_interval_s=0.0, retries=0, timeout_s=1.5, connect_timeout_s=0.5,
        sleep=lambda s: None,
    )


@pytest.fixture
def header_drip() -> Iterator[str]:
    yield from _drip_server(b"", b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Pad: " + b"a" * 40 + b"\r\n\r\nhi")


@pytest.fixture
def body_drip() -> Iterator[str]:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
    yield from _drip_server(head, b"x" * 40)


def test_headers_at_one_byte_per_second_stop_at_the_header_deadline(header_drip: str) -> None:
    started = time.monotonic()
    raw = _fetcher().fetch(header_drip)
    elapsed = time.monotonic() - started
    assert raw.error_class == "timeout", raw
    assert "headers not complete within 2s" in (raw.error or "")
    assert elapsed < 60.0, elapsed  # cut at the deadline (2 s), long before the drip's > 60 s: load cannot fake it


def test_body_at_one_byte_per_second_stops_at_the_body_deadline(body_drip: str) -> None:
    started = time.monotonic()
    raw = _fetcher().fetch(body_drip)
    elapsed = time.monotonic() - started
    assert raw.error_class == "timeout", raw
    assert "body not complete within 6s" in (raw.error or "")
    assert raw.body == b""  # a cut body is never kept as if it were the page
    assert elapsed < 40.0, elapsed  # cut at the deadline (4 x 1.5 s), before the drip's 40 s


def test_refused_redirect_hop_says_it_was_a_redirect() -> None:
    """The first URL is fine, its redirect to a private address is not: the record says which hop."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://10.0.0.1/admin\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=serve, daemon=True).start()
    try:
        raw = _fetcher().fetch(f"http://127.0.0.1:{listener.getsockname()[1]}/go")
    finally:
        listener.close()
    assert raw.error_class == "refused", raw
    assert "redirect hop 1 to http://10.0.0.1/admin refused" in (raw.error or ""), raw.error
