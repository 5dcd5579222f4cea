"""The seven DeepScholar-bench metrics, per report, from judgments (paper definitions by default).

Conventions:
- A per-report value is NaN when it is undefined (nothing to measure) or when a judgment it needs failed
  or is missing; `details["reason"]` says which. Never 0 for either. The authors' aggregate (NaN -> 0,
  rounded) is reported separately by `score_system` for comparison with published numbers.
- `mode: code` switches reproduce the authors' shipped code where it differs from the paper
  (see /work/shared/specs/deepscholar.md §3). Undefined stays NaN in code mode too: the authors turn it
  into 0 at aggregation, which `authors_aggregate` reproduces.
- `on_failure: exclude` (Relevance, Cite-P, Claim Coverage) drops failed judgments instead of making the
  report NaN; failures are counted either way.
- Nothing to score is not undefined: a report that gives a metric nothing to score (no arXiv link for
  Relevance Rate / Document Importance, no citation for Cite-P, no eligible sentence for Claim Coverage) is
  the system's own omission and scores 0, as the paper's tables and the authors' code count it
  (`nothing_to_score: zero`, reason `zero:<why>` in the per-task table; `undefined` makes it NaN instead).
  What the release or the run cannot provide (no importance labels, no citation counts) stays NaN.

Organization, about the authors' code: with the lotus version they must have run (main after 1.1.3),
`permute_cols=True` only reorders the data block while the instruction still says "A = Related_work_a", so
their trial-2 "B" means "exemplar better" and their score_2 is inverted (~0.5 for every system). We
implement the intended design: call 2 swaps both position and label.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from rapidfuzz import fuzz

from reportbench.jsonio import json_safe
from reportbench.judges.base import Judgment
from reportbench.metrics.aggregate import undefined_reason
from reportbench.metrics.nuggetizer import nugget_scores
from reportbench.metrics.registry import MetricResult, MetricSpec, get_metric, register_metric
from reportbench.metrics.stats import authors_aggregate, nan_mean
from reportbench.protocols import JudgeItem
from reportbench.protocols.deepscholar.items import (
    DeepScholarParams,
    ReleaseContext,
    as_params,
    cite_p_plan,
    claim_plan,
    nugget_windows,
    organization_items,
    relevance_plan,
    supported_nuggets,
)
from reportbench.types import Report, Source, Task, strip_arxiv_version

PROTOCOL = "deepscholar"
Judgments = Mapping[str, Mapping[str, Judgment]]

ORGANIZATION = register_metric(
    MetricSpec(
        "organization",
        PROTOCOL,
        "Pairwise win rate vs the exemplar over two position-and-label-swapped calls; tie = 0.5.",
        judge_tasks=("organization",),
        short="Org",
    )
)
NUGGET_COVERAGE = register_metric(
    MetricSpec(
        "nugget_coverage",
        PROTOCOL,
        "Share of the exemplar's supported nuggets the report supports (strict_all by default).",
        judge_tasks=("nugget_assign",),
        short="NuggetCov",
    )
)
RELEVANCE_RATE = register_metric(
    MetricSpec(
        "relevance_rate",
        PROTOCOL,
        "RR = sum of 0/1/2 relevance grades / (2|S|), S = distinct arXiv ids linked or cited.",
        judge_tasks=("relevance",),
        short="RelRate",
    )
)
REFERENCE_COVERAGE = register_metric(
    MetricSpec(
        "reference_coverage",
        PROTOCOL,
        "Share of the exemplar's important arXiv references the report includes (id, then fuzzy title).",
        short="RefCov",
        evidence_kinds=("labels", "report"),
    )
)
DOCUMENT_IMPORTANCE = register_metric(
    MetricSpec(
        "document_importance",
        PROTOCOL,
        "median citations of S / 647.5 (one global divisor, Table 7), the system mean clipped at 1 "
        "(reproduces Table 2; modes per_exemplar and code in docs/deepscholar.md).",
        short="DocImp",
        # Table 2 clips the SYSTEM mean: a per-report ratio may exceed 1 (task_range), the reported value and
        # its bootstrap interval never do (the interval of the clipped mean is the clipped interval)
        clip_mean=True,
        task_range=(0.0, None),
        evidence="a citation count for at least one of the report's cited arXiv papers",
        no_evidence="no_counts",
        evidence_kinds=("counts", "report"),
    )
)
CITATION_PRECISION = register_metric(
    MetricSpec(
        "citation_precision",
        PROTOCOL,
        "Share of (sentence, citation) pairs whose cited source supports at least one claim of the sentence.",
        judge_tasks=("citation_support", "support"),
        short="CiteP",
    )
)
CLAIM_COVERAGE = register_metric(
    MetricSpec(
        "claim_coverage",
        PROTOCOL,
        "Share of sentences whose window's cited sources and the query context, together, support them (+-w).",
        judge_tasks=("support",),
        short="ClaimCov",
    )
)
METRIC_NAMES: tuple[str, ...] = (
    "organization",
    "nugget_coverage",
    "relevance_rate",
    "reference_coverage",
    "document_importance",
    "citation_precision",
    "claim_coverage",
)


# ---------------------------------------------------------------------------------------- lookups
@dataclass(frozen=True)
class _Outcome:
    """A judgment's usable value, or why it has none ('failed', 'missing', 'malformed')."""

    value: float | None
    problem: str | None = None
    label: str | None = None


