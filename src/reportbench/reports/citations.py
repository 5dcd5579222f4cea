"""Inline citation markers: find them in a report body and say which source keys each one points to.

Every adapter funnels its body through `scan_citations`, so all formats share one definition of a citation:
numbered markers (`[4]`, `[1, 2]`, `[3-5]`, `[1][2]`, `\\[4\\]`), footnotes (`[^4]`), ChatGPT-style
`【4†source】`, markdown links (`[text](url)`, `([title](url))`, `\\[[Author' 2020](url)\\]`) and bare URLs.
Keys are resolved only against the report's own reference list (`sources`) or the link's own URL, never
against a system's retrieval order.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import parse_qsl, urlencode, urlsplit

from reportbench.bounds import too_many
from reportbench.reports.arxiv_ids import arxiv_id_from_url
from reportbench.types import Source

MAX_RANGE_EXPANSION = 50  # `[1-100000]` in untrusted text must not explode into 100000 keys


@dataclass(frozen=True)
class Marker:
    """One inline citation: its span in the body, the source keys it names, and what a judge sees instead.

    `replacement` is "" for pure citation markers and the link text for prose links such as
    "the [AI Economist](url) framework", so the claim stays readable.
    """

    start: int
    end: int
    keys: tuple[str, ...]
    replacement: str = ""


@dataclass
class CitationScan:
    """Result of scanning a body: markers in text order, sources created for bare links, and warnings."""

    markers: list[Marker] = field(default_factory=list)
    link_sources: dict[str, Source] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


# A URL inside markdown link parentheses; one level of balanced parentheses is allowed (Wikipedia-style URLs).
_URL = r"(?:https?://|www\.)[^\s()<>]*(?:\([^\s()<>]*\)[^\s()<>]*)*"
_LINK = rf"\[(?P<text>[^\[\]\n]*)\]\(\s*<?(?P<url>{_URL})>?(?:\s+\"[^\"]*\")?\s*\)"
LINK_RE = re.compile(rf"(?P<image>!)?{_LINK}")
_LINK_NOGROUPS = rf"\[[^\[\]\n]*\]\(\s*<?{_URL}>?(?:\s+\"[^\"]*\")?\s*\)"
# `\[[A](u)\]\[[B](v)\]` or `[[A](u), [B](v)]`: the whole bracket is a citation.
BRACKETED_LINKS_RE = re.compile(rf"\\?\[\s*{_LINK_NOGROUPS}(?:\s*[,;]?\s*{_LINK_NOGROUPS})*\s*\\?\]")
# `([title](url))` or `([a](u); [b](v))`: OpenAI-style parenthesised citations.
PARENTHESISED_LINKS_RE = re.compile(rf"\(\s*{_LINK_NOGROUPS}(?:\s*[,;]\s*{_LINK_NOGROUPS})*\s*\)")
NUMERIC_MARKER_RE = re.compile(
    r"\\?\[\s*(?P<body>\d{1,5}(?:\s*(?:,|;|-|–|—|and)\s*\d{1,5})*)\s*\\?\](?!\(|:)"
)
FOOTNOTE_MARKER_RE = re.compile(r"\[\^(?P<label>[^\]\s]+)\](?!:)")
CHATGPT_MARKER_RE = re.compile(r"【(?P<num>\d+)(?::\d+)?†[^】\n]*】")
BARE_URL_RE = re.compile(r"<?(?P<url>https?://[^\s<>\"'\]\[]+)>?")
_TRAILING_URL_PUNCT = ".,;:!?'\""

_DOMAIN_LIKE = re.compile(r"^(?:https?://)?(?:www\.)?[\w-]+(?:\.[\w-]+)+(?:/\S*)?$", re.IGNORECASE)
_AUTHOR_DATE_RE = re.compile(r"(?:'|\bet al\.?,?)\s*\(?\d{4}(?:-\d{2}-\d{2}|[a-z])?\)?\s*$")
_LABEL_LIKE = re.compile(r"^\s*(?:\d+|source|sources|link|here|ref|pdf|arxiv|\+\d+)\s*$", re.IGNORECASE)


def clean_url(url: str) -> str:
    """Strip punctuation a sentence glued onto a URL, and unbalanced closing parentheses."""
    url = url.strip().strip("<>")
    while url and url[-1] in _TRAILING_URL_PUNCT:
        url = url[:-1]
    while url.endswith(")") and url.count(")") > url.count("("):
        url = url[:-1]
    return url


@lru_cache(maxsize=8192)  # pure; a report's sources are normalised again for every sentence scanned
def normalize_url(url: str) -> str:
    """Comparison form of a URL: no scheme, 'www.', fragment, tracking parameters or trailing slash.

    Used only to match a body link to a reference-list entry; keys keep the URL as written.
    """
    url = clean_url(url)
    if url.startswith("www."):
        url = "http://" + url
    parts = urlsplit(url)
    host = parts.netloc.lower().removeprefix("www.")
    query = [
        (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not k.lower().startswith("utm_")
    ]
    norm = host + parts.path.rstrip("/")
    if query:
        norm += "?" + urlencode(query)
    return norm


def is_citation_label(text: str) -> bool:
    """True when link text is a label ('3', 'arxiv.org', 'source'), not words that belong to the sentence."""
    text = text.strip()
    return not text or bool(_LABEL_LIKE.match(text) or _DOMAIN_LIKE.match(text))


def expand_numeric_marker(body: str) -> tuple[list[str], bool]:
    """'1, 3-5' -> ['1', '3', '4', '5']. The flag is True when a range was too long or reversed to expand."""
    if body.isdecimal():  # '12' (most markers): no separator to split at, one key
        return [str(int(body))], False
    keys: list[str] = []
    clipped = False
    for part in re.split(r"\s*(?:,|;|and)\s*", body):
        bounds = re.split(r"\s*[-–—]\s*", part)
        if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
            lo, hi = int(bounds[0]), int(bounds[1])
            if lo <= hi and hi - lo < MAX_RANGE_EXPANSION:
                keys.extend(str(n) for n in range(lo, hi + 1))
            else:
                keys.extend([str(lo), str(hi)])
                clipped = True
        else:
            keys.extend(str(int(b)) for b in bounds if b.isdigit())
    return keys, clipped


def finditer_from(rx: re.Pattern[str], text: str, anchor: str, prefix: str) -> Iterator[re.Match[str]]:
    """`rx.finditer(text)` for a pattern whose every match opens with `anchor`, or with the one character `prefix`
    right before it: the same matches, in the same order, trying the pattern only where `anchor` stands (found
    by `str.find`, at C speed), not at every position of the text. `re` cannot skip ahead by itself for these
    patterns: their optional first character hides the literal that follows it."""
    end = 0  # finditer resumes where the last match ended (no match is empty)
    i = text.find(anchor)
    while i >= 0:
        m = None
        if i - 1 >= end and text[i - 1] == prefix:
            m = rx.match(text, i - 1)  # finditer tries the earlier position first
        if m is None and i >= end:
            m = rx.match(text, i)
        if m is not None:
            yield m
            end = m.end()
            i = text.find(anchor, max(end, i + 1))
        else:
            i = text.find(anchor, i + 1)


class _UrlResolver:
    """Maps a URL to a source key: the reference-list entry with the same URL if any, else the URL itself."""

    def __init__(self, sources: Mapping[str, Source], scan: CitationScan) -> None:
        self._sources = sources
        self._scan = scan
        self._by_url: dict[str, str] | None = None
        # The reference URLs are normalised when the first link is resolved (a body with no link or bare URL never
        # needs them), unless one of them could make `normalize_url` raise: urlsplit refuses only a netloc with
        # an unbalanced '[' / ']' or non-ASCII characters; such a list is normalised here, as it always was.
        if not all(src.url.isascii() and "[" not in src.url and "]" not in src.url
                   for src in sources.values() if src.url):
            self._by_url = self._reference_urls()

    def _reference_urls(self) -> dict[str, str]:
        by_url: dict[str, str] = {}
        for key, src in self._sources.items():
            if src.url:
                by_url.setdefault(normalize_url(src.url), key)
        return by_url

    def key_for(self, url: str, link_text: str | None = None) -> str:
        if self._by_url is None:
            self._by_url = self._reference_urls()
        url = clean_url(url)
        norm = normalize_url(url)
        if norm in self._by_url:
            return self._by_url[norm]
        title = link_text.strip() if link_text and not is_citation_label(link_text) else None
        if title and _AUTHOR_DATE_RE.search(title):
            title = None  # "Lennart Fernandes' 2020-03-04" names the citation, not the paper
        self._scan.link_sources[url] = Source(key=url, url=url, title=title, arxiv_id=arxiv_id_from_url(url))
        self._by_url[norm] = url
        return url


class _TakenSpans:
    """Non-overlapping claimed spans, kept sorted so each overlap check is a bisection (not a linear scan)."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def overlaps(self, start: int, end: int) -> bool:
        i = bisect_right(self._starts, start)
        if i > 0 and self._ends[i - 1] > start:
            return True
        return i < len(self._starts) and self._starts[i] < max(end, start + 1)

    def add(self, start: int, end: int) -> None:
        i = bisect_right(self._starts, start)
        self._starts.insert(i, start)
        self._ends.insert(i, end)


