"""Call lines read without their requests (``Cassette(..., unread_requests=True)``): a replay
proves a line gives its request from the bytes, and anything it cannot prove is read in full,
with the answers and errors of a cassette read in full."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cassette.test_format2 import (
    REQUESTS,
    ask,
    call_lines,
    in_format_2,
    lines_of,
    recorded,
    request,
    write_lines,
)
from vcrime_audit.canonical import canonical_json
from vcrime_audit.cassette import Cassette, CassetteError, RecordingBackend, RecordMode
from vcrime_audit.cassette.keys import cassette_key
from vcrime_audit.cassette.lines import (
    RequestUnread,
    chain_update,
    claimed_checksum,
    gives_request_at,
    read_without_request,
    record_line,
)


def unread(line: str, hashed: bool = False) -> RequestUnread | None:
    return read_without_request(line.encode(), 2, hashed)


@st.composite
def nested_call_lines(draw):
    """Call lines whose ``,"request":`` and ``,"result":`` may stand inside a member's value, in
    objects and arrays that close before the line's end, or after its request."""
    wanted, result = draw(REQUESTS), draw(REQUESTS)
    request_text, result_text = canonical_json(wanted), canonical_json(result)
    inner = f',"request":{request_text},"result":{result_text}'
    pieces = [request_text, result_text, '"call"', '{"q":0' + inner + "}", '[0,{"q":0' + inner + "}]",
              '{"q":{"r":1' + inner + '},"type":"call"}', '{"q":0,"request":' + request_text + "}",
              canonical_json(draw(REQUESTS))]
    members = draw(st.lists(st.tuples(st.sampled_from(["request", "result", "type", "key", "p"]),
                                      st.sampled_from(pieces)), min_size=1, max_size=5))
    if draw(st.booleans()):
        members.append(("request", request_text))
    if draw(st.booleans()):
        members.append(("request_hash", '"h"'))
    if draw(st.booleans()):
        members.append(("result", result_text))
    members.append(("type", '"call"'))
    return wanted, "{" + ",".join(f'"{k}":{v}' for k, v in members) + "}"


@settings(max_examples=3000, suppress_health_check=list(HealthCheck))
@given(call_lines() | nested_call_lines())
def test_a_line_proven_to_give_a_request_reads_as_that_request_and_the_members_read_without_it(case):
    """Members of any order, nesting and repetition, texts that hold the tails a line ends with:
    whenever the bytes prove the request, the line read in full is exactly the members read
    without it plus that request."""
    wanted, line = case
    for hashed in (False, True):
        record = unread(line, hashed)
        if record is not None and gives_request_at(line.encode(), record, canonical_json(wanted).encode()):
            full = json.loads(line)
            assert full == {**record, "request": wanted}
            assert canonical_json(full["request"]) == canonical_json(wanted)


RECORDS = [
    {"type": "call", "key": "k", "request": {"a": [1, "x"], "result": {"request": 1}},
     "fingerprint": {}, "result": {"text": 't,"result":{}', "seconds": 0.5}, "parsed": {"request": 2}},
    {"type": "call", "key": "k", "request": {"a": 1.0}, "fingerprint": {},
     "error": {"type": "BackendError", "message": "m"}},
    {"type": "call", "key": "k", "request": {"a": [1, ',"request_hash":"h"']}, "request_hash": "h",
     "fingerprint": {}, "result": {"text": ',"request_hash":"g"', "seconds": 0.5}, "parsed": {}},
    {"type": "call", "key": "k", "request": {"a": 1.0}, "request_hash": "h", "fingerprint": {},
     "error": {"type": "BackendError", "message": "m"}},
]


@pytest.mark.parametrize("record", RECORDS)
def test_every_call_line_written_is_proven_to_give_its_request_and_no_other(record):
    line = record_line(record)
    read = unread(line, "request_hash" in record)
    assert read is not None and read == {k: v for k, v in json.loads(line).items() if k != "request"}
    assert gives_request_at(line.encode(), read, canonical_json(record["request"]).encode())
    assert not gives_request_at(line.encode(), read, canonical_json({"a": 2}).encode())