def _get(judgments: Judgments, item: JudgeItem) -> Judgment | None:
    return judgments.get(item.task, {}).get(item.item_id)


def _outcome(judgments: Judgments, item: JudgeItem, allowed: Iterable[float]) -> _Outcome:
    j = _get(judgments, item)
    if j is None:
        return _Outcome(None, "missing")
    if not j.ok:
        return _Outcome(None, "failed")
    v = j.score
    if math.isnan(v) or v not in set(allowed):
        return _Outcome(None, "malformed")
    return _Outcome(v, None, j.label)


def _problems(outcomes: Iterable[_Outcome]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in outcomes:
        if o.problem:
            out[o.problem] = out.get(o.problem, 0) + 1
    return out


def nothing_to_score(params: DeepScholarParams, why: str, **details: Any) -> MetricResult:
    """The system gave this metric nothing to score: 0 (paper and authors; default) or NaN (undefined)."""
    if params.nothing_to_score == "zero":
        return MetricResult(0.0, 0, 0, {"reason": f"zero:{why}", **details})
    return MetricResult.undefined(why, **details)


# ------------------------------------------------------------------------------------- organization
def organization(task: Task, report: Report, judgments: Judgments) -> MetricResult:
    """win = ([call1 == "A"] + [call2 == "B"]) / 2 -> 0, .5 or 1. Any failed call -> NaN."""
    items = organization_items(task, report)
    if not items:
        return MetricResult(0.0, 0, 0, {"empty_report": True})
    verdicts: list[str | None] = []
    problems: dict[str, int] = {}
    for it in items:
        j = _get(judgments, it)
        verdict = None
        if j is None:
            problems["missing"] = problems.get("missing", 0) + 1
        elif not j.ok:
            problems["failed"] = problems.get("failed", 0) + 1
        else:
            verdict = j.label if j.label in ("A", "B") else {1.0: "A", 0.0: "B"}.get(j.score)
            if verdict is None:
                problems["malformed"] = problems.get("malformed", 0) + 1
        verdicts.append(verdict)
    n_failed = sum(problems.values())
    details: dict[str, Any] = {"call1": verdicts[0], "call2": verdicts[1], **problems}
    if n_failed:
        return MetricResult(math.nan, 2, n_failed, {"reason": "judgment_failed", **details})
    value = ((verdicts[0] == "A") + (verdicts[1] == "B")) / 2
    return MetricResult(float(value), 2, 0, details)


# ------------------------------------------------------------------------------------------ nuggets
_VARIANT_KEYS = {
    "strict_all": ("strict_all_score", "strict_all"),
    "strict_vital": ("strict_vital_score", "strict_vital"),
    "all": ("all_score", "all"),
    "vital": ("vital_score", "vital"),
}


def _parse_labels(j: Judgment, n: int) -> list[str] | None:
    try:
        labels = json.loads(j.parsed or "")["labels"]
    except (ValueError, KeyError, TypeError):
        return None
    ok = {"support", "partial_support", "not_support"}
    if not isinstance(labels, list) or len(labels) != n or any(lab not in ok for lab in labels):
        return None
    return list(labels)


def nugget_coverage(
    task: Task, report: Report, judgments: Judgments, ctx: ReleaseContext, params: DeepScholarParams
) -> MetricResult:
    """Nugget assignment of the report against the exemplar's supported nuggets; `variant` is reported.

    Paper mode: any failed window -> NaN. Code mode: failed nuggets count as not_support (authors).
    Empty report -> 0 (it exists and supports nothing), flagged. Variants with an empty denominator
    (e.g. strict_vital without vital nuggets) are NaN.
    """
    p = params.nugget_coverage
    nuggets = supported_nuggets(task, ctx)
    if not nuggets:
        return MetricResult.undefined("no_supported_nuggets")
    importances = [n.importance for n in nuggets]
    if not report.body.strip():
        variants = {v: 0.0 for v in _VARIANT_KEYS}
        if "vital" not in importances:
            variants["strict_vital"] = variants["vital"] = math.nan
        return MetricResult(variants[p.variant], 0, 0, {"empty_report": True, "variants": variants})
    assignments: list[str] = []
    problems: dict[str, int] = {}
    n_failed_nuggets = 0
    windows = nugget_windows(task, report, ctx, p)
    for w in windows:
        j = _get(judgments, w.item)
        labels = None
        if j is None:
            problems["missing"] = problems.get("missing", 0) + 1
        elif not j.ok:
            problems["failed"] = problems.get("failed", 0) + 1
        else:
            labels = _parse_labels(j, len(w.nuggets))
            if labels is None:
                problems["malformed"] = problems.get("malformed", 0) + 1
        if labels is None:
            labels = ["failed"] * len(w.nuggets)
            n_failed_nuggets += len(w.nuggets)
        assignments.extend(labels)
    n_failed = sum(problems.values())
    details: dict[str, Any] = {
        "n_nuggets": len(nuggets),
        "n_vital": importances.count("vital"),
        "n_failed_nuggets": n_failed_nuggets,
        "assignments": {a: assignments.count(a) for a in sorted(set(assignments))},
        **problems,
    }
    if n_failed and p.mode == "paper":
        return MetricResult(math.nan, len(windows), n_failed, {"reason": "judgment_failed", **details})
    scored = ["not_support" if a == "failed" else a for a in assignments]
    raw = nugget_scores(scored, importances)
    variants: dict[str, float] = {}
    for v, keys in _VARIANT_KEYS.items():
        val = next((raw[k] for k in keys if k in raw), math.nan)
        if v in ("strict_vital", "vital") and "vital" not in importances:
            val = math.nan
        variants[v] = float(val)
    details["variants"] = variants
    return MetricResult(variants[p.variant], len(windows), n_failed, details)


# ---------------------------------------------------------------------------------------- relevance
def relevance_rate(
    task: Task, report: Report, judgments: Judgments, ctx: ReleaseContext, params: DeepScholarParams
) -> MetricResult:
    """RR = sum(grade) / (2|S|) (paper). Code mode: mean grade in [0, 2] (the authors' sheet divides later;
    their code also used only the 2nd of two trials; we have one judgment per item). |S| = 0 -> NaN."""
    p = params.relevance_rate
    plan = relevance_plan(task, report, ctx, p)
    details: dict[str, Any] = {"scope": p.scope, "mode": p.mode, "n_candidates": len(plan.candidates)}
    if plan.n_skipped_no_title:
        details["n_skipped_no_title"] = plan.n_skipped_no_title
    if not plan.candidates:
        why = "no_arxiv_links" if p.scope == "linked_arxiv" else "no_sources"
        return nothing_to_score(params, why, **details)
    outs = [_outcome(judgments, it, (0.0, 1.0, 2.0)) for _, it in plan.candidates]
    problems = _problems(outs)
    n_failed = sum(problems.values())
    details.update(problems)
    grades = [o.value for o in outs if o.value is not None]
    if (n_failed and params.on_failure == "nan") or not grades:
        return MetricResult(math.nan, len(outs), n_failed, {"reason": "judgment_failed", **details})
    details["grades"] = {str(int(g)): grades.count(g) for g in (0.0, 1.0, 2.0)}
    mean_grade = sum(grades) / len(grades)
    value = mean_grade if p.mode == "code" else mean_grade / 2
    return MetricResult(value, len(outs), n_failed, details)


# ------------------------------------------------------------------------------- reference coverage
_RC_STOPWORDS = frozenset("the a an and or but in on at to for of with by".split())


def rc_normalise(title: str | None) -> str:
    """The authors' RC normalisation: lowercase, drop punctuation, stopwords and words <= 2 chars."""
    words = re.sub(r"[^\w\s]", "", (title or "").lower()).split()
    return " ".join(w for w in words if w not in _RC_STOPWORDS and len(w) > 2)


def _source_title(src: Source, ctx: ReleaseContext) -> str | None:
    entry = ctx.corpus_entry(src.arxiv_id)
    return src.title or (entry[0] if entry else None)


def reference_coverage(
    task: Task, report: Report, ctx: ReleaseContext, params: DeepScholarParams
) -> MetricResult:
    """RC = |covered E| / |E|, E = the exemplar's important refs with an arXiv id (deduplicated by id).

    Paper: covered if the version-stripped id is in S, else if fuzz.ratio of normalised titles >= threshold
    against any report source title. Code: the id as a substring of a source title/abstract, else
    difflib.SequenceMatcher ratio > 0.8. No labels or empty E -> NaN.
    """
    p = params.reference_coverage
    if not ctx.has_important_labels(task.task_id):
        return MetricResult.undefined("no_important_labels")
    e: dict[str, str | None] = {}
    for r in ctx.refs_for(task.task_id):
        if r.is_important and r.arxiv_id:
            e.setdefault(strip_arxiv_version(r.arxiv_id), r.title)
    if not e:
        return MetricResult.undefined("no_important_arxiv_refs")
    s_ids = set(report.retrieved_arxiv_ids)
    srcs = list(report.sources.values())
    titles = [rc_normalise(_source_title(s, ctx)) for s in srcs]
    titles = [t for t in titles if t]
    by_id = by_title = 0
    for aid, title in e.items():
        t_imp = rc_normalise(title)
        if p.mode == "paper":
            if aid in s_ids:
                by_id += 1
            elif t_imp and any(fuzz.ratio(t_imp, t) >= p.title_threshold for t in titles):
                by_title += 1
        else:
            texts = [f"{_source_title(s, ctx) or ''} {s.abstract or ''}" for s in srcs]
            if any(aid in t for t in texts):
                by_id += 1
            elif t_imp and any(
                difflib.SequenceMatcher(None, t_imp, t).ratio() > p.code_ratio for t in titles
            ):
                by_title += 1
    covered = by_id + by_title
    details = {"mode": p.mode, "n_important": len(e), "by_id": by_id, "by_title": by_title}
    return MetricResult(covered / len(e), len(e), 0, details)


# ------------------------------------------------------------------------------ document importance
def _counts(ids: Iterable[str], counts: Mapping[str, int | None]) -> tuple[list[int], int]:
    norm = {strip_arxiv_version(k): v for k, v in counts.items()}
    found: list[int] = []
    missing = 0
    for i in dict.fromkeys(strip_arxiv_version(x) for x in ids):
        v = norm.get(i)
        if v is None:
            missing += 1
        else:
            found.append(int(v))
    return found, missing


def document_importance(
    task: Task,
    report: Report,
    ctx: ReleaseContext,
    citation_counts: Mapping[str, int | None],
    params: DeepScholarParams,
) -> MetricResult:
    """Document Importance of one report; S = the report's distinct arXiv ids.

    - `global` (default, reproduces Table 2): median cites(S) / divisor (647.5, Table 7), one divisor for every
      report. With `clip: aggregate` the per-report ratio is left unclipped and the SYSTEM mean is clipped
      at 1 (`summarise`); `clip: report` clips each report. (1000 and 100 citations: aggregate .849,
      per report .577.) Table 2's .008 = about 5 citations / 647.5.
    - `per_exemplar` (the formula's text): min(median cites(S) / median cites(S*), 1), S* = the exemplar's
      arXiv refs; NaN when S* has no counts or its median is 0.
    - `code`: the raw median of S.
    No arXiv id in the report -> nothing to score (0). Ids without a known count are excluded (counted in
    details); NaN when none of S has a count (the run has no counts: offline without a cache).
    """
    p = params.document_importance
    if not report.retrieved_arxiv_ids:
        return nothing_to_score(params, "no_arxiv_links", mode=p.mode)
    s_counts, s_missing = _counts(report.retrieved_arxiv_ids, citation_counts)
    details: dict[str, Any] = {"mode": p.mode, "n_s": len(s_counts) + s_missing, "n_s_missing": s_missing}
    if not s_counts:
        return MetricResult.undefined("no_counts_for_report_sources", n_items=s_missing, **details)
    med_s = float(statistics.median(s_counts))
    details["median_s"] = med_s
    n_items = len(s_counts) + s_missing
    if p.mode == "code":
        return MetricResult(med_s, n_items, 0, details)
    if p.mode == "global":
        if isinstance(p.divisor, str):  # 'release' is replaced by a number in score_system
            return MetricResult.undefined("release_divisor_undefined", n_items=n_items, **details)
        ratio = med_s / p.divisor
        details.update({"ratio_unclipped": ratio, "divisor": p.divisor, "clip": p.clip})
        return MetricResult(min(ratio, 1.0) if p.clip == "report" else ratio, n_items, 0, details)
    star_ids = [r.arxiv_id for r in ctx.refs_for(task.task_id) if r.arxiv_id]
    star_counts, star_missing = _counts(star_ids, citation_counts)
    details.update({"n_s_star": len(star_counts) + star_missing, "n_s_star_missing": star_missing})
    if not star_counts:
        return MetricResult.undefined("no_counts_for_exemplar_refs", n_items=n_items, **details)
    med_star = float(statistics.median(star_counts))
    details["median_s_star"] = med_star
    if med_star == 0:
        return MetricResult.undefined("exemplar_median_zero", n_items=n_items, **details)
    ratio = med_s / med_star
    details["ratio_unclipped"] = ratio
    return MetricResult(min(ratio, 1.0), n_items, 0, details)


# -------------------------------------------------------------------------------- citation precision
def citation_precision(
    task: Task, report: Report, judgments: Judgments, ctx: ReleaseContext, params: DeepScholarParams
) -> MetricResult:
    """Paper: mean support over (sentence, citation) pairs; uncited sentences contribute nothing; no
    citations -> NaN. Code: sentences >= 50 chars, first number of "[1, 2]" only, sentence = mean over its
    refs or 0 if none, report = mean over sentences."""
    p = params.citation_precision
    units = cite_p_plan(task, report, ctx, p)
    outs_all: list[_Outcome] = []
    details: dict[str, Any] = {"mode": p.mode}
    if p.mode == "paper":
        pairs: list[float] = []
        n_unresolved = 0
        for u in units:
            for _, it in u.items:
                o = _outcome(judgments, it, (0.0, 1.0))
                outs_all.append(o)
                if o.value is not None:
                    pairs.append(o.value)
            n_unresolved += len(u.unresolved)
            if p.unresolved == "unsupported":
                pairs.extend([0.0] * len(u.unresolved))
        problems = _problems(outs_all)
        n_failed = sum(problems.values())
        n_pairs = len(outs_all) + (n_unresolved if p.unresolved == "unsupported" else 0)
        details.update({"n_pairs": n_pairs, "n_unresolved": n_unresolved, **problems})
        if n_pairs == 0:
            return nothing_to_score(params, "no_citations", **details)
        if (n_failed and params.on_failure == "nan") or not pairs:
            return MetricResult(math.nan, len(outs_all), n_failed, {"reason": "judgment_failed", **details})
        return MetricResult(sum(pairs) / len(pairs), len(outs_all), n_failed, details)
    sent_scores: list[float] = []
    any_failed_sentence = False
    for u in units:
        outs = [_outcome(judgments, it, (0.0, 1.0)) for _, it in u.items]
        outs_all.extend(outs)
        vals = [o.value for o in outs if o.value is not None]
        if any(o.problem for o in outs) and params.on_failure == "nan":
            any_failed_sentence = True
            continue
        if not outs:
            sent_scores.append(0.0)
        elif vals:
            sent_scores.append(sum(vals) / len(vals))
    problems = _problems(outs_all)
    n_failed = sum(problems.values())
    details.update({"n_sentences": len(units), **problems})
    if not units:
        return nothing_to_score(params, "no_sentences", **details)
    if any_failed_sentence or not sent_scores:
        return MetricResult(math.nan, len(outs_all), n_failed, {"reason": "judgment_failed", **details})
    return MetricResult(sum(sent_scores) / len(sent_scores), len(outs_all), n_failed, details)


# ------------------------------------------------------------------------------------ claim coverage
def claim_coverage(
    task: Task, report: Report, judgments: Judgments, ctx: ReleaseContext, params: DeepScholarParams
) -> MetricResult:
    """Share of eligible sentences covered: any of its candidate support judgments is 1 (see claim_plan;
    with `sources: set` a sentence has one judgment, against its window's sources and the query together).

    A sentence with a supporting judgment is covered even if others failed; one with no support and a
    failure is undetermined (-> report NaN, or excluded under on_failure=exclude). No eligible sentence
    -> NaN. Code mode: sentences without refs score 0.
    """
    p = params.claim_coverage
    units = claim_plan(task, report, ctx, p)
    details: dict[str, Any] = {"mode": p.mode, "window": p.window if p.mode == "paper" else 0}
    if not units:
        return nothing_to_score(params, "no_eligible_sentences", **details)
    covered: list[float] = []
    n_undetermined = 0
    outs_all: list[_Outcome] = []
    for u in units:
        outs = [_outcome(judgments, it, (0.0, 1.0)) for it in u.items]
        outs_all.extend(outs)
        if any(o.value == 1.0 for o in outs):
            covered.append(1.0)
        elif any(o.problem for o in outs):
            n_undetermined += 1
        else:
            covered.append(0.0)
    problems = _problems(outs_all)
    n_failed = sum(problems.values())
    details.update({"n_sentences": len(units), "n_undetermined": n_undetermined, **problems})
    if (n_undetermined and params.on_failure == "nan") or not covered:
        return MetricResult(math.nan, len(outs_all), n_failed, {"reason": "judgment_failed", **details})
    return MetricResult(sum(covered) / len(covered), len(outs_all), n_failed, details)


# ------------------------------------------------------------------------------------------- drivers
def score_report(
    task: Task,
    report: Report,
    judgments_by_task: Judgments,
    release_ctx: ReleaseContext,
    citation_counts: Mapping[str, int | None] | None = None,
    params: DeepScholarParams | Mapping[str, object] | None = None,
) -> dict[str, MetricResult]:
    """All seven metrics for one report. `judgments_by_task`: judge task name -> item id -> Judgment."""
    p = as_params(params)
    counts = citation_counts or {}
    return {
        "organization": organization(task, report, judgments_by_task),
        "nugget_coverage": nugget_coverage(task, report, judgments_by_task, release_ctx, p),
        "relevance_rate": relevance_rate(task, report, judgments_by_task, release_ctx, p),
        "reference_coverage": reference_coverage(task, report, release_ctx, p),
        "document_importance": document_importance(task, report, release_ctx, counts, p),
        "citation_precision": citation_precision(task, report, judgments_by_task, release_ctx, p),
        "claim_coverage": claim_coverage(task, report, judgments_by_task, release_ctx, p),
    }


PER_TASK_SCHEMA: dict[str, Any] = {
    "system": pl.String,
    "task_id": pl.String,
    "report_id": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "n_items": pl.Int64,
    "n_failed": pl.Int64,
    "reason": pl.String,
    "details": pl.String,
}


@dataclass
class SystemScores:
    """(a) `per_task`: one row per (task, report, metric); (b) `summary`: per-metric system aggregates."""

    system: str
    per_task: pl.DataFrame
    summary: dict[str, Any]

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """`per_task.csv` and `summary.json` (strict JSON: NaN -> null) under `out_dir`."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"per_task": out / "per_task.csv", "summary": out / "summary.json"}
        self.per_task.write_csv(paths["per_task"])
        text = json.dumps(json_safe(self.summary), indent=2, sort_keys=True, allow_nan=False)
        paths["summary"].write_text(text + "\n")
        return paths

    @classmethod
    def read(cls, out_dir: str | Path) -> SystemScores:
        """Inverse of `write` (null means -> NaN)."""
        out = Path(out_dir)
        per_task = pl.read_csv(out / "per_task.csv", schema=PER_TASK_SCHEMA)
        summary = json.loads((out / "summary.json").read_text())
        for m in summary.get("metrics", {}).values():
            for k in ("mean", "authors_aggregate"):
                if m.get(k) is None:
                    m[k] = math.nan
        return cls(summary["system"], per_task, summary)


def release_divisor(
    tasks: Iterable[Task], ctx: ReleaseContext, citation_counts: Mapping[str, int | None]
) -> tuple[float | None, int]:
    """A release's own Document Importance divisor: the mean over tasks of the median citation count of the
    exemplar's arXiv references (how Table 7's 647.5 describes the public release), and how many tasks it
    rests on. None when no exemplar reference has a count."""
    medians = []
    for t in tasks:
        found, _ = _counts([r.arxiv_id for r in ctx.refs_for(t.task_id) if r.arxiv_id], citation_counts)
        if found:
            medians.append(float(statistics.median(found)))
    return (statistics.fmean(medians) if medians else None), len(medians)


def score_system(
    system: str,
    tasks: Mapping[str, Task] | Iterable[Task],
    reports: Iterable[Report],
    judgments_by_task: Judgments,
    release_ctx: ReleaseContext,
    citation_counts: Mapping[str, int | None] | None = None,
    params: DeepScholarParams | Mapping[str, object] | None = None,
) -> SystemScores:
    """Score every report of one system.

    A task with no report gets NaN rows (reason `no_report`). The system mean of a metric is over tasks
    with a defined value (several reports for one task are averaged first), with `n_defined`, `n_undefined`,
    `n_failed_items`; `authors_aggregate` is the authors' NaN -> 0 mean rounded to 2 decimals.
    """
    p = as_params(params)
    task_map = dict(tasks) if isinstance(tasks, Mapping) else {t.task_id: t for t in tasks}
    divisor_note: dict[str, Any] = {}
    if p.document_importance.mode == "global" and p.document_importance.divisor == "release":
        value, n = release_divisor(task_map.values(), release_ctx, citation_counts or {})
        divisor_note = {"release_divisor": value, "release_divisor_tasks": n}
        if value is not None and value > 0:
            di = p.document_importance.model_copy(update={"divisor": value})
            p = p.model_copy(update={"document_importance": di})
    rows: list[dict[str, Any]] = []
    seen_tasks: set[str] = set()
    for rep in reports:
        if rep.task_id not in task_map:
            raise KeyError(f"report {rep.report_id} is for unknown task {rep.task_id!r}")
        seen_tasks.add(rep.task_id)
        results = score_report(task_map[rep.task_id], rep, judgments_by_task, release_ctx, citation_counts, p)
        for metric, r in results.items():
            rows.append(
                {
                    "system": system,
                    "task_id": rep.task_id,
                    "report_id": rep.report_id,
                    "metric": metric,
                    "value": r.value,
                    "n_items": r.n_items,
                    "n_failed": r.n_failed,
                    "reason": r.details.get("reason"),
                    "details": json.dumps(json_safe(r.details), sort_keys=True, default=str),
                }
            )
    missing = sorted(set(task_map) - seen_tasks)
    for tid in missing:
        for metric in METRIC_NAMES:
            rows.append(
                {
                    "system": system,
                    "task_id": tid,
                    "report_id": None,
                    "metric": metric,
                    "value": math.nan,
                    "n_items": 0,
                    "n_failed": 0,
                    "reason": "no_report",
                    "details": "{}",
                }
            )
    per_task = pl.DataFrame(rows, schema=PER_TASK_SCHEMA, orient="row").sort(
        ["task_id", "metric", "report_id"]
    )
    summary = summarise(system, per_task, p)
    summary["n_missing_reports"] = len(missing)
    if divisor_note:
        summary["metrics"]["document_importance"].update(divisor_note)
    return SystemScores(system, per_task, summary)


def task_values(per_task: pl.DataFrame, metric: str) -> dict[str, float]:
    """task_id -> the task's value (NaN-aware mean over its reports; NaN if none defined)."""
    sub = per_task.filter(pl.col("metric") == metric)
    out: dict[str, float] = {}
    for (tid,), grp in sub.group_by(["task_id"], maintain_order=True):
        out[str(tid)] = nan_mean(grp["value"].to_list()).mean
    return out


