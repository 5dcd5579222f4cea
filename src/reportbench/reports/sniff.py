"""Content sniffing: what a file really holds, decided before any adapter parses it.

Why: a report folder is untrusted input. Random bytes saved as `.md` used to split into ten "sentences" and
score 0; a LaTeX or HTML file parsed into nothing or into tag soup; a UTF-16 or cp1252 file became
replacement characters. Each of those is a different user mistake with a different fix, so each gets its own
one-line diagnosis (`ReportParseError`), and an empty file is `EmptyReportError` (scored as a missing report,
never as an ok one).

Decisions (docs/reliability.md, "Reports and inputs"):
- UTF-8 is the report encoding. A BOM'd UTF-16/UTF-32 file is decoded (the BOM says what it is). Other
  non-UTF-8 text is refused with the likely encoding named, except for a handful of stray bytes (at most
  `MAX_STRAY_BYTES`, e.g. a cut multi-byte character at the end of a truncated output), which become U+FFFD
  with a warning.
- HTML and LaTeX are refused, not converted: a converter decides silently which links and reference entries
  survive, and those are exactly what the citation metrics score. The message names the conversion command.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from reportbench.reports.errors import EmptyReportError, ReportParseError

SNIFF_BYTES = 8192
MAX_STRAY_BYTES = 3
CONTROL_RATIO_BINARY = 0.05

# (magic prefix, what it is, how to get text out of it)
MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a zip archive (or .docx/.xlsx/.epub)"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"BZh", "bzip2-compressed data"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-zip archive"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\x7fELF", "an ELF executable"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an OLE2 document (old .doc/.xls)"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"PAR1", "a parquet file"),
    (b"{\\rtf", "an RTF document"),
)
BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\xfe\xff", "utf-16-be"),
    (b"\xff\xfe", "utf-16-le"),
)

_HTML_DOC_RE = re.compile(
    r"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--(?:(?!-->).){0,2000}-->\s*){0,20}<(?:!doctype\s+html|html[\s>])", re.I | re.S
)
_HTML_BLOCK_TAG_RE = re.compile(
    r"</?(?:p|div|span|a|ul|ol|li|h[1-6]|table|tr|td|body|head|section|article)\b[^>]*>", re.I
)
_MD_SIGNAL_RE = re.compile(r"^\s{0,3}#{1,6}\s|\]\(https?://|^\s{0,3}[-*+]\s|^\s{0,3}\[\d+\]", re.M)
_LATEX_DOC_RE = re.compile(r"\\documentclass\b|\\begin\{document\}")
_LATEX_CMD_RE = re.compile(
    r"\\(?:(?:sub)*section\*?|paragraph|cite[pt]?\*?|ref|label|begin|end|bibliography|emph|textbf)\{"
)


@dataclass
class Decoded:
    """A file's text plus what had to be done to get it (warnings land in Report.warnings)."""

    text: str
    warnings: list[str] = field(default_factory=list)


_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13))


def _control_ratio(sample: bytes) -> float:
    if not sample:
        return 0.0
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))  # counted in C, not byte by byte
    return controls / len(sample)


