"""Stage `surveys`: recent surveys from OpenAlex, checked as literature reviews, with their arXiv LaTeX full text.

1. **Listing** (pyalex over the shared `CachingSession`: timeouts, retries, pacing, cache): works of the configured
   types published in the window whose title matches one of the keywords (`title.search` with a boolean OR of
   quoted phrases), optionally only those with an arXiv location, one query per configured OpenAlex field,
   newest first, capped. The paper used Crossref / Semantic Scholar / S2ORC over Google-Scholar venues
   (spec §1.2); OpenAlex gives the same keyword search plus a topic hierarchy and open-access locations.
2. **Local checks**, each drop recorded: the keyword really is in the title (OpenAlex stems, so "surveying"
   matches `survey`), the date is in the window, the language is kept, a primary topic exists and maps to a
   domain, an arXiv copy
   exists (we parse LaTeX only: other open formats have no well-kept parser here).
3. **Literature-review check** (the paper's classifier, P3) through the judge layer, on title + abstract,
   before any download (it is cheaper than an e-print request at arXiv's 3 s pace).
4. **Full text**: the arXiv e-print through the same session and the live builder's safe extraction
   (`latex.extract_sections`): every section, its cite keys, and the bibliography entries they resolve to.

The topic hierarchy: general_domain = `domain_map[OpenAlex field]` (else the OpenAlex domain's default),
subdomain = the OpenAlex field, field = the OpenAlex subfield of the work's primary topic.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from pydantic import BaseModel, ConfigDict

from reportbench.citations import pyalex_session
from reportbench.live_builder.latex import BibEntry, LatexConfig, PaperSection, extract_sections
from reportbench.live_builder.recover import _abstract, work_arxiv_id
from reportbench.live_builder.sources_stage import download_source, sniff
from reportbench.net import redact_url
from reportbench.survey_builder.config import SurveyConfig
from reportbench.survey_builder.records import BuildError, Drop, JudgeLog, parsed
from reportbench.survey_builder.tasks import SURVEY_CHECK, SurveyCheckInput
from reportbench.survey_builder.text import matched_keywords

log = logging.getLogger(__name__)

STAGE = "surveys"
SELECT = [
    "id", "doi", "display_name", "publication_date", "type", "primary_topic", "locations", "abstract_inverted_index",
    "ids", "language",
]  # fmt: skip
# OpenAlex's four domains -> the release's general domains, when a field is not in `domain_map`.
DOMAIN_FALLBACK = {
    "Health Sciences": "Health Sciences & Medicine",
    "Life Sciences": "Life & Earth Sciences",
    "Physical Sciences": "Physical & Theoretical Sciences",
    "Social Sciences": "Social Sciences",
}
DROP_REASONS = (
    "bad_entry", "no_title_keyword", "outside_window", "wrong_type", "language", "no_topic", "unmapped_field",
    "no_open_fulltext", "not_a_review", "check_failed", "not_downloaded", "download_failed", "no_latex_source",
    "extract_failed", "no_tex", "no_sections",
)  # fmt: skip


class ListedSurvey(BaseModel):
    """One OpenAlex work that passed the listing checks, with its place in the release's hierarchy."""

    model_config = ConfigDict(extra="forbid")

    survey_id: str  # OpenAlex short id, e.g. W4400000001 (query ids are <survey_id>-s<section index>)
    openalex_id: str
    doi: str | None
    title: str
    abstract: str
    publication_date: str
    work_type: str
    language: str | None
    arxiv_id: str
    general_domain: str
    subdomain: str
    field: str
    topic: str
    query_field: str | None  # the configured OpenAlex field whose query listed it first


class SurveyRecord(BaseModel):
    """A kept survey: listing, review verdict, and its full text as sections + bibliography."""

    model_config = ConfigDict(extra="forbid")

    listing: ListedSurvey
    review_reason: str
    source_url: str
    source_sha256: str
    main_file: str | None
    sections: list[PaperSection]
    bib_entries: list[BibEntry]
    unresolved_keys: list[str]


@dataclass
class SurveyResult:
    kept: list[SurveyRecord] = field(default_factory=list)
    drops: list[Drop] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    per_field: dict[str, int] = field(default_factory=dict)
    listed: int = 0


def _drop(out: SurveyResult, sid: str, code: str, reason: str) -> None:
    out.drops.append(Drop(item_id=sid, kind="survey", stage=STAGE, reason_code=code, reason=reason))


def short_id(openalex_id: str) -> str:
    return openalex_id.rstrip("/").rsplit("/", 1)[-1]


