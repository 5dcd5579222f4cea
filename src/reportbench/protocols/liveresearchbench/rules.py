"""Pure scoring rules of DeepEval (no I/O): the issue-count bins, checklist scores with missing/extra keys,
depth aggregation in the paper's and the code's form, and E1/E2/E3 counting. Unit-tested by hand."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

NAN = float("nan")
DEPTH_DIMENSIONS = ("granularity", "insight", "critique", "evidence", "density")


# ------------------------------------------------------------------------------------------ pointwise
def issue_bin_score(n_issues: int) -> int:
    """The rubric of consistency and citation association: 0->100, 1-2->90, ..., 13-14->30, 15-17->20, >=18->10."""
    if n_issues < 0:
        raise ValueError(f"an issue count is >= 0, got {n_issues}")
    if n_issues <= 14:
        return 100 - 10 * math.ceil(n_issues / 2)
    if n_issues <= 17:
        return 20
    return 10


@dataclass(frozen=True)
class PointwiseScore:
    """Both scores of a pointwise criterion and the flags that tell them apart."""

    n_issues: int
    score_count: int
    score_judge: int
    flags: tuple[str, ...]

    def headline(self, source: str) -> float:
        if source == "count":
            return float(self.score_count)
        if source == "judge":
            return float(self.score_judge)
        raise ValueError(f"score_source must be count | judge, got {source!r}")


def pointwise_score(issues: Sequence[str], total_issues: int, score_judge: int) -> PointwiseScore:
    flags = []
    n = len(issues)
    if total_issues != n:
        flags.append(f"total_issues={total_issues} != {n} listed")
    count = issue_bin_score(n)
    if score_judge != count:
        flags.append(f"judge score {score_judge} != rubric {count}")
    return PointwiseScore(n, count, score_judge, tuple(flags))


# ------------------------------------------------------------------------------------------ checklists
@dataclass(frozen=True)
class ChecklistScore:
    """Per report and judge: the 0/1 per expected item (NaN = missing in paper mode), score 0-100, flags."""

    per_item: dict[str, float]
    value: float
    missing: tuple[str, ...]
    extra: tuple[str, ...]

    @property
    def flags(self) -> list[str]:
        out = []
        if self.missing:
            out.append(f"missing keys {list(self.missing)}")
        if self.extra:
            out.append(f"extra keys ignored {list(self.extra)}")
        return out


def checklist_score(expected: Sequence[str], answered: Mapping[str, int], mode: str = "paper") -> ChecklistScore:
    """Map the judge's keys onto the expected ids.

    - paper: a missing key is a failed item (NaN), so the report's score is NaN (flagged, counted as failed);
    - code: a missing key scores 0 (the authors sum what came back over a fixed denominator).
    Extra keys are ignored and flagged in both modes (the authors' sum would count them). Clamped to 0-100.
    """
    if mode not in ("paper", "code"):
        raise ValueError(f"checklist mode must be paper | code, got {mode!r}")
    if not expected:
        return ChecklistScore({}, NAN, (), tuple(sorted(answered)))
    per_item: dict[str, float] = {}
    missing = []
    for key in expected:
        if key in answered:
            per_item[key] = float(answered[key])
        else:
            missing.append(key)
            per_item[key] = NAN if mode == "paper" else 0.0
    extra = tuple(k for k in answered if k not in set(expected))
    vals = list(per_item.values())
    if any(v != v for v in vals):
        value = NAN
    else:
        value = min(100.0, max(0.0, 100.0 * sum(vals) / len(expected)))
    return ChecklistScore(per_item, value, tuple(missing), extra)


# ---------------------------------------------------------------------------------------------- depth
@dataclass(frozen=True)
class DepthCall:
    """One depth call, already mapped back to (evaluated, reference): dimension scores and the judge's winner."""

    eval_dims: Mapping[str, int]
    ref_dims: Mapping[str, int]
    winner: str  # "eval" | "ref" | "tie" (the judge's own verdict, positions mapped back)


def tie_rule(total_eval: float, total_ref: float, margin: float = 1.0) -> str:
    """|Δ| <= margin -> tie, else the higher total wins."""
    if abs(total_eval - total_ref) <= margin:
        return "tie"
    return "eval" if total_eval > total_ref else "ref"


def paper_outcome(calls_by_judge: Mapping[str, Sequence[DepthCall]], margin: float = 1.0) -> tuple[str, float, float]:
    """Paper aggregation for one (system, task): per judge, average each dimension over the two orders and sum;
    average the totals over judges; tie iff |Δ| <= margin. Returns (outcome, total_eval, total_ref); a judge with
    no successful call makes the outcome 'failed' (never silently averaged away)."""
    te, tr = [], []
    for _judge, calls in sorted(calls_by_judge.items()):
        if not calls:
            return "failed", NAN, NAN
        te.append(sum(sum(c.eval_dims[d] for c in calls) / len(calls) for d in DEPTH_DIMENSIONS))
        tr.append(sum(sum(c.ref_dims[d] for c in calls) / len(calls) for d in DEPTH_DIMENSIONS))
    if not te:
        return "failed", NAN, NAN
    e, r = sum(te) / len(te), sum(tr) / len(tr)
    return tie_rule(e, r, margin), e, r


def win_rate(outcomes: Iterable[str]) -> tuple[float, int, int, int]:
    """W/(W+L) with ties excluded; NaN with no decisive game (never 0). Returns (rate, W, L, T)."""
    outs = list(outcomes)
    w, lost, t = outs.count("eval"), outs.count("ref"), outs.count("tie")
    return (w / (w + lost) if w + lost else NAN), w, lost, t


def code_win_rates(winners_by_judge: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """The authors' aggregation: each call's declared winner is a game (2 per task per judge); per judge
    W/(W+L)·100; the ensemble is the mean of the judges' rates. A judge with no game at all has no rate (None,
    `no_games`). A judge whose games were all ties has no rate either (None, "ties only"): the authors' code
    scores it 0, kept beside as `authors_win_rate` and, while another judge has decisive games, inside the
    ensemble mean as their code computes it (listed in `ties_only_judges`). With no decisive game for any
    judge the ensemble is None ("no_games: ties only"), never a silent 0 (spec: 0 decisive games -> NaN)."""
    per_judge: dict[str, dict[str, Any]] = {}
    for judge, winners in sorted(winners_by_judge.items()):
        rate, w, lost, t = win_rate(winners)
        if not winners:
            per_judge[judge] = {"win_rate": None, "reason": "no_games", "wins": 0, "losses": 0, "ties": 0}
        elif rate != rate:
            per_judge[judge] = {"win_rate": None, "reason": f"no_games: ties only ({t} tie(s))",
                                "authors_win_rate": 0.0, "wins": w, "losses": lost, "ties": t}  # fmt: skip
        else:
            per_judge[judge] = {"win_rate": 100.0 * rate, "wins": w, "losses": lost, "ties": t}
    played = {j: v for j, v in per_judge.items() if v.get("reason") != "no_games"}
    authors = [v["win_rate"] if v["win_rate"] is not None else v["authors_win_rate"] for v in played.values()]
    ties_only = sorted(j for j, v in played.items() if v["win_rate"] is None)
    if not played:
        return {"win_rate": None, "reason": "no_games", "by_judge": per_judge}
    authors_rate = sum(authors) / len(authors)
    if len(ties_only) == len(played):
        n_ties = sum(v["ties"] for v in played.values())
        return {"win_rate": None, "reason": f"no_games: ties only ({n_ties} tie(s), no decisive game)",
                "authors_win_rate": authors_rate, "by_judge": per_judge}  # fmt: skip
    out: dict[str, Any] = {"win_rate": authors_rate, "by_judge": per_judge}
    if ties_only:
        out["ties_only_judges"] = ties_only
    return out


# ------------------------------------------------------------------------------------ citation accuracy
@dataclass
class AccuracyCounts:
    """E1/E2 per distinct URL, E3 per (claim, source) pair, with what could not be checked kept apart."""

    n_urls: int = 0
    e1: int = 0
    e2: int = 0
    e3: int = 0
    blocked: int = 0  # 401/403/paywall: flagged apart (counted in E1 only if configured)
    not_checked: int = 0  # not fetched (offline) or a failed judgment: neither an error nor a pass
    n_pairs: int = 0
    n_fetched: int = 0  # URLs the fetch stage gave a status (ok, invalid, blocked): the evidence for E1/blocked
    n_checked: int = 0  # URLs with a verdict (E1, blocked, E2, or relevant) + pairs with a support verdict
    n_relevance_judged: int = 0  # fetched-ok URLs with a relevance verdict: the evidence for E2
    n_support_judged: int = 0  # (claim, source) pairs with a support verdict: the evidence for E3
    n_to_judge: int = 0  # fetched-ok URLs (E2 to judge) + pairs under them (E3 to judge)
    flags: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.e1 + self.e2 + self.e3


def count_errors(
    pairs: Sequence[tuple[str, str]],
    url_status: Mapping[str, str],
    relevant: Mapping[str, bool | None],
    supported: Mapping[tuple[str, str], bool | None],
    *,
    blocked_is_e1: bool = False,
) -> AccuracyCounts:
    """Count errors for one report.

    - `pairs`: distinct (claim_id, url) pairs (a claim citing several sources yields several pairs);
    - `url_status[url]`: ok | invalid | blocked | not_fetched;
    - `relevant[url]`: the relevance gate (None = judgment failed);
    - `supported[(claim_id, url)]`: the support check (None = failed or not asked).
    Claims under an E1/E2 URL are not re-counted as E3 (the early stop).
    """
    urls = list(dict.fromkeys(u for _, u in pairs))
    c = AccuracyCounts(n_urls=len(urls), n_pairs=len(pairs))
    stopped: set[str] = set()
    for u in urls:
        status = url_status.get(u, "not_fetched")
        if status in ("ok", "invalid", "blocked"):
            c.n_fetched += 1
        if status == "invalid" or (status == "blocked" and blocked_is_e1):
            c.e1 += 1
            stopped.add(u)
        elif status == "blocked":
            c.blocked += 1
            stopped.add(u)
        elif status != "ok":
            c.not_checked += 1
            stopped.add(u)
        elif relevant.get(u) is None:
            c.not_checked += 1
            c.n_to_judge += 1
            stopped.add(u)
        elif relevant[u] is False:
            c.e2 += 1
            c.n_to_judge += 1
            c.n_relevance_judged += 1
            stopped.add(u)
        else:
            c.n_to_judge += 1
            c.n_relevance_judged += 1
    c.n_checked = c.e1 + c.blocked + c.e2 + sum(1 for u in urls if u not in stopped)  # + relevant URLs
    for claim, u in pairs:
        if u in stopped:
            continue
        s = supported.get((claim, u))
        c.n_to_judge += 1
        if s is None:
            c.not_checked += 1
        else:
            c.n_support_judged += 1
            if not s:
                c.e3 += 1
    return c
