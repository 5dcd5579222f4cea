"""Text handling of ResearcherBench responses: the authors' reference split, 5-paragraph sections, the
references text the extractor sees, and the small lexical helpers of the offline rules.

The authors' split regex (spec §2.2 step 1) is reproduced for the `authors` / `authors_fixed` modes; the
default (`adapter`) uses our report adapters' body and reference list instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# The authors' reference-header pattern (faithful_evaluator._extract_contents_and_references), MULTILINE|I.
AUTHORS_REF_PATTERN = (
    r"(?:^#+\s*(?:References|references|Key Citations)|^#*\s*(?:\*\*References\*\*|\*\*Sources:\*\*|"
    r"\*\*Works cited\*\*|\*\*引用的著作\*\*|<div>⁂</div>|<div style=\"text-align: center\">⁂</div>))"
)
AUTHORS_REF_RE = re.compile(AUTHORS_REF_PATTERN, re.MULTILINE | re.IGNORECASE)
# The sectioning step strips the reference part again with one more header (Chinese "references").
AUTHORS_SECTION_RE = re.compile(AUTHORS_REF_PATTERN[:-2] + r"|参考资料))", re.MULTILINE | re.IGNORECASE)

SPLIT_MODES = ("adapter", "authors", "authors_fixed")
JOIN_MODES = ("paragraphs", "authors")


def split_authors(text: str, *, fixed: bool = False) -> tuple[str, str]:
    """(content, references) as the authors' code cuts them.

    `fixed=False` reproduces the split-index bug: only the text between the 1st and 2nd header match is
    the reference text (Sonar-style responses with two reference headers lose their URL list).
    `fixed=True` keeps everything after the first header.
    """
    parts = AUTHORS_REF_RE.split(text)
    if len(parts) == 1:
        return text, ""
    if fixed:
        m = AUTHORS_REF_RE.search(text)
        assert m is not None
        return parts[0], text[m.end() :]
    return parts[0], parts[1]


def sections(content: str, step: int = 5, join: str = "paragraphs", *, authors_strip: bool = False) -> list[str]:
    """Groups of `step` non-empty `\\n\\n` blocks; `join='authors'` glues them with "" like the authors' code."""
    if authors_strip:
        content = AUTHORS_SECTION_RE.split(content)[0]
    blocks = [b for b in content.split("\n\n") if b.strip()]
    if not blocks:
        return [content] if content.strip() else []
    glue = "" if join == "authors" else "\n\n"
    return [glue.join(blocks[i : i + step]) for i in range(0, len(blocks), step)]


def references_text(sources: Mapping[str, Any]) -> str:
    """The reference list as the extractor sees it in `adapter` mode: one line per entry, `[key] title url`.

    Bare inline links (key == url) are not entries of a list; they stay in the body where they were cited.
    """
    lines = []
    for key, src in sources.items():
        url = getattr(src, "url", None)
        if url and key == url:
            continue
        raw = getattr(src, "raw", None)
        if raw:
            line = raw.strip()
            if url and url not in line:
                line = f"{line} {url}"
        else:
            line = " ".join(x for x in (getattr(src, "title", None), url) if x)
        lines.append(f"[{key}] {line}" if not line.lstrip().startswith(("[", str(key))) else line)
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------- lexical
_STOP = frozenset(
    """a an the and or of to in on for with by from as at is are was were be been being that this these those
    it its into than then there their them they such which who whom whose what when where why how not no nor
    can could may might must should would will shall do does did done has have had having also more most
    other some any each both either neither very much many via about over under between across within
    explain explains explaining discuss discusses discussing identify identifies describe describes
    mention mentions compare compares state states note notes provide provides address addresses response
    include includes including e.g i.e""".split()
)
_WORD_RE = re.compile(r"[a-z0-9][a-z0-9\-]*")


def _stem(w: str) -> str:
    for suf in ("ies", "es", "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 4:
            return w[: -len(suf)] + ("y" if suf == "ies" else "")
    return w


def content_words(text: str) -> set[str]:
    """Lower-cased, lightly stemmed words of 3+ characters that are not stop or rubric action words."""
    return {_stem(w) for w in _WORD_RE.findall(text.lower()) if len(w) >= 3 and w not in _STOP}


def share_present(needle: str, haystack_words: set[str]) -> tuple[float, int]:
    """Share of `needle`'s content words found in `haystack_words`, and how many words it has."""
    words = content_words(needle)
    if not words:
        return 0.0, 0
    return len(words & haystack_words) / len(words), len(words)


# ------------------------------------------------------------------------------------- citation markers
URL_RE = re.compile(r"https?://(?:[^\s<>\"'`\[\]()]|\([^\s()]*\))+")  # balanced (...) kept
_LINK_RE = re.compile(r"\[([^\]]*)\]\((https?://[^)\s]+)\)")
_MARKER_RE = re.compile(r"\\?\[\^?\(?(\d{1,4})\)?\\?\]")
_REF_LINE_RE = re.compile(r"^\s*(?:\[\^?(\d{1,4})\]:?|\\\[(\d{1,4})\\\]|(\d{1,4})[.)])\s*(.*)$")


def reference_urls(references: str) -> dict[str, str]:
    """Number -> first URL of each `[n]`, `[^n]:`, `\\[n\\]` or `n.` reference line."""
    out: dict[str, str] = {}
    for line in references.splitlines():
        m = _REF_LINE_RE.match(line)
        if not m:
            m2 = re.match(r"^\s*[-*]?\s*\[(\d{1,4})\\?\.", line)  # `[1\. Title](url)` entries
            if not m2:
                continue
            key, rest = m2.group(1), line
        else:
            key = next(g for g in m.groups()[:3] if g)
            rest = m.group(4)
        u = URL_RE.search(rest)
        if u:
            out.setdefault(key, u.group(0).rstrip(".,;"))
    return out


def strip_markers(text: str) -> str:
    """The sentence without citation markers and with links reduced to their text."""
    text = _LINK_RE.sub(lambda m: "" if re.fullmatch(r"\(?\d+\)?", m.group(1).strip()) else m.group(1), text)
    text = _MARKER_RE.sub("", text)
    text = URL_RE.sub("", text)
    text = re.sub(r"\(\s*\)", "", text)
    text = re.sub(r"\s+", " ", text)
    return re.sub(r"\s+([.,;:!?])", r"\1", text).strip()


def first_source(sentence: str, ref_urls: Mapping[str, str]) -> str:
    """The URL a sentence cites: its first inline link, else its first numbered marker resolved, else ""."""
    m = _LINK_RE.search(sentence)
    if m:
        return m.group(2)
    u = URL_RE.search(sentence)
    if u:
        return u.group(0).rstrip(".,;")
    for mk in _MARKER_RE.finditer(sentence):
        if mk.group(1) in ref_urls:
            return ref_urls[mk.group(1)]
    return ""


_SENT_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'*])|\n+")  # a trailing "([t](url))." stays attached


def sentences_of(section: str) -> list[str]:
    return [s.strip() for s in _SENT_SPLIT_RE.split(section) if s and s.strip()]
