"""Extraction of HTML / PDF / text bodies (pure functions, no network)."""

from __future__ import annotations

import pytest

from reportbench.fetch.extract import extract, sniff_kind

pytestmark = pytest.mark.core


def test_html_with_xml_declaration_and_legacy_charset() -> None:
    decl = b'<?xml version="1.0" encoding="utf-8"?><html><head><title>Decl</title></head><body><p>caf\xc3\xa9 text</p>'
    out = extract(decl + b"</body></html>", "application/xhtml+xml")
    assert (out.title, out.text, out.error_class) == ("Decl", "caf\u00e9 text", None)
    latin = b"<html><head><title>Caf\xe9</title></head><body><p>Caf\xe9 au lait</p></body></html>"
    out = extract(latin, "text/html; charset=iso-8859-1")
    assert (out.title, out.text) == ("Caf\u00e9", "Caf\u00e9 au lait")


def test_title_falls_back_to_og_title_and_h1() -> None:
    og = b'<html><head><meta property="og:title" content="OG Title"></head><body><p>text here</p></body></html>'
    assert extract(og, "text/html").title == "OG Title"
    assert extract(b"<html><body><h1>Heading</h1><p>text here</p></body></html>", "text/html").title == "Heading"


def test_broken_pdf_is_extract_error_not_crash() -> None:
    out = extract(b"%PDF-1.4 not really a pdf", "application/pdf")
    assert out.error_class == "extract_error" and out.kind == "pdf"


@pytest.mark.parametrize(
    ("ctype", "body", "kind"),
    [
        ("text/html; charset=utf-8", b"", "html"),
        ("application/pdf", b"", "pdf"),
        ("text/markdown", b"", "text"),
        (None, b"%PDF-1.7\n...", "pdf"),
        ("application/octet-stream", b"<!DOCTYPE html><html>", "html"),
        (None, b"just words", "text"),
        (None, b"\x00\x01\xff\xfe", None),
        ("image/png", b"\x89PNG", None),
        ("application/json", b"{}", None),
    ],
)
def test_sniff_kind(ctype: str | None, body: bytes, kind: str | None) -> None:
    assert sniff_kind(ctype, body) == kind


def test_reader_header_is_parsed_and_plain_text_tidied() -> None:
    body = b"Title: T\nURL Source: https://a.org/x\nPublished Time: 2024\n\nMarkdown Content:\n"
    body += b"line  one\n\n\n\nline two"
    out = extract(body, "text/plain")
    assert (out.title, out.final_url, out.text) == ("T", "https://a.org/x", "line one\n\nline two")
