"""Stage 3 of the live builder: keep papers whose related-work section can serve as an exemplar.

The paper's rules (§1.1 c–e, which the authors applied offline or not at all), each configurable:
a related-work section and a bibliography were found; at most `max_words` words; at least `min_citations`
distinct cite keys; every cite key resolves to a bibliography entry; (optionally) every entry has a title,
since recovery searches by title. Every dropped paper is recorded with all the reasons that apply, the first
one being its `reason_code`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from reportbench.live_builder.arxiv_listing import ListedPaper
from reportbench.live_builder.latex import ExtractedPaper
from reportbench.live_builder.live_config import FilterParams
from reportbench.live_builder.sources_stage import SourceRecord
from reportbench.live_builder.stage_io import DropRecord


class KeptPaper(BaseModel):
    """A paper that passed the filter: its listing metadata and its extracted section."""

    model_config = ConfigDict(extra="forbid")

    listing: ListedPaper
    extracted: ExtractedPaper


@dataclass
class FilterResult:
    kept: list[KeptPaper] = field(default_factory=list)
    dropped: list[DropRecord] = field(default_factory=list)


def reasons_for(rec: SourceRecord | None, cfg: FilterParams) -> list[tuple[str, str]]:
    """Every (code, detail) that excludes this paper; [] means keep it."""
    if rec is None:
        return [("not_downloaded", "no source record (sources.max_papers cap or an interrupted stage)")]
    if rec.status != "ok" or rec.paper is None:
        return [(rec.status, rec.reason or rec.status)]
    p = rec.paper
    if p.failure is not None:
        return [(p.failure, p.failure_reason or p.failure)]
    out: list[tuple[str, str]] = []
    if cfg.max_words is not None and p.word_count > cfg.max_words:
        out.append(("too_many_words", f"related work has {p.word_count} words > max_words={cfg.max_words}"))
    n_keys = len(p.cite_keys)
    if n_keys < cfg.min_citations:
        out.append(("too_few_citations", f"{n_keys} distinct cite keys < min_citations={cfg.min_citations}"))
    if cfg.require_all_keys_resolved and p.unresolved_keys:
        shown = ", ".join(p.unresolved_keys[:10]) + (" ..." if len(p.unresolved_keys) > 10 else "")
        out.append(("unresolved_keys", f"{len(p.unresolved_keys)} cite keys have no bibliography entry: {shown}"))
    if cfg.require_titles:
        untitled = [e.key for e in p.bib_entries if not (e.title or "").strip()]
        if untitled:
            out.append(
                ("untitled_refs", f"{len(untitled)} bibliography entries have no title: {', '.join(untitled[:10])}")
            )
    return out


def filter_papers(listed: Iterable[ListedPaper], sources: Iterable[SourceRecord], cfg: FilterParams) -> FilterResult:
    by_id = {r.arxiv_id: r for r in sources}
    out = FilterResult()
    for paper in sorted(listed, key=lambda p: p.arxiv_id):
        rec = by_id.get(paper.arxiv_id)
        reasons = reasons_for(rec, cfg)
        if reasons:
            code = reasons[0][0]
            detail = "; ".join(f"{c}: {d}" for c, d in reasons)
            out.dropped.append(
                DropRecord(
                    arxiv_id=paper.arxiv_id,
                    stage="filter" if rec and rec.status == "ok" else "sources",
                    reason_code=code,
                    reason=detail,
                )
            )
        else:
            assert rec is not None and rec.paper is not None
            out.kept.append(KeptPaper(listing=paper, extracted=rec.paper))
    return out
