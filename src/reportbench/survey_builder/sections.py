"""Stage `sections`: the paper's section-selection rules (A.1), every drop recorded with its reason.

Rules, in this order (the first that applies is the recorded reason): a section after `\\appendix`; a title that
contains a blacklisted word (substring match, as the paper words it: "drop the section if its title contains
any of"); more than `max_chars` characters; fewer than `min_chars`; fewer than `min_sentences` sentences;
fewer than `min_citations` in-text citations. Lengths and sentences are measured on the plain text (LaTeX
markup, floats and display math removed; citations as `[key]` markers), which is what the generator reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from reportbench.live_builder.latex import BibEntry, PaperSection, delatex
from reportbench.survey_builder.config import SectionParams
from reportbench.survey_builder.records import Drop
from reportbench.survey_builder.surveys import SurveyRecord
from reportbench.survey_builder.text import latex_to_text, split_plain_sentences

STAGE = "sections"
DROP_REASONS = ("appendix", "title_blacklist", "too_long", "too_short", "too_few_sentences", "too_few_citations")


class SectionRecord(BaseModel):
    """A kept section: its text as numbered sentences, the references it cites, its survey's metadata."""

    model_config = ConfigDict(extra="forbid")

    section_id: str
    survey_id: str
    survey_title: str
    date: str
    general_domain: str
    subdomain: str
    field: str
    title: str
    text: str
    sentences: list[str]
    n_citations: int
    cite_keys: list[str]
    references: list[str]  # "[key] Authors (Year). Title." for every cited key with a bibliography entry


def section_id(survey_id: str, index: int) -> str:
    return f"{survey_id}-s{index}"


def reference_line(e: BibEntry) -> str:
    authors = ", ".join(delatex(a) or a for a in e.authors[:3]) + (" et al." if len(e.authors) > 3 else "")
    return f"[{e.key}] {authors or 'Unknown'} ({e.year or 'n.d.'}). {delatex(e.title) or '(untitled)'}"


def blacklisted(title: str, blacklist: Iterable[str]) -> str | None:
    t = title.casefold()
    for word in blacklist:
        if word.casefold() in t:
            return word
    return None


def select_section(
    sec: PaperSection, params: SectionParams
) -> tuple[str, list[str]] | tuple[str, str]:
    """("ok", sentences) with the text measured, or (reason_code, reason)."""
    if sec.in_appendix:
        return "appendix", "section is after \\appendix"
    word = blacklisted(sec.title, params.title_blacklist)
    if word is not None:
        return "title_blacklist", f"title {sec.title!r} contains {word!r}"
    text = latex_to_text(sec.raw)
    if len(text) > params.max_chars:
        return "too_long", f"{len(text)} characters > {params.max_chars}"
    if len(text) < params.min_chars:
        return "too_short", f"{len(text)} characters < {params.min_chars}"
    sentences = split_plain_sentences(text)
    if len(sentences) < params.min_sentences:
        return "too_few_sentences", f"{len(sentences)} sentences < {params.min_sentences}"
    if sec.n_citations < params.min_citations:
        return "too_few_citations", f"{sec.n_citations} in-text citations < {params.min_citations}"
    return "ok", sentences


def select_sections(surveys: Sequence[SurveyRecord], params: SectionParams) -> tuple[list[SectionRecord], list[Drop]]:
    kept: list[SectionRecord] = []
    drops: list[Drop] = []
    for s in surveys:
        bib = {e.key.casefold(): e for e in s.bib_entries}
        for sec in s.sections:
            sid = section_id(s.listing.survey_id, sec.index)
            code, detail = select_section(sec, params)
            if code != "ok":
                drops.append(Drop(item_id=sid, kind="section", stage=STAGE, reason_code=code, reason=str(detail)))
                continue
            sentences = list(detail)
            refs = [reference_line(e) for k in sec.cite_keys if (e := bib.get(k.casefold())) is not None and e.title]
            kept.append(
                SectionRecord(
                    section_id=sid,
                    survey_id=s.listing.survey_id,
                    survey_title=s.listing.title,
                    date=s.listing.publication_date,
                    general_domain=s.listing.general_domain,
                    subdomain=s.listing.subdomain,
                    field=s.listing.field,
                    title=sec.title,
                    text=" ".join(sentences),
                    sentences=sentences,
                    n_citations=sec.n_citations,
                    cite_keys=sec.cite_keys,
                    references=refs,
                )
            )
    return kept, drops


def section_rows(records: Iterable[SectionRecord]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in sorted(records, key=lambda r: r.section_id)]