def hierarchy(topic: dict[str, Any] | None, domain_map: dict[str, str]) -> tuple[str, str, str, str] | str:
    """(general_domain, subdomain, field, topic) from a primary topic, or the reason it cannot be mapped."""
    if not isinstance(topic, dict) or not topic:
        return "no_topic"

    def name(key: str) -> str:
        node = topic.get(key)
        return " ".join(str((node or {}).get("display_name") or "").split()) if isinstance(node, dict) else ""

    fld, sub, dom = name("field"), name("subfield"), name("domain")
    if not fld or not sub:
        return "no_topic"
    general = domain_map.get(fld) or DOMAIN_FALLBACK.get(dom)
    if not general:
        return "unmapped_field"
    return general, fld, sub, " ".join(str(topic.get("display_name") or "").split())


def build_query(cfg: SurveyConfig, field_id: str | None) -> Any:
    """The pyalex query for one field (or all): types, window, title keywords, optional arXiv location."""
    from pyalex import Works

    q = Works().filter_or(type=list(cfg.work_types)).filter(
        from_publication_date=cfg.window.start.isoformat(), to_publication_date=cfg.window.end.isoformat()
    )
    if field_id:  # the API's documented form is the bare number: primary_topic.field.id:17
        q = q.filter(primary_topic={"field": {"id": field_id.rsplit("/", 1)[-1]}})
    if cfg.arxiv_source_id:
        q = q.filter(locations={"source": {"id": cfg.arxiv_source_id}})
    keywords = " OR ".join(f'"{k}"' for k in cfg.title_keywords)
    return q.search_filter(title=keywords).select(SELECT).sort(publication_date="desc")


def listing_checks(work: dict[str, Any], cfg: SurveyConfig, query_field: str | None) -> ListedSurvey | tuple[str, str]:
    """A ListedSurvey, or (reason_code, reason) for a work that cannot be used."""
    title = " ".join(str(work.get("display_name") or "").split())
    found = matched_keywords(title, cfg.title_keywords)
    if not found:
        return "no_title_keyword", f"title {title[:120]!r} contains none of {cfg.title_keywords}"
    date = str(work.get("publication_date") or "")
    if not (cfg.window.start.isoformat() <= date[:10] <= cfg.window.end.isoformat()):
        return "outside_window", f"publication_date {date!r} is outside {cfg.window.start}..{cfg.window.end}"
    wtype = str(work.get("type") or "")
    if wtype not in cfg.work_types:
        return "wrong_type", f"work type {wtype!r} is not one of {cfg.work_types}"
    lang = work.get("language")
    if cfg.languages is not None and lang not in cfg.languages:
        return "language", f"OpenAlex language {lang!r} is not one of {cfg.languages}"
    mapped = hierarchy(work.get("primary_topic"), cfg.domain_map)
    if mapped == "no_topic":
        return "no_topic", "OpenAlex gives no primary topic with a field and subfield"
    if isinstance(mapped, str):
        fld = ((work.get("primary_topic") or {}).get("field") or {}).get("display_name")
        return "unmapped_field", f"OpenAlex field {fld!r} is not in live_researchqa.domain_map"
    arxiv_id = work_arxiv_id(work)
    if not arxiv_id:
        return "no_open_fulltext", "no arXiv location (only arXiv LaTeX full text is parsed)"
    general, sub, fld, topic = mapped
    return ListedSurvey(
        survey_id=short_id(str(work["id"])),
        openalex_id=str(work["id"]),
        doi=work.get("doi"),
        title=title,
        abstract=_abstract(work.get("abstract_inverted_index")) or "",
        publication_date=date[:10],
        work_type=wtype,
        language=work.get("language"),
        arxiv_id=arxiv_id,
        general_domain=general,
        subdomain=sub,
        field=fld,
        topic=topic,
        query_field=query_field,
    )


def list_surveys(
    cfg: SurveyConfig, session: requests.Session, *, api_key: str | None, mailto: str | None
) -> tuple[list[ListedSurvey], SurveyResult]:
    """Every configured field's query, de-duplicated by OpenAlex id; never raises for one field."""

    out = SurveyResult()
    listed: list[ListedSurvey] = []
    seen: set[str] = set()
    with pyalex_session(session, mailto=mailto, api_key=api_key):
        for field_id in cfg.fields or [None]:
            label = field_id or "all"
            n = 0
            try:
                for page in build_query(cfg, field_id).paginate(per_page=cfg.per_page, n_max=cfg.max_per_field):
                    for work in page:
                        if cfg.max_per_field is not None and n >= cfg.max_per_field:
                            break
                        n += 1
                        work = dict(work)
                        wid = short_id(str(work.get("id") or "?"))
                        if wid in seen:
                            continue
                        seen.add(wid)
                        try:
                            got = listing_checks(work, cfg, field_id)
                        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # one record, not the field
                            got = ("bad_entry", f"unreadable OpenAlex record: {type(exc).__name__}: {exc}"[:300])
                        if isinstance(got, tuple):
                            _drop(out, wid, *got)
                        else:
                            listed.append(got)
            except Exception as exc:  # noqa: BLE001 - pyalex/requests raise many types; recorded per field
                msg = redact_url(f"{type(exc).__name__}: {exc}")[:500]
                log.error("OpenAlex listing for %s failed after %d works: %s", label, n, msg)
                out.errors.append({"field": label, "error": msg})
            out.per_field[label] = n
    if out.errors and not listed and not out.drops:
        raise BuildError(f"OpenAlex listing failed for every field: {out.errors}")
    out.listed = len(seen)
    listed.sort(key=lambda s: s.survey_id)
    return listed, out


