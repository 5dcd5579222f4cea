"""The information-verification module's text side (spec §2.2): reference split and map, `Lx.Sy`
segmentation, claim post-processing and back-tracking in the authors' order, and context retrieval.

Claims are keyed by (position, index within the extraction answer), never by text: the authors' code merges
duplicate claim texts (spec §6.2), we do not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from reportbench.reports.sentences import split_sentences

# ------------------------------------------------------------------------------------ reference split
# The authors' markers, in their order: the first that occurs in the text wins (`# References` also matches
# inside `## References`, leaving a stray `#` in the body — reproduced in code mode).
REF_MARKERS = (
    "# References",
    "## References",
    "### References",
    "\nCitations:",
    "\nReferences:",
    "**References:**",
    "#### **참고 자료**",
    "#### 참고 자료",
    "#### **References**",
    "\n\nReferences\n",
)
_REF_RES = (
    re.compile(r"(?<!\d)(\d+)\..*?\<(https?://[^>]+)\>"),  # (?<!\d): same matches, linear on digit runs
    re.compile(r"^(\d+)\..*?\((https?://[^\]]+)\)", re.MULTILINE),
    re.compile(r"\[([\-\d]+)\][^\n]*?(https?://[^\s]+)"),
)
_INLINE_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_POSITION = re.compile(r"^L(\d+)\.S(\d+)$")


def split_references(text: str) -> tuple[str, str]:
    """(body, reference section) at the first marker in list order; no marker -> (text, '')."""
    for marker in REF_MARKERS:
        at = text.find(marker)
        if at >= 0:
            return text[:at], text[at + len(marker) :]
    return text, ""


def clean_url(url: str) -> str:
    """Strip backticks and the #fragment, keep the query string (authors' clean_url)."""
    url = url.strip().strip("`").strip()
    return url.split("#", 1)[0]


def reference_map(refs: str, body: str = "") -> dict[str, str]:
    """{index: url} from the three authors' regexes in order (later matches overwrite); falls back to the body."""
    out: dict[str, str] = {}
    for text in (refs, body):
        for rx in _REF_RES:
            for m in rx.finditer(text):
                out[m.group(1)] = clean_url(m.group(2))
        if out:
            break
    return out


def replace_inline_links(text: str, start: int = 1) -> tuple[str, dict[str, str]]:
    """Inline `[text](url)` links -> `text [n]` with one number per distinct cleaned URL (the authors'
    unwired `replace_openai_citations`, behind the `inline_links` flag)."""
    numbers: dict[str, str] = {}

    def sub(m: re.Match[str]) -> str:
        url = clean_url(m.group(2))
        if url not in numbers:
            numbers[url] = str(start + len(numbers))
        return f"{m.group(1)} [{numbers[url]}]"

    new = _INLINE_LINK.sub(sub, text)
    return new, {n: u for u, n in numbers.items()}


def expand_index(index: str) -> list[str]:
    """'3-5' -> ['3','4','5'] (our adapters mode; the authors' code keeps the raw string)."""
    m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", index.strip())
    if not m:
        return [index.strip()]
    a, b = int(m.group(1)), int(m.group(2))
    if a > b or b - a > 50:
        return [index.strip()]
    return [str(i) for i in range(a, b + 1)]


# ---------------------------------------------------------------------------------------- segmentation
@dataclass(frozen=True)
class Segmented:
    labelled: str  # the whole report with `Lx.Sy: ` prefixes (extraction context)
    sentences: list[tuple[str, str]]  # (position, sentence) in order


def _sent_tokenize(text: str) -> list[str]:
    return [s for s in split_sentences(text) if s.strip()]


def segment(body: str) -> Segmented:
    """The authors' `add_line_sent_to_report`: blocks on blank lines (1-based, empty blocks use up a number),
    a heading-only block is emitted unlabelled, a heading atop a block is dropped from labelling, and
    processing stops at a `## References` / `Citations:` block."""
    out_lines: list[str] = []
    sents: list[tuple[str, str]] = []
    for i, block in enumerate(body.split("\n\n")):
        block = block.strip()
        if not block:
            continue
        if block in ("## References", "Citations:"):
            break
        if block.startswith("#"):
            if "\n" in block:
                head, block = block.split("\n", 1)
                out_lines.append(head.strip())
                block = block.strip()
            else:
                out_lines.append(block)
                continue
        for j, s in enumerate(_sent_tokenize(block)):
            pos = f"L{i + 1}.S{j + 1}"
            out_lines.append(f"{pos}: {s}")
            sents.append((pos, s))
        out_lines.append("")
    return Segmented("\n".join(out_lines), sents)


