"""Safe extraction of arXiv e-print sources (untrusted bytes from the network).

arXiv serves `https://arxiv.org/src/{id}` as one of: a gzip'd tar (multi-file projects), a gzip'd single
TeX file (single-file projects; the authors' pipeline decoded these still-compressed bytes as UTF-8, a bug),
rarely a plain tar or plain TeX, or a PDF when no source exists. Anything in a tarball can be hostile, so:

* member names must be relative, without `..`, NUL or backslashes, and must land inside the target dir;
* symlinks and hardlinks are never created (all are skipped, whatever they point to), nor device files/FIFOs;
* a member's path depth and name length are capped (a 1,200-level path cost 78 s, then RecursionError);
* the number of members, each file's size, the total extracted size and the decompressed stream size are
  capped (`ExtractLimits`). Over a count/total/stream cap extraction stops with `ExtractionError`; an
  oversized single file is skipped and reported (one 80 MB figure should not cost us the LaTeX), unless
  `strict_file_size` is set;
* Python's `tarfile.data_filter` is consulted as a second opinion, but files are written by this module
  (`O_NOFOLLOW`, fixed permissions), never by `TarFile.extract*`.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import re
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Literal

from pydantic import BaseModel, ConfigDict, Field

GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 16
_SAFE_NAME_RE = re.compile(r"[^A-Za-z0-9._-]+")


class ExtractionError(RuntimeError):
    """The source cannot be extracted safely (cap exceeded, not a LaTeX source, unreadable)."""


class ExtractLimits(BaseModel):
    """Caps that bound disk use and time for one e-print; defaults fit real arXiv sources comfortably."""

    model_config = ConfigDict(extra="forbid")

    max_members: int = Field(20_000, ge=1, description="tar members (all kinds); more -> ExtractionError")
    max_file_bytes: int = Field(64 << 20, ge=1, description="one extracted file; bigger -> skipped")
    max_total_bytes: int = Field(512 << 20, ge=1, description="sum of extracted files; more -> error")
    max_stream_bytes: int = Field(
        1 << 30, ge=1, description="decompressed bytes read in total, skipped members included (zip bombs)"
    )
    max_depth: int = Field(
        32, ge=1, description="directories a member's path may have; deeper -> skipped (1,200 levels took 78 s)"
    )
    max_name_chars: int = Field(1024, ge=1, description="characters in a member's name; longer -> skipped")
    strict_file_size: bool = Field(False, description="raise instead of skipping an oversized file")
    only_suffixes: list[str] | None = Field(
        None, description="extract only these suffixes (e.g. ['.tex', '.bib', '.bbl']); None = all"
    )


class SkippedMember(BaseModel):
    """A tar member that was not written, and why (reported so a release can audit its sources)."""

    name: str
    reason: str


class ExtractResult(BaseModel):
    """Where the source was unpacked and what happened to each member."""

    root: Path
    kind: Literal["tar", "tar.gz", "gzip_tex", "tex"]
    files: list[str] = Field(default_factory=list, description="relative POSIX paths written, sorted")
    skipped: list[SkippedMember] = Field(default_factory=list)
    total_bytes: int = 0


class _CountingReader(io.RawIOBase):
    """Read-through wrapper that aborts once more than `limit` bytes were read (decompression bombs)."""

    def __init__(self, inner: BinaryIO, limit: int, what: str) -> None:
        self._inner = inner
        self._limit = limit
        self._what = what
        self.count = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        data = self._inner.read(-1 if size is None else size)
        self.count += len(data)
        if self.count > self._limit:
            raise ExtractionError(f"{self._what} exceeds max_stream_bytes={self._limit}")
        return data

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(b))
        n = len(data)
        b[:n] = data
        return n


def _opener(src: bytes | str | os.PathLike[str]) -> Callable[[], BinaryIO]:
    if isinstance(src, bytes | bytearray | memoryview):
        data = bytes(src)
        return lambda: io.BytesIO(data)
    path = Path(src)
    if not path.is_file():
        raise ExtractionError(f"source is not a file: {path}")
    return lambda: open(path, "rb")  # noqa: SIM115 - closed by the caller


def safe_member_path(name: str) -> PurePosixPath | str:
    """Relative path for a tar member name, or the reason it is refused."""
    if "\x00" in name:
        return "NUL byte in name"
    if "\\" in name:
        return "backslash in name (ambiguous path separator)"
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return "absolute path"
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        return "parent-directory reference (..)"
    if not parts:
        return "empty name"
    return PurePosixPath(*parts)


def _inside(root_real: str, target: Path) -> bool:
    real = os.path.realpath(target)
    return real == root_real or real.startswith(root_real + os.sep)


def _gzip_original_name(head: bytes) -> str | None:
    """FNAME from a gzip header (RFC 1952), so a single-file source keeps its name when arXiv sent one."""
    if len(head) < 10 or head[:2] != GZIP_MAGIC:
        return None
    flags = head[3]
    pos = 10
    if flags & 0x04:  # FEXTRA
        if len(head) < pos + 2:
            return None
        pos += 2 + int.from_bytes(head[pos : pos + 2], "little")
    if not flags & 0x08:  # FNAME
        return None
    end = head.find(b"\x00", pos)
    if end < 0:
        return None
    return head[pos:end].decode("latin-1")


def _single_file_name(raw_name: str | None, default: str) -> str:
    base = (raw_name or "").replace("\\", "/").rsplit("/", 1)[-1]
    base = _SAFE_NAME_RE.sub("_", base).strip("._")
    if not base:
        return default
    if not base.lower().endswith(".tex"):
        base = base.rsplit(".", 1)[0] if base.lower().endswith((".gz", ".tgz")) else base
        base = f"{base}.tex"
    return base


def _check_text(data: bytes, what: str) -> None:
    if data.startswith(b"%PDF"):
        raise ExtractionError(f"{what} is a PDF, not a LaTeX source (arXiv has no source for this paper)")
    if b"\x00" in data[:8192]:
        raise ExtractionError(f"{what} is binary and neither a tar archive nor a TeX file")


def _read_capped(fh: BinaryIO, cap: int, what: str) -> bytes:
    buf = io.BytesIO()
    while True:
        chunk = fh.read(_CHUNK)
        if not chunk:
            break
        buf.write(chunk)
        if buf.tell() > cap:
            raise ExtractionError(f"{what} exceeds max_file_bytes={cap}")
    return buf.getvalue()


def _is_tar_stream(open_stream: Callable[[], BinaryIO], gz: bool) -> bool:
    """Whether the (decompressed) stream starts with a valid tar header block."""
    with open_stream() as raw:
        try:
            inner: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw  # type: ignore[assignment]
            with tarfile.open(fileobj=inner, mode="r|") as tf:
                tf.next()
            return True
        except (tarfile.ReadError, EOFError, OSError, zlib.error):
            return False


def _prepare_dest(dest: str | os.PathLike[str] | None) -> tuple[Path, bool]:
    if dest is None:
        return Path(tempfile.mkdtemp(prefix="reportbench-src-")), True
    path = Path(dest)
    if path.is_symlink():
        raise ExtractionError(f"destination is a symlink: {path}")
    if path.exists():
        if not path.is_dir():
            raise ExtractionError(f"destination exists and is not a directory: {path}")
        if any(path.iterdir()):
            raise ExtractionError(f"destination is not empty: {path}")
        return path, False
    path.mkdir(parents=True)
    return path, True


def _wipe(path: Path, created: bool) -> None:
    if created:
        shutil.rmtree(path, ignore_errors=True)
        return
    for child in path.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def _write_file(root_real: str, target: Path, fh: BinaryIO, cap: int) -> int:
    """Copy at most `cap` bytes into `target` without following links; returns bytes written."""
    if not _inside(root_real, target.parent):
        raise ExtractionError(f"refusing to write outside the destination: {target}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(target, flags, 0o644)
    written = 0
    with os.fdopen(fd, "wb") as out:
        while True:
            chunk = fh.read(_CHUNK)
            if not chunk:
                break
            written += len(chunk)
            if written > cap:
                raise ExtractionError(f"{target.name}: more data than declared / allowed ({cap} bytes)")
            out.write(chunk)
    return written


def _mkdirs(root: Path, root_real: str, rel: PurePosixPath) -> None:
    cur = root
    for part in rel.parts:
        cur = cur / part
        if cur.is_symlink():
            raise ExtractionError(f"symlink in destination path: {cur}")
        if not cur.exists():
            cur.mkdir(mode=0o755)
        elif not cur.is_dir():
            raise FileExistsError(f"{cur} exists and is not a directory")
        if not _inside(root_real, cur):
            raise ExtractionError(f"directory escapes destination: {cur}")


def _extract_tar(
    open_stream: Callable[[], BinaryIO], gz: bool, root: Path, limits: ExtractLimits
) -> ExtractResult:
    root_real = os.path.realpath(root)
    skipped: list[SkippedMember] = []
    files: set[str] = set()
    total = 0
    members = 0
    suffixes = {s.lower() for s in limits.only_suffixes} if limits.only_suffixes is not None else None
    with open_stream() as raw:
        inner: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw  # type: ignore[assignment]
        counted = io.BufferedReader(_CountingReader(inner, limits.max_stream_bytes, "decompressed archive"))
        with tarfile.open(fileobj=counted, mode="r|") as tf:
            for member in tf:
                members += 1
                if members > limits.max_members:
                    raise ExtractionError(f"archive has more than max_members={limits.max_members} members")
                name = member.name
                levels = sum(1 for part in name.split("/") if part not in ("", "."))
                if levels - (0 if member.isdir() else 1) > limits.max_depth:
                    reason = f"{levels} path levels > max_depth={limits.max_depth}"
                    skipped.append(SkippedMember(name=name[:200] + "…", reason=reason))
                    continue
                if len(name) > limits.max_name_chars:
                    reason = f"name of {len(name)} characters > max_name_chars={limits.max_name_chars}"
                    skipped.append(SkippedMember(name=name[:200] + "…", reason=reason))
                    continue
                rel = safe_member_path(name)
                if isinstance(rel, str):
                    skipped.append(SkippedMember(name=name, reason=rel))
                    continue
                if member.issym():
                    skipped.append(
                        SkippedMember(name=name, reason=f"symlink (to {member.linkname!r}) skipped")
                    )
                    continue
                if member.islnk():
                    skipped.append(
                        SkippedMember(name=name, reason=f"hardlink (to {member.linkname!r}) skipped")
                    )
                    continue
                if member.ischr() or member.isblk() or member.isfifo():
                    skipped.append(SkippedMember(name=name, reason="device file or FIFO skipped"))
                    continue
                if not (member.isdir() or member.isreg()):
                    skipped.append(
                        SkippedMember(name=name, reason=f"unsupported member type {member.type!r}")
                    )
                    continue
                try:  # second opinion from the stdlib's 'data' filter (PEP 706)
                    tarfile.data_filter(member, root_real)
                except tarfile.FilterError as exc:
                    skipped.append(SkippedMember(name=name, reason=f"rejected by tarfile data filter: {exc}"))
                    continue
                try:
                    if member.isdir():
                        _mkdirs(root, root_real, rel)
                        continue
                    if suffixes is not None and PurePosixPath(rel).suffix.lower() not in suffixes:
                        skipped.append(SkippedMember(name=name, reason="suffix not wanted (only_suffixes)"))
                        continue
                    if member.size > limits.max_file_bytes:
                        msg = f"{member.size} bytes > max_file_bytes={limits.max_file_bytes}"
                        if limits.strict_file_size:
                            raise ExtractionError(f"member {name!r}: {msg}")
                        skipped.append(SkippedMember(name=name, reason=f"too large: {msg}"))
                        continue
                    if total + member.size > limits.max_total_bytes:
                        raise ExtractionError(
                            f"archive exceeds max_total_bytes={limits.max_total_bytes} at member {name!r}"
                        )
                    if rel.parent != PurePosixPath("."):
                        _mkdirs(root, root_real, rel.parent)
                    fh = tf.extractfile(member)
                    if fh is None:
                        skipped.append(SkippedMember(name=name, reason="no data"))
                        continue
                    target = root.joinpath(*rel.parts)
                    if target.is_symlink():
                        raise ExtractionError(f"symlink at destination: {target}")
                    total += _write_file(root_real, target, fh, min(member.size, limits.max_file_bytes))
                    files.add(rel.as_posix())
                except (FileExistsError, IsADirectoryError, NotADirectoryError) as exc:
                    skipped.append(SkippedMember(name=name, reason=f"path conflict: {exc}"))
    return ExtractResult(
        root=root, kind="tar.gz" if gz else "tar", files=sorted(files), skipped=skipped, total_bytes=total
    )


def extract_source(
    src: bytes | str | os.PathLike[str],
    dest: str | os.PathLike[str] | None = None,
    limits: ExtractLimits | None = None,
    *,
    default_name: str = "main.tex",
) -> ExtractResult:
    """Unpack an arXiv e-print (bytes or a file path) into `dest` (a new temp dir when None).

    `dest` must be absent or empty: pre-existing content could hold symlinks we would write through.
    On `ExtractionError` whatever was written is removed again.
    """
    limits = limits or ExtractLimits()
    open_stream = _opener(src)
    with open_stream() as fh:
        head = fh.read(4096)
    if not head:
        raise ExtractionError("source is empty")
    gz = head[:2] == GZIP_MAGIC
    src_name = None if isinstance(src, bytes | bytearray | memoryview) else Path(src).name
    root, created = _prepare_dest(dest)
    try:
        if _is_tar_stream(open_stream, gz):
            try:
                return _extract_tar(open_stream, gz, root, limits)
            except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
                raise ExtractionError(f"corrupt or truncated archive: {type(exc).__name__}: {exc}") from exc
        if gz:
            with open_stream() as raw, gzip.GzipFile(fileobj=raw, mode="rb") as gzf:
                try:
                    data = _read_capped(gzf, limits.max_file_bytes, "gzip'd single file")  # type: ignore[arg-type]
                except (OSError, EOFError, zlib.error) as exc:
                    raise ExtractionError(f"corrupt gzip stream: {exc}") from exc
            _check_text(data, "gzip'd source")
            name = _single_file_name(_gzip_original_name(head), default_name)
            kind: Literal["gzip_tex", "tex"] = "gzip_tex"
        else:
            with open_stream() as raw:
                data = _read_capped(raw, limits.max_file_bytes, "single source file")
            _check_text(data, "source")
            name = _single_file_name(src_name, default_name)
            kind = "tex"
        if len(data) > limits.max_total_bytes:
            raise ExtractionError(f"single file exceeds max_total_bytes={limits.max_total_bytes}")
        total = _write_file(os.path.realpath(root), root / name, io.BytesIO(data), len(data))
        return ExtractResult(root=root, kind=kind, files=[name], total_bytes=total)
    except BaseException:
        _wipe(root, created)
        raise


@contextlib.contextmanager
def temporary_extraction(
    src: bytes | str | os.PathLike[str], limits: ExtractLimits | None = None
) -> Iterator[ExtractResult]:
    """`extract_source` into a temp dir that is removed afterwards."""
    result = extract_source(src, None, limits)
    try:
        yield result
    finally:
        shutil.rmtree(result.root, ignore_errors=True)
