"""Body -> (title, main text) for HTML, PDF and plain text; the same code for live responses and seeds.

Why these libraries: trafilatura is the maintained main-content extractor with the best published
boilerplate-removal scores (it falls back to jusText/readability internally); lxml (already a dependency) reads
the <title>; pypdf is pure Python, maintained, and needs no system libraries. Extraction is deterministic so
offline reruns give identical text.
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass

from reportbench.fetch.client import HTML_TYPES, PDF_TYPES, SNIFF_TYPES, TEXT_TYPES, media_type

log = logging.getLogger(__name__)

EXTRACTOR_VERSION = "1"
_WS_RE = re.compile(r"[ \t\f\v\r]+")
_BLANKS_RE = re.compile(r"\n{3,}")
_READER_HEADER_RE = re.compile(r"^(Title|URL Source|Published Time|Warning):\s?(.*)$")


@dataclass
class Extracted:
    """Result of extraction. `kind` is html|pdf|text; `error_class` is set when nothing usable came out."""

    kind: str | None
    title: str | None = None
    text: str = ""
    final_url: str | None = None
    error_class: str | None = None
    error: str | None = None


def tidy(text: str) -> str:
    """Collapse runs of spaces and blank lines; strip each line (stable text for hashing and judging)."""
    lines = [_WS_RE.sub(" ", ln).strip() for ln in text.replace("\r\n", "\n").split("\n")]
    return _BLANKS_RE.sub("\n\n", "\n".join(lines)).strip()


# the leading bytes of binary formats a server may label text/plain or text/html (a misconfigured host, or on
# purpose): never text to hand a judge
_BINARY_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"\x7fELF", "an ELF executable"),
    (b"PK\x03\x04", "a ZIP archive"),
    (b"\x1f\x8b", "gzip data"),
    (b"\xfd7zXZ\x00", "xz data"),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive"),
    (b"wOFF", "a web font"),
    (b"wOF2", "a web font"),
)
_CONTROL = bytes(c for c in range(32) if c not in (9, 10, 12, 13))  # control bytes text does not hold
_CONTROL_SHARE = 0.05  # more than this share of control bytes in the first 64 KB: not text


def binary_reason(body: bytes) -> str | None:
    """Why a body served as text is not text (its format, NUL bytes, control bytes), or None when it may be."""
    head = body[:65536]
    for magic, what in _BINARY_MAGIC:
        if head.startswith(magic):
            return f"the body is {what}"
    if b"\x00" in body:
        return f"the body holds NUL bytes ({body.count(0)} of {len(body)})"
    if head and len(head) - len(head.translate(None, _CONTROL)) > _CONTROL_SHARE * len(head):
        return "the body is mostly control bytes"
    return None


def sniff_kind(content_type: str | None, body: bytes) -> str | None:
    """html | pdf | text from the declared type, or from the bytes when the server did not say. A PDF served as
    text goes to the PDF path; other binary bytes served as text are no kind (see `binary_reason`)."""
    mtype = media_type(content_type)
    if mtype in HTML_TYPES or mtype in TEXT_TYPES:
        if body[:1024].lstrip().startswith(b"%PDF-"):
            return "pdf"
        if binary_reason(body) is not None:
            return None
        return "html" if mtype in HTML_TYPES else "text"
    if mtype in PDF_TYPES:
        return "pdf"
    if mtype not in SNIFF_TYPES:
        return None
    head = body[:1024].lstrip().lower()
    if head.startswith(b"%pdf-"):
        return "pdf"
    if head.startswith((b"<!doctype html", b"<html")) or b"<html" in head or b"<body" in head:
        return "html"
    try:
        body[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "text" if binary_reason(body) is None else None


def _charset(content_type: str | None) -> str | None:
    m = re.search(r"charset=([\w.:-]+)", content_type or "", re.IGNORECASE)
    return m.group(1) if m else None


def decode_text(body: bytes, content_type: str | None) -> str:
    """Bytes -> str using the declared charset, else UTF-8, else charset-normalizer's best guess."""
    cs = _charset(content_type)
    for enc in (cs, "utf-8"):
        if not enc:
            continue
        try:
            return body.decode(enc)
        except (LookupError, UnicodeDecodeError):
            continue
    from charset_normalizer import from_bytes

    best = from_bytes(body).best()
    return str(best) if best is not None else body.decode("utf-8", errors="replace")


def _parse_html(html: str):  # noqa: ANN202 - lxml element or None
    """lxml tree, tolerating an XML encoding declaration in an already-decoded string."""
    import lxml.html

    for doc in (html, html.encode("utf-8")):
        try:
            return lxml.html.fromstring(doc)
        except ValueError:
            continue  # "Unicode strings with encoding declaration are not supported": retry as bytes
        except (TypeError, lxml.etree.ParserError):
            return None
    return None