def batches(sentences: Sequence[tuple[str, str]], size: int = 20) -> list[list[tuple[str, str]]]:
    return [list(sentences[i : i + size]) for i in range(0, len(sentences), size)]


def parse_position(pos: str) -> tuple[int, int] | None:
    m = _POSITION.match(pos.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


# ---------------------------------------------------------------------------------------- back-tracking
@dataclass
class ExtractedClaim:
    """One claim as extracted, then as back-tracked. `claim_id` = report:position:k (k = order in answer)."""

    claim_id: str
    position: str
    text: str
    claim_type: str
    numeric: bool = False
    citations: list[str] = field(default_factory=list)
    implicit_citations: list[str] = field(default_factory=list)
    cross_references: list[str] = field(default_factory=list)
    type_before: str = ""
    citations_before: list[str] = field(default_factory=list)
    implicit_before: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)


def _valid_index(c: str) -> str | None:
    c = c.strip().strip("[]").strip()
    return c if c and all(ch.isdigit() or ch == "-" for ch in c) else None


def validate_citations(claims: list[ExtractedClaim]) -> None:
    """Pass 0 (extraction post-processing): keep citation strings made only of digits and '-'."""
    for c in claims:
        c.type_before = c.type_before or c.claim_type
        c.citations_before = list(c.citations)
        c.implicit_before = list(c.implicit_citations)
        c.citations = [v for v in (_valid_index(x) for x in c.citations) if v]
        c.implicit_citations = [v for v in (_valid_index(x) for x in c.implicit_citations) if v]


def clear_def(claims: list[ExtractedClaim]) -> None:
    """D/E/F claims lose their citations (they can pick some up again in the backward fill)."""
    for c in claims:
        if c.claim_type not in ("A", "B", "C"):
            c.citations, c.implicit_citations = [], []


def _sent_idx(c: ExtractedClaim) -> int:
    p = parse_position(c.position)
    return p[1] if p else 0


def backward_fill(claims: list[ExtractedClaim], include_def: bool = True) -> None:
    """Same-paragraph fill: walk a line's claims backwards; explicit citations become the active set, and a
    claim with neither explicit nor implicit citations inherits it (D/E/F too when `include_def`)."""
    lines: dict[str, list[ExtractedClaim]] = {}
    for c in claims:
        lines.setdefault(c.position.split(".")[0], []).append(c)
    for line_claims in lines.values():
        active: list[str] = []
        for c in reversed(sorted(line_claims, key=_sent_idx)):  # stable: same-sentence claims keep their order
            if c.citations:
                active = list(c.citations)
            if not c.citations and not c.implicit_citations and active:
                if include_def or c.claim_type in ("A", "B", "C"):
                    c.implicit_citations = list(active)


def cross_reference(claims: list[ExtractedClaim], only_bc: bool = False) -> None:
    """One pass in claim order: a claim adds the explicit and implicit citations of every claim at each of its
    `cross_references` positions (so the result depends on order, as in the authors' code)."""
    by_pos: dict[str, list[ExtractedClaim]] = {}
    for c in claims:
        by_pos.setdefault(c.position, []).append(c)
    for c in claims:
        if only_bc and c.claim_type not in ("B", "C"):
            continue
        for ref in c.cross_references:
            for other in by_pos.get(ref, []):
                c.implicit_citations.extend(other.citations)
                c.implicit_citations.extend(other.implicit_citations)


def demote_bc(claims: list[ExtractedClaim]) -> None:
    """B/C claims still without any citation become D."""
    for c in claims:
        if c.claim_type in ("B", "C") and not c.citations and not c.implicit_citations:
            c.claim_type = "D"


def map_urls(claims: list[ExtractedClaim], refs: Mapping[str, str], expand_ranges: bool = False) -> None:
    """index -> cleaned URL; an index with no entry stays the raw string ('12', '3-5'), as in the code."""
    for c in claims:
        urls: list[str] = []
        for idx in [*c.citations, *c.implicit_citations]:
            for i in expand_index(idx) if expand_ranges else [idx]:
                u = refs.get(i)
                u = clean_url(u) if u else i
                if u not in urls:
                    urls.append(u)
        c.urls = urls


