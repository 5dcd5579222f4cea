"""Plain text from a survey section's LaTeX, sentences, and the word-level rules (keyword filter, vacuous items).

Why plain text: the generator reads sentences numbered `[n]`, and the paper's length rules (>= 3 sentences,
>= 800 characters) are about prose, not markup. Citations become `[key]` markers so the generator (and the
citation-in-query filter) can see where the survey cited something, and the section's reference list maps
each key to its bibliography entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from reportbench.live_builder.latex import delatex, remove_comments, replace_citations

# Environments whose content is not prose (dropped whole).
DROP_ENVIRONMENTS = (
    "figure", "figure*", "table", "table*", "tabular", "tabularx", "longtable", "equation", "equation*", "align",
    "align*", "gather", "gather*", "multline", "eqnarray", "eqnarray*", "tikzpicture", "algorithm", "algorithmic",
    "lstlisting", "verbatim", "minted", "comment", "thebibliography",
)  # fmt: skip
_MARKER = re.compile(r"\s*\[(?:cite: )?[^\[\]]{1,200}\]")
_WORD = re.compile(r"[a-z][a-z0-9\-]+")
# Boilerplate of rubric questions and function words: never "substantive".
STOPWORDS = frozenset(
    """a an the and or of in on for to with by from as at is are be been being does do did response answer
    mention mentions mentioned discuss discusses describe describes explain explains provide provides cite
    cites include includes including paper study studies that this these those which what how why when where
    whether its their it about such other than more most into also can may use used using between based any
    some all each both detail details detailed specific specifically example examples address addresses
    highlight highlights identify identifies note notes state states explore explores elaborate elaborates
    give gives well various key role roles way ways there they them has have had not no yes versus against
    within across among over under after before while during via per""".split()
)


def latex_to_text(raw: str, render_cite: bool = True) -> str:
    """Readable prose from a LaTeX body: comments, floats and display math removed, citations as `[k1; k2]`."""
    text = remove_comments(raw)
    for env in DROP_ENVIRONMENTS:
        e = re.escape(env)
        text = re.sub(rf"\\begin\s*\{{{e}\}}.*?\\end\s*\{{{e}\}}", " ", text, flags=re.DOTALL)
    text = re.sub(r"\\\[.*?\\\]", " ", text, flags=re.DOTALL)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.DOTALL)
    text = replace_citations(text, lambda keys: f" [{'; '.join(keys)}]" if render_cite else "")
    text = re.sub(r"\\(?:sub)*(?:section|paragraph|subparagraph)\*?\s*(?:\[[^\]]*\])?\s*\{([^{}]*)\}", r"\n\1.\n", text)
    text = re.sub(r"\\(?:label|ref|eqref|autoref|cref|Cref|pageref|footnote|url|includegraphics)\*?(?:\[[^\]]*\])?"
                  r"\s*\{[^{}]*\}", "", text)  # fmt: skip
    text = re.sub(r"\\(?:begin|end)\s*\{[^{}]*\}", " ", text)
    text = re.sub(r"\\item\b", " ", text)
    text = delatex(text) or ""
    text = re.sub(r"\s+([,.;:])", r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


def split_plain_sentences(text: str) -> list[str]:
    """Punkt sentences (the harness's splitter, `et al.`-safe); fragments under 15 characters join the previous."""
    from reportbench.reports.sentences import split_sentences  # lazy: +156 ms to import (python -X importtime)

    out: list[str] = []
    for s in split_sentences(text):
        s = s.strip()
        if not s:
            continue
        if out and len(s) < 15:
            out[-1] = f"{out[-1]} {s}"
        else:
            out.append(s)
    return out


def strip_markers(sentence: str) -> str:
    """A sentence without its `[key]` citation markers."""
    return re.sub(r"\s+([,.;:])", r"\1", _MARKER.sub("", sentence)).strip()


def content_words(text: str) -> set[str]:
    """Lower-cased words of 3+ characters that are not boilerplate or function words."""
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in STOPWORDS}


def _stem(word: str) -> str:
    for suffix in ("ies", "es", "s", "ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def substantive_new_words(item: str, query: str) -> list[str]:
    """Content words of a rubric item that the query does not contain (plural/-ing/-ed folded).

    The paper's footnote 4: an item is vacuous unless it has at least one substantive word beyond the query.
    """
    q = {_stem(w) for w in content_words(query)}
    return sorted({w for w in content_words(item) if _stem(w) not in q})


def matched_keywords(query: str, words: Iterable[str]) -> list[str]:
    """The filter words/phrases found in the query as whole words (case-insensitive)."""
    found = []
    for w in words:
        pattern = r"\b" + r"\s+".join(re.escape(p) for p in w.split()) + r"\b"
        if re.search(pattern, query, flags=re.IGNORECASE):
            found.append(w)
    return found
