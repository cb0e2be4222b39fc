"""The cassette key made from a request's cached canonical JSON is the key's definition:
``content_hash({"request": ..., "fingerprint": ...})`` in format 2, ``content_hash({"fingerprint":
..., "request_hash": content_hash(request)})`` from format 3."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vcrime_audit.backends.base import GenerateRequest, Message
from vcrime_audit.canonical import canonical_json, content_hash
from vcrime_audit.cassette.keys import cassette_key
from vcrime_audit.models import Sampling

json_leaf = st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(max_size=8) | \
    st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([1e-5, 3e-7, 1e16, -0.0])
any_text = st.text(max_size=40) | st.sampled_from(["\ud800", "a\udfff b", "0.0000 1e-05 null", "\u2028"])
json_data = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(max_size=5), inner, max_size=3), max_leaves=12)


@given(content=any_text, schema=st.dictionaries(st.text(max_size=5), json_data, max_size=4),
       fingerprint=st.dictionaries(st.text(max_size=6), json_data, max_size=4),
       seed=st.integers(0, 2**31), attempt=st.integers(0, 2))
def test_the_fast_key_is_the_defined_key(content, schema, fingerprint, seed, attempt):
    request = GenerateRequest(role="judge", call="assess", model="m",
                              messages=[Message(role="user", content=content)],
                              sampling=Sampling(seed=seed, temperature=0.0, top_p=1.0, max_tokens=9),
                              output_schema=schema or None, attempt=attempt)
    assert request.plain() == request.model_dump(mode="json")
    try:
        defined = content_hash({"request": request, "fingerprint": fingerprint})
    except UnicodeEncodeError:  # a lone surrogate: the definition cannot hash it, nor the fast key
        for version in (2, 3):
            with pytest.raises(UnicodeEncodeError):
                cassette_key(request, fingerprint, version)
        return
    hashed = content_hash({"fingerprint": fingerprint, "request_hash": content_hash(request)})
    assert cassette_key(request, fingerprint, 3) == hashed != defined
    assert cassette_key(request, fingerprint, 2) == defined
    assert cassette_key(request.plain(), fingerprint, 2) == defined
    assert cassette_key(request.plain(), fingerprint, 3) == hashed
    assert request.digest() == content_hash(request)
    other = {**fingerprint, "engine": ["another", len(fingerprint)]}  # a key per fingerprint
    assert cassette_key(request, other, 2) == content_hash({"request": request, "fingerprint": other})
    assert cassette_key(request, other, 3) == content_hash(
        {"fingerprint": other, "request_hash": content_hash(request)})
    assert cassette_key(request, fingerprint, 2) == defined
    assert cassette_key(request, fingerprint, 3) == hashed


def test_what_a_request_keeps_follows_copies_and_stays_out_of_its_fields():
    request = GenerateRequest(role="judge", call="assess", model="m",
                              messages=[Message(role="user", content="hi")], sampling=Sampling(seed=1))
    key, hashed = cassette_key(request, {"engine": "x"}, 2), cassette_key(request, {"engine": "x"}, 3)
    retry = request.model_copy(update={"attempt": 1})
    assert retry.canonical() == canonical_json(retry)
    assert retry.digest() == content_hash(retry) != request.digest()
    assert cassette_key(retry, {"engine": "x"}, 2) == content_hash(
        {"request": retry, "fingerprint": {"engine": "x"}}) != key
    assert cassette_key(retry, {"engine": "x"}, 3) == content_hash(
        {"fingerprint": {"engine": "x"}, "request_hash": retry.digest()}) != hashed
    fresh = GenerateRequest.model_validate(request.model_dump())
    assert fresh == request and request.model_dump() == fresh.model_dump()
    assert set(request.model_dump()) == set(GenerateRequest.model_fields)


@given(part=json_data, other=json_data)
def test_requests_sharing_schema_parts_keep_the_defined_key(part, other):
    """An output schema's object and list values are walked once (they are shared, never
    changed): a second request that shares them gets the defined text too, whatever they hold."""
    shared = {"properties": {"x": part}, "anyOf": [part, other]}
    for attempt in range(2):  # the second finds the parts walked
        schema = {"type": "object", **shared, "top": other}
        request = GenerateRequest(role="judge", call="assess", model="m",
                                  messages=[Message(role="user", content="hi")],
                                  sampling=Sampling(seed=1), output_schema=schema, attempt=attempt)
        assert request.output_schema["properties"] is shared["properties"]
        assert request.canonical() == canonical_json(request)
