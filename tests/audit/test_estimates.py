"""nanmedian_rows against numpy's own nanmedian, bit for bit."""

import itertools
import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from vcrime_audit.audit.estimates import nanmedian_rows

values = st.one_of(st.just(np.nan), st.just(-0.0), st.floats(allow_nan=False, allow_infinity=False))
matrices = st.tuples(st.integers(1, 40), st.integers(1, 9)).flatmap(
    lambda shape: arrays(np.float64, shape, elements=values))
SPECIAL = (np.nan, -0.0, 0.0, 5e-324, -5e-324, 2.2250738585072014e-308, -1e-308, 1.0, -1.5, 1e308,
           -1e308, 8.98846567431158e307)
"""NaN, both zeros, the smallest subnormals, the smallest normal, values whose sum overflows."""


def numpy_nanmedian(matrix: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows, overflow
        return np.nanmedian(matrix, axis=1)


@settings(max_examples=400, deadline=None)
@given(matrices)
def test_the_median_of_each_row_is_numpys_bit_for_bit(matrix):
    assert nanmedian_rows(matrix).tobytes() == numpy_nanmedian(matrix).tobytes()


def test_every_row_of_up_to_three_special_values():
    rows = [row for k in (1, 2, 3) for row in itertools.product(SPECIAL, repeat=k)]
    for row in rows:
        matrix = np.array([row])
        assert nanmedian_rows(matrix).tobytes() == numpy_nanmedian(matrix).tobytes(), row


def test_a_bootstrap_sized_matrix_with_missing_values():
    rng = np.random.default_rng(3)
    matrix = rng.random((10_000, 4))
    matrix[rng.random(matrix.shape) < 0.3] = np.nan
    assert nanmedian_rows(matrix).tobytes() == numpy_nanmedian(matrix).tobytes()
    assert np.isnan(nanmedian_rows(np.full((3, 2), np.nan))).all()
