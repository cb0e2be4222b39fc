"""The fast canonical JSON (orjson) against its definition (the standard library's encoder)."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcrime_audit import canonical
from vcrime_audit.canonical import (
    _lock_contended,
    blake2b_hex,
    blake2b_hex_of,
    content_hash,
    plain_canonical_bytes,
    plain_canonical_json,
    plain_content_hash,
    rows_content_hash,
    stdlib_canonical_json,
)

TEXT = st.text(st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), max_size=12)
LEAVES = (st.none() | st.booleans() | st.integers() | st.integers(-2**70, 2**70)
          | st.floats() | st.floats(-1e-3, 1e-3) | st.sampled_from([1e16, 1e-5, 5e-324, -0.0])
          | TEXT | st.sampled_from(["0.0000", "null", "\u2028", "\x7f", "\x00"]))
KEYS = TEXT | st.integers(-3, 3) | st.booleans()
DATA = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=5)
                    | st.tuples(inner, inner) | st.dictionaries(KEYS, inner, max_size=5),
                    max_leaves=30)


def outcome(function, value):
    try:
        return "ok", function(value)
    except (ValueError, TypeError) as exc:  # the standard library's refusals
        return "error", type(exc).__name__


@settings(max_examples=3000, deadline=None)
@given(DATA)
def test_same_text_or_same_refusal_as_the_standard_library(value):
    assert outcome(plain_canonical_json, value) == outcome(stdlib_canonical_json, value)


@settings(max_examples=1000, deadline=None)
@given(DATA)
def test_bytes_are_the_texts_utf8(value):
    expected = outcome(lambda v: stdlib_canonical_json(v).encode("utf-8"), value)
    if expected[0] == "error" and expected[1] == "UnicodeEncodeError":
        expected = ("error", "ValueError")  # UnicodeEncodeError is a ValueError
    got = outcome(plain_canonical_bytes, value)
    assert got[0] == expected[0] and (got[0] == "error" or got[1] == expected[1])


@pytest.mark.parametrize("value", [float("nan"), float("inf"), [1, {"a": -math.inf}],
                                   {"x": [None, math.nan]}])
def test_non_finite_floats_are_refused_not_written_as_null(value):
    with pytest.raises(ValueError):
        plain_canonical_json(value)


@pytest.mark.parametrize("value", [1e-5, {"p": 3e-7, "q": None}, 1e16, {"b": [1, 2], "a": "é😀"}, 2**64])
def test_hand_picked_cases_match(value):
    assert plain_canonical_json(value) == stdlib_canonical_json(value)


def test_content_hash_is_blake2b_of_the_definition():
    value = {"z": [1, 2.5, None, "x"], "a": {"k": 1e-6}}
    assert content_hash(value) == blake2b_hex(stdlib_canonical_json(value))


def test_floats_of_every_exponent_match():
    import random

    rng = random.Random(0)
    values = [float(f"{rng.random() * 10}e{rng.randint(-330, 307)}") for _ in range(20000)]
    assert plain_canonical_json(values) == stdlib_canonical_json(values)


def _small_float_by_scanning(text: bytes) -> bool:
    """The definition of ``_small_float``, one position at a time."""
    if b"0.0000" in text:
        return True
    digits = b"0123456789"
    return any(text[at:at + 2] == b"e-" and 0 < at and text[at - 1] in digits
               and at + 2 < len(text) and text[at + 2] in digits
               and (at + 3 == len(text) or text[at + 3] not in digits)
               for at in range(len(text)))


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from([b"e", b"-", b"e-", b"0", b"7", b".", b"0.000", b"x", b'"', b"E-"]),
                max_size=12).map(b"".join))
def test_small_float_shapes_are_found_wherever_they_stand(text):
    from vcrime_audit.canonical import _small_float

    assert _small_float(text) is _small_float_by_scanning(text)


LONG_DATA = st.recursive(LEAVES | st.text(min_size=40, max_size=120), lambda inner: st.lists(
    inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=12)
"""Data with long texts: few values for its length, which the fast path checks value by value."""


@settings(max_examples=3000, deadline=None)
@given(DATA | LONG_DATA)
def test_values_checked_one_by_one_are_written_alike_and_non_finite_ones_found(value):
    import json

    import orjson

    from vcrime_audit.canonical import _ORJSON_OPTIONS, _non_finite, _refuse, written_alike

    try:
        fast = orjson.dumps(value, default=_refuse, option=_ORJSON_OPTIONS)
    except TypeError:
        return
    try:
        json.dumps(value, allow_nan=False)
        non_finite = False
    except ValueError:
        non_finite = True
    if written_alike(value):
        assert fast == stdlib_canonical_json(value).encode("utf-8")
    assert not (non_finite and written_alike(value))
    assert _non_finite(value) or not non_finite


@settings(max_examples=1500, deadline=None)
@given(LONG_DATA)
def test_long_texts_give_the_same_text_or_refusal(value):
    assert outcome(plain_canonical_json, value) == outcome(stdlib_canonical_json, value)


@settings(max_examples=1500, deadline=None)
@given(st.lists(LEAVES, min_size=17, max_size=40) | st.lists(DATA | LONG_DATA, max_size=6))
def test_many_short_values_and_short_lists_give_the_same_text_or_refusal(value):
    """Many short values take the byte checks; a short list (a row digest's column) the walk."""
    assert outcome(plain_canonical_json, value) == outcome(stdlib_canonical_json, value)


@pytest.fixture(scope="module")
def other_thread():
    """A second Python thread alive for the test: the main thread then hashes in pieces."""
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()
    yield thread
    stop.set()
    thread.join()


def _expected(data: bytes, size: int) -> tuple[str, str, str]:
    whole = hashlib.blake2b(data, digest_size=size).hexdigest()
    return whole, hashlib.blake2b(data.decode("latin-1").encode("utf-8"), digest_size=size).hexdigest(), whole


def _hashes(data: bytes, size: int) -> tuple[str, str, str]:
    half = len(data) // 3
    return (blake2b_hex(data, size), blake2b_hex(data.decode("latin-1"), size),
            blake2b_hex_of((data[:half], b"", data[half:]), size))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=9000) | st.sampled_from([b"x" * n for n in (2046, 2047, 2048, 4094, 4095)]),
       st.sampled_from([8, 16, 32]))
