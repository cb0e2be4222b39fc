"""Cassette formats 2 and 3: journal, checksums, chain hash, error records, torn tails, hostile files."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cassette.test_persist import gzipfile_bytes
from vcrime_audit.backends.base import BackendError, GenerateRequest, Message, Sampling
from vcrime_audit.canonical import canonical_json, content_hash
from vcrime_audit.cassette import Cassette, CassetteError, CassetteMiss, RecordingBackend, RecordMode
from vcrime_audit.cassette.keys import cassette_key
from vcrime_audit.cassette.lines import gives_request, line_checksum, record_line
from vcrime_audit.cassette.persist import MAX_BYTES_ENV, journal_path, read_records, write_records


def request(content="hello", seed=0):
    return GenerateRequest(role="judge", call="assess", model="m", sampling=Sampling(seed=seed),
                           messages=[Message(role="user", content=content)])


def ask(backend, req):
    return asyncio.run(backend.generate(req))


def recorded(tmp_path, scripted, n=3, summary=True):
    path = tmp_path / "c.jsonl.gz"
    cassette = Cassette(path, RecordMode.once)
    cassette.meta = {"kind": "test"}
    backend = RecordingBackend(cassette, scripted(lambda r: {"echo": r.messages[-1].content}))
    for i in range(n):
        ask(backend, request(f"q{i}"))
        cassette.flush()
    if summary:
        cassette.close_with_summary({"rows_hash": "x", "rows": {}})
    cassette.finalise()
    return path


def flushed(tmp_path, scripted, n):
    """A cassette being recorded, with ``n`` calls (q0, q1, ...) answered "answer" and flushed."""
    path = tmp_path / "c.jsonl.gz"
    cassette = Cassette(path, RecordMode.once)
    backend = RecordingBackend(cassette, scripted(lambda r: "answer"))
    for i in range(n):
        ask(backend, request(f"q{i}"))
        cassette.flush()
    return path, cassette, backend


def lines_of(path):
    return gzip.decompress(path.read_bytes()).decode().splitlines()


def write_lines(path, lines):
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))


def in_format_2(path):
    """The cassette at ``path`` (format 3, as recorded now) rewritten in format 2: its calls keyed
    by their requests, without request hashes, each line checksummed whole."""
    records = read_records(path)
    for record in records:
        if record["type"] == "header":
            record["format"] = 2
        if record["type"] == "call":
            del record["request_hash"]
            record["key"] = cassette_key(record["request"], record["fingerprint"], 2)
    write_records(path, records)
    assert Cassette(path, RecordMode.none).format == 2
    return path


def test_every_line_starts_with_a_checksum_of_the_rest(tmp_path, scripted):
    """Format 3: a call's checksum leaves out its request, which its request hash covers; its key
    hashes the fingerprint with that hash. Every line is the record's canonical JSON."""
    path = recorded(tmp_path, scripted)
    lines = lines_of(path)
    assert [json.loads(line)["type"] for line in lines] == ["header", "call", "call", "call", "summary"]
    assert json.loads(lines[0])["format"] == 3
    for line in lines:
        body = json.loads(line)
        claimed = body.pop("checksum")
        assert record_line(body) == line
        call = body["type"] == "call"
        checked = {k: v for k, v in body.items() if not (call and k == "request")}
        assert claimed == hashlib.blake2b(canonical_json(checked).encode(), digest_size=16).hexdigest()
        assert line_checksum(line.encode()) == (claimed, not call)
        if call:
            assert body["request_hash"] == hashlib.blake2b(
                canonical_json(body["request"]).encode(), digest_size=16).hexdigest()
            assert body["key"] == content_hash({"fingerprint": body["fingerprint"],
                                                "request_hash": body["request_hash"]})
    assert Cassette(path, RecordMode.none).summary["records"] == 4


def test_every_format_2_line_starts_with_a_checksum_of_the_rest(tmp_path, scripted):
    path = in_format_2(recorded(tmp_path, scripted))
    for line in lines_of(path):
        claimed, ok = line_checksum(line.encode())
        body = json.loads(line)
        body.pop("checksum")
        assert ok and record_line(body) == line and "request_hash" not in body
        if body["type"] == "call":
            assert body["key"] == content_hash({"request": body["request"],
                                                "fingerprint": body["fingerprint"]})
    cassette = Cassette(path, RecordMode.none)
    backend = RecordingBackend(cassette)
    assert [json.loads(ask(backend, request(f"q{i}")).text) for i in range(3)] == \
        [{"echo": f"q{i}"} for i in range(3)]