def html_title(html: str) -> str | None:
    """<title>, else og:title, else the first <h1>."""
    doc = _parse_html(html)
    if doc is None:
        return None
    for xp in ("//title", "//meta[@property='og:title']/@content", "//h1"):
        found = doc.xpath(xp)
        if found:
            node = found[0]
            value = node if isinstance(node, str) else node.text_content()
            value = " ".join(str(value).split())
            if value:
                return value
    return None


def _trafilatura_config():  # noqa: ANN202 - configparser object
    from trafilatura.settings import use_config

    cfg = use_config()
    cfg.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")  # signal-based timeouts break in worker threads
    return cfg


def extract_html(body: bytes, content_type: str | None) -> Extracted:
    """Main text via trafilatura (recall-oriented, tables kept); lxml body text when it finds nothing."""
    import trafilatura

    html = decode_text(body, content_type)
    title = html_title(html) if html.strip() else None
    text = None
    try:
        text = trafilatura.extract(
            html, favor_recall=True, include_comments=False, include_tables=True, deduplicate=False,
            config=_trafilatura_config(),
        )
    except Exception as e:  # noqa: BLE001 - a third-party parser on untrusted input: record, don't crash
        log.debug("trafilatura failed: %s", e)
    if not text:
        text = _lxml_text(html)
    return Extracted(kind="html", title=title, text=tidy(text or ""))


def _lxml_text(html: str) -> str:
    doc = _parse_html(html)
    if doc is None:
        return ""
    for bad in doc.xpath("//script|//style|//noscript|//template|//head|//nav|//footer|//aside"):
        bad.drop_tree()
    return doc.text_content()


def extract_pdf(body: bytes) -> Extracted:
    """Text of every page via pypdf; title from the document info, else the first non-empty line."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(body))
        if reader.is_encrypted:
            try:
                reader.decrypt("")
            except Exception as e:  # noqa: BLE001
                return Extracted(kind="pdf", error_class="extract_error", error=f"encrypted PDF: {e}")
        pages = [(p.extract_text() or "") for p in reader.pages]
        meta_title = None
        try:
            meta = reader.metadata
            meta_title = (meta.title or "").strip() if meta else None
        except Exception:  # noqa: BLE001 - broken info dict: the text is still useful
            meta_title = None
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, OSError, RecursionError) as e:
        return Extracted(kind="pdf", error_class="extract_error", error=f"PDF could not be parsed: {e}"[:300])
    text = tidy("\n\n".join(pages))
    title = meta_title or next((ln for ln in text.split("\n") if ln.strip()), None)
    return Extracted(kind="pdf", title=title, text=text)


def extract_plain(body: bytes, content_type: str | None) -> Extracted:
    """Plain text / markdown; a reader-service header ('Title:', 'URL Source:', 'Markdown Content:') is parsed."""
    text = decode_text(body, content_type)
    title = final_url = None
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and _READER_HEADER_RE.match(lines[0]):
        i = 0
        while i < len(lines):
            m = _READER_HEADER_RE.match(lines[i])
            if m:
                if m.group(1) == "Title":
                    title = m.group(2).strip() or None
                elif m.group(1) == "URL Source":
                    final_url = m.group(2).strip() or None
            elif lines[i].strip() == "Markdown Content:":
                i += 1
                break
            elif lines[i].strip():
                break
            i += 1
        text = "\n".join(lines[i:])
    return Extracted(kind="text", title=title, text=tidy(text), final_url=final_url)


def extract(body: bytes, content_type: str | None) -> Extracted:
    """Dispatch on the (declared or sniffed) type; `unsupported_type` / `empty` / `extract_error` as values."""
    kind = sniff_kind(content_type, body)
    if kind is None:
        mtype = media_type(content_type) or "(none)"
        binary = binary_reason(body)
        error = (f"{binary}, though served as {mtype!r}" if binary
                 else f"content type {mtype!r} is not HTML, PDF or text")
        return Extracted(kind=None, error_class="unsupported_type", error=error)
    if not body.strip():
        return Extracted(kind=kind, error_class="empty", error="empty body")
    if kind == "html":
        out = extract_html(body, content_type)
    elif kind == "pdf":
        out = extract_pdf(body)
    else:
        out = extract_plain(body, content_type)
    if out.error_class is None and not out.text.strip():
        out.error_class, out.error = "empty", f"no text could be extracted from the {kind} body"
    return out
