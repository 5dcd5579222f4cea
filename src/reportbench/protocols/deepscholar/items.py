"""DeepScholar-bench: which items each judge task must judge, for one (task, report).

Every builder is a pure function of (task, report, release context, params). The metric code calls the
same *plan* functions to find the judgments it needs, so items and scores cannot drift apart.

Item ids (deterministic, content-derived):
- organization   `{report_id}:org:1` (A = report, B = exemplar), `{report_id}:org:2` (A = exemplar,
                 B = report)
- nugget_assign  `{report_id}:nug:{window}:{sha(query, passage, nuggets)}`
- relevance      `{task_id}:rel:{sha(task_id, ref_title, ref_abstract)}` (shared by every system)
- support        `sup:{sha(claim, reference)}` (shared by Cite-P and Claim Coverage, and across reruns)

Source text for a cited source: the report's own `Source.abstract` if given, else the release corpus entry
by arXiv id, else the title only (`input_ids["evidence"] = "title_only"`; `"id_only"` if not even a title).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from reportbench.protocols import JudgeItem, content_hash
from reportbench.types import ExemplarRef, Nugget, Report, Sentence, Source, Task, strip_arxiv_version

NUGGET_QUERY_TEMPLATE = (
    "Write a Related Works section for an academic paper given the paper's abstract. "
    "Here is the paper abstract:\n{abstract}"
)
"""The query the authors' nuggetizer used (data_pipeline/generate_nuggets_from_reports.py)."""

Evidence = Literal[
    "report", "corpus", "arxiv", "title_only", "id_only", "query_context", "code_premise", "window_set"
]