def test_the_final_file_is_byte_stable(tmp_path, scripted):
    a = recorded(tmp_path / "a", scripted) if (tmp_path / "a").mkdir() is None else None
    b = recorded(tmp_path / "b", scripted) if (tmp_path / "b").mkdir() is None else None
    assert a.read_bytes() == b.read_bytes()


def test_the_final_file_compressed_turn_by_turn_is_gzip_of_its_lines(tmp_path, scripted):
    path = recorded(tmp_path, scripted, n=4)
    assert path.read_bytes() == gzipfile_bytes(lines_of(path))


def test_a_resumed_journal_finalises_to_gzip_of_all_its_lines(tmp_path, scripted):
    path, cassette, _ = flushed(tmp_path, scripted, 2)
    cassette.close()  # a crash: the journal stays, no final file
    resumed = Cassette(path, RecordMode.new)
    ask(RecordingBackend(resumed, scripted(lambda r: "more")), request("q2"))
    resumed.flush()
    resumed.close_with_summary({"rows_hash": "x", "rows": {}})
    resumed.finalise()
    lines = lines_of(path)
    assert len(lines) == 5 and path.read_bytes() == gzipfile_bytes(lines)


def test_a_cassette_recorded_into_after_its_final_file_keeps_every_line(tmp_path, scripted):
    path, cassette, backend = flushed(tmp_path, scripted, 1)
    cassette.save()
    ask(backend, request("q1"))
    cassette.save()
    lines = lines_of(path)
    assert [json.loads(line)["type"] for line in lines] == ["header", "call", "call"]
    assert path.read_bytes() == gzipfile_bytes(lines)
    assert [c["request"]["messages"][0]["content"] for c in Cassette(path, RecordMode.none).calls] \
        == ["q0", "q1"]


def test_a_finished_cassette_recorded_into_in_mode_new_gets_a_new_summary(tmp_path, scripted):
    path = recorded(tmp_path, scripted)
    before = lines_of(path)
    resumed = Cassette(path, RecordMode.new)
    ask(RecordingBackend(resumed, scripted(lambda r: "more")), request("q9"))
    resumed.close_with_summary({"rows_hash": "y", "rows": {}})
    resumed.finalise()
    lines = lines_of(path)
    assert lines[:4] == before[:4] and len(lines) == 6 and path.read_bytes() == gzipfile_bytes(lines)
    again = Cassette(path, RecordMode.none)
    assert again.verifiable and again.summary["records"] == 5


def test_a_final_write_that_fails_can_be_tried_again(tmp_path, scripted):
    path, cassette, _ = flushed(tmp_path, scripted, 1)
    cassette.close_with_summary({"rows_hash": "x", "rows": {}})
    (path / "in the way").mkdir(parents=True)  # os.replace cannot put a file over a full folder
    with pytest.raises(OSError):
        cassette.finalise()
    (path / "in the way").rmdir()
    path.rmdir()
    cassette.finalise()
    lines = lines_of(path)
    assert [json.loads(line)["type"] for line in lines] == ["header", "call", "summary"]
    assert path.read_bytes() == gzipfile_bytes(lines) and not journal_path(path).exists()


@pytest.mark.parametrize("field", ["text", "finish_reason", "completion_tokens", "seconds", "parsed"])
def test_an_edited_field_names_its_record(tmp_path, scripted, field):
    path = recorded(tmp_path, scripted)
    lines = lines_of(path)
    record = json.loads(lines[2])
    if field == "parsed":
        record["parsed"] = {"echo": "edited"}
    elif field == "completion_tokens":
        record["result"]["usage"]["completion_tokens"] += 1
    else:
        record["result"][field] = {"text": "x", "finish_reason": "length", "seconds": 9.5}[field]
    lines[2] = json.dumps(record, sort_keys=True, separators=(",", ":"))
    write_lines(path, lines)
    with pytest.raises(CassetteError, match="record 3 does not match its checksum"):
        Cassette(path, RecordMode.none)


@pytest.mark.parametrize("edit", ["drop", "swap", "duplicate"])
def test_dropped_swapped_or_duplicated_records_break_the_chain(tmp_path, scripted, edit):
    path = recorded(tmp_path, scripted)
    lines = lines_of(path)
    if edit == "drop":
        del lines[2]
    elif edit == "swap":
        lines[1], lines[2] = lines[2], lines[1]
    else:
        lines.insert(2, lines[2])
    write_lines(path, lines)
    with pytest.raises(CassetteError, match="chain hash"):
        Cassette(path, RecordMode.none)