def _has_evidence(sub: pl.DataFrame) -> bool:
    """Document Importance rests on counts: True unless no report had one and some report needed one."""
    reasons = [str(r or "") for r in sub["reason"].to_list()]
    needed = any(r.startswith("no_counts") for r in reasons)
    rested = any(v == v and not r.startswith("zero:") for v, r in zip(sub["value"].to_list(), reasons, strict=True))
    return rested or not needed


def _undefined_reason(sub: pl.DataFrame) -> str:
    """The reason code of an all-undefined metric (docs/reading-scores.md)."""

    reasons = sub["reason"].to_list()
    status = ["failed" if r == "judgment_failed" else ("no_report" if r == "no_report" else "undefined")
              for r in reasons]
    return undefined_reason(status, reasons)


def summarise(system: str, per_task: pl.DataFrame, params: DeepScholarParams | None = None) -> dict[str, Any]:
    """System summary from a per-task table (see `score_system`)."""

    p = params or DeepScholarParams()
    metrics: dict[str, Any] = {}
    for m in METRIC_NAMES:
        sub = per_task.filter(pl.col("metric") == m)
        vals = task_values(per_task, m)
        mr = nan_mean(vals.values())
        spec = get_metric(m, PROTOCOL)
        mean = mr.mean
        extra: dict[str, Any] = {}
        if m == "document_importance" and p.document_importance.mode == "global":
            if p.document_importance.clip == "aggregate" and not math.isnan(mean):
                extra = {"mean_unclipped": mean, "clipped_at": 1.0}
                mean = min(mean, 1.0)
        if m == "document_importance" and not _has_evidence(sub):
            # Evidence: a value rests on citation counts. Reports with no arXiv link score 0 (the protocol),
            # but when no report's papers have a count at all the system value is undefined (no_counts), not 0
            mean, extra = math.nan, {"reason": "no_counts", "mean_without_counts": mean}
        elif math.isnan(mean):
            extra = {**extra, "reason": _undefined_reason(sub)}
        metrics[m] = {
            "mean": mean,
            **extra,
            # tasks scored 0 because the report gave the metric nothing to score (see nothing_to_score)
            "n_zero_nothing_to_score": int(
                sub.filter(pl.col("reason").fill_null("").str.starts_with("zero:"))["task_id"].n_unique()
            ),
            "n_defined": mr.n_defined,
            "n_undefined": mr.n_undefined,
            # tasks whose value is NaN because a judgment failed (a subset of n_undefined): shown apart
            "n_failed": int(sub.filter(pl.col("reason") == "judgment_failed")["task_id"].n_unique()),
            "n_items": int(sub["n_items"].sum()),
            "n_failed_items": int(sub["n_failed"].sum()),
            "authors_aggregate": authors_aggregate(vals.values()),
            "higher_is_better": spec.higher_is_better,
            "aggregation": spec.aggregation,
        }
    return {
        "system": system,
        "protocol": PROTOCOL,
        "n_tasks": per_task["task_id"].n_unique(),
        "n_reports": per_task["report_id"].drop_nulls().n_unique(),
        "params": p.model_dump(mode="json"),
        "metrics": metrics,
    }
