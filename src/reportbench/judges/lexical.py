"""Lexical text utilities shared by the offline judge rules (no model weights, English only).

Why lexical only: no embedding or NLI model ships with the harness, and the offline judge must be
deterministic and instant. Everything here is pure Python + rapidfuzz, iterates in sorted order whenever
floats are summed (set order changes with PYTHONHASHSEED), and rounds scores to 4 decimals so that the
same inputs give the same verdict bit-for-bit on any machine. See docs/offline-judge.md for the limits.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rapidfuzz import fuzz

SCORE_DECIMALS = 4

# scikit-learn's ENGLISH_STOP_WORDS (Glasgow list), plus contraction stems.
ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above across after afterwards again against all almost alone along already also although always
    am among amongst amoungst amount an and another any anyhow anyone anything anyway anywhere are around as
    at back be became because become becomes becoming been before beforehand behind being below beside
    besides between beyond bill both bottom but by call can cannot cant co con could couldnt cry de describe
    detail do done down due during each eg eight either eleven else elsewhere empty enough etc even ever
    every everyone everything everywhere except few fifteen fifty fill find fire first five for former
    formerly forty found four from front full further get give go had has hasnt have he hence her here
    hereafter hereby herein hereupon hers herself him himself his how however hundred i ie if in inc indeed
    interest into is it its itself keep last latter latterly least less ltd made many may me meanwhile
    might mill mine more moreover most mostly move much must my myself name namely neither never
    nevertheless next nine no nobody none noone nor not nothing now nowhere of off often on once one only
    onto or other others otherwise our ours ourselves out over own part per perhaps please put rather re
    same see seem seemed seeming seems serious several she should show side since sincere six sixty so some
    somehow someone something sometime sometimes somewhere still such system take ten than that the their
    them themselves then thence there thereafter thereby therefore therein thereupon these they thick thin
    third this those though three through throughout thru thus to together too top toward towards twelve
    twenty two un under until up upon us very via was we well were what whatever when whence whenever where
    whereafter whereas whereby wherein whereupon wherever whether which while whither who whoever whole whom
    whose why will with within without would yet you your yours yourself yourselves
    s t d ll m re ve
    """.split()
)

# Words that every scholarly abstract uses; matching them says nothing about topical support.
SCHOLARLY_STOP_WORDS: frozenset[str] = frozenset(
    """
    paper papers propose proposes proposed present presents presented approach approaches method methods
    work works study studies studied result results show shows shown showed novel new based existing prior
    recent recently previous previously et al introduce introduces introduced demonstrate demonstrates
    demonstrated achieve achieves achieved use uses used using various including include includes
    significant significantly effective effectively improve improves improved
    """.split()
)

NEGATION_RE = re.compile(r"\b(?:not|no|never|cannot|without|none|neither|nor)\b|n't\b", re.IGNORECASE)
NOT_ONLY_RE = re.compile(r"\bnot\s+only\b", re.IGNORECASE)
# Absolute/over-claiming words: a claim that asserts them needs a source that does too.
ABSOLUTE_WORDS: frozenset[str] = frozenset(
    {"always", "all", "every", "first", "only", "best", "sole", "solely", "universally"}
)
NUMBER_WORDS: Mapping[str, str] = {
    "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
    "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13", "fourteen": "14",
    "fifteen": "15", "sixteen": "16", "seventeen": "17", "eighteen": "18", "nineteen": "19",
    "twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70",
    "eighty": "80", "ninety": "90", "hundred": "100", "thousand": "1000",
}  # fmt: skip
# A quantity: not glued to letters/hyphens (so 'GPT-4', 'T5', 'ResNet-50', '2D' are names, not numbers).
QUANTITY_RE = re.compile(r"(?<![\w.\-])\d+(?:,\d{3})*(?:\.\d+)?(?![\w\-]|\.\d)")
NUMBER_WORD_RE = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)
YEAR_RE = re.compile(r"^(?:19|20)\d\d$")

