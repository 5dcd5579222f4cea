"""SSRF guard: a cited URL may only make us talk to a public address on the internet.

Why: report URLs are untrusted input (a system, or a page it read, can write `http://169.254.169.254/...`).
Policy, applied to the first URL and again to every redirect hop:

* scheme must be http or https; no userinfo tricks change the host we check (we check what we connect to);
* numeric hosts are parsed the way `inet_aton` / the WHATWG URL parser does (`2130706433`, `0x7f.1`,
  `0177.0.0.1`, `127.1`) *before* any DNS, and a host whose last label is numeric but does not parse is refused;
* `localhost` and `*.localhost` are refused without DNS;
* names are resolved with an injectable resolver; if ANY returned address is non-public the URL is refused
  (loopback, private, CGNAT 100.64/10, link-local incl. cloud metadata 169.254.169.254 / fd00:ec2::254,
  multicast, reserved, unspecified, ULA fc00::/7, site-local, documentation/benchmark ranges, and IPv6 forms
  embedding an IPv4 address: IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible, 6to4 2002::/16, NAT64 64:ff9b::/96);
* the caller then connects to exactly the checked address (`Target.ip`), so DNS cannot be re-bound in between.

`allow_hosts` is a TEST-ONLY escape hatch: a set of literal host spellings (e.g. {"127.0.0.1"}) whose address
check is skipped so a test can fetch from a loopback server. It is never on by default, is not a config key,
and other spellings of the same address (`127.1`, `0x7f.1`, `localhost`) are still refused.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Collection
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]

ALLOWED_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}

_BLOCKED_V4 = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
        "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
    )
)
_BLOCKED_V6 = tuple(
    ipaddress.IPv6Network(n)
    for n in (
        "::/128", "::1/128", "::/96", "::ffff:0:0/96", "64:ff9b:1::/48", "100::/64", "2001:db8::/32",
        "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
    )
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class GuardError(Exception):
    """Base of the guard's refusals."""


class RefusedError(GuardError):
    """The URL would reach a non-public address or uses a forbidden scheme/host (error_class `refused`)."""


class DnsError(GuardError):
    """The host name did not resolve (error_class `dns`)."""


@dataclass(frozen=True)
class Target:
    """A checked hop: connect to `ip`:`port`, send `Host: host_header`, verify TLS for `host`."""

    scheme: str
    host: str  # ASCII (IDNA) host name or address literal, lower-case, no brackets
    port: int
    ip: str
    host_header: str
    path: str  # path + query as sent on the request line

    @property
    def is_https(self) -> bool:
        return self.scheme == "https"


def parse_ipv4_like(host: str) -> ipaddress.IPv4Address | None:
    """Parse a host the way inet_aton/WHATWG do: 1-4 dot parts, each decimal, 0x-hex or 0-octal.

    Returns None when the host is not numeric at all (a name to resolve). Raises RefusedError when it looks
    numeric (last label is a number) but is not a valid address, e.g. `1.2.3.4.5` or `0x7g.1`.
    """
    h = host[:-1] if host.endswith(".") else host
    parts = h.split(".")
    if not parts or not _looks_numeric(parts[-1]):
        return None
    if len(parts) > 4 or any(p == "" for p in parts):
        raise RefusedError(f"malformed numeric host {host!r}")
    values = []
    for p in parts:
        v = _parse_number(p)
        if v is None:
            raise RefusedError(f"malformed numeric host {host!r}")
        values.append(v)
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        raise RefusedError(f"numeric host out of range {host!r}")
    n = 0
    for v in head:
        n = n * 256 + v
    n = (n << (8 * (5 - len(values)))) | last
    return ipaddress.IPv4Address(n)


def _looks_numeric(label: str) -> bool:
    low = label.lower()
    if low.startswith("0x"):
        return all(c in "0123456789abcdef" for c in low[2:])
    return low.isdigit()


