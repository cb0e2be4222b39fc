import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from vcrime_audit.audit.agreement import agreement, quadratic_weighted_kappa


def test_hand_worked_example():
    # Observed squared gaps 0,1,0,1 -> mean 0.5. Both marginals are {1: .25, 2: .25, 3: .5},
    # so chance mean squared gap is 2 * Var = 2 * (23/4 - (9/4)^2) = 11/8. kappa = 1 - 4/11.
    result = agreement([1, 2, 3, 3], [1, 3, 3, 2])
    assert result.kappa == pytest.approx(7 / 11, abs=1e-12)
    assert result.exact == 0.5
    assert result.within_one == 1.0
    assert result.n == 4


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
def test_matches_sklearn_quadratic_kappa_on_random_ratings():
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(2, 60))
        first = rng.integers(1, 6, size=n)
        noise = rng.integers(-2, 3, size=n) * (rng.random(n) < 0.5)
        second = np.clip(first + noise, 1, 5)
        expected = cohen_kappa_score(first, second, weights="quadratic", labels=[1, 2, 3, 4, 5])
        got = quadratic_weighted_kappa(first.tolist(), second.tolist())
        if math.isnan(expected):
            assert math.isnan(got)
        else:
            assert got == pytest.approx(expected, abs=1e-12)


def test_exact_and_within_one_counts():
    first = [1, 2, 3, 4, 5, 5]
    second = [1, 4, 2, 4, 3, 5]
    result = agreement(first, second)
    assert result.exact == pytest.approx(3 / 6)
    assert result.within_one == pytest.approx(4 / 6)


def test_perfect_agreement_and_undefined_kappa():
    assert quadratic_weighted_kappa([1, 3, 5], [1, 3, 5]) == pytest.approx(1.0)
    assert math.isnan(quadratic_weighted_kappa([4, 4, 4], [4, 4, 4]))


@pytest.mark.parametrize(
    "first,second,message",
    [
        ([1, 2], [1], "different numbers of items"),
        ([], [], "no paired scores"),
        ([1, 6], [1, 2], "first rater, item #1: score 6"),
        ([1, 2], [1, 2.5], "second rater, item #1: score 2.5"),
        ([True], [1], "first rater, item #0"),
    ],
)
def test_bad_scores_are_rejected(first, second, message):
    with pytest.raises(ValueError, match=message):
        agreement(first, second)