# Citation markers, in the forms reports and exemplars use.
LATEX_CITE_RE = re.compile(r"~?\\(?:no)?cite[a-zA-Z]*\*?(?:\[[^\]]*\]){0,2}\{[^}]*\}")
NUMERIC_CITE_RE = re.compile(r"(?:(?<!\s)\s++)?\[\s*\d+(?:\s*[-–,;]\s*\d+)*\s*\]")
MARKDOWN_LINK_CITE_RE = re.compile(r"(?:(?<!\s)\s++)?\\?\[\\?\[?[^\]\n]{1,200}\]?\]\((?:https?://|www\.)[^)\s]*\)\\?\]?")
AUTHOR_YEAR_CITE_RE = re.compile(
    r"(?:(?<!\s)\s++)?\((?:see\s+|e\.g\.,?\s+)?[A-Z][A-Za-z'\-]+(?:\s+(?:et\s+al\.?|and|&)\s*[A-Z]?[A-Za-z'\-]*)?,?\s+"
    r"(?:19|20)\d\d[a-z]?(?:\s*;\s*[A-Z][A-Za-z'\-]+(?:\s+(?:et\s+al\.?|and|&)\s*[A-Z]?[A-Za-z'\-]*)?,?\s+"
    r"(?:19|20)\d\d[a-z]?)*\)"
)
CITATION_PATTERNS: tuple[re.Pattern[str], ...] = (
    LATEX_CITE_RE, MARKDOWN_LINK_CITE_RE, NUMERIC_CITE_RE, AUTHOR_YEAR_CITE_RE,
)  # fmt: skip

LATEX_HEADING_RE = re.compile(r"^\s*\\(?:sub)*(?:section|paragraph|chapter)\*?\{([^}]*)\}\s*(.*)$")
MARKDOWN_HEADING_RE = re.compile(r"^\s*#{1,6}\s+\S")
BOLD_HEADING_RE = re.compile(r"^\s*\*\*[^*\n]{2,80}\*\*:?\s*$")
LATEX_TEXT_CMD_RE = re.compile(r"\\(?:textbf|textit|emph|texttt|textsc|mathrm|mathbf|underline)\{([^{}]*)\}")
LATEX_OTHER_CMD_RE = re.compile(r"\\(?:label|ref|eqref|url|footnote)\{[^{}]*\}")

# Abbreviations whose period does not end a sentence.
_ABBREVIATIONS = (
    "et al.", "e.g.", "i.e.", "cf.", "vs.", "Fig.", "Figs.", "Eq.", "Eqs.", "Sec.", "Tab.", "No.", "approx.",
    "resp.", "etc.", "Dr.", "Mr.", "Ms.", "Prof.", "St.", "Inc.", "Jr.", "al.", "Ref.", "Refs.", "Vol.",
)  # fmt: skip
_ABBREV_RE = re.compile("|".join(re.escape(a) for a in sorted(_ABBREVIATIONS, key=len, reverse=True)))
_INITIAL_RE = re.compile(r"\b([A-Z])\.(?=\s+[A-Z])")
_DOT_PLACEHOLDER = "\u2024"  # one-dot leader: a period that must not split
_SENTENCE_BOUNDARY_RE = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]*[A-Z0-9\\])")
TOKEN_RE = re.compile(r"[a-z0-9]+")
_VOWEL_RE = re.compile(r"[aeiouy]")
_UNSTEMMED = frozenset({"bias", "alias", "atlas", "canvas", "gas", "lens", "news", "series", "species"})


def round_score(x: float) -> float:
    """Scores are rounded before any threshold so float noise can never flip a verdict."""
    return round(float(x), SCORE_DECIMALS)


# ---------------------------------------------------------------------------------------------------------
# Cleaning, citations, sentences


def normalize_text(text: str) -> str:
    """NFKC, LaTeX text commands unwrapped, comments and non-breaking ties removed."""
    text = unicodedata.normalize("NFKC", text or "")
    text = re.sub(r"(?<!\\)%[^\n]*", "", text)  # LaTeX comments
    text = LATEX_OTHER_CMD_RE.sub("", text)
    for _ in range(3):  # nested \textbf{\emph{x}}
        text = LATEX_TEXT_CMD_RE.sub(r"\1", text)
    return text.replace("~", " ").replace("\\&", "&").replace("\\%", "%")


def has_citation(text: str) -> bool:
    """True when the text carries an inline citation marker ([3], \\cite{k}, (Smith et al., 2020), links)."""
    return any(p.search(text or "") for p in CITATION_PATTERNS)


def strip_citations(text: str) -> str:
    """Remove citation markers so they never count as words, numbers or evidence."""
    out = text or ""
    for pattern in CITATION_PATTERNS:
        out = pattern.sub("", out)
    return re.sub(r"[ \t]+", " ", re.sub(r"\s+([.,;:!?])", r"\1", out)).strip()


def count_citations(text: str) -> int:
    """Number of citation markers (a \\cite{a,b} or [1, 2] counts once): a paragraph-level signal."""
    return sum(len(p.findall(text or "")) for p in CITATION_PATTERNS)