def check_reviews(listed: Sequence[ListedSurvey], log_: JudgeLog, out: SurveyResult) -> list[tuple[ListedSurvey, str]]:
    """The literature-review check (P3) on title + abstract; failures and "no" are recorded drops."""
    items = [
        (s.survey_id, SurveyCheckInput(title=s.title, abstract=s.abstract or "(no abstract)"), {"survey": s.survey_id})
        for s in listed
    ]
    verdicts = log_.run(SURVEY_CHECK, items)
    kept = []
    for s in listed:
        j = verdicts[s.survey_id]
        if not j.ok:
            _drop(out, s.survey_id, "check_failed", f"literature-review check failed: {j.error}")
        elif not parsed(j).get("is_literature_review"):
            _drop(out, s.survey_id, "not_a_review", f"judge: not a literature review ({j.explanation})")
        else:
            kept.append((s, j.explanation or ""))
    return kept


def eprint_url(arxiv_id: str) -> str:
    return f"https://arxiv.org/src/{arxiv_id}"


def fetch_fulltext(
    session: requests.Session, s: ListedSurvey, review_reason: str, cfg: SurveyConfig, out: SurveyResult
) -> SurveyRecord | None:
    """Download and extract one survey's LaTeX; every failure is a recorded drop, never an exception."""
    url = eprint_url(s.arxiv_id)
    data, status, why = download_source(session, url)
    if data is None:
        _drop(out, s.survey_id, "download_failed", why or f"HTTP {status}")
        return None
    kind = sniff(data)
    if kind in ("pdf", "html", "unknown"):
        _drop(out, s.survey_id, "no_latex_source", f"arXiv served {kind} for {url}, not a LaTeX source")
        return None
    latex_cfg = LatexConfig(cite_style=cfg.latex.cite_style)
    with tempfile.TemporaryDirectory(prefix="reportbench-survey-") as tmp:
        path = Path(tmp) / ("source.tex" if kind == "tex" else "source.eprint")
        path.write_bytes(data)
        try:
            paper = extract_sections(path, latex_cfg, split_level=cfg.latex.split_level)
        except Exception as exc:  # noqa: BLE001 - untrusted input; one survey must not stop the release
            log.exception("extraction crashed for %s", url)
            _drop(out, s.survey_id, "extract_failed", f"internal: {type(exc).__name__}: {exc}")
            return None
    if not paper.ok:
        code = {"no_source": "extract_failed"}.get(paper.failure or "", paper.failure or "extract_failed")
        _drop(out, s.survey_id, code, paper.failure_reason or code)
        return None
    return SurveyRecord(
        listing=s,
        review_reason=review_reason,
        source_url=url,
        source_sha256=hashlib.sha256(data).hexdigest(),
        main_file=paper.main_file,
        sections=paper.sections,
        bib_entries=paper.bib_entries,
        unresolved_keys=paper.unresolved_keys,
    )


def find_surveys(
    cfg: SurveyConfig,
    session: requests.Session,
    log_: JudgeLog,
    *,
    api_key: str | None,
    mailto: str | None,
) -> SurveyResult:
    listed, out = list_surveys(cfg, session, api_key=api_key, mailto=mailto)
    reviews = check_reviews(listed, log_, out) if cfg.survey_check else [(s, "check disabled") for s in listed]
    saved_cap = getattr(session, "max_body_bytes", None)
    if saved_cap is not None:
        session.max_body_bytes = min(saved_cap, int(cfg.sources.max_source_mb * (1 << 20)))  # type: ignore[attr-defined]
    try:
        for i, (s, reason) in enumerate(reviews):
            if cfg.sources.max_surveys is not None and i >= cfg.sources.max_surveys:
                _drop(out, s.survey_id, "not_downloaded", f"sources.max_surveys={cfg.sources.max_surveys} reached")
                continue
            rec = fetch_fulltext(session, s, reason, cfg, out)
            if rec is not None:
                out.kept.append(rec)
                log.info("%s: %d sections (%s)", s.survey_id, len(rec.sections), s.title[:80])
    finally:
        if saved_cap is not None:
            session.max_body_bytes = saved_cap  # type: ignore[attr-defined]
    return out


def survey_rows(records: Iterable[SurveyRecord]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json") for r in sorted(records, key=lambda r: r.listing.survey_id)]

