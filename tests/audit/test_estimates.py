"""nanmedian_rows against numpy's own nanmedian, bit for bit."""

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from vcrime_audit.audit.estimates import nanmedian_rows

values = st.one_of(st.just(np.nan), st.just(-0.0), st.just(0.0),
                   st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
matrices = st.tuples(st.integers(1, 40), st.integers(1, 9)).flatmap(
    lambda shape: arrays(np.float64, shape, elements=values))


def numpy_nanmedian(matrix: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows
        return np.nanmedian(matrix, axis=1)


@settings(max_examples=400, deadline=None)
@given(matrices)
def test_the_median_of_each_row_is_numpys_bit_for_bit(matrix):
    assert nanmedian_rows(matrix).tobytes() == numpy_nanmedian(matrix).tobytes()


def test_a_bootstrap_sized_matrix_with_missing_values():
    rng = np.random.default_rng(3)
    matrix = rng.random((10_000, 4))
    matrix[rng.random(matrix.shape) < 0.3] = np.nan
    assert nanmedian_rows(matrix).tobytes() == numpy_nanmedian(matrix).tobytes()
    assert np.isnan(nanmedian_rows(np.full((3, 2), np.nan))).all()