def is_heading_line(line: str) -> bool:
    return bool(
        LATEX_HEADING_RE.match(line) or MARKDOWN_HEADING_RE.match(line) or BOLD_HEADING_RE.match(line)
    )


def split_paragraphs(text: str) -> list[list[str]]:
    """Blank-line separated blocks, each a list of its lines; heading lines become blocks of their own.

    Hard-wrapped lines (LaTeX sources) stay in one paragraph; headings must not glue onto the next sentence.
    """
    paragraphs: list[list[str]] = []
    current: list[str] = []
    for raw_line in (text or "").splitlines():
        line = raw_line.strip()
        if not line:
            if current:
                paragraphs.append(current)
                current = []
            continue
        if is_heading_line(line):
            if current:
                paragraphs.append(current)
                current = []
            latex = LATEX_HEADING_RE.match(line)
            if latex and latex.group(2).strip():  # "\subsection{X} text on the same line"
                paragraphs.append([f"\\section{{{latex.group(1)}}}"])
                current = [latex.group(2).strip()]
            else:
                paragraphs.append([line])
            continue
        current.append(line)
    if current:
        paragraphs.append(current)
    return paragraphs


def split_sentences(text: str) -> list[str]:
    """Regex sentence splitter aware of 'et al.', 'e.g.', decimals and initials; headings stand alone.

    A 'Title: ...' line (the reference format of the support task) is its own sentence.
    """
    sentences: list[str] = []
    for block in split_paragraphs(normalize_text(text)):
        if len(block) == 1 and is_heading_line(block[0]):
            sentences.append(block[0])
            continue
        lines = list(block)
        if lines and lines[0].lower().startswith("title:"):
            sentences.append(lines[0])
            lines = lines[1:]
        sentences.extend(_split_prose(" ".join(lines)))
    return [s for s in sentences if s.strip()]


def _split_prose(prose: str) -> list[str]:
    protected = _ABBREV_RE.sub(lambda m: m.group(0).replace(".", _DOT_PLACEHOLDER), prose)
    protected = _INITIAL_RE.sub(lambda m: m.group(1) + _DOT_PLACEHOLDER, protected)
    parts = _SENTENCE_BOUNDARY_RE.split(protected)
    return [p.replace(_DOT_PLACEHOLDER, ".").strip() for p in parts if p.strip()]


def sentence_windows(sentences: Sequence[str], max_size: int = 2) -> list[str]:
    """All runs of 1..max_size consecutive sentences: support may span two sentences of a source."""
    windows: list[str] = []
    for size in range(1, max(1, max_size) + 1):
        for start in range(0, len(sentences) - size + 1):
            windows.append(" ".join(sentences[start : start + size]))
    return windows


# ---------------------------------------------------------------------------------------------------------
# Tokens


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Light suffix stemmer (plural, -ing/-ed, -ation/-ization, -ly, final -e).

    Deliberately conservative: it only has to make 'retrieves/retrieved/retrieval...' meet more often than
    not, and must stay stable across library versions (so no nltk/Porter dependency).
    """
    w = word
    if len(w) <= 2 or w.isdigit() or w in _UNSTEMMED:
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("es") and w[:-2].endswith(("s", "x", "z", "ch", "sh")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > 3:
        w = w[:-1]
    for suffix in ("ing", "ed"):
        rest = w[: -len(suffix)]
        if w.endswith(suffix) and len(rest) >= 2 and _VOWEL_RE.search(rest) and not w.endswith("eed"):
            w = rest
            if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "sz" and (w[-1] != "l" or len(w) >= 6):
                w = w[:-1]  # running -> run, modelling -> model
            break
    for suffix, replacement in (("ization", "iz"), ("isation", "iz"), ("ation", "at"), ("val", "v")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)] + replacement
            break
    if w.endswith("ly") and len(w) >= 6:
        w = w[:-2]
    if w.endswith("e") and len(w) >= 3:
        w = w[:-1]
    return w


_STOP_STEMS = frozenset(stem(w) for w in SCHOLARLY_STOP_WORDS)


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens of the citation-free, normalized text."""
    return TOKEN_RE.findall(strip_citations(normalize_text(text)).lower())


def content_tokens(text: str) -> list[str]:
    """Stemmed tokens without stop words (general + scholarly boilerplate) and without 1-letter tokens."""
    out: list[str] = []
    for token in tokenize(text):
        if token in ENGLISH_STOP_WORDS or token in SCHOLARLY_STOP_WORDS:
            continue
        if len(token) < 2 and not token.isdigit():
            continue
        stemmed = stem(token)
        if stemmed in _STOP_STEMS:
            continue
        out.append(stemmed)
    return out


