"""A record's line made from canonical JSON already made for some of its values is the line made
from the whole record: the same checksum, the same bytes."""

from hypothesis import given
from hypothesis import strategies as st

from vcrime_audit.canonical import canonical_json
from vcrime_audit.cassette.persist import checksummed, line_checksum

json_leaf = st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.text(max_size=8) | \
    st.floats(allow_nan=False, allow_infinity=False)
json_data = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(max_size=5), inner, max_size=3), max_leaves=12)
KEYS = st.sampled_from(["type", "key", "request", "fingerprint", "result", "parsed", "error", "é", "Z",
                        'a\\"b', "\U0001f600", "checksum"])


@given(st.dictionaries(KEYS | st.text(max_size=6), json_data, max_size=8), st.data())
def test_a_line_from_known_parts_is_the_line_from_the_whole(record, data):
    known_keys = data.draw(st.sets(st.sampled_from(sorted(record)) if record else st.nothing()))
    known = {k: canonical_json(record[k]) for k in known_keys if k != "checksum"}
    whole = checksummed(record)
    assert checksummed(record, known) == whole
    assert line_checksum(whole[1]) == (whole[0], True)
