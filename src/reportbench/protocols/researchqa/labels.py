"""ResearchQA's coverage labels and the lenient-but-strict line parser shared by our prompt and the authors' pack.

Why lenient: judges add bullets, numbering, trailing periods, other case, or break "Not at all" over two
lines; the authors' code crashes on all of these. Why strict: a label is only ever a WHOLE line (after
stripping decoration) — "mentioned but not at all detailed" contains a label and is not one — and the reply
must give exactly one label per rubric item, or it is a ParseError (the judge re-asks, then records a failure).
"""

from __future__ import annotations

import re

from reportbench.judges.base import ParseError

LABELS: tuple[str, ...] = ("Not at all", "Barely", "Moderately", "Mostly", "Completely")
LABEL_VALUE: dict[str, int] = {label: i + 1 for i, label in enumerate(LABELS)}  # the code's 1..5 scale
_BY_LOWER = {label.lower(): label for label in LABELS}

# Leading decoration: bullets, "1.", "1)", "(1)", "Q1:", "Question 1 -", "#3", markdown emphasis.
_PREFIX = re.compile(
    r"^(?:[\s\-*•·>#]+|\(?\d{1,3}[.):\]]\s*|\(\d{1,3}\)\s*|\[\d{1,3}\]\s*|"
    r"(?:q|question|item)\s*\d{1,3}\s*[.):\-–]?\s*)+",
    re.IGNORECASE,
)
_EDGE_PUNCT = re.compile(r"^[\s\"'`*_.,;:!?()\[\]]+|[\s\"'`*_.,;:!?()\[\]]+$")


def normalise_line(line: str) -> str:
    """Decoration stripped, whitespace collapsed, lower case: what is compared with the labels."""
    text = line.strip()
    for _ in range(3):  # "- 1. **Mostly**." needs bullet, number and emphasis removed in turn
        text = _PREFIX.sub("", text)
        text = _EDGE_PUNCT.sub("", text)
    return re.sub(r"\s+", " ", text).lower()


def label_of(line: str) -> str | None:
    """The label this whole line is, or None (never a substring match)."""
    return _BY_LOWER.get(normalise_line(line))


def extract_labels(raw: str | None) -> list[str]:
    """Every whole-line label of a reply, in order (no count check); ParseError for an empty reply.

    Non-label lines (a preamble, a justification) are ignored; a label split over consecutive lines
    ("Not" / "at all") is joined.
    """
    if raw is None or not raw.strip():
        raise ParseError("empty answer")
    lines = [normalise_line(x) for x in raw.replace("\r\n", "\n").split("\n")]
    lines = [x for x in lines if x]
    labels: list[str] = []
    i = 0
    while i < len(lines):
        hit = _BY_LOWER.get(lines[i])
        if hit is not None:
            labels.append(hit)
            i += 1
            continue
        span = next(
            (k for k in (2, 3) if i + k <= len(lines) and " ".join(lines[i : i + k]) in _BY_LOWER), None
        )  # a label broken over two or three lines
        if span is not None:
            labels.append(_BY_LOWER[" ".join(lines[i : i + span])])
            i += span
            continue
        i += 1  # prose: not a label, not counted
    return labels


def check_count(labels: list[str], n_items: int) -> list[str]:
    if len(labels) != n_items:
        raise ParseError(f"expected exactly {n_items} label line(s) (one per rubric item), found {len(labels)}")
    return labels


def parse_labels(raw: str | None, n_items: int) -> list[str]:
    """Exactly `n_items` labels from a one-label-per-line reply; any other count is a ParseError."""
    return check_count(extract_labels(raw), n_items)


def label_score(label: str) -> float:
    """(x - 1) / 4 on the code's 1..5 scale: 0, .25, .5, .75, 1."""
    return (LABEL_VALUE[label] - 1) / 4.0


_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"^\s*<think>.*", re.DOTALL | re.IGNORECASE)


def strip_think(text: str) -> str:
    """Remove reasoning blocks a model emitted in the answer channel (an unclosed leading block too)."""
    # Each pattern below needs "nk>" (lowercased: re's case-blind "i" also takes "İ" and "ı", whose lower() differ,
    # so the test leaves "thi" out): without it, skip three case-blind scans of a long text. And every one needs a
    # ">": a text without one (most reports) is not even lowercased (a copy of ~20 KB: ~20 µs per judgment).
    if ">" not in text or "nk>" not in text.lower():
        return text.strip()
    out = _THINK.sub("", text)
    if "</think>" in out.lower():  # a closing tag with no opening one: everything before it is reasoning
        out = out[out.lower().rindex("</think>") + len("</think>") :]
    out = _OPEN_THINK.sub("", out)
    return out.strip()


_LINK_AUTHORS = re.compile(r"\[link\]\([^)]+\)")
_LINK_ANY = re.compile(r"\[([^\]]*)\]\((?:[^()\s]|\([^()]*\))+\)")


def strip_links(text: str, mode: str = "authors") -> str:
    """Markdown links before pairwise judging: `authors` deletes `[link](url)` (their regex), `all` keeps
    the text of any `[text](url)`, `none` leaves the response alone."""
    if mode == "authors":
        return _LINK_AUTHORS.sub("", text)
    if mode == "all":
        return _LINK_ANY.sub(lambda m: "" if m.group(1).strip().lower() == "link" else m.group(1), text)
    if mode == "none":
        return text
    raise ValueError(f"judging.pairwise.strip_links must be authors|all|none, got {mode!r}")