def token_recall(hypothesis: Sequence[str], premise: Iterable[str]) -> float:
    """Share of the hypothesis's distinct content tokens that appear in the premise (0 if none)."""
    wanted = set(hypothesis)
    if not wanted:
        return 0.0
    return len(wanted & set(premise)) / len(wanted)


def token_set_similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """rapidfuzz token_set_ratio on content tokens, in [0, 1] (1 when one token set contains the other)."""
    if not a or not b:
        return 0.0
    return fuzz.token_set_ratio(" ".join(sorted(set(a))), " ".join(sorted(set(b)))) / 100.0


# ---------------------------------------------------------------------------------------------------------
# TF-IDF space fitted on the few texts of one judgment


@dataclass(frozen=True)
class LexicalSpace:
    """Smoothed TF-IDF (sublinear tf) over a small local collection, e.g. one source's sentences + a claim.

    Local IDF is noisy but has no hidden corpus: a term shared by every sentence of the source weighs less
    than a rare one, which is the only job it has here.
    """

    idf: Mapping[str, float]
    default_idf: float

    @classmethod
    def fit(cls, documents: Iterable[Sequence[str]]) -> LexicalSpace:
        docs = [set(d) for d in documents]
        n = len(docs)
        df: Counter[str] = Counter()
        for d in docs:
            df.update(d)
        idf = {t: math.log((1 + n) / (1 + c)) + 1.0 for t, c in sorted(df.items())}
        return cls(idf=idf, default_idf=math.log(1 + n) + 1.0)

    def vector(self, tokens: Sequence[str]) -> dict[str, float]:
        counts = Counter(tokens)
        return {t: (1.0 + math.log(c)) * self.idf.get(t, self.default_idf) for t, c in sorted(counts.items())}

    def cosine(self, a: Sequence[str], b: Sequence[str]) -> float:
        return cosine(self.vector(a), self.vector(b))


def cosine(u: Mapping[str, float], v: Mapping[str, float]) -> float:
    """Cosine of two sparse vectors, summed in sorted key order (bit-stable)."""
    if not u or not v:
        return 0.0
    dot = sum(u[k] * v[k] for k in sorted(u.keys() & v.keys()))
    nu = math.sqrt(sum(u[k] * u[k] for k in sorted(u)))
    nv = math.sqrt(sum(v[k] * v[k] for k in sorted(v)))
    return 0.0 if nu == 0 or nv == 0 else max(0.0, min(1.0, dot / (nu * nv)))


# ---------------------------------------------------------------------------------------------------------
# Guards against the crudest lexical false positives


def negation_count(text: str) -> int:
    """Negation cues (not/no/never/cannot/without/none/neither/nor/n't); 'not only' is not a negation."""
    return len(NEGATION_RE.findall(NOT_ONLY_RE.sub(" ", strip_citations(text or ""))))


def quantities(text: str) -> frozenset[str]:
    """Normalized quantities ('1,000' -> '1000', '10.0' -> '10', 'ten' -> '10'); years are ignored."""
    clean = strip_citations(normalize_text(text))
    found: set[str] = set()
    for match in QUANTITY_RE.findall(clean):
        value = match.replace(",", "")
        if "." in value:
            value = value.rstrip("0").rstrip(".")
        if not YEAR_RE.match(value):
            found.add(value)
    found.update(NUMBER_WORDS[m.lower()] for m in NUMBER_WORD_RE.findall(clean))
    return frozenset(found)


def absolute_words(text: str) -> frozenset[str]:
    return frozenset(t for t in tokenize(text) if t in ABSOLUTE_WORDS)


# ---------------------------------------------------------------------------------------------------------
# The support score S(h, source): used by support, nugget assignment and important-reference rules


@dataclass(frozen=True)
class SupportScore:
    """S(h, source) and the signals of the best window (all rounded to 4 decimals)."""

    score: float
    recall: float
    cosine: float
    token_set: float
    guard: float
    guards_fired: tuple[str, ...] = ()
    best_window: str = ""
    windows: int = 0

    def signals(self) -> dict[str, float]:
        return {
            "S": self.score,
            "recall": self.recall,
            "cosine": self.cosine,
            "token_set": self.token_set,
            "guard": self.guard,
        }

    def describe(self) -> str:
        fired = ",".join(self.guards_fired) or "none"
        window = self.best_window if len(self.best_window) <= 160 else self.best_window[:157] + "..."
        return (
            f"S={self.score:.4f} (recall={self.recall:.4f}, cos={self.cosine:.4f}, "
            f"token_set={self.token_set:.4f}, guard={self.guard:.4f} [{fired}]); "
            f"best of {self.windows} window(s): {window!r}"
        )