def test_blake2b_whole_or_in_pieces_is_hashlibs_blake2b(other_thread, data, size):
    """Hashed whole (a worker thread), in pieces (the main thread beside another thread) and
    whole again (the main thread alone, checked in the test below): hashlib's blake2b each way."""
    assert other_thread.is_alive() and _lock_contended()
    assert _hashes(data, size) == _expected(data, size)
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(_hashes, data, size).result() == _expected(data, size)


@pytest.mark.parametrize("counted_by", ["threading's own table", "threading.active_count"])
def test_only_the_main_thread_beside_another_counts_as_contended(other_thread, monkeypatch, counted_by):
    """The thread count is read from threading's table of started threads, or counted by
    ``active_count`` where a Python has no such table: the same answer on each thread."""
    if counted_by == "threading.active_count":
        monkeypatch.setattr(canonical, "_STARTED_THREADS", None)
    assert threading.current_thread() is threading.main_thread() and _lock_contended()
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(_lock_contended).result() is False


def test_the_main_thread_alone_hashes_whole_and_alike():
    """In a process of one thread (a fresh one: pytest-xdist's worker runs a thread of its own)."""
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]); import tests.test_canonical as t\n"
              "data = [b'', b'x' * 2047, b'x' * 2048, bytes(range(256)) * 40]\n"
              "print(json.dumps([t._lock_contended(), [t._hashes(d, 16) for d in data], "
              "[t._expected(d, 16) for d in data]]))")
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", script, str(root)], capture_output=True, text=True,
                          check=True, cwd=root)
    contended, hashes, expected = json.loads(done.stdout)
    assert contended is False
    assert hashes == expected


PLAIN_DATA = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=5)
                          | st.dictionaries(TEXT, inner, max_size=5), max_leaves=30)


@settings(max_examples=1000, deadline=None)
@given(PLAIN_DATA)
def test_plain_data_hashes_as_content_hash_does(value):
    """Rows read from a store are plain JSON data: hashed without to_plain's copy, the same."""
    assert outcome(plain_content_hash, value) == outcome(content_hash, value)


@settings(max_examples=1500, deadline=None)
@given(PLAIN_DATA | LONG_DATA | st.lists(st.dictionaries(TEXT, LEAVES | st.text(min_size=40, max_size=300),
                                                         max_size=6), max_size=8))
def test_rows_hash_as_content_hash_does(value):
    """Rows hashed with every value checked (long texts, short ones, small floats, NaN, big
    integers, lone surrogates): the definition's hash, or its refusal."""
    assert outcome(rows_content_hash, value) == outcome(content_hash, value)