def test_a_cassette_without_summary_is_not_verifiable(tmp_path, scripted):
    path = recorded(tmp_path, scripted)
    write_lines(path, lines_of(path)[:-1])
    cassette = Cassette(path, RecordMode.none)
    assert not cassette.verifiable and len(cassette.calls) == 3


def test_a_journal_with_a_torn_last_line_is_cut_back_and_resumes(tmp_path, scripted):
    path, cassette, backend = flushed(tmp_path, scripted, 2)
    ask(backend, request("lost"))  # never flushed: a crash here loses it
    journal = journal_path(path)
    whole = journal.read_bytes()
    journal.write_bytes(whole + b'{"checksum":"abc","type":"ca')
    resumed = Cassette(path, RecordMode.new)
    assert len(resumed.calls) == 2 and journal.read_bytes() == whole
    model = scripted(lambda r: "again")
    again = RecordingBackend(resumed, model)
    assert ask(again, request("q1")).text == "answer" and not model.calls
    assert ask(again, request("lost")).text == "again" and len(model.calls) == 1


@pytest.mark.parametrize("left", [b"", b'{"checksum":"abc","type":"hea'])
@pytest.mark.parametrize("final", [False, True])
def test_a_journal_killed_before_its_header_was_written_is_dropped(tmp_path, scripted, left, final):
    path = recorded(tmp_path, scripted) if final else tmp_path / "c.jsonl.gz"
    journal_path(path).write_bytes(left)
    resumed = Cassette(path, RecordMode.new)
    assert not journal_path(path).exists()
    assert len(resumed.calls) == (3 if final else 0) and resumed.existed is final
    model = scripted(lambda r: "fresh")
    backend = RecordingBackend(resumed, model)
    ask(backend, request("q9"))
    resumed.flush()
    assert len(model.calls) == 1 and len(lines_of_journal(path)) == (5 if final else 2)


def test_a_journal_torn_inside_a_character_is_cut_back_to_its_whole_lines(tmp_path, scripted):
    path, cassette, backend = flushed(tmp_path, scripted, 2)
    journal = journal_path(path)
    whole = journal.read_bytes()
    journal.write_bytes(whole + '{"checksum":"abc","request":"é'.encode()[:-1])  # half of é
    resumed = Cassette(path, RecordMode.new)
    assert len(resumed.calls) == 2 and journal.read_bytes() == whole


@pytest.mark.parametrize("in_journal", [False, True])
def test_a_line_that_is_not_utf8_is_one_clear_error_naming_it(tmp_path, scripted, in_journal):
    if in_journal:
        path = flushed(tmp_path, scripted, 2)[0]
        journal = journal_path(path)
        lines = journal.read_bytes().split(b"\n")
        lines[2] = lines[2].replace(b"q1", b"q\xff")
        journal.write_bytes(b"\n".join(lines))
        where = journal
    else:
        path = recorded(tmp_path, scripted)
        lines = gzip.decompress(path.read_bytes()).split(b"\n")
        at = lines[2].index(b"q1") + 1
        lines[2] = lines[2].replace(b"q1", b"q\xff")
        path.write_bytes(gzip.compress(b"\n".join(lines)))
        where = path
    with pytest.raises(CassetteError) as caught:
        Cassette(path, RecordMode.none)
    message = str(caught.value)
    assert message.startswith(f"{where}: line 3: not UTF-8 text at byte ") and "fix:" in message
    assert "\n" not in message
    if not in_journal:
        assert f"at byte {at} of the line" in message


def lines_of_journal(path):
    return journal_path(path).read_text().splitlines()


def test_a_recorded_failure_is_raised_again_on_replay(tmp_path, scripted):
    path = tmp_path / "c.jsonl.gz"

    def fail(r):
        raise BackendError("server said 500 (Authorization: Bearer sk-secret-123456)")

    cassette = Cassette(path, RecordMode.once)
    live = RecordingBackend(cassette, scripted(fail))
    with pytest.raises(BackendError) as first:
        ask(live, request())
    cassette.save()
    assert "sk-secret" not in str(first.value)
    with pytest.raises(BackendError) as again:
        ask(RecordingBackend(Cassette(path, RecordMode.none)), request())
    assert str(again.value) == str(first.value)
    assert "sk-secret" not in gzip.decompress(path.read_bytes()).decode()


