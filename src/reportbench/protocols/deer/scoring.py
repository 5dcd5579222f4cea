"""DEER's numbers: rubric aggregation (spec §2.1), raw fact-check metrics (§2.3), their 0-10 normalisation
(§2.4) and the integration into seven dimensions (§2.5).

N/A is `None` everywhere: dropped at every level, and a level with nothing defined is N/A (never 0).
Rounding to 2 dp happens only where the authors' integration rounds (the reported sub-dimension, dimension).
Python's `round` is used on purpose: the authors' values (e.g. 5.125 -> 5.12) come from it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean, pstdev
from typing import Any

from reportbench.protocols.deer.rubric import DIMENSIONS, FACT_SUBS, FACTORS

Score = float | None  # None = N/A

RESULT_RANK = {"supported": 0, "not_supported": 1, "error": 2, "unverified": 3}
EXTERNAL = ("A", "B", "C")
COUNT_BUCKETS = {"information": 15, "citations": 10, "references": 4}


def mean_defined(values: Iterable[Score]) -> Score:
    vals = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return fmean(vals) if vals else None


def r2(v: Score) -> Score:
    return None if v is None else round(v, 2)


# --------------------------------------------------------------------------------------- rubric (§2.1)
@dataclass(frozen=True)
class ElementScore:
    c_avg: Score
    q_avg: Score

    @property
    def value(self) -> Score:
        """C and Q weigh the same, whatever the number of factors behind each."""
        return mean_defined([self.c_avg, self.q_avg])


def element_scores(factor_scores: Mapping[str, Score]) -> dict[tuple[str, str, str], ElementScore]:
    """factor key 'group.sub.element.fid' -> score (None = N/A) to per-element C/Q means.

    A factor missing from the mapping is treated like N/A (the caller decides whether a missing call is a failure).
    """
    acc: dict[tuple[str, str, str], dict[str, list[float]]] = {}
    for f in FACTORS:
        slot = acc.setdefault((f.group, f.sub, f.element), {"C": [], "Q": []})
        v = factor_scores.get(f.key)
        if v is not None:
            slot[f.kind].append(float(v))
    return {k: ElementScore(mean_defined(v["C"]), mean_defined(v["Q"])) for k, v in acc.items()}


def sub_scores(factor_scores: Mapping[str, Score]) -> dict[tuple[str, str], Score]:
    """(group, sub) -> unrounded sub-dimension score (mean of defined element scores)."""
    by_sub: dict[tuple[str, str], list[Score]] = {}
    for (g, s, _e), el in element_scores(factor_scores).items():
        by_sub.setdefault((g, s), []).append(el.value)
    return {k: mean_defined(v) for k, v in by_sub.items()}


def judge_dimensions(factor_scores: Mapping[str, Score]) -> dict[str, dict[str, Score]]:
    """{group: {sub: score}} rounded to 2 dp, as the authors' integration recomputes them per sample."""
    out: dict[str, dict[str, Score]] = {}
    for (g, s), v in sub_scores(factor_scores).items():
        out.setdefault(g, {})[s] = r2(v)
    return out


# --------------------------------------------------------------------------------- raw metrics (§2.3)
@dataclass
class Claim:
    """One claim after back-tracking. `urls` are the resolved sources (raw strings when unresolved)."""

    claim_id: str
    claim_type: str
    numeric: bool = False
    urls: list[str] = field(default_factory=list)


@dataclass
class Verification:
    claim_id: str
    url: str
    result: str  # supported | not_supported | error


def claim_label(claim: Claim, verifs: Sequence[Verification]) -> str:
    """Best result over all the claim's URL verifications; a claim never verified is `unverified`."""
    mine = [v.result for v in verifs if v.claim_id == claim.claim_id]
    return min(mine, key=lambda r: RESULT_RANK[r]) if mine else "unverified"


def _ratio(num: float, den: float, zero: str) -> float:
    if den == 0:
        if zero == "zero":
            return 0.0
        if zero == "nan":
            return math.nan
        raise ValueError(f"zero_denominator must be zero|nan, got {zero!r}")
    return num / den


def hhi_score(counts: Sequence[float]) -> float:
    """Normalised HHI on 0-10 (10 = evenly spread); n <= 1 sources with a count gives 0 (authors' code)."""
    c = [x for x in counts if x > 0]
    n = len(c)
    if n <= 1:
        return 0.0
    tot = sum(c)
    h = sum((x / tot) ** 2 for x in c)
    return min(10.0, max(0.0, 10.0 * (1.0 - (h - 1.0 / n) / (1.0 - 1.0 / n))))


