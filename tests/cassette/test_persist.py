"""A record's line made from canonical JSON already made for some of its values is the line made
from the whole record: the same checksum, the same bytes (or the same refusal)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.test_canonical import DATA, TEXT
from vcrime_audit.canonical import canonical_json
from vcrime_audit.cassette.persist import checksummed, line_checksum

KEYS = st.sampled_from(["type", "key", "request", "fingerprint", "result", "parsed", "error", "é", "Z",
                        'a\\"b', "\U0001f600", "checksum"]) | TEXT


def _canonical_or_none(value: object) -> str | None:
    try:
        return canonical_json(value)
    except (ValueError, TypeError):  # NaN, infinities, what canonical JSON refuses
        return None


@given(st.dictionaries(KEYS, DATA, max_size=8), st.data())
def test_a_line_from_known_parts_is_the_line_from_the_whole(record, data):
    chosen = data.draw(st.sets(st.sampled_from(sorted(record)) if record else st.nothing()))
    known = {k: text for k in chosen if k != "checksum" and (text := _canonical_or_none(record[k]))}
    try:
        whole = checksummed(record)
    except (ValueError, TypeError) as exc:
        with pytest.raises(type(exc)):
            checksummed(record, known)
        return
    assert checksummed(record, known) == whole
    assert line_checksum(whole[1]) == (whole[0], True)
