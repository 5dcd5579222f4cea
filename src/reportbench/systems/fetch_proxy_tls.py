"""The fetch proxy's per-run certificate authority: how it reads HTTPS pages a sandboxed agent asks for.

A `CONNECT host:443` tunnel hides the page from the proxy, so it could neither serve it from the page cache nor
record what was read. With interception on (the default, docs/reliability.md "Sandbox"), the proxy answers the
CONNECT itself and speaks TLS to the sandboxed program with a certificate for that host, issued by a CA made for
this run only; the sandbox trusts that CA (its certificate, never its key, is all it gets) and nothing else can
reach it, since its only network is the proxies.

Keys: the CA's private key exists only in this process's memory (never written anywhere); one leaf key per run
signs nothing and is written, with each host's certificate, to a 0600 file in a 0700 temporary folder for the
instant `ssl` needs to read it (the stdlib loads a key only from a file), then removed. The sandbox cannot see
that folder (its /tmp is its own) nor this process's memory (its own PID namespace).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import secrets
import shutil
import ssl
import tempfile
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_FOR = dt.timedelta(days=7)  # a run's certificates need not outlive it; a week covers the longest runs
MAX_HOSTS = 10_000  # leaf contexts kept per run (bounded memory whatever an agent asks for)


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
        key_agreement=False, key_cert_sign=cert_sign, crl_sign=cert_sign, encipher_only=False, decipher_only=False,
    )


class RunCA:
    """A CA for one run: its certificate (PEM, for the sandbox's trust) and TLS server contexts per host."""

    def __init__(self) -> None:
        self._ca_key = ec.generate_private_key(ec.SECP256R1())
        self._leaf_key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        self._not_before, self._not_after = now - dt.timedelta(hours=1), now + VALID_FOR
        name = x509.Name([
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "reportbench"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"reportbench fetch proxy, one run ({secrets.token_hex(4)})"),
        ])
        ca_pub = self._ca_key.public_key()
        self.cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(ca_pub)
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._not_before).not_valid_after(self._not_after)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_key_usage(cert_sign=True), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_pub), critical=False)
            .sign(self._ca_key, hashes.SHA256())
        )
        self.cert_pem: bytes = self.cert.public_bytes(serialization.Encoding.PEM)
        self._aki = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_pub)
        self._dir = Path(tempfile.mkdtemp(prefix="rb-fetch-proxy-keys-"))  # 0700
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._lock = threading.Lock()
        self.leaf_certificates = 0  # issued this run (one per host)

    def context_for(self, host: str) -> ssl.SSLContext:
        """The server-side TLS context presenting a certificate for `host` (made once per host per run)."""
        with self._lock:
            ctx = self._contexts.get(host)
            if ctx is None:
                if len(self._contexts) >= MAX_HOSTS:
                    self._contexts.pop(next(iter(self._contexts)))
                ctx = self._contexts[host] = self._server_context(host)
                self.leaf_certificates += 1
            return ctx

    def _server_context(self, host: str) -> ssl.SSLContext:
        try:
            san: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            san = x509.DNSName(host)
        leaf_pub = self._leaf_key.public_key()
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host[:64])]))
            .issuer_name(self.cert.subject).public_key(leaf_pub)
            .serial_number(x509.random_serial_number())
            .not_valid_before(self._not_before).not_valid_after(self._not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(cert_sign=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName([san]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(leaf_pub), critical=False)
            .add_extension(self._aki, critical=False)
            .sign(self._ca_key, hashes.SHA256())
        )
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_alpn_protocols(["http/1.1"])  # clients offering h2 (curl, httpx) speak HTTP/1.1 to us
        chain = self._dir / f"leaf-{secrets.token_hex(8)}.pem"
        fd = os.open(chain, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(cert.public_bytes(serialization.Encoding.PEM))
                f.write(self._leaf_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption()))  # fmt: skip
            ctx.load_cert_chain(chain)
        finally:
            chain.unlink(missing_ok=True)
        return ctx

    def write_certificate(self, path: Path) -> Path:
        """The CA certificate (public: no key) at `path`, readable by the sandbox's user."""
        path = Path(path)
        path.write_bytes(self.cert_pem)
        os.chmod(path, 0o644)
        return path

    def close(self) -> None:
        with self._lock:
            self._contexts.clear()
        shutil.rmtree(self._dir, ignore_errors=True)