def cv_score(counts: Sequence[float]) -> float:
    """Paper's variant: coefficient of variation of citation counts, inverted as 10/(1+CV); no counts -> 0."""
    c = [x for x in counts if x > 0]
    if not c:
        return 0.0
    mu = fmean(c)
    return 10.0 / (1.0 + pstdev(c) / mu)


@dataclass(frozen=True)
class FactModes:
    """Spec §6.3 switches of the fact side. Defaults: the paper where it is implementable."""

    source_support: str = "paper"  # paper: |A,B,C|/|all| · code: (A+B)/(A+B+C)
    information: str = "paper"  # paper: supported A-C claims · code: supported A-E claims + all D and E
    diversity: str = "paper"  # paper: 10/(1+CV) of citation counts · code: normalised HHI of supported counts
    zero_denominator: str = "zero"  # zero (authors' code) | nan

    @classmethod
    def from_params(cls, p: Mapping[str, Any] | None) -> FactModes:
        p = dict(p or {})
        mode = p.pop("mode", None)
        base = cls.code() if mode == "code" else cls()
        kw = {k: str(v) for k, v in p.items() if k in cls.__dataclass_fields__ and v is not None}
        return cls(**{**base.__dict__, **kw})

    @classmethod
    def code(cls) -> FactModes:
        return cls(source_support="code", information="code", diversity="code", zero_denominator="zero")


def raw_metrics(
    claims: Sequence[Claim],
    verifs: Sequence[Verification],
    reliable_urls: Iterable[str],
    shown_urls: Iterable[str],
    modes: FactModes = FactModes(),
) -> dict[str, Any]:
    """The raw fact-check metrics of one report (authors' `eval_metrics.compute_metrics` + paper variants)."""
    z = modes.zero_denominator
    labels = {c.claim_id: claim_label(c, verifs) for c in claims}
    types = {c.claim_id: c.claim_type for c in claims}
    n = {t: sum(1 for c in claims if c.claim_type == t) for t in "ABCDEF"}
    ext = [c for c in claims if c.claim_type in EXTERNAL]
    sup_ext = sum(1 for c in ext if labels[c.claim_id] == "supported")
    a_e = [c for c in claims if c.claim_type in "ABCDE"]
    ok_a_e = sum(1 for c in a_e if labels[c.claim_id] == "supported" or c.claim_type in "DE")
    ext_num = [c for c in ext if c.numeric]
    ext_verifs = [v for v in verifs if types.get(v.claim_id) in EXTERNAL]
    sup_cit = sum(1 for v in ext_verifs if v.result == "supported")
    shown = set(shown_urls)
    used = {v.url for v in verifs}
    supported_urls = {v.url for v in verifs if v.result == "supported"}
    error_urls = {v.url for v in verifs if v.result == "error"}
    reliable = set(reliable_urls)
    sup_counts: dict[str, int] = {}
    cited_counts: dict[str, int] = {}
    for v in verifs:
        cited_counts[v.url] = cited_counts.get(v.url, 0) + 1
        if v.result == "supported":
            sup_counts[v.url] = sup_counts.get(v.url, 0) + 1
    if modes.source_support == "code":
        source_support = _ratio(n["A"] + n["B"], n["A"] + n["B"] + n["C"], z)
    else:
        source_support = _ratio(n["A"] + n["B"] + n["C"], len(claims), z)
    information = ok_a_e if modes.information == "code" else sup_ext
    diversity = (
        hhi_score(list(sup_counts.values())) if modes.diversity == "code" else cv_score(list(cited_counts.values()))
    )
    return {
        "external_claim_accuracy": _ratio(sup_ext, len(ext), z),
        "claim_accuracy": _ratio(ok_a_e, len(a_e), z),
        "external_numeric_claim_accuracy": _ratio(
            sum(1 for c in ext_num if labels[c.claim_id] == "supported"), len(ext_num), z
        ),
        "citation_accuracy": _ratio(sup_cit, len(ext_verifs), z),
        "supported_per_shown": _ratio(len(supported_urls), len(shown), z),
        "supported_per_used": _ratio(len(supported_urls), len(used), z),
        "used_per_shown": _ratio(len(used), len(shown), z),
        "reproducibility": (1.0 - _ratio(len(error_urls), len(used), z)) if used or z == "nan" else 0.0,
        "reliability": _ratio(len(reliable & supported_urls), len(used), z),
        "diversity": diversity,
        "source_support": source_support,
        "information": information,
        "citations": sup_cit,
        "references": len(supported_urls),
        "claim_type_counts": n,
        "num_verifications": len(verifs),
        "supported_counts": sup_counts,
        "cited_counts": cited_counts,
    }


