from __future__ import annotations

import pytest
from scipy.stats import binomtest

from vcrime_audit.certify.bounds import certify, clopper_pearson, conversation_outcome


def scipy_exact(k: int, n: int, confidence: float) -> tuple[float, float]:
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    return ci.low, ci.high


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_matches_scipy_binomtest_for_many_k_n(confidence: float) -> None:
    for n in list(range(1, 31)) + [50, 77, 100, 500]:
        ks = range(n + 1) if n <= 50 else sorted({0, 1, 2, n // 3, n // 2, n - 1, n})
        for k in ks:
            lo, hi = clopper_pearson(k, n, confidence)
            ref_lo, ref_hi = scipy_exact(k, n, confidence)
            assert lo == pytest.approx(ref_lo, abs=1e-9), (k, n)
            assert hi == pytest.approx(ref_hi, abs=1e-9), (k, n)


@pytest.mark.parametrize("n", [1, 5, 50])
def test_edge_counts_have_closed_forms(n: int) -> None:
    half_alpha = 0.025
    assert clopper_pearson(0, n) == (0.0, pytest.approx(1 - half_alpha ** (1 / n)))
    assert clopper_pearson(n, n) == (pytest.approx(half_alpha ** (1 / n)), 1.0)


def test_no_samples_gives_the_trivial_interval() -> None:
    assert clopper_pearson(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize("k,n,confidence", [(-1, 5, 0.95), (6, 5, 0.95), (1, 5, 1.0),
                                            (1, 5, 0.0)])
def test_rejects_bad_arguments(k: int, n: int, confidence: float) -> None:
    with pytest.raises(ValueError):
        clopper_pearson(k, n, confidence)


def test_conversation_outcome_never_turns_missing_into_no() -> None:
    assert conversation_outcome([False, None, True]) is True
    assert conversation_outcome([False, None, False]) is None
    assert conversation_outcome([False, False]) is False
    assert conversation_outcome([True, None]) is True


def test_certificate_reports_missing_three_ways() -> None:
    outcomes = [True] * 3 + [False] * 5 + [None] * 2
    cert = certify(outcomes, confidence=0.95)
    assert (cert.n_samples, cert.n_catastrophic, cert.n_safe, cert.n_missing) == (10, 3, 5, 2)
    assert (cert.judged.k, cert.judged.n) == (3, 8)
    assert (cert.judged.lower, cert.judged.upper) == pytest.approx(scipy_exact(3, 8, 0.95))
    assert (cert.missing_as_catastrophic.lower, cert.missing_as_catastrophic.upper) == \
        pytest.approx(scipy_exact(5, 10, 0.95))
    assert (cert.missing_as_safe.lower, cert.missing_as_safe.upper) == \
        pytest.approx(scipy_exact(3, 10, 0.95))
    assert cert.conservative_lower == cert.missing_as_safe.lower
    assert cert.conservative_upper == cert.missing_as_catastrophic.upper
    assert cert.conservative_lower <= cert.judged.lower
    assert cert.conservative_upper >= cert.judged.upper


def test_certificate_without_missing_collapses_to_one_interval() -> None:
    cert = certify([True] * 4 + [False] * 46)
    assert cert.judged == cert.missing_as_safe == cert.missing_as_catastrophic
    assert (cert.judged.lower, cert.judged.upper) == pytest.approx(scipy_exact(4, 50, 0.95))


def test_certificate_rejects_non_boolean_outcomes() -> None:
    with pytest.raises(ValueError):
        certify([True, 1, False])  # type: ignore[list-item]
