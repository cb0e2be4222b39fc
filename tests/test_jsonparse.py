"""parse_json (pydantic-core's parser) against its definition, the standard library's json.loads."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcrime_audit.jsonparse import parse_json

TEXT = st.text(st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), max_size=12)
LEAVES = (st.none() | st.booleans() | st.integers() | st.integers(-2**200, 2**200) | st.floats()
          | st.sampled_from([5e-324, -0.0, 1e308, 2**63, -2**63 - 1, 2**64]) | TEXT)
DATA = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=5)
                    | st.dictionaries(TEXT, inner, max_size=5), max_leaves=30)
JSON_CHARS = st.sampled_from(list('{}[]",:.-+eE0123456789 \t\nabcdefnrtluINaNInfinity\\\x00\x1f')
                             + ["\\u", "ud800"])


def same(a, b) -> bool:
    """Equal values of the same types; NaN equals NaN, and -0.0 is not 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


def outcome(text: str, strict: bool):
    try:
        return "ok", parse_json(text, strict)
    except (ValueError, RecursionError) as exc:
        return "error", type(exc), str(exc)


def expected(text: str, strict: bool):
    try:
        return "ok", json.loads(text, strict=strict)
    except (ValueError, RecursionError) as exc:
        return "error", type(exc), str(exc)


def check(text: str) -> None:
    """The same value, or the same error with the same message (a model's answer that is not
    JSON is stored with it), as ``json.loads`` with and without ``strict``."""
    for strict in (True, False):
        got, want = outcome(text, strict), expected(text, strict)
        assert got[0] == want[0], (text, strict)
        assert same(got[1], want[1]) if got[0] == "ok" else got[1:] == want[1:], (text, strict)


@settings(max_examples=500, deadline=None)
@given(DATA, st.booleans(), st.sampled_from([None, 1]))
def test_the_text_of_any_value_reads_as_the_standard_library_reads_it(value, ascii_only, indent):
    check(json.dumps(value, ensure_ascii=ascii_only, indent=indent))


@settings(max_examples=1000, deadline=None)
@given(st.lists(JSON_CHARS, max_size=24).map("".join))
def test_any_text_gives_the_same_value_or_the_same_error(text):
    check(text)


@settings(max_examples=500, deadline=None)
@given(st.from_regex(r"-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,30})?([eE][-+]?[0-9]{1,3})?", fullmatch=True))
def test_every_number_literal_is_rounded_the_same(literal):
    check(literal)


@pytest.mark.parametrize("text", [
    '{"a":1,"b":2,"a":3}', '"\\ud800"', '"\\udc00\\ud800"', "NaN", "-Infinity", "[1e400]",
    "1" * 4300, "1" * 4301, "[" * 5000 + "]" * 5000, '"\\u0000"', '"tab\there"', '"nul\x00"',
    '{"a":"line\nbreak"}', "[1,]", "01", " 1 "])
def test_the_edges_read_as_the_standard_library_reads_them(text):
    check(text)


BAD_UTF8 = st.sampled_from([b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xc0\xaf",
                            b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\x80", b"\xef\xbb\xbf"])


def check_bytes(data: bytes) -> None:
    """Bytes read as ``json.loads(data.decode("utf-8"))`` reads them: the same value, or the same
    error (the decode's, for bytes that are not UTF-8)."""
    for strict in (True, False):
        try:
            want = expected(data.decode("utf-8"), strict)
        except UnicodeDecodeError as exc:
            want = ("error", UnicodeDecodeError, str(exc))
        got = outcome(data, strict)
        assert got[0] == want[0], (data, strict)
        assert same(got[1], want[1]) if got[0] == "ok" else got[1:] == want[1:], (data, strict)


@settings(max_examples=500, deadline=None)
@given(DATA, st.booleans(), st.data())
def test_bytes_read_as_their_utf8_text_and_other_bytes_fail_as_its_decoding_does(value, ascii_only, data):
    encoded = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    at = data.draw(st.integers(0, len(encoded)))
    inserted = data.draw(st.one_of(st.just(b""), BAD_UTF8, st.binary(max_size=3)))
    check_bytes(encoded)
    check_bytes(encoded[:at] + inserted + encoded[at:])


@settings(max_examples=500, deadline=None)
@given(st.lists(JSON_CHARS.map(str.encode) | BAD_UTF8, max_size=24))
def test_any_bytes_give_the_same_value_or_the_same_error(parts):
    check_bytes(b"".join(parts))