# ------------------------------------------------------------------------------- normalisation (§2.4)
def ratio_to_score(r: float) -> float:
    if isinstance(r, float) and math.isnan(r):
        return math.nan
    return round(min(max(r, 0.0), 1.0) * 10, 2)


def amount_to_score(n: int, d: int) -> int:
    """Count buckets: 0 -> 0, 1..d -> 1, ..., capped at 10."""
    return 0 if n <= 0 else min((n - 1) // d + 1, 10)


def _nan_to_none(v: float) -> Score:
    return None if isinstance(v, float) and math.isnan(v) else v


def fact_subdimensions(raw: Mapping[str, Any]) -> dict[str, dict[str, Score]]:
    """Raw metrics -> {information_integrity: {...5}, information_sufficiency: {...4}} on 0-10, 2 dp."""
    integ = {
        "claim_factuality": ratio_to_score(raw["external_claim_accuracy"]),
        "citation_validity": ratio_to_score(raw["citation_accuracy"]),
        "reference_accuracy": ratio_to_score(raw["supported_per_shown"]),
        "reference_quality": fmean([ratio_to_score(raw["reproducibility"]), ratio_to_score(raw["reliability"])]),
        "reference_diversity": float(raw["diversity"]),
    }
    suff = {
        "source_support": ratio_to_score(raw["source_support"]),
        "information": float(amount_to_score(int(raw["information"]), COUNT_BUCKETS["information"])),
        "citations": float(amount_to_score(int(raw["citations"]), COUNT_BUCKETS["citations"])),
        "references": float(amount_to_score(int(raw["references"]), COUNT_BUCKETS["references"])),
    }
    return {
        "information_integrity": {k: r2(_nan_to_none(v)) for k, v in integ.items()},
        "information_sufficiency": {k: r2(_nan_to_none(v)) for k, v in suff.items()},
    }


# --------------------------------------------------------------------------------- integration (§2.5)
def integrate(
    judge_subs: Mapping[str, Mapping[str, Score]],
    fact_subs: Mapping[str, Mapping[str, Score]],
    recency: str = "fold",
) -> dict[str, Any]:
    """Per-report final scores: {criteria: {dim: {sub: v}}, dimensions: {dim: v}, mean: v} (2 dp).

    recency `fold`: reference_quality := (2*RQ + recency)/3 when both are defined (authors' code);
    `drop`: recency is not used (the paper never mentions it).
    """
    criteria: dict[str, dict[str, Score]] = {}
    for g, subs in judge_subs.items():
        if g == "information_integrity":
            continue
        criteria[g] = dict(subs)
    for g, subs in fact_subs.items():
        criteria[g] = dict(subs)
    rec = (judge_subs.get("information_integrity") or {}).get("recency")
    if recency not in ("fold", "drop"):
        raise ValueError(f"recency must be fold|drop, got {recency!r}")
    integ = criteria.get("information_integrity")
    if recency == "fold" and integ is not None and rec is not None and integ.get("reference_quality") is not None:
        integ["reference_quality"] = r2((2 * integ["reference_quality"] + rec) / 3)
    dims = {d: r2(mean_defined((criteria.get(d) or {}).values())) for d in DIMENSIONS}
    defined = [v for v in dims.values() if v is not None]
    mean = r2(fmean(defined)) if len(defined) == len(DIMENSIONS) else None
    return {"criteria": criteria, "dimensions": dims, "mean": mean}


def macro_over_domains(per_task: Mapping[str, Score], domain_of: Mapping[str, str]) -> dict[str, Score]:
    """Overall = unweighted mean over domains of the domain means (authors' table); task-weighted alongside."""
    by_dom: dict[str, list[Score]] = {}
    for t, v in per_task.items():
        by_dom.setdefault(domain_of[t], []).append(v)
    dom_means = [mean_defined(v) for v in by_dom.values()]
    return {"macro_over_domains": mean_defined(dom_means), "task_weighted": mean_defined(per_task.values())}


__all__ = [
    "COUNT_BUCKETS",
    "Claim",
    "ElementScore",
    "FACT_SUBS",
    "FactModes",
    "Verification",
    "amount_to_score",
    "claim_label",
    "cv_score",
    "element_scores",
    "fact_subdimensions",
    "hhi_score",
    "integrate",
    "judge_dimensions",
    "macro_over_domains",
    "mean_defined",
    "ratio_to_score",
    "raw_metrics",
    "sub_scores",
]