@pytest.mark.parametrize("line", [
    '{"checksum":"x","type":"call"}',  # no request member
    '{"request":{},"result":{},"type":"call"}',  # its request is the first member: no comma before
    '{"checksum":"x","p":{"request":{}},"result":{},"type":"call"}',  # only a nested one
    '{"request":{},"checksum":"x","request":{},"result":{},"type":"call"}',  # one left after the cut
    '{"checksum":"x","request":{},"result":{},"type":"summary"}',
    '{"checksum":"x","request":{},"result":{},"type":"call"} ',
])
def test_lines_that_do_not_read_without_their_request_are_read_in_full(line):
    assert unread(line) is None


@pytest.mark.parametrize(("line", "request_text"), [
    ('{"checksum":"x","parsed":{"a":0,"request":1},"request":{},"result":{},"type":"call"}', "{}"),
    ('{"checksum":"x","request":{"a":1,"request":{}},"result":{},"type":"call"}', '{"a":1,"request":{}}'),
    ('{"checksum":"x","request":{"b":2},"request":{},"result":{},"type":"call"}', None),
])
def test_a_request_key_in_the_parsed_answer_or_the_request_still_cuts_where_it_may(line, request_text):
    """The first ``,"request":`` (in a parsed answer here) cut out does not read, the last does;
    a request holding a "request" key reads from the first. Two requests read as one cut
    (both), which no request's bytes prove: such a line is read in full at replay."""
    record = unread(line)
    assert record is not None
    full = json.loads(line)
    assert record == {k: v for k, v in full.items() if k != "request"}
    proven = gives_request_at(line.encode(), record, canonical_json(full["request"]).encode())
    assert proven == (request_text is not None)
    if proven:
        start, end = record.span
        assert line.encode()[start:end] == b',"request":' + request_text.encode()


def signed(body: dict | str, version: int = 2) -> str:
    """A line with a valid checksum around ``body`` (a record, or the text of one, valid JSON
    or not), as a hand-made cassette would hold it: in format 3, a checksum of the text without
    what stands from its first ``,"request":`` to its last ``,"request_hash":``."""
    text = body if isinstance(body, str) else canonical_json(body)
    checked = text if version < 3 else \
        text[:text.index(',"request":')] + text[text.rindex(',"request_hash":'):]
    digest = hashlib.blake2b(checked.encode(), digest_size=16).hexdigest()
    return f'{{"checksum":"{digest}",' + text[1:]


def recorded_in(version, tmp_path, scripted):
    path = recorded(tmp_path, scripted)
    return in_format_2(path) if version == 2 else path


def resigned(lines: list[str]) -> list[str]:
    """``lines`` (header, calls, summary) with the summary's record count and chain made anew."""
    calls = lines[1:-1]
    chain = ""
    for line in [lines[0], *calls]:
        chain = chain_update(chain, claimed_checksum(line))
    summary = {k: v for k, v in json.loads(lines[-1]).items() if k != "checksum"}
    summary.update(records=len(calls) + 1, chain=chain)
    return [lines[0], *calls, record_line(summary)]


def replayed(path, asks=("q0", "q1", "q2")):
    cassette = Cassette(path, RecordMode.none, unread_requests=True)
    backend = RecordingBackend(cassette)
    return cassette, [json.loads(ask(backend, request(q)).text) for q in asks]


def test_a_replay_proves_every_line_and_reads_none_again(tmp_path, scripted):
    path = recorded(tmp_path, scripted)
    cassette, answers = replayed(path)
    assert answers == [{"echo": q} for q in ("q0", "q1", "q2")]
    records = [record for record, _ in cassette._calls]
    assert all(type(r) is RequestUnread and r.span is None for r in records), "all proven"
    cassette.check_unread()
    assert cassette.calls == Cassette(path, RecordMode.none).calls


@pytest.mark.parametrize("version", [2, 3])
def test_a_line_never_replayed_whose_request_is_not_json_is_refused_as_when_read_in_full(
        tmp_path, scripted, version):
    path = recorded_in(version, tmp_path, scripted)
    lines = lines_of(path)
    body = {k: v for k, v in json.loads(lines[1]).items() if k != "checksum"}
    text = canonical_json({**body, "key": "unasked"})
    broken = signed(text.replace('"request":{', '"request":{"bad":01,', 1), version)
    write_lines(path, resigned([*lines[:-1], broken, lines[-1]]))
    with pytest.raises(CassetteError, match="line 5: invalid JSON") as eager:
        Cassette(path, RecordMode.none)
    cassette, answers = replayed(path)  # the lines asked for replay as before
    assert answers == [{"echo": q} for q in ("q0", "q1", "q2")]
    with pytest.raises(CassetteError) as lazy:
        cassette.check_unread()
    assert str(lazy.value) == str(eager.value)