def test_a_gzip_bomb_stops_at_the_cap(tmp_path, monkeypatch):
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(gzip.compress(b"\n" * (50 * 1024 * 1024)))
    monkeypatch.setenv(MAX_BYTES_ENV, str(1024 * 1024))
    with pytest.raises(CassetteError, match="more than 1048576 bytes"):
        Cassette(path, RecordMode.none)


@pytest.mark.parametrize("header", [
    '{"type":"header","format":1,"meta":[1,2]}',
    '{"type":"header","format":7,"meta":{}}',
    '[' * 100_000 + ']' * 100_000,
    '{"type":"call"}',
])
def test_malformed_headers_are_one_clear_error(tmp_path, header):
    path = tmp_path / "c.jsonl.gz"
    write_lines(path, [header])
    with pytest.raises(CassetteError) as info:
        Cassette(path, RecordMode.none)
    assert str(info.value).startswith(str(path)) and "fix:" in str(info.value)


class Echo:
    name = "echo"

    def fingerprint(self, model):
        return {"engine": "echo"}

    async def generate(self, req):
        from vcrime_audit.backends.base import GenerateResult
        return GenerateResult(text=json.dumps({"echo": req.messages[-1].content}))

    async def aclose(self):
        pass


def two_calls(folder, version=3):
    """A final cassette of two echoed calls (q0, q1) with a summary, in format ``version``."""
    path = folder / "c.jsonl.gz"
    cassette = Cassette(path, RecordMode.once)
    backend = RecordingBackend(cassette, Echo())
    for i in range(2):
        ask(backend, request(f"q{i}"))
    cassette.close_with_summary({"rows": {}})
    cassette.finalise()
    return in_format_2(path) if version == 2 else path


def flip_a_byte(path, data):
    text = bytearray(gzip.decompress(path.read_bytes()))
    index = data.draw(st.integers(0, len(text) - 2))
    value = data.draw(st.integers(0, 255).filter(lambda v: v != text[index]))
    text[index] = value
    path.write_bytes(gzip.compress(bytes(text)))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_byte_edit_is_caught_or_harmless(tmp_path_factory, data):
    """A flipped byte anywhere in the decompressed text is an error, never a silent change."""
    path = two_calls(tmp_path_factory.mktemp("flip"))
    flip_a_byte(path, data)
    with pytest.raises(CassetteError):
        Cassette(path, RecordMode.none)


@settings(max_examples=150, deadline=None)
@given(st.data(), st.sampled_from([2, 3]))
def test_any_byte_edit_is_caught_by_a_replay_that_leaves_requests_unread(tmp_path_factory, data, version):
    """Read without its requests (a run's replay), a cassette with a flipped byte is refused at
    load, by a call's replay or by the replay's last check (``check_unread``): a format-3 line's
    checksum leaves out its request, which its replay proves equal to the request asked or reads
    and hashes."""
    path = two_calls(tmp_path_factory.mktemp("flip"), version)
    flip_a_byte(path, data)
    with pytest.raises((CassetteError, CassetteMiss)):
        cassette = Cassette(path, RecordMode.none, unread_requests=True)
        backend = RecordingBackend(cassette)
        for i in range(2):
            ask(backend, request(f"q{i}"))
        cassette.check_unread()


def test_format_1_cassettes_still_read(tmp_path, fingerprint=None):
    path = tmp_path / "old.jsonl.gz"
    req = request()
    fingerprint = fingerprint or {"e": 1}
    from vcrime_audit.canonical import to_plain

    call = {"type": "call", "key": cassette_key(req, fingerprint, 1), "request": to_plain(req),
            "fingerprint": fingerprint, "result": {"text": "old", "finish_reason": "stop",
                                                "usage": {"prompt_tokens": 1, "completion_tokens": 1},
                                                "seconds": 0.1}, "parsed": None}
    write_lines(path, [json.dumps({"type": "header", "format": 1, "meta": {}}), json.dumps(call)])
    cassette = Cassette(path, RecordMode.none)
    assert cassette.format == 1 and ask(RecordingBackend(cassette), req).text == "old"
    assert read_records(path)[1]["parsed"] is None


