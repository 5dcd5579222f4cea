"""arXiv identifier extraction.

Reports cite arXiv papers in many spellings (abs/pdf/html links, `arXiv:ID`, `[ID]`, a bare `2408.14476v1`,
DOIs `10.48550/arXiv.ID`, old-style `hep-th/9901001`). Retrieval metrics compare papers by arXiv id, so every
spelling must reduce to one canonical, version-stripped id.

The DeepScholar-bench evaluator (`extract_arxiv_ids_from_text`) recognises only new-style ids; we also accept
old-style ids, which changes counts where a report cites pre-2007 papers (e.g. `math/0511322`).
"""

from __future__ import annotations

import re

from reportbench.types import strip_arxiv_version

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
_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"arxiv\.org/(?:abs|pdf|html)/({_ID}){_VERSION}", re.IGNORECASE),
    re.compile(rf"10\.48550/arXiv\.({_ID}){_VERSION}", re.IGNORECASE),
    re.compile(rf"\barXiv\s*:\s*({_ID}){_VERSION}", re.IGNORECASE),
    re.compile(rf"\[({_ID}){_VERSION}\]"),
    re.compile(rf"(?<![\w./-])({NEW_STYLE}){_VERSION}(?![\w/]|\.\d)"),
    re.compile(rf"(?<![\w./-])((?:{_ARCHIVES})/\d{{7}}){_VERSION}(?![\w/])"),
)
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


def extract_arxiv_ids(text: str) -> list[str]:
    """Distinct version-stripped arXiv ids in `text`, in order of first appearance."""
    hits: list[tuple[int, str]] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            hits.append((match.start(1), match.group(1)))
    seen: dict[str, None] = {}
    for _, raw in sorted(hits):
        arxiv_id = strip_arxiv_version(raw)
        if is_plausible_arxiv_id(arxiv_id):
            seen.setdefault(arxiv_id, None)
    return list(seen)


def first_arxiv_id(text: str | None) -> str | None:
    """The first arXiv id in `text` (version-stripped), or None."""
    if not text:
        return None
    ids = extract_arxiv_ids(text)
    return ids[0] if ids else None


_URL_ONLY = (_PATTERNS[0], _PATTERNS[1])


def arxiv_id_from_url(url: str | None) -> str | None:
    """The arXiv id an arxiv.org or arXiv-DOI URL points to; None for other URLs (never guessed)."""
    if not url:
        return None
    for pattern in _URL_ONLY:
        match = pattern.search(url)
        if match:
            arxiv_id = strip_arxiv_version(match.group(1))
            if is_plausible_arxiv_id(arxiv_id):
                return arxiv_id
    return None