def test_a_line_whose_request_was_not_cut_where_its_member_is_is_refused(tmp_path, scripted):
    """A second "key" after the request: read without the request, the line says the first key;
    read in full, the second. It was looked up under a key the line does not hold: refused. In
    format 3 the line's request no longer stands before its request hash: refused as edited."""
    for version, member, refusal in [
            (2, ',"result":', "its members read otherwise"),
            (3, ',"request_hash":', "its request does not match its request_hash")]:
        folder = tmp_path / str(version)
        folder.mkdir()
        path = recorded_in(version, folder, scripted)
        lines = lines_of(path)
        record = json.loads(lines[1])
        body = {k: v for k, v in record.items() if k != "checksum"}
        text = canonical_json(body).replace(member, ',"key":"other"' + member, 1)
        lines[1] = signed(text, version)
        write_lines(path, resigned(lines))
        assert json.loads(lines[1])["key"] == "other"
        with pytest.raises(CassetteError, match=f"record 2: {refusal}"):
            replayed(path, asks=("q0",))


def test_a_request_that_differs_from_the_line_is_compared_in_full_as_before(tmp_path, scripted):
    """The line's request written with other whitespace: not proven from the bytes, read in full,
    equal by value: the answer is played (as a cassette read in full plays it). Format 3 hashes
    the request's canonical JSON, so there such a line is refused, read either way."""
    for version in (2, 3):
        folder = tmp_path / str(version)
        folder.mkdir()
        path = recorded_in(version, folder, scripted)
        lines = lines_of(path)
        body = {k: v for k, v in json.loads(lines[1]).items() if k != "checksum"}
        spaced = json.dumps(body["request"], sort_keys=True, separators=(", ", ": "))
        text = canonical_json(body).replace(canonical_json(body["request"]), spaced, 1)
        lines[1] = signed(text, version)
        write_lines(path, resigned(lines))
        if version == 3:
            with pytest.raises(CassetteError, match="record 2: its request does not match"):
                Cassette(path, RecordMode.none)
            with pytest.raises(CassetteError, match="record 2: its request does not match"):
                replayed(path)
            continue
        cassette, answers = replayed(path)
        assert answers == [{"echo": q} for q in ("q0", "q1", "q2")]
        assert cassette.calls == Cassette(path, RecordMode.none).calls


@pytest.mark.parametrize("unread_requests", [True, False])
def test_a_format_3_line_whose_request_hash_is_not_its_request_is_refused(tmp_path, scripted,
                                                                          unread_requests):
    """A line (the second call's: the first names the model's fingerprint) given another
    request and that request's key, signed afresh, its request hash left as it was: the checksum
    holds (it covers the hash, not the request), the key finds the line, the bytes prove the
    request; the request hash does not match it: refused, at load when read in full."""
    path = recorded(tmp_path, scripted)
    lines = lines_of(path)
    body = {k: v for k, v in json.loads(lines[2]).items() if k != "checksum"}
    other = request("q9")
    body.update(request=other.plain(), key=cassette_key(other, body["fingerprint"], 3))
    lines[2] = signed(body, 3)
    write_lines(path, resigned(lines))
    refusal = ("record 3: its request does not match its request_hash" if not unread_requests
               else "a recorded judge 'assess' call's key does not match its request")
    with pytest.raises(CassetteError, match=refusal):
        cassette = Cassette(path, RecordMode.none, unread_requests=unread_requests)
        ask(RecordingBackend(cassette), other)


@given(st.one_of(st.text(), st.text(alphabet="0123456789abcdef"), st.integers(), st.none(), st.floats()))
def test_a_hash_members_bytes_are_its_canonical_json(value):
    from vcrime_audit.canonical import plain_canonical_bytes
    from vcrime_audit.cassette.lines import _word_json

    try:
        expected = plain_canonical_bytes(value)
    except ValueError:
        with pytest.raises(ValueError):
            _word_json(value)
        return
    assert _word_json(value) == expected