def scan_citations(body: str, sources: Mapping[str, Source], *, max_markers: int | None = None) -> CitationScan:
    """Find every inline citation in `body`; a vaguer pattern never claims text a more specific one took.
    `max_markers`: stop at one more than this (InputTooLargeError, max_citations) before building the rest."""
    scan = CitationScan()
    resolver = _UrlResolver(sources, scan)
    taken = _TakenSpans()

    def add(start: int, end: int, keys: list[str], replacement: str = "") -> None:
        if max_markers is not None and len(scan.markers) >= max_markers:
            raise too_many("citation marker count", "max_citations")
        taken.add(start, end)
        scan.markers.append(Marker(start, end, tuple(dict.fromkeys(keys)), replacement))

    def link_keys(fragment: str) -> list[str]:
        keys = []
        for link in LINK_RE.finditer(fragment):
            text = link.group("text").strip()
            if text.isdigit() and text in sources:
                keys.append(text)
            else:
                keys.append(resolver.key_for(link.group("url"), text))
        return keys

    # every match of these opens with '[' ('\\[', '![') or 'http' ('<http'): finditer_from tries them only there
    for m in finditer_from(BRACKETED_LINKS_RE, body, "[", "\\"):
        if not taken.overlaps(m.start(), m.end()):
            add(m.start(), m.end(), link_keys(m.group(0)))
    for m in PARENTHESISED_LINKS_RE.finditer(body):
        if not taken.overlaps(m.start(), m.end()):
            add(m.start(), m.end(), link_keys(m.group(0)))

    for m in finditer_from(LINK_RE, body, "[", "!"):
        if taken.overlaps(m.start(), m.end()):
            continue
        text = m.group("text").strip()
        if m.group("image"):
            add(m.start(), m.end(), [], "")
            continue
        keys = link_keys(m.group(0))
        add(m.start(), m.end(), keys, "" if is_citation_label(text) else text)

    for m in finditer_from(NUMERIC_MARKER_RE, body, "[", "\\"):
        if taken.overlaps(m.start(), m.end()):
            continue
        keys, clipped = expand_numeric_marker(m.group("body"))
        if all(int(k) >= 1000 and k not in sources for k in keys):
            continue  # '[2020]' is a year in brackets, not a citation
        if clipped:
            scan.warnings.append(
                f"citation range {m.group(0)!r} not expanded (reversed or longer than {MAX_RANGE_EXPANSION})"
            )
        add(m.start(), m.end(), keys)

    for m in FOOTNOTE_MARKER_RE.finditer(body):
        if not taken.overlaps(m.start(), m.end()):
            add(m.start(), m.end(), [m.group("label")])

    for m in CHATGPT_MARKER_RE.finditer(body):
        if not taken.overlaps(m.start(), m.end()):
            add(m.start(), m.end(), [m.group("num")])

    for m in finditer_from(BARE_URL_RE, body, "http", "<"):
        if taken.overlaps(m.start(), m.end()):
            continue
        url = clean_url(m.group("url"))
        if m.group(0).startswith("<") and m.group(0).endswith(">"):
            start, end = m.start(), m.end()  # <https://...> autolink: the brackets go too
        else:
            start, end = m.start("url"), m.start("url") + len(url)
        # "collected at https://x.org" keeps its URL in the claim; "(https://x.org)" is a citation and goes
        in_parens = body[max(0, start - 1) : start] == "("
        keep = "" if in_parens or m.group(0).startswith("<") else url
        add(start, end, [resolver.key_for(url)], keep)

    scan.markers.sort(key=lambda mk: mk.start)
    return scan