def _parse_number(p: str) -> int | None:
    low = p.lower()
    try:
        if low.startswith("0x"):
            return int(low[2:] or "0", 16)
        if len(low) > 1 and low.startswith("0"):
            return int(low, 8)
        return int(low, 10) if low.isdigit() else None
    except ValueError:
        return None


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, 6to4, NAT64), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or (int(ip) >> 32 == 0 and int(ip) > 0xFFFF):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def forbidden_reason(ip: IPAddress) -> str | None:
    """Why this address must not be contacted, or None if it is a public unicast address."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            return f"{ip}: IPv6 zone id"
        inner = embedded_ipv4(ip)
        if inner is not None:
            why = forbidden_reason(inner)
            if why:
                return f"{ip} embeds {why}"
        nets: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = _BLOCKED_V6
    else:
        nets = _BLOCKED_V4
    for net in nets:
        if ip in net:
            return f"{ip} is in {net}"
    checks = (
        ("loopback", ip.is_loopback), ("private", ip.is_private), ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast), ("reserved", ip.is_reserved), ("unspecified", ip.is_unspecified),
        ("non-global", not ip.is_global),
    )
    for name, hit in checks:
        if hit:
            return f"{ip} is {name}"
    return None


def literal_address(host: str) -> IPAddress | None:
    """The address a host denotes without DNS (IPv6 literal or any inet_aton spelling), else None."""
    if ":" in host or "%" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError as e:
            raise RefusedError(f"malformed IPv6 host {host!r}") from e
    return parse_ipv4_like(host)


def system_resolver(host: str, port: int) -> list[str]:
    """Resolve with the OS (getaddrinfo), every address returned, in order, deduplicated."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as e:  # gaierror is an OSError
        raise DnsError(f"cannot resolve {host!r}: {e}") from e
    out: list[str] = []
    for info in infos:
        addr = str(info[4][0])
        if addr not in out:
            out.append(addr)
    return out


def _split(url: str) -> tuple[str, str, int, str]:
    """scheme, ASCII host, port, request path; RefusedError for anything we will not fetch."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as e:
        raise RefusedError(f"unparseable URL: {e}") from e
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise RefusedError(f"scheme {scheme or '(none)'!r} is not http/https")
    host = (parts.hostname or "").lower()
    if not host:
        raise RefusedError("URL has no host")
    try:
        host = host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError as e:
        raise RefusedError(f"invalid host name: {e}") from e
    if host.endswith(".") and ":" not in host:
        host = host[:-1]
    if host == "localhost" or host.endswith(".localhost"):
        raise RefusedError(f"{host} is loopback by definition")
    if any(c in host for c in " /\\@?#"):
        raise RefusedError(f"invalid characters in host {host!r}")
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    return scheme, host, port if port is not None else DEFAULT_PORTS[scheme], path


def check_static(url: str, allow_hosts: Collection[str] = ()) -> tuple[str, str, int, str]:
    """Every check that needs no DNS (scheme, host syntax, literal addresses). Used for reader-backend targets."""
    scheme, host, port, path = _split(url)
    if host in allow_hosts:
        return scheme, host, port, path
    addr = literal_address(host)
    if addr is not None:
        why = forbidden_reason(addr)
        if why:
            raise RefusedError(why)
    return scheme, host, port, path


def check_url(url: str, resolver: Resolver = system_resolver, allow_hosts: Collection[str] = ()) -> Target:
    """Check one hop and pick the address to connect to. Raises RefusedError or DnsError."""
    scheme, host, port, path = check_static(url, allow_hosts)
    addr = literal_address(host)
    if addr is not None:
        ip = str(addr)
    else:
        addrs = resolver(host, port)
        if not addrs:
            raise DnsError(f"{host!r} resolved to no address")
        parsed: list[IPAddress] = []
        for a in addrs:
            try:
                parsed.append(ipaddress.ip_address(a))
            except ValueError as e:
                raise RefusedError(f"resolver returned a non-address {a!r} for {host!r}") from e
        if host not in allow_hosts:
            for p in parsed:
                why = forbidden_reason(p)
                if why:
                    raise RefusedError(f"{host} resolves to {why}")
        ip = str(parsed[0])
    bracketed = f"[{host}]" if ":" in host else host
    host_header = bracketed if port == DEFAULT_PORTS[scheme] else f"{bracketed}:{port}"
    return Target(scheme=scheme, host=host, port=port, ip=ip, host_header=host_header, path=path)