def binary_kind(data: bytes) -> str | None:
    """What a byte string is when it is not text (a named format or 'binary data'), else None."""
    for magic, what in MAGIC:
        if data.startswith(magic):
            return what
    if any(data.startswith(bom) for bom, _ in BOMS):
        return None
    sample = data[:SNIFF_BYTES]
    if b"\x00" in sample:
        odd_nuls = sample[1::2].count(0)
        even_nuls = sample[0::2].count(0)
        if len(sample) >= 4 and max(odd_nuls, even_nuls) >= 0.4 * (len(sample) // 2):
            return None  # UTF-16 without a BOM: diagnosed as an encoding problem, not as binary
        return f"binary data ({sample.count(0)} NUL bytes in the first {len(sample)} bytes)"
    if _control_ratio(sample) > CONTROL_RATIO_BINARY:
        return f"binary data ({_control_ratio(sample):.0%} control bytes in the first {len(sample)} bytes)"
    return None


def _guess_encoding(data: bytes) -> str | None:
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - a requests dependency, normally present
        return None
    best = from_bytes(data[: 64 * 1024]).best()
    return best.encoding if best is not None else None


def decode_bytes(path: Path | str, data: bytes) -> Decoded:
    """Text of a file's bytes, or ReportParseError saying what the bytes are (binary, wrong encoding)."""

    what = binary_kind(data)
    if what is not None:
        raise ReportParseError(path, f"{what}, not a text report")
    for bom, codec in BOMS:
        if data.startswith(bom):
            try:
                return Decoded(_normalise(data[len(bom) :].decode(codec)), [f"decoded as {codec} (byte-order mark)"])
            except UnicodeDecodeError as exc:
                raise ReportParseError(
                    path, f"starts with a {codec} byte-order mark but is not {codec}: {exc.reason}"
                ) from exc
    sample = data[:SNIFF_BYTES]
    if b"\x00" in sample:
        raise ReportParseError(
            path, "UTF-16 text without a byte-order mark; re-save it as UTF-8 (e.g. iconv -f utf-16 -t utf-8)"
        )
    late_nul = data.find(b"\x00", SNIFF_BYTES)
    if late_nul >= 0:  # the sniffed head looked like text; binary bytes further in are still not a report
        raise ReportParseError(
            path, f"binary data: {data.count(0)} NUL byte(s), the first at byte {late_nul}, not a text report"
        )
    try:
        return Decoded(_normalise(data.decode("utf-8-sig")))
    except UnicodeDecodeError as exc:
        first = exc
    text = data.decode("utf-8-sig", errors="replace")
    stray = text.count("\ufffd") - data.count(b"\xef\xbf\xbd")
    if stray <= MAX_STRAY_BYTES:
        where = "at the end (a cut multi-byte character?)" if first.start >= len(data) - 3 else f"at byte {first.start}"
        return Decoded(_normalise(text), [f"{stray} byte(s) that are not UTF-8 replaced by U+FFFD, first {where}"])
    guess = _guess_encoding(data)
    hint = f"; it looks like {guess}" if guess and guess.replace("_", "-") not in ("utf-8", "ascii") else ""
    fix = f" (e.g. iconv -f {guess} -t utf-8)" if hint else ""
    raise ReportParseError(
        path,
        f"not UTF-8 text: {stray} invalid byte sequence(s), the first at byte {first.start} "
        f"(0x{data[first.start]:02x}){hint}; re-save it as UTF-8{fix}",
    )


def _normalise(text: str) -> str:
    if "\r" not in text:  # both replacements need one (a one-character search runs at memchr speed)
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def markup_kind(text: str) -> str | None:
    """'html' or 'latex' when a would-be markdown report is really one of those, else None."""
    head = text[:SNIFF_BYTES * 4]
    if _HTML_DOC_RE.match(head):
        return "html"
    tags = len(_HTML_BLOCK_TAG_RE.findall(head))
    if tags >= 10 and not _MD_SIGNAL_RE.search(head):
        return "html"
    if "\\" not in head:  # every LaTeX pattern's match holds a backslash (one character: found at memchr speed)
        return None
    if _LATEX_DOC_RE.search(head):
        return "latex"
    if len(_LATEX_CMD_RE.findall(head)) >= 3 and re.search(r"\\(?:(?:sub)*section\*?|cite[pt]?\*?)\{", head):
        if not _MD_SIGNAL_RE.search(head):
            return "latex"
    return None


def _line_of(text: str, pattern: re.Pattern[str]) -> int:
    m = pattern.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else 1


def check_report_text(path: Path | str, decoded: Decoded) -> Decoded:
    """A decoded would-be markdown report: EmptyReportError when blank, ReportParseError for HTML/LaTeX."""
    text = decoded.text
    if not text.strip():
        problem = "the file holds no text" if not text else "only whitespace"
        raise EmptyReportError(path, f"empty report: {problem}")
    kind = markup_kind(text)
    if kind == "html":
        line = _line_of(text, re.compile(r"<(?:!doctype|html|body|p|div|h[1-6])\b", re.I))
        raise ReportParseError(
            path,
            f"line {line}: an HTML document, not a markdown report; convert it first "
            "(e.g. pandoc -f html -t gfm -o report.md) so its links and reference list are kept",
        )
    if kind == "latex":
        line = _line_of(text, re.compile(r"\\(?:documentclass|begin\{document\}|(?:sub)*section|cite)"))
        raise ReportParseError(
            path,
            f"line {line}: LaTeX source, not a markdown report; convert it first (e.g. pandoc -f latex -t gfm "
            "--citeproc --bibliography refs.bib) so \\cite keys become a reference list",
        )
    return decoded