@dataclass(frozen=True)
class SupportParams:
    """Weights of S; thresholds live with each task (they are what calibration changes)."""

    tfidf_weight: float = 0.5
    window_sentences: int = 2
    number_guard: float = 1.0
    negation_guard: float = 1.0
    absolute_guard: float = 0.5
    # The semantic judge's knobs as sorted (name, value) pairs (hashable); None = the lexical judge.
    semantic: tuple[tuple[str, Any], ...] | None = None


@dataclass(frozen=True)
class PreparedSource:
    """A source split once into sentences and windows, with the per-window features S needs."""

    sentence_tokens: tuple[tuple[str, ...], ...]
    windows: tuple[str, ...]
    window_tokens: tuple[tuple[str, ...], ...]
    window_negations: tuple[int, ...]
    quantities: frozenset[str]
    absolute_words: frozenset[str]


@lru_cache(maxsize=512)
def prepare_source(source: str, window_sentences: int = 2) -> PreparedSource:
    """Cached: nugget assignment scores many nuggets against the same passage."""
    sentences = split_sentences(source)
    windows = sentence_windows(sentences, window_sentences)
    return PreparedSource(
        sentence_tokens=tuple(tuple(content_tokens(x)) for x in sentences),
        windows=tuple(windows),
        window_tokens=tuple(tuple(content_tokens(w)) for w in windows),
        window_negations=tuple(negation_count(w) for w in windows),
        quantities=quantities(source),
        absolute_words=absolute_words(source),
    )


def lexical_support_score(hypothesis: str, source: str, params: SupportParams | None = None) -> SupportScore:
    """S(h, source) = max over 1..k-sentence windows w of sqrt(recall) · lex_cos · (1 − guard).

    lex_cos = w·TF-IDF cosine + (1−w)·token_set similarity; guard = max of the fired guards:
    a quantity in h absent from the whole source, a different negation-cue count between h and w,
    an absolute word ('first', 'all', 'only', ...) in h that the source never uses.
    With `params.semantic` set, use judges/scores.support_score (it picks the semantic score).
    """
    p = params or SupportParams()
    if p.semantic is not None:
        raise ValueError("semantic SupportParams: call reportbench.judges.scores.support_score")
    h_tokens = content_tokens(hypothesis)
    src = prepare_source(source or "", p.window_sentences)
    if not h_tokens or not src.windows:
        return SupportScore(0.0, 0.0, 0.0, 0.0, 0.0, (), "", len(src.windows))
    space = LexicalSpace.fit([h_tokens, *src.sentence_tokens])

    source_guards: list[tuple[str, float]] = []
    missing_numbers = sorted(quantities(hypothesis) - src.quantities)
    if missing_numbers:
        source_guards.append((f"number:{'/'.join(missing_numbers)}", p.number_guard))
    missing_absolute = sorted(absolute_words(hypothesis) - src.absolute_words)
    if missing_absolute:
        source_guards.append((f"absolute:{'/'.join(missing_absolute)}", p.absolute_guard))
    h_negations = negation_count(hypothesis)

    best: SupportScore | None = None
    for window, w_tokens, w_negations in zip(
        src.windows, src.window_tokens, src.window_negations, strict=True
    ):
        rec = round_score(token_recall(h_tokens, w_tokens))
        cos = round_score(space.cosine(h_tokens, w_tokens))
        tset = round_score(token_set_similarity(h_tokens, w_tokens))
        lex = p.tfidf_weight * cos + (1.0 - p.tfidf_weight) * tset
        guards = list(source_guards)
        if w_negations != h_negations:
            guards.append((f"negation:{h_negations}vs{w_negations}", p.negation_guard))
        guard = round_score(max((g for _, g in guards), default=0.0))
        score = round_score(math.sqrt(rec) * lex * (1.0 - guard))
        candidate = SupportScore(
            score, rec, cos, tset, guard, tuple(name for name, _ in guards), window, len(src.windows)
        )
        # Ties keep the earliest (shortest) window: iteration order is fixed, so this is deterministic.
        if best is None or (candidate.score, candidate.recall) > (best.score, best.recall):
            best = candidate
    assert best is not None
    return best


support_score = lexical_support_score  # the lexical score by its old name (judges/scores.py dispatches)
