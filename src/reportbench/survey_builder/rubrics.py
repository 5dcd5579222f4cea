"""Stage `rubrics`: survey-conditioned and parametric rubric sets, then the hybrid set (spec §1.5, prompts P11-P12).

Per kept query:

1. six generator calls: R_S (query + reference answer + the section's references) and R_P (query only), each
   with `information` (4), `depth` (2) and `citation` (2) items; citation items carry author, year and title;
2. candidates = R_S then R_P (16 by default); rules and checks, each removed item recorded with its reason:
   - `duplicate`: the same criterion (normalised text) as an earlier candidate;
   - `vacuous` (paper footnote 4): no substantive word beyond the query's own words;
   - `unmatched_citation`: the cited title matches no OpenAlex work at rapidfuzz ratio >= `title_threshold`
     (the paper matched against Google Scholar; a hallucinated paper is removed); a lookup that failed is
     `citation_unverified` — removed too, since it could not be checked, but never called a hallucination;
3. `rubric_rank` (judge): the survivors re-ranked by importance, with the judge's own duplicates removed
   (`duplicate_llm`); the top `top_k` (8) are kept, the rest are `below_top_k`;
4. a query left with fewer than `min_items` items is dropped (`no_rubric`); a failed generator call is a
   recorded `rubric_set` drop (`generation_failed`), a failed ranking drops the query (`rank_failed`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import requests
from pydantic import BaseModel, ConfigDict

from reportbench.citations import normalise_title, pyalex_session
from reportbench.live_builder.http_cache import HttpCache
from reportbench.live_builder.live_config import RecoverParams
from reportbench.live_builder.recover import OpenAlexLookup
from reportbench.survey_builder.config import RubricParams
from reportbench.survey_builder.queries import QueryRecord
from reportbench.survey_builder.records import Drop, JudgeLog, parsed
from reportbench.survey_builder.tasks import RUBRIC_KINDS, RUBRIC_RANK, RUBRIC_TASKS, RankInput, RubricInput
from reportbench.survey_builder.text import substantive_new_words

STAGE = "rubrics"
DROP_REASONS = (
    "generation_failed", "duplicate", "vacuous", "unmatched_citation", "citation_unverified", "duplicate_llm",
    "below_top_k", "rank_failed", "no_rubric",
)  # fmt: skip


class Candidate(BaseModel):
    """One generated rubric item and what happened to it."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    query_id: str
    origin: str  # survey | parametric
    kind: str  # information | depth | citation
    text: str
    first_author: str | None = None
    year: int | None = None
    cited_title: str | None = None
    match_title: str | None = None
    match_score: float | None = None
    match_openalex_id: str | None = None
    match_doi: str | None = None
    match_year: int | None = None
    rank: int | None = None
    status: str = "kept"  # kept | a drop reason code
    reason: str = ""


@dataclass
class RubricResult:
    rubrics: dict[str, list[Candidate]] = field(default_factory=dict)  # query id -> kept items, ranked
    candidates: list[Candidate] = field(default_factory=list)
    drops: list[Drop] = field(default_factory=list)
    lookups: dict[str, Any] = field(default_factory=dict)


def _norm(text: str) -> str:
    return " ".join(normalise_title(text).split())


def generate_sets(queries: Sequence[QueryRecord], params: RubricParams, log_: JudgeLog, out: RubricResult) -> None:
    """Six generator calls per query; candidates in order R_S (information, depth, citation), then R_P."""
    counts = {"information": params.information, "depth": params.depth, "citation": params.citation}
    runs = {}
    for (origin, kind), task in RUBRIC_TASKS.items():
        if counts[kind] == 0:
            continue
        items = []
        for q in queries:
            inp = (
                RubricInput(query=q.query, answer=q.answer, references="\n".join(q.references), n=counts[kind])
                if origin == "survey"
                else RubricInput(query=q.query, n=counts[kind])
            )
            items.append((f"{q.query_id}:{origin}:{kind}", inp, {"query": q.query_id, "origin": origin, "kind": kind}))
        runs[(origin, kind)] = log_.run(task, items)
    for q in queries:
        for origin in ("survey", "parametric"):
            for kind in RUBRIC_KINDS:
                if counts[kind] == 0:
                    continue
                key = f"{q.query_id}:{origin}:{kind}"
                j = runs[(origin, kind)][key]
                if not j.ok:
                    out.drops.append(Drop(item_id=key, kind="rubric_set", stage=STAGE, reason_code="generation_failed",
                                          reason=f"rubric generation failed: {j.error}"))  # fmt: skip
                    continue
                for i, it in enumerate(parsed(j)["items"]):
                    cid = f"{q.query_id}:{origin[0]}{kind[0]}{i}"
                    if isinstance(it, dict):
                        out.candidates.append(Candidate(item_id=cid, query_id=q.query_id, origin=origin, kind=kind,
                                                        text=it["text"], first_author=it["first_author"],
                                                        year=it["year"], cited_title=it["title"]))  # fmt: skip
                    else:
                        out.candidates.append(
                            Candidate(item_id=cid, query_id=q.query_id, origin=origin, kind=kind, text=str(it))
                        )


def _remove(out: RubricResult, c: Candidate, code: str, reason: str) -> None:
    c.status, c.reason = code, reason
    out.drops.append(Drop(item_id=c.item_id, kind="rubric_item", stage=STAGE, reason_code=code, reason=reason))


