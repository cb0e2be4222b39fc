import math

import pytest
from scipy import stats as scipy_stats

from vcrime_audit.intervals import clopper_pearson, wilson


def test_clopper_pearson_matches_scipy_exact_interval_including_edges():
    for n in [1, 2, 3, 5, 10, 17, 50, 120, 960]:
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            if not 0 <= k <= n:
                continue
            for confidence in (0.95, 0.9):
                ref = scipy_stats.binomtest(k, n).proportion_ci(
                    confidence_level=confidence, method="exact"
                )
                got = clopper_pearson(k, n, confidence)
                assert got.low == pytest.approx(ref.low, abs=1e-12), (k, n)
                assert got.high == pytest.approx(ref.high, abs=1e-12), (k, n)
                assert got.estimate == k / n
    assert clopper_pearson(0, 50).low == 0.0 and clopper_pearson(50, 50).high == 1.0


def test_clopper_pearson_hand_worked_zero_successes():
    got = clopper_pearson(0, 50)
    assert got.high == pytest.approx(1 - 0.025 ** (1 / 50), abs=1e-12)


def test_wilson_endpoints_solve_the_score_equation():
    z = scipy_stats.norm.ppf(0.975)
    for k, n in [(0, 10), (3, 10), (10, 10), (7, 50), (133, 960)]:
        got = wilson(k, n)
        p_hat = k / n
        for p in (got.low, got.high):
            if p == p_hat:
                assert k in (0, n)
                continue
            assert abs(p_hat - p) == pytest.approx(z * math.sqrt(p * (1 - p) / n), abs=1e-12)


@pytest.mark.parametrize("k,n", [(-1, 5), (6, 5), (0, 0), (1.5, 3)])
def test_binomial_intervals_reject_impossible_counts(k, n):
    with pytest.raises(ValueError):
        clopper_pearson(k, n)
    with pytest.raises(ValueError):
        wilson(k, n)
