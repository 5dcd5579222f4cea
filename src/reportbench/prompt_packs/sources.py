"""Load one authors' source file at a pinned commit, byte-checked by sha256, never stored in this repository.

Why: the benchmarks' judge prompts are third-party text. We reproduce their exact messages at run time from
the public repositories instead of copying them in. Lookup order:

1. `$REPORTBENCH_AUTHORS_MIRROR/<owner>/<repo>/<commit>/<path>` (a local mirror someone built once),
2. the cache `$REPORTBENCH_AUTHORS_CACHE` (default `.reportbench/cache/authors`), same layout,
3. a download of the raw file at that commit from GitHub over https (no redirects followed, timeout,
   size cap), unless `REPORTBENCH_AUTHORS_OFFLINE=1`; it is checked and then written to the cache.

Every byte string is checked against the pinned sha256 before use. Nothing here imports or runs the
authors' code.
"""

from __future__ import annotations

import hashlib
import os
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MIRROR_ENV = "REPORTBENCH_AUTHORS_MIRROR"
CACHE_ENV = "REPORTBENCH_AUTHORS_CACHE"
OFFLINE_ENV = "REPORTBENCH_AUTHORS_OFFLINE"
DEFAULT_CACHE = Path(".reportbench/cache/authors")
RAW_URL = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"
DOWNLOAD_TIMEOUT_S = 30.0
MAX_BYTES = 5_000_000

_REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")


class AuthorsSourceError(RuntimeError):
    """Base class: an authors' source file could not be used."""


class AuthorsSourceUnavailable(AuthorsSourceError):
    """The file is in neither the mirror nor the cache and could not be downloaded."""


class AuthorsSourceMismatch(AuthorsSourceError):
    """The bytes found do not have the pinned sha256 (wrong commit, edited mirror, tampered download)."""


@dataclass(frozen=True)
class SourceRef:
    """One pinned file: repository `owner/name`, full 40-hex commit, path inside the repo, sha256 of its bytes."""

    repo: str
    commit: str
    path: str
    sha256: str

    def __post_init__(self) -> None:
        if not _REPO_RE.match(self.repo):
            raise ValueError(f"repo must be 'owner/name', got {self.repo!r}")
        if not _COMMIT_RE.match(self.commit):
            raise ValueError(f"commit must be 40 lowercase hex digits, got {self.commit!r}")
        if not _SHA_RE.match(self.sha256):
            raise ValueError(f"sha256 must be 64 lowercase hex digits, got {self.sha256!r}")
        parts = self.path.split("/")
        if self.path.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"path must be a plain relative path inside the repo, got {self.path!r}")

    @property
    def relpath(self) -> Path:
        """Layout shared by the mirror and the cache: <owner>/<repo>/<commit>/<path>."""
        return Path(self.repo) / self.commit / self.path

    @property
    def url(self) -> str:
        return RAW_URL.format(repo=self.repo, commit=self.commit, path=self.path)

    def describe(self) -> str:
        return f"{self.repo}@{self.commit[:7]}:{self.path}"


def pinned(repo: str, commit: str) -> Callable[[str, str], SourceRef]:
    """`ref = pinned(REPO, COMMIT)`, then `ref(path, sha256)`: every source of one pack at one commit."""

    def ref(path: str, sha256: str) -> SourceRef:
        return SourceRef(repo, commit, path, sha256)

    return ref


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check(ref: SourceRef, data: bytes, where: str) -> None:
    got = _sha(data)
    if got != ref.sha256:
        raise AuthorsSourceMismatch(
            f"sha256 mismatch for {ref.repo} at commit {ref.commit}, path {ref.path} (from {where}): "
            f"expected {ref.sha256}, got {got}"
        )


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A pinned raw URL never needs a redirect; following one could fetch something else."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        raise urllib.error.HTTPError(req.full_url, code, f"refusing redirect to {newurl}", headers, fp)


def _download(ref: SourceRef) -> bytes:
    opener = urllib.request.build_opener(_NoRedirect())
    req = urllib.request.Request(ref.url, headers={"User-Agent": "reportbench-prompt-packs"})
    with opener.open(req, timeout=DOWNLOAD_TIMEOUT_S) as resp:
        data = resp.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise AuthorsSourceUnavailable(f"{ref.url}: larger than {MAX_BYTES} bytes")
    return data


def authors_bytes(ref: SourceRef) -> bytes:
    """The checked bytes of `ref` (mirror, then cache, then download + cache)."""
    mirror = os.environ.get(MIRROR_ENV)
    if mirror:
        p = Path(mirror) / ref.relpath
        if p.is_file():
            data = p.read_bytes()
            _check(ref, data, f"mirror {p}")
            return data
    cached = cache_dir() / ref.relpath
    if cached.is_file():
        data = cached.read_bytes()
        _check(ref, data, f"cache {cached}")
        return data
    hint = (
        f"set {MIRROR_ENV} to a mirror laid out as <owner>/<repo>/<commit>/<path> "
        f"(see docs/prompt-packs.md), or put the file in the cache {cached}"
    )
    if os.environ.get(OFFLINE_ENV, "").strip() not in ("", "0"):
        raise AuthorsSourceUnavailable(f"authors' source {ref.describe()} not found and {OFFLINE_ENV} is set: {hint}")
    try:
        data = _download(ref)
    except AuthorsSourceError:
        raise
    except Exception as exc:  # noqa: BLE001 - any network failure means "unavailable", with the reason
        raise AuthorsSourceUnavailable(
            f"authors' source {ref.describe()} not found locally and the download from {ref.url} failed "
            f"({type(exc).__name__}: {exc}): {hint}"
        ) from exc
    _check(ref, data, f"download {ref.url}")
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_name(cached.name + ".part")
    tmp.write_bytes(data)
    tmp.replace(cached)
    return data


def authors_source(repo: str, commit: str, path: str, sha256: str) -> str:
    """The text (UTF-8) of one pinned authors' file; raises AuthorsSourceUnavailable / AuthorsSourceMismatch."""
    return authors_bytes(SourceRef(repo, commit, path, sha256)).decode("utf-8")


def read_ref(ref: SourceRef) -> str:
    return authors_bytes(ref).decode("utf-8")


def available(ref: SourceRef) -> bool:
    """True when `ref` is in the mirror or the cache (no download attempted): tests skip on False."""
    mirror = os.environ.get(MIRROR_ENV)
    if mirror and (Path(mirror) / ref.relpath).is_file():
        return True
    return (cache_dir() / ref.relpath).is_file()