def apply_rules(queries: Sequence[QueryRecord], out: RubricResult) -> None:
    """Exact duplicates, then vacuous items (nothing substantive beyond the query)."""
    query_text = {q.query_id: q.query for q in queries}
    seen: dict[tuple[str, str], str] = {}
    for c in out.candidates:
        if c.status != "kept":
            continue
        key = (c.query_id, _norm(c.text))
        if key in seen:
            _remove(out, c, "duplicate", f"same criterion as {seen[key]}")
            continue
        seen[key] = c.item_id
        new = substantive_new_words(c.text, query_text[c.query_id])
        if not new:
            _remove(out, c, "vacuous", "no substantive word beyond the query's own words")


def check_citations(
    out: RubricResult,
    params: RubricParams,
    session: requests.Session | None,
    cache: HttpCache | None,
    *,
    api_key: str | None,
    mailto: str | None,
) -> None:
    """Citation items must name a real work: OpenAlex title search (batched, item store), rapidfuzz threshold."""

    cites = [c for c in out.candidates if c.status == "kept" and c.kind == "citation"]
    if not params.hallucination_check or not cites:
        return
    if session is None or cache is None:
        raise ValueError("the citation check needs an HTTP session and cache (live_researchqa.http)")
    lookup = OpenAlexLookup(
        session,
        cache,
        RecoverParams(
            title_threshold=params.title_threshold,
            title_batch_size=params.title_batch_size,
            title_min_words=params.title_min_words,
        ),
    )
    titles = sorted({_norm(c.cited_title or "") for c in cites} - {""})
    with pyalex_session(session, mailto=mailto, api_key=api_key):
        found = lookup.by_titles(titles)
    out.lookups = {"titles": len(titles), "batches": found.n_calls, "errors": len(found.errors)}
    for c in cites:
        t = _norm(c.cited_title or "")
        if not t:
            _remove(out, c, "unmatched_citation", "citation item without a title")
        elif t in found.errors:
            _remove(out, c, "citation_unverified", f"OpenAlex title search failed: {found.errors[t]}")
        else:
            cands = found.found.get(t) or []
            best = cands[0] if cands else None
            if best is not None:
                c.match_title, c.match_score = best.get("title"), best.get("score")
            if best is None or float(best.get("score") or 0) < params.title_threshold:
                shown = f"best {best.get('title')!r} at {best.get('score')}" if best else "no candidate"
                why = f"{c.cited_title!r} matches no OpenAlex work at ratio >= {params.title_threshold} ({shown})"
                _remove(out, c, "unmatched_citation", why)
                continue
            c.match_openalex_id, c.match_doi = best.get("id"), best.get("doi")
            date = str(best.get("publication_date") or "")
            c.match_year = int(date[:4]) if date[:4].isdigit() else None


def rank_and_cut(queries: Sequence[QueryRecord], params: RubricParams, log_: JudgeLog, out: RubricResult) -> None:
    """The judge ranks each query's surviving items by importance (and flags duplicates); keep the top k."""
    alive: dict[str, list[Candidate]] = {q.query_id: [] for q in queries}
    for c in out.candidates:
        if c.status == "kept" and c.query_id in alive:
            alive[c.query_id].append(c)
    items = [
        (qid, RankInput(query=q.query, items=[c.text for c in alive[qid]]), {"query": qid})
        for q in queries
        if (qid := q.query_id) and alive[qid]
    ]
    ranked = log_.run(RUBRIC_RANK, items)
    for q in queries:
        cands = alive[q.query_id]
        if cands:
            j = ranked[q.query_id]
            if not j.ok:
                for c in cands:
                    _remove(out, c, "rank_failed", f"rubric_rank failed: {j.error}")
                cands = []
            else:
                p = parsed(j)
                for i in p["duplicates"]:
                    _remove(out, cands[i - 1], "duplicate_llm", "the ranking judge marked it a duplicate")
                order = [cands[i - 1] for i in p["ranking"]]
                for r, c in enumerate(order, start=1):
                    c.rank = r
                    if r > params.top_k:
                        _remove(out, c, "below_top_k", f"ranked {r} of {len(order)}; only the top {params.top_k} kept")
                cands = order[: params.top_k]
        if len(cands) < params.min_items:
            out.drops.append(
                Drop(item_id=q.query_id, kind="query", stage=STAGE, reason_code="no_rubric",
                     reason=f"{len(cands)} rubric item(s) left < {params.min_items}")
            )  # fmt: skip
            continue
        out.rubrics[q.query_id] = cands


def build_rubrics(
    queries: Sequence[QueryRecord],
    params: RubricParams,
    log_: JudgeLog,
    session: requests.Session | None,
    cache: HttpCache | None,
    *,
    api_key: str | None = None,
    mailto: str | None = None,
) -> RubricResult:
    out = RubricResult()
    generate_sets(queries, params, log_, out)
    apply_rules(queries, out)
    check_citations(out, params, session, cache, api_key=api_key, mailto=mailto)
    rank_and_cut(queries, params, log_, out)
    return out


def candidate_rows(cands: Iterable[Candidate]) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json") for c in sorted(cands, key=lambda c: c.item_id)]
