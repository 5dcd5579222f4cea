"""arXiv identifier extraction.

Reports cite arXiv papers in many spellings (abs/pdf/html links, `arXiv:ID`, `[ID]`, a bare `2408.14476v1`,
DOIs `10.48550/arXiv.ID`, old-style `hep-th/9901001`). Retrieval metrics compare papers by arXiv id, so every
spelling must reduce to one canonical, version-stripped id.

The DeepScholar-bench evaluator (`extract_arxiv_ids_from_text`) recognises only new-style ids; we also accept
old-style ids, which changes counts where a report cites pre-2007 papers (e.g. `math/0511322`).

Only arXiv can vouch for an arXiv id: a URL counts when its host is arXiv or one of its documented mirrors
(`ARXIV_HOSTS`: arxiv.org and its www/export/browse hosts, arXiv Labs' ar5iv, the historic xxx.lanl.gov), or
the arXiv DOI prefix 10.48550 through doi.org. `http://127.0.0.1:8799/arxiv.org/abs/2005.11401` or
`https://evil.example/?u=arXiv:2005.11401` name no arXiv paper. Outside URLs, explicit `arXiv:ID`, `[ID]` and
bare new-style ids in prose still count.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import urlsplit

from reportbench.types import strip_arxiv_version

ARXIV_HOSTS = frozenset(
    {
        "arxiv.org",
        "www.arxiv.org",
        "export.arxiv.org",
        "browse.arxiv.org",
        "ar5iv.labs.arxiv.org",
        "ar5iv.org",
        "www.ar5iv.org",
        "xxx.lanl.gov",
    }
)
DOI_HOSTS = frozenset({"doi.org", "dx.doi.org", "www.doi.org"})

# Old-style archive names (pre-April-2007 ids look like `archive[.SC]/YYMMNNN`). Listed explicitly so that a
# bare `and/or`-like token never passes for an id.
OLD_STYLE_ARCHIVES = (
    "acc-phys",
    "adap-org",
    "alg-geom",
    "ao-sci",
    "astro-ph",
    "atom-ph",
    "bayes-an",
    "chao-dyn",
    "chem-ph",
    "cmp-lg",
    "comp-gas",
    "cond-mat",
    "cs",
    "dg-ga",
    "funct-an",
    "gr-qc",
    "hep-ex",
    "hep-lat",
    "hep-ph",
    "hep-th",
    "math",
    "math-ph",
    "mtrl-th",
    "nlin",
    "nucl-ex",
    "nucl-th",
    "patt-sol",
    "physics",
    "plasm-ph",
    "q-alg",
    "q-bio",
    "q-fin",
    "quant-ph",
    "solv-int",
    "stat",
    "supr-con",
)
_ARCHIVES = "|".join(sorted((re.escape(a) for a in OLD_STYLE_ARCHIVES), key=len, reverse=True))

NEW_STYLE = r"\d{4}\.\d{4,5}"
OLD_STYLE = rf"(?:{_ARCHIVES})(?:\.[A-Z]{{2}})?/\d{{7}}"
_ID = rf"(?:{NEW_STYLE}|{OLD_STYLE})"
_VERSION = r"(?:v\d+)?"

# Ordered from most to least explicit; all matches are merged by text position afterwards.
_HOST_RE = (
    r"(?:(?:www|export|browse)\.arxiv\.org|ar5iv\.labs\.arxiv\.org|(?:www\.)?ar5iv\.org|arxiv\.org"
    r"|xxx\.lanl\.gov)"
)
_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"(?<![\w.-]){_HOST_RE}/(?:abs|pdf|html)/({_ID}){_VERSION}", re.IGNORECASE),
    re.compile(rf"(?<![\w.-])10\.48550/arXiv\.({_ID}){_VERSION}", re.IGNORECASE),
    re.compile(rf"\barXiv\s*:\s*({_ID}){_VERSION}", re.IGNORECASE),
    re.compile(rf"\[({_ID}){_VERSION}\]"),
    re.compile(rf"(?<![\w./=?&#%:-])({NEW_STYLE}){_VERSION}(?![\w/]|\.\d)"),
    re.compile(rf"(?<![\w./=?&#%:-])((?:{_ARCHIVES})/\d{{7}}){_VERSION}(?![\w/])"),
)
_TOKEN_STOP = re.compile(r"[\s<>\"'()\[\]{}|`]")
_HOST_PREFIX_OK = re.compile(r"(?i)^(?:https?:)?(?://)?$")
_DOI_PREFIX_OK = re.compile(r"(?i)^(?:(?:(?:https?:)?//)?(?:dx\.|www\.)?doi\.org/|doi:\s*)?$")


def _token_prefix(text: str, pos: int, limit: int = 2048) -> str:
    """The part of the whitespace/bracket-delimited token that precedes `pos` (at most `limit` chars)."""
    start = max(0, pos - limit)
    window = text[start:pos]
    stops = [m.end() for m in _TOKEN_STOP.finditer(window)]
    return window[stops[-1] :] if stops else window


def _vouched(text: str, pattern_index: int, match: re.Match[str]) -> bool:
    """Whether a match names an arXiv paper: a host/DOI match must not sit inside a foreign URL, and any
    other spelling must not sit inside a URL at all (a query parameter of some other site proves nothing)."""
    prefix = _token_prefix(text, match.start())
    if pattern_index == 0:
        return bool(_HOST_PREFIX_OK.match(prefix))
    if pattern_index == 1:
        return bool(_DOI_PREFIX_OK.match(prefix))
    return "://" not in prefix and not prefix.lower().startswith("www.") and "/" not in prefix
_NEW_STYLE_RE = re.compile(rf"^{NEW_STYLE}$")
SYNTHETIC_MONTH = 13


def is_plausible_arxiv_id(arxiv_id: str) -> bool:
    """Reject numbers that only look like ids (e.g. `1234.5678`): YYMM must be a real month, from 0704 on.

    Month 13 is accepted for new-style ids: arXiv never issues it, so reportbench's synthetic fixtures and
    demo release use it (`2513.00017`) to be id-shaped without ever colliding with a real paper.
    """
    if not _NEW_STYLE_RE.match(arxiv_id):
        yymm = arxiv_id.rsplit("/", 1)[-1][:4]
    else:
        yymm = arxiv_id[:4]
    yy, mm = int(yymm[:2]), int(yymm[2:])
    synthetic = mm == SYNTHETIC_MONTH and bool(_NEW_STYLE_RE.match(arxiv_id))
    if not (1 <= mm <= 12 or synthetic):
        return False
    if _NEW_STYLE_RE.match(arxiv_id):
        if (yy, mm) < (7, 4):
            return False
        digits = len(arxiv_id.split(".", 1)[1])
        return digits == (5 if yy >= 15 else 4)
    return yy >= 91 or yy <= 7


_FOUR_DIGITS = re.compile(r"\d{4}")  # every id holds four digits in a row (NEW_STYLE's YYMM, OLD_STYLE's seven)


MAX_CACHED_TEXT = 2_000  # a reference entry; longer texts (a hostile one-entry list) are not kept


def extract_arxiv_ids(text: str) -> list[str]:
    """Distinct version-stripped arXiv ids in `text`, in order of first appearance."""
    return list(_arxiv_ids(text))


def _arxiv_ids(text: str) -> tuple[str, ...]:
    return _arxiv_ids_cached(text) if len(text) <= MAX_CACHED_TEXT else _find_arxiv_ids(text)


@lru_cache(maxsize=1024)  # pure; a reference entry is asked twice (its id, then whether it names several)
def _arxiv_ids_cached(text: str) -> tuple[str, ...]:
    return _find_arxiv_ids(text)


def _find_arxiv_ids(text: str) -> tuple[str, ...]:
    if not _FOUR_DIGITS.search(text):
        return ()
    hits: list[tuple[int, str]] = []
    for index, pattern in enumerate(_PATTERNS):
        for match in pattern.finditer(text):
            if _vouched(text, index, match):
                hits.append((match.start(1), match.group(1)))
    seen: dict[str, None] = {}
    for _, raw in sorted(hits):
        arxiv_id = strip_arxiv_version(raw)
        if is_plausible_arxiv_id(arxiv_id):
            seen.setdefault(arxiv_id, None)
    return tuple(seen)


def first_arxiv_id(text: str | None) -> str | None:
    """The first arXiv id in `text` (version-stripped), or None."""
    if not text:
        return None
    ids = _arxiv_ids(text)
    return ids[0] if ids else None


_URL_PATH_RE = re.compile(rf"^/(?:abs|pdf|html)/({_ID}){_VERSION}(?:\.pdf)?/?$", re.IGNORECASE)
_DOI_PATH_RE = re.compile(rf"^/10\.48550/arXiv\.({_ID}){_VERSION}/?$", re.IGNORECASE)


def arxiv_id_from_url(url: str | None) -> str | None:
    """The arXiv id an arXiv-host (ARXIV_HOSTS) or arXiv-DOI URL points to; None for any other URL, never
    guessed (a path that merely contains `arxiv.org/abs/...` on another host is not arXiv)."""
    if not url:
        return None
    url = url.strip()
    if "://" not in url and not url.startswith("//"):
        url = "https://" + url
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower().rstrip(".")
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https", ""):
        return None
    if host in ARXIV_HOSTS:
        match = _URL_PATH_RE.match(parts.path)
    elif host in DOI_HOSTS:
        match = _DOI_PATH_RE.match(parts.path)
    else:
        return None
    if match:
        arxiv_id = strip_arxiv_version(match.group(1))
        if is_plausible_arxiv_id(arxiv_id):
            return arxiv_id
    return None