def backtrack(
    claims: list[ExtractedClaim],
    refs: Mapping[str, str],
    mode: str = "code",
    backfill_def: bool = True,
    expand_ranges: bool = False,
) -> list[ExtractedClaim]:
    """All passes in the code's order on copies: validate -> clear D/E/F -> backward fill -> cross-references
    -> demote leftover B/C to D -> map to URL. `mode: paper` = cross-references of B/C claims only (G.3)."""
    out = [replace(c, citations=list(c.citations), implicit_citations=list(c.implicit_citations)) for c in claims]
    validate_citations(out)
    clear_def(out)
    if mode == "code":
        backward_fill(out, include_def=backfill_def)
        cross_reference(out)
        demote_bc(out)
    elif mode == "paper":
        cross_reference(out, only_bc=True)
    else:
        raise ValueError(f"backtrack mode must be code|paper, got {mode!r}")
    map_urls(out, refs, expand_ranges=expand_ranges)
    return out


# ------------------------------------------------------------------------------------ context retrieval
_ENC: list[Any] = []


def _encoding() -> Any:
    """cl100k_base from the BPE file litellm bundles (no download); None when it is not there."""
    if _ENC:
        return _ENC[0]
    import os
    from pathlib import Path

    import tiktoken

    enc = None
    try:
        import importlib.util

        spec = importlib.util.find_spec("litellm")  # locate, do not import (litellm is slow to import)
        root = Path(next(iter(spec.submodule_search_locations))) if spec and spec.submodule_search_locations else None
        bundled = root / "litellm_core_utils" / "tokenizers" if root else Path("/nonexistent")
        old = os.environ.get("TIKTOKEN_CACHE_DIR")
        if old is None and bundled.is_dir():
            os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled)
        try:
            enc = tiktoken.get_encoding("cl100k_base")
        finally:
            if old is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
    except Exception:  # no BPE file offline: whitespace tokens (documented)
        enc = None
    _ENC.append(enc)
    return enc


def chunk_text(text: str, size: int = 1000) -> list[str]:
    """`size`-token chunks (tiktoken cl100k_base; whitespace words when the BPE file is not available)."""
    enc = _encoding()
    if enc is None:
        words = text.split()
        return [" ".join(words[i : i + size]) for i in range(0, len(words), size)] or [""]
    toks = enc.encode(text, disallowed_special=())
    return [enc.decode(toks[i : i + size]) for i in range(0, len(toks), size)] or [""]


def select_context(
    queries: Sequence[str],
    content: str,
    top_k: int = 2,
    chunk_size: int = 1000,
    method: str = "bm25",
    embed: Any = None,
) -> tuple[str, int, bool]:
    """(context, n_chunks, whole_page): the whole page when #chunks <= top_k * #claims, else the union of each
    claim's top-k chunks in document order (BM25, or `embed(texts) -> vectors` cosine)."""
    chunks = chunk_text(content, chunk_size)
    if len(chunks) <= top_k * len(queries):
        return content, len(chunks), True
    chosen: set[int] = set()
    if method == "bm25":
        from rank_bm25 import BM25Okapi

        bm25 = BM25Okapi([c.split() or [""] for c in chunks])
        for q in queries:
            scores = bm25.get_scores(q.split())
            ranked = sorted(range(len(chunks)), key=lambda i: (-scores[i], i))
            chosen.update(ranked[:top_k])
        sep = "\n\n...\n\n"
    elif method == "embedding":
        if embed is None:
            raise ValueError("retrieval method 'embedding' needs an embedding function")
        vecs = embed(list(chunks))
        qv = embed(list(queries))
        for v in qv:
            sims = [_cos(v, c) for c in vecs]
            ranked = sorted(range(len(chunks)), key=lambda i: (-sims[i], i))
            chosen.update(ranked[:top_k])
        sep = "\n\n"
    else:
        raise ValueError(f"retrieval method must be bm25|embedding, got {method!r}")
    return sep.join(chunks[i] for i in sorted(chosen)), len(chunks), False


def _cos(a: Sequence[float], b: Sequence[float]) -> float:
    na = sum(x * x for x in a) ** 0.5
    nb = sum(x * x for x in b) ** 0.5
    if na == 0 or nb == 0:
        return 0.0
    return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)