def test_a_format_1_cassette_recorded_on_goes_on_in_format_2(tmp_path, scripted):
    backend = scripted(lambda r: "new")
    test_format_1_cassettes_still_read(tmp_path, backend.fingerprint("m"))
    path = tmp_path / "old.jsonl.gz"
    cassette = Cassette(path, RecordMode.new)
    ask(RecordingBackend(cassette, backend), request("q9"))
    cassette.save()
    lines = lines_of(path)
    assert json.loads(lines[0])["format"] == 2 and len(lines) == 3
    assert all(line_checksum(line.encode())[1] and "request_hash" not in line for line in lines)
    replay = RecordingBackend(Cassette(path, RecordMode.none, unread_requests=True))
    assert [ask(replay, r).text for r in (request(), request("q9"))] == ["old", "new"]


REQUESTS = st.recursive(st.none() | st.booleans() | st.integers() | st.text(alphabet='a"\\,:{}[] r'),
                        lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.sampled_from(["request", "result", "type", "a"]), inner,
                                          max_size=3), max_leaves=8)


@st.composite
def call_lines(draw):
    """A call line a replay might read: one we write, or members of any order, nesting and
    repetition, built from texts that hold the tail a written line ends with."""
    request = draw(REQUESTS)
    result = draw(st.dictionaries(st.sampled_from(["text", "seconds"]), st.text(max_size=3) | st.integers(),
                                  max_size=2))
    target = canonical_json(request)
    hashed = draw(st.booleans())  # format 3: the request hash follows the request
    written = canonical_json({"type": "call", "request": request, "result": result}
                             | ({"request_hash": "h"} if hashed else {}))
    tail = (',"request_hash":"h"' if hashed else "") + f',"result":{canonical_json(result)},"type":"call"}}'
    pieces = [target, canonical_json(result), '"call"', '"h"', written, json.dumps(written),
              '{"request":' + target + tail, canonical_json(draw(REQUESTS))]
    keys = ["request", "result", "type", "parsed", "request_hash", '\\"request', 'x\\",\\"request']
    members = draw(st.lists(st.tuples(st.sampled_from(keys),
                                      st.sampled_from(pieces)), min_size=1, max_size=6))
    if draw(st.booleans()):
        members += [(draw(st.sampled_from(keys)), target),
                    *([("request_hash", '"h"')] if hashed else []),
                    ("result", canonical_json(result)), ("type", '"call"')]
    gap = draw(st.sampled_from(["", " "]))
    return request, "{" + f",{gap}".join(f'"{k}":{gap}{v}' for k, v in members) + "}"


@settings(max_examples=1500, suppress_health_check=list(HealthCheck))
@given(call_lines())
def test_a_line_said_to_give_a_request_gives_exactly_it(case):
    request, line = case
    record = json.loads(line)
    if gives_request(line.encode(), record, canonical_json(request).encode()):
        assert record["request"] == request and canonical_json(record["request"]) == canonical_json(request)


def test_every_call_line_written_gives_its_request():
    for record in ({"type": "call", "key": "k", "request": {"a": [1, "x"]}, "fingerprint": {},
                    "result": {"text": "t", "seconds": 0.5}, "parsed": None},
                   {"type": "call", "key": "k", "request": {"a": 1.0}, "fingerprint": {},
                    "error": {"type": "BackendError", "message": "m"}}):
        line = record_line(record)
        assert gives_request(line.encode(), json.loads(line), canonical_json(record["request"]).encode())
        assert not gives_request(line.encode(), json.loads(line), canonical_json({"a": 2}).encode())


@pytest.mark.parametrize("version", [2, 3])
def test_a_cassette_recorded_on_keeps_its_format(tmp_path, scripted, version):
    """Calls recorded into a cassette read in format 2 (mode ``new``: a job resumed after an
    upgrade of vcrime-audit) are written in format 2, under its header, and replay with the
    rest; a format-3 one goes on in format 3."""
    path = recorded(tmp_path, scripted, summary=False)
    if version == 2:
        in_format_2(path)
    cassette = Cassette(path, RecordMode.new)
    ask(RecordingBackend(cassette, scripted(lambda r: {"echo": r.messages[-1].content})), request("q9"))
    cassette.save()
    lines = lines_of(path)
    assert json.loads(lines[0])["format"] == version and len(lines) == 5
    assert all(("request_hash" in json.loads(line)) == (version == 3) for line in lines[1:])
    replay = RecordingBackend(Cassette(path, RecordMode.none, unread_requests=True))
    assert [json.loads(ask(replay, request(q)).text) for q in ("q0", "q1", "q2", "q9")] == \
        [{"echo": q} for q in ("q0", "q1", "q2", "q9")]
