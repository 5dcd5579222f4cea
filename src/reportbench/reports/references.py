"""Reference lists: split them off the body, cut them into entries, and turn each entry into a `Source`.

The reference list is the only thing an inline `[n]` may resolve through, so its parsing is shared by every
markdown-like format (plain markdown, SearchAI, OpenScholar, DeepResearcher, OpenAI Deep Research, STORM's
fallback) and is deliberately forgiving about numbering styles.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from reportbench.reports.arxiv_ids import NEW_STYLE, OLD_STYLE, extract_arxiv_ids, first_arxiv_id
from reportbench.reports.citations import BARE_URL_RE, LINK_RE, clean_url, is_citation_label
from reportbench.types import Source

REFERENCE_HEADINGS = (
    "references",
    "reference",
    "reference list",
    "sources",
    "sources cited",
    "bibliography",
    "works cited",
    "cited works",
    "citations",
    "key citations",  # Grok DeepSearch
)
_HEADING_WORDS = "|".join(re.escape(h) for h in REFERENCE_HEADINGS)
# '## References', '**References**', 'References:', 'References', '<references>', and Perplexity's separator
# '<div>⁂</div>' / '<div style="text-align: center">⁂</div>' above its footnotes or numbered URL list.
# Matched against ONE line with its surrounding blanks stripped (see `_is_line`): a pattern that also ate
# the leading whitespace was quadratic in it (a 40k-space line took 100 s), so no quantifier here can run long.
REFERENCE_HEADING_RE = re.compile(
    rf"(?:#{{1,6}}[ \t]*+)?(?:\*\*|__)?[ \t]*+(?:{_HEADING_WORDS})"
    r"[ \t]*+:?[ \t]*+(?:\*\*|__)?[ \t]*+:?"
    r"|<references>"
    r"|<div(?:[ \t][^>\n]*+)?>[ \t]*+⁂[ \t]*+</div>",
    re.IGNORECASE,
)
_END_TAG_RE = re.compile(r"</references>", re.IGNORECASE)
_MAX_HEADING_LINE = 200  # a stripped line longer than this is no heading (bounds every match below)


def _is_line(line: str, pattern: re.Pattern[str]) -> bool:
    """Whether `pattern` fully matches the line without its surrounding blanks (bounded by _MAX_HEADING_LINE)."""
    bare = line.strip(" \t\r\n")
    return len(bare) <= _MAX_HEADING_LINE and pattern.fullmatch(bare) is not None


# Entry starts, most specific first. Each yields (label or None, rest of the line).
_ENTRY_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"^\s*\[\^(?P<label>[^\]\s]+)\]:\s*(?P<rest>.*)$"),  # [^3]: footnote definition
    re.compile(r"^\s*(?:[-*+]\s+)?\\?\[(?P<label>\d{1,5})\\?\][:.]?\s*(?P<rest>.*)$"),  # [3] ..., [3]: url
    re.compile(r"^\s*【(?P<label>\d+)(?::\d+)?†(?P<rest>[^】]*】.*)$"),  # 【3†Title】 url
    re.compile(r"^\s*(?P<label>\d{1,5})[.)]\s+(?P<rest>.*)$"),  # 3. ... / 3) ...
    re.compile(r"^\s*\\?\[(?P<rest>\[[^\[\]\n]*\]\([^)\s]+\)\\?\].*)$"),  # \[[Author' 2020](url)\] Title
    re.compile(r"^\s*[-*+]\s+(?P<rest>.*)$"),  # - [Title](url)
)
_TRAILING_REF_LINE_RE = re.compile(r"^\s*\\?\[\d{1,5}\\?\]\s+\S")


@dataclass
class ReferenceEntry:
    """One entry of a reference list as written: its label ('3', or None for unnumbered) and its text."""

    label: str | None
    text: str


def split_reference_section(text: str) -> tuple[str, str | None]:
    """(body, reference section) split at the last reference heading that is followed by entries.

    Without a heading, a trailing block of `[n] ...` lines counts as the reference list, so bare outputs
    that end with their references still have their list removed from the judged body.

    Each line is classified once, so neither long lines nor many headings can make this quadratic.
    """
    lines = text.splitlines(keepends=True)
    headings = [i for i, line in enumerate(lines) if _is_line(line, REFERENCE_HEADING_RE)]
    if headings:
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line))
        end_tags = [i for i, line in enumerate(lines) if _is_line(line, _END_TAG_RE)]
        # only entries after a heading are looked up (each heading's next entry line): lines above the first
        # heading, the body, are not classified
        first = headings[0] + 1
        entry_lines = [i for i, line in enumerate(lines[first:], first) if _entry_start(line)]
        for i in reversed(headings):
            k = bisect.bisect_right(end_tags, i)
            stop = end_tags[k] if k < len(end_tags) else len(lines)
            j = bisect.bisect_right(entry_lines, i)
            if j < len(entry_lines) and entry_lines[j] < stop:
                heading_end = offsets[i] + len(lines[i].rstrip("\r\n"))
                return text[: offsets[i]].rstrip(), text[heading_end : offsets[stop]].strip("\n")
    plain = text.rstrip().splitlines()
    i = len(plain)
    while i > 0 and (not plain[i - 1].strip() or _TRAILING_REF_LINE_RE.match(plain[i - 1])):
        i -= 1
    if i < len(plain) and i > 0 and any(_TRAILING_REF_LINE_RE.match(line) for line in plain[i:]):
        return "\n".join(plain[:i]).rstrip(), "\n".join(plain[i:])
    return text.rstrip(), None


def _entry_start(line: str) -> tuple[str | None, str] | None:
    for pattern in _ENTRY_PATTERNS:
        m = pattern.match(line)
        if m:
            label = m.groupdict().get("label")
            return label, m.group("rest").strip()
    return None


def parse_reference_entries(section: str) -> tuple[list[ReferenceEntry], list[str]]:
    """Cut a reference section into entries; continuation lines join the entry above them.

    A line that starts no entry and follows a blank line becomes an unnumbered entry, so a free-form
    'Sources' list of URLs is still read.
    """
    entries: list[ReferenceEntry] = []
    warnings: list[str] = []
    after_blank = True
    for line in section.splitlines():
        if not line.strip():
            after_blank = True
            continue
        start = _entry_start(line)
        if start is not None:
            entries.append(ReferenceEntry(label=start[0], text=start[1]))
        elif entries and not after_blank:
            entries[-1].text = f"{entries[-1].text} {line.strip()}".strip()
        elif line.strip().startswith("#"):
            warnings.append(f"heading inside the reference list ignored: {line.strip()[:80]!r}")
        else:
            entries.append(ReferenceEntry(label=None, text=line.strip()))
        after_blank = False
    return entries, warnings


DOI_RE = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)", re.IGNORECASE)
# `(?<!\s)\s++` (whitespace only where a run starts, taken whole): a plain `\s*` after `.+?` is quadratic in a run
_APA_RE = re.compile(r"^(?P<authors>.+?)(?:(?<!\s)\s++)?\((?P<year>\d{4}[a-z]?|n\.d\.)\)\.?\s*(?P<rest>.+)$")
_YEAR_PARENS_RE = re.compile(
    r"\(\s*(?:(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?\s+)?\d{4}[a-z]?\s*\)",
    re.IGNORECASE,
)
_ID_NOISE_RE = re.compile(
    rf"\barXiv\s*+:\s*+\S+|\[?(?:(?<!\s)\s++)?\b(?:{NEW_STYLE}|{OLD_STYLE})(?:v\d+)?\b\s*+\]?|\bdoi\s*+:\s*+\S+"
    r"|\bAvailable (?:at|from)\s*:?",
    re.IGNORECASE,
)
# What every _ID_NOISE_RE match holds: the word 'arxiv', 'doi' or 'available' (any case), or an id, new style
# (4 digits, '.', 4 digits) or old style ('/', 7 digits). A title holding none of these is left as it is without
# trying the pattern's alternatives at every position. The words are looked for lower-cased, which is what re.I
# reads on a title whose non-ASCII characters are no word characters (only letters such as 'ı', 'ſ' or the Kelvin
# sign match ASCII ones under re.I; a title holding a non-ASCII letter or digit runs the pattern).
_ID_DIGITS_RE = re.compile(r"\d{4}\.\d{4}|/\d{7}")
_NON_ASCII_WORD_RE = re.compile(r"[^\W\x00-\x7f]")
_LEADING_LINK_RE = re.compile(rf"^\s*+\\?\[?\s*+{LINK_RE.pattern}\s*+\\?\]?")
_DOCUMENT_PREFIX_RE = re.compile(r"^\s*Document\s+\d+\s*:\s*", re.IGNORECASE)


def clean_reference_title(text: str) -> str | None:
    """Best-effort title of a reference entry: links, ids, DOIs, years and 'Authors (Year).' removed."""

    def link_text(m: re.Match[str]) -> str:
        label = m.group("text")
        return "" if is_citation_label(label) else label

    leading = _LEADING_LINK_RE.match(text)
    if leading and re.search(r"[^\W\d_]{2,}", _YEAR_PARENS_RE.sub("", text[leading.end() :])):
        text = text[leading.end() :]  # "[Smith' 2020](url) Title of the paper": the link is only a label
    # each substitution runs only on a title holding a literal every match of its pattern holds ("](", "http",
    # "10.", "("): the same title, without trying those patterns at every position of every entry
    title = LINK_RE.sub(link_text, text) if "](" in text else text
    if "http" in title:
        title = BARE_URL_RE.sub("", title)
    if "10." in title:
        title = DOI_RE.sub("", title)
    if (not title.isascii() and _NON_ASCII_WORD_RE.search(title)) or "arxiv" in (low := title.lower()) or (
        "doi" in low or "available" in low or _ID_DIGITS_RE.search(title)
    ):
        title = _ID_NOISE_RE.sub("", title)  # (else no match: see _ID_DIGITS_RE)
    title = re.sub(r"^\s*\\?\[\s*\\?\]\s*", "", title)
    title = title.replace("】", " ").replace("\t", " ")
    title = _DOCUMENT_PREFIX_RE.sub("", title)
    apa = _APA_RE.match(title) if "(" in title else None  # (every match holds a '(')
    if apa and re.search(r",|&|\bet al\b|\band\b", apa.group("authors")):
        first = re.split(r"(?<=[.?!])\s+(?=[A-Z(\[])", apa.group("rest").strip(), maxsplit=1)[0]
        title = first
    if "(" in title:
        title = _YEAR_PARENS_RE.sub("", title)
    title = re.sub(r"\s+", " ", title).strip(" \t,;:.-–—|*_\"'“”")
    return title or None


# a URL whose host is an IPv6 literal: http://[2001:db8::1]:8080/x (kept; the fetch guard decides on it)
_IPV6_URL_RE = re.compile(r"<?(?P<url>https?://\[[0-9A-Fa-f:.]{2,45}(?:%[\w.~-]{1,20})?\](?::\d{1,5})?(?:[/?#][^\s<>\"'\]\[]*)?)>?")


def source_from_entry(entry: ReferenceEntry, key: str) -> Source:
    """A `Source` for one reference entry: URL, arXiv id, DOI and title taken from the entry's own text."""
    text = entry.text
    url = None
    link = LINK_RE.search(text) if "](" in text else None  # (the literal each pattern's matches hold)
    if link:
        url = clean_url(link.group("url"))
    else:
        v6 = _IPV6_URL_RE.search(text) if "://[" in text else None  # BARE_URL_RE stops at '[': "http://" only
        bare = BARE_URL_RE.search(text) if "http" in text else None
        if v6 and (not bare or v6.start() <= bare.start()):
            url = clean_url(v6.group("url"))
        elif bare:
            url = clean_url(bare.group("url"))
    doi_match = DOI_RE.search(text) if "10." in text else None
    doi = doi_match.group(1).rstrip(".,;)") if doi_match else None
    return Source(
        key=key,
        title=clean_reference_title(text),
        url=url,
        arxiv_id=first_arxiv_id(text),
        doi=doi,
        raw=text,
    )


def sources_from_section(section: str | None) -> tuple[dict[str, Source], list[str]]:
    """All sources of a reference section, keyed by their label (or URL for unnumbered entries)."""
    sources: dict[str, Source] = {}
    warnings: list[str] = []
    if not section:
        return sources, warnings
    entries, warnings = parse_reference_entries(section)
    for entry in entries:
        key = entry.label
        if key is None:
            src = source_from_entry(entry, key="")
            if not src.url:
                warnings.append(f"unnumbered reference without a URL ignored: {entry.text[:80]!r}")
                continue
            key = src.url
            src.key = key
        else:
            src = source_from_entry(entry, key=key)
        if key in sources:
            warnings.append(f"duplicate reference key {key!r}; kept the first entry")
            continue
        ids = extract_arxiv_ids(entry.text)
        if len(ids) > 1:
            warnings.append(f"reference {key!r} mentions several arXiv ids {ids}; kept {ids[0]}")
        sources[key] = src
    return sources, warnings
