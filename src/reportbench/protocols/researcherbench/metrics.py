"""ResearcherBench metric arithmetic, as pure functions (hand-checked in tests/test_researcherbench_metrics.py).

- coverage_k = Σ w_i c_i / Σ w_i over the question's rubric items (paper eq. 1).
- faithfulness_k = yes / (yes + no); groundedness_k = cited / all claims (paper eq. 2-3), where what counts
  as cited depends on two modes of spec §7: `unknown` (paper: excluded; code: cited) and `fetch_error`
  (paper: an unknown; code: not cited). `empty` decides a 0/0 (paper: NaN, excluded; code: 0.0, averaged).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

RESULTS = ("yes", "no", "unknown", "no_url", "fetch_error", "judge_error")
UNKNOWN_MODES = ("exclude", "cited")
FETCH_ERROR_MODES = ("unknown", "not_cited")
EMPTY_MODES = ("nan", "zero")
FAILURE_MODES = ("nan", "exclude", "miss")


@dataclass(frozen=True)
class FactualModes:
    """Scoring modes of the factual metrics; defaults follow the paper (docs/researcherbench.md)."""

    unknown: str = "exclude"  # exclude (paper F.1) | cited (HEAD code: counts as cited in groundedness)
    fetch_error: str = "unknown"  # unknown (paper F.1, pre-07-30 code) | not_cited (HEAD code: "URL Error")
    empty: str = "nan"  # nan (paper: undefined) | zero (code: 0.0, averaged in)
    on_failure: str = "nan"  # nan: a judge_error makes the question failed | exclude: drop those claims

    def __post_init__(self) -> None:
        for name, allowed in (
            ("unknown", UNKNOWN_MODES),
            ("fetch_error", FETCH_ERROR_MODES),
            ("empty", EMPTY_MODES),
            ("on_failure", FAILURE_MODES[:2]),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f"scoring.factual.{name}: {getattr(self, name)!r} is not one of {allowed}")

    @classmethod
    def from_params(cls, cfg: Mapping[str, Any] | None) -> FactualModes:
        cfg = dict(cfg or {})
        preset = cfg.pop("mode", None)
        base = cls(unknown="cited", fetch_error="not_cited", empty="zero") if preset == "code" else cls()
        if preset not in (None, "paper", "code"):
            raise ValueError(f"scoring.factual.mode: {preset!r} is not paper | code")
        keys = ("unknown", "fetch_error", "empty", "on_failure")
        known = {k: cfg[k] for k in keys if cfg.get(k) is not None}
        extra = set(cfg) - set(keys)
        if extra:
            raise ValueError(f"scoring.factual: unknown key(s) {sorted(extra)}")
        return cls(**{**base.__dict__, **known})


@dataclass
class Value:
    """A per-question value with its status: ok | failed | undefined (NaN unless ok)."""

    value: float
    status: str = "ok"
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def coverage(items: Iterable[tuple[float, float]], *, on_failure: str = "nan") -> Value:
    """items: (weight, covered) with covered 1.0, 0.0 or NaN (a failed judgment).

    on_failure: nan -> the question is failed | exclude -> the failed items leave numerator and denominator |
    miss -> the authors' code: a failed call counts as not covered.
    """
    if on_failure not in FAILURE_MODES:
        raise ValueError(f"scoring.on_failure: {on_failure!r} is not one of {FAILURE_MODES}")
    rows = list(items)
    failed = sum(1 for _, c in rows if c != c)
    if failed and on_failure == "nan":
        return Value(math.nan, "failed", f"{failed} rubric judgment(s) failed", {"n_failed": failed})
    if on_failure == "miss":
        rows = [(w, 0.0 if c != c else c) for w, c in rows]
    else:
        rows = [(w, c) for w, c in rows if c == c]
    total = sum(w for w, _ in rows)
    if total <= 0:
        return Value(math.nan, "failed" if failed else "undefined", "no judged rubric item", {"n_failed": failed})
    return Value(sum(w * c for w, c in rows) / total, details={"n_failed": failed, "total_weight": total})


def factual(results: Iterable[str], modes: FactualModes = FactualModes()) -> tuple[Value, Value, dict[str, int]]:
    """(faithfulness, groundedness, counts) of one question's claim results."""
    counts = Counter(results)
    bad = set(counts) - set(RESULTS)
    if bad:
        raise ValueError(f"unknown claim result(s) {sorted(bad)}; expected {RESULTS}")
    full = {r: counts.get(r, 0) for r in RESULTS}
    if full["judge_error"] and modes.on_failure == "nan":
        why = f"{full['judge_error']} claim(s) without a verdict (judge_error)"
        return Value(math.nan, "failed", why), Value(math.nan, "failed", why), full
    t, f = full["yes"], full["no"]
    u = full["unknown"] + (full["fetch_error"] if modes.fetch_error == "unknown" else 0)
    n = sum(full[r] for r in RESULTS if r != "judge_error")
    faith = _ratio(t, t + f, modes.empty, "no claim judged yes or no")
    if modes.unknown == "cited":
        ground = _ratio(t + f + u, n, modes.empty, "no claims")
    else:
        ground = _ratio(t + f, n - u, modes.empty, "no claims once unknowns are excluded")
    return faith, ground, full


def _ratio(num: int, den: int, empty: str, why: str) -> Value:
    if den > 0:
        return Value(num / den, details={"num": num, "den": den})
    if empty == "zero":
        return Value(0.0, details={"num": 0, "den": 0, "empty": True})
    return Value(math.nan, "undefined", why)


def macro_mean(values: Iterable[float]) -> float:
    """Mean of the defined values (NaN excluded); NaN when none is defined."""
    vals = [v for v in values if v == v]
    return sum(vals) / len(vals) if vals else math.nan
