"""NaN-aware statistics: means, geometric mean, paired t-test, bootstrap CI, the authors' aggregate."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from reportbench.metrics.stats import (
    authors_aggregate,
    bootstrap_ci,
    fdr_adjust,
    geometric_mean,
    nan_mean,
    paired_ttest,
)

pytestmark = pytest.mark.core


def test_nan_mean_counts() -> None:
    r = nan_mean([1.0, math.nan, 0.0, None])
    assert (r.mean, r.n_defined, r.n_undefined) == (0.5, 2, 2)
    empty = nan_mean([math.nan])
    assert math.isnan(empty.mean) and empty.n_defined == 0


def test_authors_aggregate_fills_zero_and_rounds() -> None:
    assert authors_aggregate([1.0, math.nan, 0.333]) == 0.44  # (1 + 0 + .333) / 3 = .4443
    assert math.isnan(authors_aggregate([]))


def test_geometric_mean() -> None:
    assert geometric_mean([0.25, 1.0]) == pytest.approx(0.5)
    assert geometric_mean([0.5, 0.5, 0.5]) == pytest.approx(0.5)
    assert geometric_mean([0.5, 0.0]) == 0.0
    assert math.isnan(geometric_mean([0.5, math.nan]))
    assert math.isnan(geometric_mean([0.0, math.nan]))  # NaN wins over 0: undefined is undefined
    assert math.isnan(geometric_mean([]))
    with pytest.raises(ValueError):
        geometric_mean([-1.0, 1.0])


def test_paired_ttest_hand_value() -> None:
    # diffs .5, .5, 2: mean 1, sd sqrt(.75), se = sqrt(.75)/sqrt(3) = .5 -> t = 2, df = 2
    a = {"t1": 1.0, "t2": 2.0, "t3": 4.0, "t4": math.nan, "only_a": 3.0}
    b = {"t1": 0.5, "t2": 1.5, "t3": 2.0, "t4": 1.0}
    r = paired_ttest(a, b)
    assert r.n == 3 and r.mean_diff == pytest.approx(1.0)
    assert r.t == pytest.approx(2.0)
    assert r.p == pytest.approx(2 * sps.t.sf(2.0, df=2))  # 0.1835
    assert r.p == pytest.approx(0.18350341907227397)
    ref = sps.ttest_rel([1.0, 2.0, 4.0], [0.5, 1.5, 2.0])
    assert (r.t, r.p) == pytest.approx((ref.statistic, ref.pvalue))


def test_paired_ttest_undefined_cases() -> None:
    r = paired_ttest({"t1": 1.0}, {"t1": 0.0})
    assert math.isnan(r.t) and math.isnan(r.p) and r.n == 1 and r.mean_diff == 1.0 and r.note == "n < 2"
    r = paired_ttest({"t1": 1.0, "t2": 2.0}, {"t1": 0.5, "t2": 1.5})
    assert math.isnan(r.t) and r.mean_diff == pytest.approx(0.5) and "zero variance" in r.note
    r = paired_ttest({"t1": math.nan}, {"t1": 1.0})
    assert r.n == 0 and math.isnan(r.mean_diff)


def test_bootstrap_ci_is_seeded_and_nan_aware() -> None:
    vals = [0.1, 0.4, 0.5, 0.9, math.nan]
    lo, hi = bootstrap_ci(vals, n_boot=500, seed=1)
    assert lo <= nan_mean(vals).mean <= hi
    assert (lo, hi) == bootstrap_ci(vals, n_boot=500, seed=1)
    assert all(math.isnan(x) for x in bootstrap_ci([0.5, math.nan]))


def _random_pairs(seed: int) -> list[tuple[list[float], list[float]]]:
    """Self-made inputs for the bit-for-bit checks: sizes 2-60, scales from 1e-3 to 1e3, ties, integer scores,
    a constant shift (zero variance is handled before the t-test and not included)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    cases = []
    for i in range(300):
        n = int(rng.integers(2, 61))
        scale = 10.0 ** float(rng.uniform(-3, 3))
        a = rng.normal(0, scale, n)
        b = a + rng.normal(0.1 * scale, scale, n)
        if i % 5 == 0:
            a, b = np.round(a), np.round(b)  # integer-valued scores (rubric points, ratings)
        if i % 7 == 0:
            b[: n // 2] = a[: n // 2]  # many tied pairs
        if float(np.ptp(a - b)) == 0.0:
            continue
        cases.append((a.tolist(), b.tolist()))
    return cases


@pytest.mark.parametrize("seed", [0, 1])
def test_paired_ttest_equals_scipy_ttest_rel_bit_for_bit(seed: int) -> None:
    """`paired_ttest` does scipy's arithmetic itself (importing scipy.stats costs each score stage 0.5 s):
    its t and p must be scipy's exactly, not approximately, or a published p-value would drift."""
    for xa, xb in _random_pairs(seed):
        keys = [f"t{i:03d}" for i in range(len(xa))]  # sorted = given order (paired_ttest sorts task ids)
        r = paired_ttest(dict(zip(keys, xa, strict=True)), dict(zip(keys, xb, strict=True)))
        ref = sps.ttest_rel(xa, xb)
        assert (r.t, r.p) == (float(ref.statistic), float(ref.pvalue)), (xa, xb)


def test_fdr_adjust_equals_scipy_bit_for_bit() -> None:
    import numpy as np

    rng = np.random.default_rng(3)
    for size in [1, 2, 3, 5, 8, 13, 40, 200]:
        for _ in range(20):
            ps = rng.uniform(0, 1, size) ** float(rng.uniform(0.2, 5))
            if size > 3:
                ps[: size // 3] = ps[0]  # ties
            got = fdr_adjust(ps.tolist())
            want = sps.false_discovery_control(ps, method="bh")
            assert got == [float(v) for v in np.atleast_1d(want)], ps.tolist()
    # NaN stays NaN and does not count towards the family
    got = fdr_adjust([0.01, None, 0.04, math.nan])
    want = sps.false_discovery_control([0.01, 0.04], method="bh")
    assert got[0] == float(want[0]) and got[2] == float(want[1]) and math.isnan(got[1]) and math.isnan(got[3])
