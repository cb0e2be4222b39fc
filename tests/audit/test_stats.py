import math
import random
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats as scipy_stats

from vcrime_audit.audit.stats import (
    RunValue,
    average_ranks,
    cluster_bootstrap,
    paired_differences,
    percentile_interval,
    resample_indices,
    spearman,
)

from .reference import slow_percentile


def _random_groups(seed: int, n_groups: int = 3, n_tasks: int = 7) -> dict[str, list[RunValue]]:
    """Runs with uneven counts per task and uneven turn counts per run."""
    rnd = random.Random(seed)
    groups = {}
    for g in range(n_groups):
        runs = []
        for t in range(n_tasks):
            for _ in range(rnd.randint(1, 3)):
                turns = rnd.randint(1, 12)
                runs.append(RunValue(f"task{t:02d}", rnd.uniform(0, turns), float(turns)))
        groups[f"attacker{g}"] = runs
    return groups



def _slow_replicates(groups, tasks, indices):
    """Reference loop over raw runs: for each resample, add up every run of each drawn task."""
    out = {}
    for name, runs in groups.items():
        by_task = {}
        for run in runs:
            by_task.setdefault(run.task_id, []).append(run)
        reps = []
        for row in indices:
            num = den = 0.0
            for t in row:
                for run in by_task.get(tasks[t], []):
                    num += run.numerator
                    den += run.denominator
            reps.append(num / den if den else math.nan)
        out[name] = reps
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bootstrap_matches_slow_reference_loop(seed):
    groups = _random_groups(seed)
    result = cluster_bootstrap(groups, n_resamples=400, seed=seed)
    indices = resample_indices(len(result.tasks), 400, seed)
    slow = _slow_replicates(groups, result.tasks, indices)
    for g, name in enumerate(result.groups):
        np.testing.assert_allclose(result.replicates[:, g], slow[name], rtol=1e-12)
        runs = groups[name]
        expected = sum(r.numerator for r in runs) / sum(r.denominator for r in runs)
        assert result.estimates[g] == pytest.approx(expected, rel=1e-12)
        assert result.low[g] == pytest.approx(slow_percentile(slow[name], 0.025), rel=1e-12)
        assert result.high[g] == pytest.approx(slow_percentile(slow[name], 0.975), rel=1e-12)
    assert result.seed == seed and result.n_resamples == 400


def test_paired_differences_use_the_same_task_draws():
    groups = _random_groups(11, n_groups=3)
    result = cluster_bootstrap(groups, n_resamples=500, seed=5)
    indices = resample_indices(len(result.tasks), 500, 5)
    slow = _slow_replicates(groups, result.tasks, indices)
    pairs = paired_differences(result)
    assert [(p.first, p.second) for p in pairs] == [
        ("attacker0", "attacker1"),
        ("attacker0", "attacker2"),
        ("attacker1", "attacker2"),
    ]
    for p in pairs:
        diffs = [a - b for a, b in zip(slow[p.first], slow[p.second], strict=True)]
        assert p.low == pytest.approx(slow_percentile(diffs, 0.025), rel=1e-12, abs=1e-15)
        assert p.high == pytest.approx(slow_percentile(diffs, 0.975), rel=1e-12, abs=1e-15)
        assert p.significant == (p.low > 0 or p.high < 0)


def test_paired_difference_is_significant_for_a_clear_gap_and_not_for_identical_groups():
    rnd = random.Random(3)
    base = [RunValue(f"t{t}", rnd.random()) for t in range(40) for _ in range(3)]
    better = [RunValue(r.task_id, r.numerator + 0.2) for r in base]
    result = cluster_bootstrap({"a": better, "b": base, "c": list(base)}, n_resamples=2000, seed=1)
    by_pair = {(p.first, p.second): p for p in paired_differences(result)}
    gap = by_pair[("a", "b")]
    assert gap.significant and gap.low == pytest.approx(0.2) and gap.high == pytest.approx(0.2)
    same = by_pair[("b", "c")]
    assert not same.significant and same.low == same.high == 0.0


def test_run_level_mean_is_the_unit_denominator_case():
    runs = [RunValue("t1", 1.0), RunValue("t1", 0.0), RunValue("t2", 1.0), RunValue("t3", 0.0)]
    result = cluster_bootstrap({"a": runs}, n_resamples=50, seed=0)
    assert result.estimates[0] == 0.5
    indices = resample_indices(3, 50, 0)
    for row, rep in zip(indices, result.replicates[:, 0], strict=True):
        drawn = [r.numerator for t in row for r in runs if r.task_id == result.tasks[t]]
        assert rep == pytest.approx(sum(drawn) / len(drawn))


