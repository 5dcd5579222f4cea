"""Punkt's sentence spans, decided by Punkt's own rules and parameters without its per-token objects.

Why: `PunktSentenceTokenizer.span_tokenize` decides each candidate stop ("word. Next") by building a
`PunktToken` per word of the context, passing them through two chained generators and reading properties that
each re-run a regex; that bookkeeping was ~60 % of a report's sentence splitting. `punkt_spans` walks the same
candidates (the tokenizer's own `period_context_re`), tokenizes each context with the tokenizer's own word
pattern, and applies the same first- and second-pass rules with the same trained parameters (abbreviations,
collocations, sentence starters, orthographic context) and the same token patterns, on plain strings. The spans
are the same spans: `tests/test_parse_equivalence.py` compares them with nltk's on the real corpora and on
generated contexts full of abbreviations, initials, numbers, ellipses and collocations.

It reads the nltk 3.9/3.10 `punkt` module's internals; `make_spans` checks they are where it expects them and
returns None otherwise (the caller then uses nltk's `span_tokenize` itself).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

_WHITESPACE = " \t\n\r\x0b\x0c"  # string.whitespace, the set Punkt's _get_last_whitespace_index looks for
# a context Punkt always breaks (see contains_sentbreak): ASCII only, so no Unicode case or class subtleties; the
# blank after the stop is one that both `re` and Punkt's `regex` patterns call whitespace, and no "." follows it
_SIMPLE_STOP = re.compile(r"([A-Za-z][A-Za-z0-9]+)([.?!])[ \t\n\r](?!\.)")


def make_spans(punkt: Any, tokenizer: Any) -> Callable[[str], Iterator[tuple[int, int]]] | None:
    """A function equal to `tokenizer.span_tokenize` (realigned), or None when this nltk's Punkt differs from
    the one it was written against."""
    lang_vars = tokenizer._lang_vars
    params = tokenizer._params
    token_cls = getattr(punkt, "PunktToken", None)
    needed = (
        hasattr(lang_vars, "period_context_re"),
        hasattr(lang_vars, "_word_tokenizer_re"),
        hasattr(lang_vars, "re_boundary_realignment"),
        tuple(getattr(lang_vars, "sent_end_chars", ())) == (".", "?", "!"),
        tuple(getattr(tokenizer, "PUNCTUATION", ())) == tuple(";:,.!?"),
        token_cls is not None and all(hasattr(token_cls, n) for n in ("_RE_ELLIPSIS", "_RE_NUMERIC", "_RE_INITIAL")),
        all(hasattr(punkt, n) for n in ("_ORTHO_LC", "_ORTHO_UC", "_ORTHO_MID_UC", "_ORTHO_BEG_LC")),
        type(tokenizer).span_tokenize is punkt.PunktSentenceTokenizer.span_tokenize,
        type(tokenizer).text_contains_sentbreak is punkt.PunktSentenceTokenizer.text_contains_sentbreak,
        type(tokenizer)._second_pass_annotation is punkt.PunktSentenceTokenizer._second_pass_annotation,
        type(tokenizer)._ortho_heuristic is punkt.PunktSentenceTokenizer._ortho_heuristic,
        type(tokenizer)._first_pass_annotation is punkt.PunktBaseClass._first_pass_annotation,
        tokenizer._Token is token_cls,
    )
    if not all(needed):
        return None

    period_context = lang_vars.period_context_re()
    word_findall = lang_vars._word_tokenizer_re().findall
    realign_match = lang_vars.re_boundary_realignment.match
    ellipsis_match = token_cls._RE_ELLIPSIS.match
    numeric_sub = token_cls._RE_NUMERIC.sub
    initial_match = token_cls._RE_INITIAL.match
    abbrev_types = params.abbrev_types
    collocations = params.collocations
    sent_starters = params.sent_starters
    ortho_context = params.ortho_context
    ortho_lc, ortho_uc = punkt._ORTHO_LC, punkt._ORTHO_UC
    ortho_mid_uc, ortho_beg_lc = punkt._ORTHO_MID_UC, punkt._ORTHO_BEG_LC
    punctuation = frozenset(";:,.!?")
    collocation_firsts = frozenset(first for first, _ in collocations)

    def first_pass(tok: str) -> tuple[str, bool, bool, bool]:
        """(type, sentbreak, abbr or ellipsis, period_final): `PunktToken(tok)` after `_first_pass_annotation`."""
        typ = numeric_sub("##number##", tok.lower())
        period_final = tok.endswith(".")
        if tok in (".", "?", "!"):
            return typ, True, False, period_final
        if ellipsis_match(tok):
            return typ, False, True, period_final
        if period_final and not tok.endswith(".."):
            stem = tok[:-1].lower()
            if stem in abbrev_types or stem.split("-")[-1] in abbrev_types:
                return typ, False, True, period_final
            return typ, True, False, period_final
        return typ, False, False, period_final

    def ortho_heuristic(tok: str, typ_no_sentperiod: str) -> bool | str:
        """`_ortho_heuristic`: True, False or "unknown" (a lookup that is absent counts as 0, as in the defaultdict)."""
        if tok in punctuation:
            return False
        context = ortho_context.get(typ_no_sentperiod, 0)
        first = tok[0]
        if first.isupper() and (context & ortho_lc) and not (context & ortho_mid_uc):
            return True
        if first.islower() and ((context & ortho_uc) or not (context & ortho_beg_lc)):
            return False
        return "unknown"

    def contains_sentbreak(context: str) -> bool:
        """`tokenizer.text_contains_sentbreak(context)`: a token other than the last is a break after both passes."""
        simple = _SIMPLE_STOP.match(context)
        if simple is not None and context[simple.end() :].strip():
            # "word. Next", "word? next": the word is one token ending at the stop (an ASCII word of 2+ characters
            # starting with a letter: no initial, no number, no ellipsis; the stop is not the start of ". . ."),
            # a "?"/"!" or a word that is no abbreviation is a first-pass break, and the second pass can only
            # undo it through a collocation starting with this word; a token follows. So: a break, unless the
            # word opens a known collocation (then the general rules below decide).
            word = simple.group(1).lower()
            if simple.group(2) != "." or (word not in abbrev_types and word not in collocation_firsts):
                return True
        toks: list[str] = []
        for line in context.split("\n"):
            if line.strip():
                toks.extend(word_findall(line))
        if len(toks) < 2:
            return False
        annotated = [first_pass(t) for t in toks]
        for i in range(len(toks) - 1):
            typ1, sentbreak, abbr_or_ellipsis, period_final = annotated[i]
            if period_final:  # `_second_pass_annotation` only changes words ending in a period
                tok1, tok2 = toks[i], toks[i + 1]
                typ2, sentbreak2, _, _ = annotated[i + 1]
                typ = typ1[:-1] if len(typ1) > 1 and typ1[-1] == "." else typ1
                next_typ = (typ2[:-1] if len(typ2) > 1 and typ2[-1] == "." else typ2) if sentbreak2 else typ2
                initial = initial_match(tok1)
                if (typ, next_typ) in collocations:
                    continue  # sentbreak = False
                decided = False
                if abbr_or_ellipsis and not initial:
                    ortho = ortho_heuristic(tok2, next_typ)
                    if ortho is True or (tok2[0].isupper() and next_typ in sent_starters):
                        sentbreak, decided = True, True
                if not decided and (initial or typ == "##number##"):
                    ortho = ortho_heuristic(tok2, next_typ)
                    if ortho is False:
                        sentbreak = False
                    elif (
                        ortho == "unknown"
                        and initial
                        and tok2[0].isupper()
                        and not (ortho_context.get(next_typ, 0) & ortho_lc)
                    ):
                        sentbreak = False
            if sentbreak:
                return True
        return False

    def slices(text: str) -> Iterator[tuple[int, int]]:
        """`_slices_from_text` over `_match_potential_end_contexts`, as (start, stop) pairs."""
        last_break = 0
        prev_start = prev_stop = 0
        prev_match = None

        def decide(match: Any, context: str) -> tuple[int, int] | None:
            nonlocal last_break
            if contains_sentbreak(context):
                piece = (last_break, match.end())
                last_break = match.start("next_tok") if match.group("next_tok") else match.end()
                return piece
            return None

        for match in period_context.finditer(text):
            start = match.start()
            # the last whitespace character of text[prev_stop:start] (Punkt's `before_text`), read in place
            index = text.rfind(" ", prev_stop, start)
            if not text[max(index + 1, prev_stop) : start].isprintable():  # another one may follow the last space
                index = max(text.rfind(c, prev_stop, start) for c in _WHITESPACE)
            if index > prev_stop:  # Punkt: a last whitespace at 0 of before_text counts as none
                index += 1
            else:
                index = prev_start
            if prev_match is not None and prev_stop <= index:
                piece = decide(
                    prev_match, text[prev_start:prev_stop] + prev_match.group() + prev_match.group("after_tok")
                )
                if piece is not None:
                    yield piece
            prev_match, prev_start, prev_stop = match, index, start
        if prev_match is not None:
            piece = decide(prev_match, text[prev_start:prev_stop] + prev_match.group() + prev_match.group("after_tok"))
            if piece is not None:
                yield piece
        yield (last_break, len(text.rstrip()))

    def spans(text: str) -> Iterator[tuple[int, int]]:
        """`_realign_boundaries(text, _slices_from_text(text))` as `span_tokenize` yields it."""
        realign = 0
        previous: tuple[int, int] | None = None
        for current in slices(text):
            if previous is not None:
                start1, stop1 = previous[0] + realign, previous[1]
                m = realign_match(text[current[0] : current[1]])
                if m:
                    yield (start1, current[0] + len(m.group(0).rstrip()))
                    realign = m.end()
                else:
                    realign = 0
                    if text[start1:stop1]:
                        yield (start1, stop1)
            previous = current
        if previous is not None:
            start1, stop1 = previous[0] + realign, previous[1]
            if text[start1:stop1]:
                yield (start1, stop1)

    return spans
