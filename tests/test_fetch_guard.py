"""SSRF guard: numeric-host parsing, address policy, injected resolver. No DNS, no sockets."""

from __future__ import annotations

import ipaddress

import pytest

from reportbench.fetch.client import make_pool
from reportbench.fetch.guard import (
    DnsError,
    RefusedError,
    check_static,
    check_url,
    forbidden_reason,
    parse_ipv4_like,
)

pytestmark = pytest.mark.core


def no_dns(host: str, port: int) -> list[str]:
    raise AssertionError(f"the guard must not resolve {host!r} here")


def public_resolver(host: str, port: int) -> list[str]:
    return {"example.org": ["93.184.215.14"], "v6.example.org": ["2606:2800:21f:cb07:6820:80da:af6b:8b2c"]}[host]


# --- one refusal test per case --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",  # loopback
        "http://10.0.0.1/",  # private 10/8
        "http://172.16.0.1/",  # private 172.16/12
        "http://172.31.255.254/",
        "http://192.168.1.1/",  # private 192.168/16
        "http://100.64.0.1/",  # CGNAT 100.64/10
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata (link-local)
        "http://[fd00:ec2::254]/",  # AWS IPv6 metadata (ULA)
        "http://[::1]/",  # IPv6 loopback
        "http://[fc00::1]/",  # IPv6 ULA fc00::/7
        "http://[fe80::1]/",  # IPv6 link-local
        "http://[::ffff:127.0.0.1]/",  # IPv4-mapped loopback
        "http://[::ffff:7f00:1]/",  # same, hex spelling
        "http://[::ffff:10.0.0.1]/",  # IPv4-mapped private
        "http://[2002:7f00:1::]/",  # 6to4 embedding 127.0.0.1
        "http://[2002:a00:1::]/",  # 6to4 embedding 10.0.0.1
        "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 embedding 169.254.169.254
        "http://2130706433/",  # decimal 127.0.0.1
        "http://0x7f.1/",  # hex + short form
        "http://0x7f000001/",  # one hex number
        "http://0177.0.0.1/",  # octal
        "http://127.1/",  # short form
        "http://0/",  # unspecified 0.0.0.0
        "http://0.0.0.0/",
        "http://[::]/",
        "http://224.0.0.1/",  # multicast
        "http://[ff02::1]/",  # IPv6 multicast
        "http://240.0.0.1/",  # reserved
        "http://255.255.255.255/",  # broadcast
        "http://192.0.2.1/",  # documentation range
        "http://localhost/",  # loopback by name, refused before DNS
        "http://LOCALHOST./",
        "http://app.localhost/",
        "https://127.0.0.1:8443/",  # any port
        "http://user@127.0.0.1/",  # userinfo does not hide the host
    ],
)
def test_refuses_internal_addresses_without_dns(url: str) -> None:
    with pytest.raises(RefusedError):
        check_url(url, resolver=no_dns)


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "gopher://example.org/", "ftp://example.org/x", "javascript:alert(1)",
     "data:text/html,hi", "//example.org/", "example.org/page", "", "http:///nohost"],
)
def test_refuses_non_http_schemes_and_hostless(url: str) -> None:
    with pytest.raises(RefusedError):
        check_url(url, resolver=no_dns)


@pytest.mark.parametrize("host", ["1.2.3.4.5", "0x7g.1", "1.2.3.256", "1.16777216", "999999999999"])
def test_malformed_numeric_hosts_are_refused_not_resolved(host: str) -> None:
    with pytest.raises(RefusedError):
        check_url(f"http://{host}/", resolver=no_dns)


@pytest.mark.parametrize(
    ("host", "addr"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("10.1", "10.0.0.1"),
        ("192.168.257", "192.168.1.1"),
        ("0xC0.0xA8.1.1", "192.168.1.1"),
        ("1.2.3.4.", "1.2.3.4"),
        ("example.org", None),
        ("1a.example", None),
    ],
)
def test_parse_ipv4_like_matches_inet_aton(host: str, addr: str | None) -> None:
    parsed = parse_ipv4_like(host)
    assert (str(parsed) if parsed else None) == addr


@pytest.mark.parametrize("addr", ["10.0.0.1", "192.168.1.1", "127.0.0.2", "169.254.169.254", "fd00:ec2::254",
                                  "::ffff:192.168.0.1", "100.64.1.1"])
def test_hostname_resolving_to_private_address_is_refused(addr: str) -> None:
    with pytest.raises(RefusedError, match="resolves to"):
        check_url("https://internal.example.com/x", resolver=lambda h, p: [addr])


def test_any_private_address_among_several_refuses() -> None:
    """Round-robin tricks: one public and one private answer is still a refusal."""
    with pytest.raises(RefusedError):
        check_url("https://mixed.example.com/", resolver=lambda h, p: ["93.184.215.14", "10.0.0.5"])


def test_dns_failure_is_dns_error() -> None:
    def fail(host: str, port: int) -> list[str]:
        raise DnsError(f"cannot resolve {host}")

    with pytest.raises(DnsError):
        check_url("https://nxdomain.example/", resolver=fail)
    with pytest.raises(DnsError):
        check_url("https://empty.example/", resolver=lambda h, p: [])


def test_public_host_passes_and_target_pins_checked_ip() -> None:
    t = check_url("https://Example.org/a/b?q=1", resolver=public_resolver)
    assert (t.scheme, t.host, t.port, t.ip, t.host_header, t.path) == (
        "https", "example.org", 443, "93.184.215.14", "example.org", "/a/b?q=1"
    )
    t6 = check_url("http://v6.example.org:8080/", resolver=public_resolver)
    assert t6.ip.startswith("2606:") and t6.host_header == "v6.example.org:8080"
    assert check_url("http://93.184.215.14/", resolver=no_dns).ip == "93.184.215.14"


def test_resolver_is_called_once_per_check() -> None:
    calls: list[str] = []

    def spy(host: str, port: int) -> list[str]:
        calls.append(host)
        return ["93.184.215.14"]

    check_url("https://a.example.org/", resolver=spy)
    assert calls == ["a.example.org"]


def test_https_pool_connects_to_ip_but_verifies_the_host_name() -> None:
    """The no-rebinding property: the socket goes to the checked IP; SNI and cert checks use the name."""
    t = check_url("https://example.org/x", resolver=public_resolver)
    pool = make_pool(t, 1.0, 2.0)
    try:
        assert pool.host == "93.184.215.14" and pool.port == 443
        assert pool.conn_kw.get("server_hostname") == "example.org"
        assert pool.assert_hostname == "example.org"
        assert pool.cert_reqs == "CERT_REQUIRED"
    finally:
        pool.close()


def test_test_allowance_is_exact_spelling_only() -> None:
    allow = {"127.0.0.1"}
    assert check_url("http://127.0.0.1:8000/", resolver=no_dns, allow_hosts=allow).ip == "127.0.0.1"
    for other in ("http://127.1:8000/", "http://0x7f.1/", "http://2130706433/", "http://localhost/",
                  "http://[::ffff:127.0.0.1]/", "http://10.0.0.1/"):
        with pytest.raises(RefusedError):
            check_url(other, resolver=no_dns, allow_hosts=allow)


def test_check_static_needs_no_dns_but_catches_literals() -> None:
    assert check_static("https://example.org/")[1] == "example.org"
    with pytest.raises(RefusedError):
        check_static("http://0177.0.0.1/")


def test_public_addresses_are_not_flagged() -> None:
    for a in ("8.8.8.8", "93.184.215.14", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e"):
        assert forbidden_reason(ipaddress.ip_address(a)) is None