def test_seed_makes_the_bootstrap_reproducible_and_is_reported():
    groups = _random_groups(4)
    first = cluster_bootstrap(groups, n_resamples=300, seed=99)
    again = cluster_bootstrap(groups, n_resamples=300, seed=99)
    other = cluster_bootstrap(groups, n_resamples=300, seed=100)
    np.testing.assert_array_equal(first.replicates, again.replicates)
    assert not np.array_equal(first.replicates, other.replicates)
    assert first.seed == 99


def test_zero_denominator_resamples_are_undefined_and_counted():
    runs = [RunValue("t1", 1.0, 2.0), RunValue("t2", 0.0, 0.0)]
    result = cluster_bootstrap({"a": runs}, n_resamples=1000, seed=2)
    indices = resample_indices(2, 1000, 2)
    only_t2 = int((indices == 1).all(axis=1).sum())
    assert only_t2 > 0
    assert result.n_undefined[0] == only_t2
    assert result.low[0] == result.high[0] == 0.5


def test_bad_runs_are_rejected_with_the_group_and_task_named():
    with pytest.raises(ValueError, match="group 'a', run #1 \\(task 't2'\\).*negative"):
        cluster_bootstrap({"a": [RunValue("t1", 1.0), RunValue("t2", 1.0, -1.0)]})
    with pytest.raises(ValueError, match="denominator 0"):
        cluster_bootstrap({"a": [RunValue("t1", 1.0, 0.0)]})
    with pytest.raises(ValueError, match="has no runs"):
        cluster_bootstrap({"a": []})


def test_average_ranks_matches_scipy_rankdata():
    rnd = np.random.default_rng(0)
    for _ in range(50):
        x = rnd.integers(0, 6, size=rnd.integers(1, 30)).astype(float)
        np.testing.assert_allclose(average_ranks(x), scipy_stats.rankdata(x, method="average"))


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")
def test_spearman_matches_scipy_with_and_without_ties():
    rnd = np.random.default_rng(1)
    for trial in range(200):
        n = int(rnd.integers(3, 25))
        if trial % 2:
            x, y = rnd.normal(size=n), rnd.normal(size=n)
        else:
            x, y = rnd.integers(0, 4, size=n), rnd.integers(0, 4, size=n)
        expected = scipy_stats.spearmanr(x, y).statistic
        got = spearman(list(x), list(y))
        if math.isnan(expected):
            assert math.isnan(got)
        else:
            assert got == pytest.approx(expected, abs=1e-12)


def test_spearman_hand_worked_and_constant_input():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError, match="equal length"):
        spearman([1, 2], [1, 2, 3])


def numpy_interval(replicates: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval as one np.quantile call per column of its defined replicates."""
    alpha = 1.0 - confidence
    low, high = np.full(replicates.shape[1], np.nan), np.full(replicates.shape[1], np.nan)
    for g in range(replicates.shape[1]):
        column = replicates[:, g][~np.isnan(replicates[:, g])]
        if column.size:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # inf - inf in numpy's lerp
                low[g], high[g] = np.quantile(column, [alpha / 2.0, 1.0 - alpha / 2.0])
    return low, high


INTERVAL_VALUES = st.one_of(st.just(np.nan), st.sampled_from([0.0, -0.0, 1.0, 0.5, 5e-324, 1e308, -1e308,
                                                              np.inf, -np.inf]),
                            st.floats(allow_nan=False, allow_infinity=False))


@settings(max_examples=400, deadline=None)
@given(st.tuples(st.integers(1, 50), st.integers(1, 6)).flatmap(
           lambda shape: arrays(np.float64, shape, elements=INTERVAL_VALUES)),
       st.sampled_from([0.95, 0.9, 0.5, 0.99, 0.8, 0.999]))
def test_the_interval_is_numpys_quantile_bit_for_bit(replicates, confidence):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = percentile_interval(replicates, confidence)
    want_low, want_high = numpy_interval(replicates, confidence)
    assert (low.tobytes(), high.tobytes()) == (want_low.tobytes(), want_high.tobytes())


def test_a_bootstrap_sized_interval_is_numpys():
    rng = np.random.default_rng(5)
    replicates = rng.random((10_000, 64))
    replicates[rng.random(replicates.shape) < 0.001] = np.nan  # some columns with undefined resamples
    replicates[:, 3] = np.nan
    low, high = percentile_interval(replicates, 0.95)
    want_low, want_high = numpy_interval(replicates, 0.95)
    assert (low.tobytes(), high.tobytes()) == (want_low.tobytes(), want_high.tobytes())
    assert np.isnan(low[3]) and np.isnan(high[3])