# --------------------------------------------------------------------------------------------- params
class _P(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OrganizationParams(_P):
    """No switches: always the two-call position-and-label swap (see metrics.organization)."""


class NuggetParams(_P):
    variant: Literal["strict_all", "strict_vital", "all", "vital"] = "strict_all"
    mode: Literal["paper", "code"] = Field(
        "paper", description="paper: any failed window -> NaN; code: failed nuggets count as not_support"
    )
    window: int = Field(10, ge=1, description="nuggets per assign call (the nuggetizer's window)")


class RelevanceParams(_P):
    scope: Literal["linked_arxiv", "all_sources"] = Field(
        "linked_arxiv",
        description="linked_arxiv: S = report.retrieved_arxiv_ids (paper); all_sources: authors",
    )
    mode: Literal["paper", "code"] = Field(
        "paper", description="paper: sum/(2|S|); code: mean grade in [0,2]"
    )


class ReferenceCoverageParams(_P):
    mode: Literal["paper", "code"] = "paper"
    title_threshold: float = Field(80.0, description="paper mode: rapidfuzz fuzz.ratio >= this (0-100)")
    code_ratio: float = Field(0.8, description="code mode: difflib SequenceMatcher ratio > this")


class DocumentImportanceParams(_P):
    mode: Literal["global", "per_exemplar", "code"] = Field(
        "global",
        description="global: median(S) / divisor, the system mean clipped at 1 (reproduces Table 2); "
        "per_exemplar: min(median(S) / median(S*), 1) per report (the formula's text); code: raw median",
    )
    divisor: float | Literal["release"] = Field(
        647.5,
        description="global mode: one divisor for every report: 647.5 (the public release's exemplars, Table 7) "
        "or 'release' (this release's own: mean over tasks of the median count of the exemplar's arXiv refs)",
    )

    @field_validator("divisor")
    @classmethod
    def _positive(cls, v: float | str) -> float | str:
        if not isinstance(v, str) and not v > 0:
            raise ValueError(f"divisor must be > 0 or 'release', got {v}")
        return v
    clip: Literal["aggregate", "report"] = Field(
        "aggregate", description="global mode: clip the system mean at 1 (Table 2) or each report's ratio"
    )


class CitationPrecisionParams(_P):
    mode: Literal["paper", "code"] = "paper"
    reading: Literal["at_least_one", "all_aspects"] = Field(
        "at_least_one",
        description="at_least_one: a citation is precise if its source supports at least one claim of the "
        "sentence (paper §8.3.3; judge task citation_support); all_aspects: the support task's stricter "
        "question (the whole sentence)",
    )
    code_min_chars: int = Field(
        50, description="code mode: skip sentences shorter than this (markers included)"
    )
    unresolved: Literal["exclude", "unsupported"] = Field(
        "exclude", description="a marker whose key has no Source: dropped (authors) or counted as unsupported"
    )


class ClaimCoverageParams(_P):
    mode: Literal["paper", "code"] = "paper"
    window: int = Field(1, ge=0, description="paper mode: refs of sentences within +-window count")
    min_chars: int = Field(
        50, ge=0, description="sentences shorter than this after stripping markers skipped"
    )
    query_context: bool = Field(True, description="paper mode: title+abstract is an implicit reference")
    sources: Literal["set", "each"] = Field(
        "set",
        description="paper mode: set = one judgment of the sentence against all window sources (and the "
        "query context) together (Box 3, authors' code); each = one judgment per source, any supports",
    )


class DeepScholarParams(_P):
    """Config subtree `metrics.deepscholar` (Hydra); unknown keys are an error, not silently ignored."""

    on_failure: Literal["nan", "exclude"] = Field(
        "nan",
        description="relevance/cite-p/claim-cov: a failed judgment makes the report NaN, or is excluded",
    )
    nothing_to_score: Literal["zero", "undefined"] = Field(
        "zero",
        description="a report that gives a metric nothing to score (no arXiv link, no citation, no eligible "
        "sentence: the system's own omission) scores 0 (paper, authors) or is undefined (NaN)",
    )
    organization: OrganizationParams = OrganizationParams()
    nugget_coverage: NuggetParams = NuggetParams()
    relevance_rate: RelevanceParams = RelevanceParams()
    reference_coverage: ReferenceCoverageParams = ReferenceCoverageParams()
    document_importance: DocumentImportanceParams = DocumentImportanceParams()
    citation_precision: CitationPrecisionParams = CitationPrecisionParams()
    claim_coverage: ClaimCoverageParams = ClaimCoverageParams()


def as_params(params: DeepScholarParams | Mapping[str, object] | None) -> DeepScholarParams:
    if isinstance(params, DeepScholarParams):
        return params
    return DeepScholarParams.model_validate(dict(params or {}))


# ------------------------------------------------------------------------------------ release context
@dataclass
class ReleaseContext:
    """What the protocol needs from a release: exemplar refs and nuggets per task, and a corpus.

    `corpus` maps version-stripped arXiv id -> (title, abstract). `important_labels` says whether the release
    labels important references at all (None: infer per task from `ExemplarRef.is_important`).
    """

    exemplar_refs: Mapping[str, Sequence[ExemplarRef]] = field(default_factory=dict)
    nuggets: Mapping[str, Sequence[Nugget]] = field(default_factory=dict)
    corpus: Mapping[str, tuple[str | None, str | None]] = field(default_factory=dict)
    important_labels: bool | None = None
    # version-stripped arXiv id -> (title, abstract) from the arXiv API or its cache (the `source_texts` step)
    resolved: Mapping[str, tuple[str | None, str | None]] = field(default_factory=dict)

    @classmethod
    def from_records(
        cls,
        refs: Iterable[ExemplarRef] = (),
        nuggets: Iterable[Nugget] = (),
        corpus: Mapping[str, tuple[str | None, str | None]] | None = None,
        *,
        important_labels: bool | None = None,
        corpus_from_refs: bool = True,
    ) -> ReleaseContext:
        """Group records by task; with `corpus_from_refs`, refs' titles/abstracts fill corpus gaps."""
        by_task: dict[str, list[ExemplarRef]] = {}
        for r in refs:
            by_task.setdefault(r.task_id, []).append(r)
        nug: dict[str, list[Nugget]] = {}
        for n in nuggets:
            nug.setdefault(n.task_id, []).append(n)
        corp: dict[str, tuple[str | None, str | None]] = {
            strip_arxiv_version(k): v for k, v in (corpus or {}).items()
        }
        if corpus_from_refs:
            for rs in by_task.values():
                for r in rs:
                    if r.arxiv_id and (r.title or r.abstract):
                        corp.setdefault(strip_arxiv_version(r.arxiv_id), (r.title, r.abstract))
        return cls(by_task, nug, corp, important_labels)

    @classmethod
    def from_release(cls, release: Any) -> ReleaseContext:
        """From a `reportbench.release.format.Release` (duck-typed: exemplar_ref_rows, nugget_rows, corpus,
        has_important_refs). Importance labels count only when the release labels every reference."""
        corpus = {d.arxiv_id: (d.title, d.abstract) for d in release.corpus if d.arxiv_id}
        return cls.from_records(
            release.exemplar_ref_rows,
            release.nugget_rows,
            corpus,
            important_labels=bool(release.has_important_refs),
        )

    def refs_for(self, task_id: str) -> list[ExemplarRef]:
        return sorted(self.exemplar_refs.get(task_id, ()), key=lambda r: r.position)

    def nuggets_for(self, task_id: str) -> list[Nugget]:
        return sorted(self.nuggets.get(task_id, ()), key=lambda n: n.index)

    def has_important_labels(self, task_id: str) -> bool:
        if self.important_labels is not None:
            return self.important_labels
        return any(r.is_important is not None for r in self.exemplar_refs.get(task_id, ()))

    def corpus_entry(self, arxiv_id: str | None) -> tuple[str | None, str | None] | None:
        return self.corpus.get(strip_arxiv_version(arxiv_id)) if arxiv_id else None

    def resolved_entry(self, arxiv_id: str | None) -> tuple[str | None, str | None] | None:
        return self.resolved.get(strip_arxiv_version(arxiv_id)) if arxiv_id else None

    def with_resolved(self, resolved: Mapping[str, tuple[str | None, str | None]]) -> ReleaseContext:
        """A copy that also knows texts fetched from arXiv (used after the release corpus, never before)."""
        norm = {strip_arxiv_version(k): v for k, v in resolved.items()}
        return ReleaseContext(self.exemplar_refs, self.nuggets, self.corpus, self.important_labels, norm)


# ------------------------------------------------------------------------------------------- helpers
def reference_text(title: str, abstract: str | None) -> str:
    """The authors' document format for the support judge."""
    return f"Title: {title}\n{abstract or ''}"


def query_context_text(task: Task) -> str:
    """Claim coverage's implicit reference: the task's title and abstract."""
    return reference_text(task.title, task.abstract)


def nugget_query(task: Task) -> str:
    return NUGGET_QUERY_TEMPLATE.format(abstract=task.abstract)


@dataclass(frozen=True)
class SourceText:
    """A source as the judge sees it, and where its text came from."""

    title: str
    abstract: str
    evidence: Evidence

    @property
    def reference(self) -> str:
        return reference_text(self.title, self.abstract)


_WEAK_TITLE_RE = re.compile(
    r"^(?:https?://\S+|(?:www\.)?[\w.-]+\.(?:org|com|net|edu|io|ai)(?:/\S*)?|arxiv(?::\s*\S+)?|"
    r"(?:arxiv:?\s*)?\d{4}\.\d{4,5}(?:v\d+)?|\[?\d+\]?)$",
    re.IGNORECASE,
)


def weak_title(title: str | None) -> bool:
    """A 'title' that names no paper: empty, a URL or domain ('arxiv.org'), a bare arXiv id or a number.

    Link-only citations such as `([arxiv.org](https://arxiv.org/abs/2108.02755))` carry such text; the judge
    must see the paper's real title instead (the authors judged title and abstract)."""
    text = (title or "").strip()
    return not text or bool(_WEAK_TITLE_RE.match(text))


def source_text(src: Source, ctx: ReleaseContext) -> SourceText:
    """Title: the report's own unless it names no paper, else the release corpus, else arXiv (API/cache).
    Abstract: the report's > the release corpus's (by arXiv id) > arXiv's > none (`title_only`/`id_only`)."""
    c_title, c_abs = ctx.corpus_entry(src.arxiv_id) or (None, None)
    r_title, r_abs = ctx.resolved_entry(src.arxiv_id) or (None, None)
    own = None if weak_title(src.title) else (src.title or "").strip()
    title = (own or (c_title or "").strip() or (r_title or "").strip()) or ""
    if src.abstract and src.abstract.strip():
        return SourceText(title or _fallback_title(src), src.abstract.strip(), "report")
    if c_abs and c_abs.strip():
        return SourceText(title or _fallback_title(src), c_abs.strip(), "corpus")
    if r_abs and r_abs.strip():
        return SourceText(title or _fallback_title(src), r_abs.strip(), "arxiv")
    if title:
        return SourceText(title, "", "title_only")
    return SourceText(_fallback_title(src), "", "id_only")


def _fallback_title(src: Source) -> str:
    if src.arxiv_id:
        return f"arXiv:{strip_arxiv_version(src.arxiv_id)}"
    return src.url or src.key


def paper_refs(sentence: Sentence, report: Report) -> tuple[list[str], list[str]]:
    """(resolved distinct keys, unresolved keys) of a sentence: every key of "[1, 2]" counts."""
    keys = list(dict.fromkeys(sentence.citation_keys))
    return [k for k in keys if k in report.sources], [k for k in keys if k not in report.sources]


_CODE_REF_RE = re.compile(r"\[(\d+)")


def code_refs(sentence: Sentence, report: Report) -> list[str]:
    """The authors' `re.findall(r"\\[\\d+", sent)`: only the first number of "[1, 2]", repeats kept.

    Their parsers renumbered link citations to `[k]` before this ran, so non-numeric keys (links) each
    count once, as their own bracket would have.
    """
    keys = [m.group(1) for m in _CODE_REF_RE.finditer(sentence.text) if m.group(1) in report.sources]
    keys += [k for k in sentence.citation_keys if not k.isdigit() and k in report.sources]
    return keys


def _support_item(
    task: Task, report: Report, claim: str, reference: str, judge_task: str = "support", **ids: str
) -> JudgeItem:
    prefix = "sup:" if judge_task == "support" else "csup:"
    return JudgeItem(
        task=judge_task,
        item_id=prefix + content_hash(claim, reference, n=24),
        inputs={"claim": claim, "reference": reference},
        input_ids={"task_id": task.task_id, "report_id": report.report_id, **ids},
    )


def _source_support_item(
    task: Task,
    report: Report,
    ctx: ReleaseContext,
    pos: int,
    sentence: Sentence,
    key: str,
    judge_task: str = "support",
) -> JudgeItem:
    st = source_text(report.sources[key], ctx)
    return _support_item(
        task,
        report,
        sentence.claim.strip(),
        st.reference,
        judge_task,
        sentence=str(pos),
        source_key=key,
        evidence=st.evidence,
    )


def _query_context_item(task: Task, report: Report, pos: int, sentence: Sentence) -> JudgeItem:
    return _support_item(
        task,
        report,
        sentence.claim.strip(),
        query_context_text(task),
        sentence=str(pos),
        evidence="query_context",
    )


# ------------------------------------------------------------------------------------------ organization
def organization_items(task: Task, report: Report) -> list[JudgeItem]:
    """Two calls, swapping position AND label: call 1 A=report/B=exemplar, call 2 A=exemplar/B=report.

    An empty report gets no items (it scores 0 with a flag; nothing to compare).
    """
    if not report.body.strip():
        return []
    base = {"paper_title": task.title, "paper_abstract": task.abstract}
    ids = {"task_id": task.task_id, "report_id": report.report_id}
    return [
        JudgeItem(
            "organization",
            f"{report.report_id}:org:1",
            {**base, "section_a": report.body, "section_b": task.exemplar},
            {**ids, "call": "1", "section_a": "report", "section_b": "exemplar"},
        ),
        JudgeItem(
            "organization",
            f"{report.report_id}:org:2",
            {**base, "section_a": task.exemplar, "section_b": report.body},
            {**ids, "call": "2", "section_a": "exemplar", "section_b": "report"},
        ),
    ]


# ---------------------------------------------------------------------------------------------- nuggets
@dataclass(frozen=True)
class NuggetWindow:
    item: JudgeItem
    nuggets: tuple[Nugget, ...]


def supported_nuggets(task: Task, ctx: ReleaseContext) -> list[Nugget]:
    """The exemplar's nuggets that the exemplar itself supports (what the authors' eval scores against)."""
    return [n for n in ctx.nuggets_for(task.task_id) if n.self_assignment == "support"]


def nugget_windows(
    task: Task, report: Report, ctx: ReleaseContext, params: NuggetParams
) -> list[NuggetWindow]:
    """Windows of `params.window` over the supported nuggets (stored order: vital first)."""
    if not report.body.strip():
        return []
    nuggets = supported_nuggets(task, ctx)
    query = nugget_query(task)
    out: list[NuggetWindow] = []
    for w, start in enumerate(range(0, len(nuggets), params.window)):
        chunk = tuple(nuggets[start : start + params.window])
        texts = [n.text for n in chunk]
        digest = content_hash(query, report.body, *texts, n=12)
        item = JudgeItem(
            "nugget_assign",
            f"{report.report_id}:nug:{w}:{digest}",
            {"query": query, "passage": report.body, "nuggets": texts},
            {
                "task_id": task.task_id,
                "report_id": report.report_id,
                "window": str(w),
                "nugget_indices": ",".join(str(n.index) for n in chunk),
            },
        )
        out.append(NuggetWindow(item, chunk))
    return out


def nugget_items(
    task: Task,
    report: Report,
    ctx: ReleaseContext,
    params: DeepScholarParams | Mapping[str, object] | None = None,
) -> list[JudgeItem]:
    p = as_params(params).nugget_coverage
    return [w.item for w in nugget_windows(task, report, ctx, p)]


# -------------------------------------------------------------------------------------------- relevance
@dataclass(frozen=True)
class RelevancePlan:
    """The candidate set S (one item per distinct candidate) and what was left out of it."""

    candidates: tuple[tuple[str, JudgeItem], ...]
    n_skipped_no_title: int = 0


def _normalise_title_simple(title: str | None) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", (title or "").lower()).split())


def relevance_plan(task: Task, report: Report, ctx: ReleaseContext, params: RelevanceParams) -> RelevancePlan:
    """S for Relevance Rate.

    - `linked_arxiv` (paper): distinct version-stripped arXiv ids linked or cited (retrieved_arxiv_ids);
      each is judged with the best text we have for it (a source with an abstract wins).
    - `all_sources` (authors): every source of the report, deduplicated by arXiv id and by title; sources with
      neither are skipped and counted.
    """
    chosen: list[tuple[str, Source]] = []
    skipped = 0
    if params.scope == "linked_arxiv":
        by_id: dict[str, list[Source]] = {}
        for src in report.sources.values():
            if src.arxiv_id:
                by_id.setdefault(strip_arxiv_version(src.arxiv_id), []).append(src)
        for aid in report.retrieved_arxiv_ids:
            srcs = by_id[aid]
            best = next((s for s in srcs if s.abstract and s.abstract.strip()), None)
            best = best or next((s for s in srcs if s.title), srcs[0])
            chosen.append((aid, best))
    else:
        seen_ids: set[str] = set()
        seen_titles: set[str] = set()
        for src in report.sources.values():
            aid = strip_arxiv_version(src.arxiv_id) if src.arxiv_id else None
            st = source_text(src, ctx)
            norm = _normalise_title_simple(st.title) if st.evidence != "id_only" else ""
            if aid is None and not norm:
                skipped += 1
                continue
            if (aid is not None and aid in seen_ids) or (norm and norm in seen_titles):
                continue
            if aid is not None:
                seen_ids.add(aid)
            if norm:
                seen_titles.add(norm)
            chosen.append((aid or f"title:{norm}", src))
    cands: list[tuple[str, JudgeItem]] = []
    for cand_key, src in chosen:
        st = source_text(src, ctx)
        item = JudgeItem(
            "relevance",
            f"{task.task_id}:rel:{content_hash(task.task_id, st.title, st.abstract)}",
            {
                "paper_title": task.title,
                "paper_abstract": task.abstract,
                "exemplar": task.exemplar,
                "ref_title": st.title,
                "ref_abstract": st.abstract,
            },
            {"task_id": task.task_id, "candidate": cand_key, "evidence": st.evidence},
        )
        cands.append((cand_key, item))
    return RelevancePlan(tuple(cands), skipped)


def relevance_items(
    task: Task,
    report: Report,
    ctx: ReleaseContext,
    params: DeepScholarParams | Mapping[str, object] | None = None,
) -> list[JudgeItem]:
    plan = relevance_plan(task, report, ctx, as_params(params).relevance_rate)
    return list({it.item_id: it for _, it in plan.candidates}.values())


# ---------------------------------------------------------------------------------- support: Cite-P
@dataclass(frozen=True)
class CitePUnit:
    """One sentence's citations: `items` are (key, item); `unresolved` keys point to no Source."""

    sentence: int
    items: tuple[tuple[str, JudgeItem], ...]
    unresolved: tuple[str, ...] = ()


def cite_p_plan(
    task: Task, report: Report, ctx: ReleaseContext, params: CitationPrecisionParams
) -> list[CitePUnit]:
    """Paper: every cited sentence, each distinct (sentence, key) pair. Code: sentences >= code_min_chars
    (markers included), keys by the authors' regex (first number of each bracket, repeats kept); uncited
    sentences are units with no items (they score 0 in code mode).

    `reading: at_least_one` (default) asks judge task `citation_support` whether the source supports at least
    one claim of the sentence (the paper's definition of a precise citation); `all_aspects` asks `support`."""
    judge_task = "citation_support" if params.reading == "at_least_one" else "support"
    units: list[CitePUnit] = []
    for pos, s in enumerate(report.sentences):
        if params.mode == "paper":
            keys, unresolved = paper_refs(s, report)
            if not keys and not unresolved:
                continue
        else:
            if len(s.text) < params.code_min_chars:
                continue
            keys, unresolved = code_refs(s, report), []
        items = tuple((k, _source_support_item(task, report, ctx, pos, s, k, judge_task)) for k in keys)
        units.append(CitePUnit(pos, items, tuple(unresolved)))
    return units


# ---------------------------------------------------------------------------- support: Claim Coverage
@dataclass(frozen=True)
class ClaimUnit:
    """One eligible sentence and the support items any one of which makes it covered."""

    sentence: int
    items: tuple[JudgeItem, ...]
    window_keys: tuple[str, ...] = ()


def claim_plan(
    task: Task, report: Report, ctx: ReleaseContext, params: ClaimCoverageParams
) -> list[ClaimUnit]:
    """Sentences whose marker-free text has >= min_chars characters.

    Paper: candidate refs = resolved keys cited by any sentence within +-window (by position), plus the query
    context (task title + abstract) as an implicit reference for every sentence. `sources: set` (default):
    ONE call judging the sentence against all of them together (a claim supported only by [1] and [2]
    jointly is covered; paper Box 3: "a claim and its associated set of references"); `sources: each`: one
    call per reference, covered if any one supports it.
    Code (authors' bugs): the sentence's own refs only (window is a no-op), no refs -> no items (scores 0),
    else ONE call whose premise is all its refs' texts joined by " " then title then abstract, no separator.
    """
    sents = report.sentences
    units: list[ClaimUnit] = []
    for pos, s in enumerate(sents):
        claim = s.claim.strip()
        if len(claim) < params.min_chars:
            continue
        if params.mode == "paper":
            keys: dict[str, None] = {}
            for j in range(max(0, pos - params.window), min(len(sents), pos + params.window + 1)):
                for k in paper_refs(sents[j], report)[0]:
                    keys.setdefault(k, None)
            if params.sources == "set":
                if not keys and not params.query_context:
                    units.append(ClaimUnit(pos, ()))
                    continue
                texts = [source_text(report.sources[k], ctx) for k in keys]
                premise = set_premise([t.reference for t in texts], task if params.query_context else None)
                item = _support_item(
                    task,
                    report,
                    claim,
                    premise,
                    sentence=str(pos),
                    source_key=",".join(keys),
                    evidence="window_set",
                    source_evidence=",".join(t.evidence for t in texts),
                )
                units.append(ClaimUnit(pos, (item,), tuple(keys)))
                continue
            items = [_source_support_item(task, report, ctx, pos, s, k) for k in keys]
            if params.query_context:
                items.append(_query_context_item(task, report, pos, s))
            units.append(ClaimUnit(pos, tuple(items), tuple(keys)))
        else:
            refs = list(dict.fromkeys(code_refs(s, report)))
            if not refs:
                units.append(ClaimUnit(pos, ()))
                continue
            premise = " ".join(source_text(report.sources[k], ctx).reference for k in refs)
            premise = premise + task.title + task.abstract
            item = _support_item(
                task,
                report,
                claim,
                premise,
                sentence=str(pos),
                source_key=",".join(refs),
                evidence="code_premise",
            )
            units.append(ClaimUnit(pos, (item,), tuple(refs)))
    return units


def set_premise(references: Sequence[str], task: Task | None) -> str:
    """Several references as one premise, each labelled, then the query context (the paper described by
    the task) when given: what the judge reads when a claim is checked against a set of sources."""
    parts = [f"Reference {i}:\n{ref}" for i, ref in enumerate(references, 1)]
    if task is not None:
        parts.append(f"Query context (the paper whose related work this is):\n{query_context_text(task)}")
    return "\n\n".join(parts)


def support_items(
    task: Task,
    report: Report,
    ctx: ReleaseContext,
    params: DeepScholarParams | Mapping[str, object] | None = None,
) -> list[JudgeItem]:
    """Union of the `support` (claim, reference) pairs Cite-P and Claim Coverage need under the configured
    modes (Cite-P's at-least-one-claim items belong to `citation_support_items`)."""
    p = as_params(params)
    out: dict[str, JudgeItem] = {}
    for u in cite_p_plan(task, report, ctx, p.citation_precision):
        for _, it in u.items:
            if it.task == "support":
                out.setdefault(it.item_id, it)
    for cu in claim_plan(task, report, ctx, p.claim_coverage):
        for it in cu.items:
            out.setdefault(it.item_id, it)
    return list(out.values())


def citation_support_items(
    task: Task,
    report: Report,
    ctx: ReleaseContext,
    params: DeepScholarParams | Mapping[str, object] | None = None,
) -> list[JudgeItem]:
    """Cite-P's (sentence, source) pairs under `reading: at_least_one` (empty under `all_aspects`)."""
    p = as_params(params)
    out: dict[str, JudgeItem] = {}
    for u in cite_p_plan(task, report, ctx, p.citation_precision):
        for _, it in u.items:
            if it.task == "citation_support":
                out.setdefault(it.item_id, it)
    return list(out.values())


# ----------------------------------------------------------------------------------------------- all
def build_items(
    task: Task,
    report: Report,
    ctx: ReleaseContext,
    params: DeepScholarParams | Mapping[str, object] | None = None,
) -> dict[str, list[JudgeItem]]:
    """Every item the seven metrics need for one report, by judge task name."""
    p = as_params(params)
    return {
        "organization": organization_items(task, report),
        "nugget_assign": nugget_items(task, report, ctx, p),
        "relevance": relevance_items(task, report, ctx, p),
        "support": support_items(task, report, ctx, p),
        "citation_support": citation_support_items(task, report, ctx, p),
    }


def count_lookup_ids(
    tasks: Iterable[Task], reports: Iterable[Report], ctx: ReleaseContext
) -> dict[str, str | None]:
    """arXiv id -> best known title, for every id Document Importance needs a citation count for:
    S of every report and S* (the exemplar's arXiv refs) of every task. Feed to `citations.lookup_counts`."""
    out: dict[str, str | None] = {}

    def add(aid: str | None, title: str | None) -> None:
        if not aid:
            return
        key = strip_arxiv_version(aid)
        entry = ctx.corpus_entry(key)
        best = title or (entry[0] if entry else None)
        if out.get(key) is None:
            out[key] = best

    for t in tasks:
        for r in ctx.refs_for(t.task_id):
            add(r.arxiv_id, r.title)
    for rep in reports:
        for src in rep.sources.values():
            add(src.arxiv_id, src.title)
    return out
