import asyncio
import gzip
import hashlib
import json

import pytest

from tests.cassette.test_format2 import in_format_2
from vcrime_audit.backends.base import GenerateRequest, Message, Sampling
from vcrime_audit.cassette import Cassette, CassetteError, CassetteMiss, RecordingBackend, RecordMode
from vcrime_audit.cassette.lines import line_checksum
from vcrime_audit.cassette.persist import read_records, write_records


def request(content="hello", seed=0, role="judge", call="assess"):
    return GenerateRequest(role=role, call=call, model="m", sampling=Sampling(seed=seed),
                           messages=[Message(role="system", content="You judge."),
                                     Message(role="user", content=content)])


def ask(backend, req):
    return asyncio.run(backend.generate(req))


def saved_one_call(tmp_path, echo):
    """A cassette of one recorded call, saved (no summary), and its records."""
    path = tmp_path / "c.jsonl.gz"
    cassette = Cassette(path, RecordMode.once)
    ask(RecordingBackend(cassette, echo), request())
    cassette.save()
    return path, read_records(path)


@pytest.fixture
def echo(scripted):
    return scripted(lambda r: {"echo": r.messages[-1].content, "seed": r.sampling.seed})


def test_once_records_a_new_cassette_then_only_replays(tmp_path, echo, scripted):
    path = tmp_path / "run.jsonl.gz"
    cassette = Cassette(path, RecordMode.once)
    first = ask(RecordingBackend(cassette, echo), request())
    cassette.save()
    assert len(echo.calls) == 1

    again = scripted(lambda r: "never used")
    replayed = Cassette(path, RecordMode.once)
    backend = RecordingBackend(replayed, again)
    assert ask(backend, request()) == first and not again.calls
    with pytest.raises(CassetteMiss):
        ask(backend, request("something else"))
    assert not again.calls, "a miss in replay never calls the model"


def test_new_records_only_misses_and_all_re_records(tmp_path, echo):
    path = tmp_path / "run.jsonl.gz"
    cassette = Cassette(path, RecordMode.once)
    ask(RecordingBackend(cassette, echo), request("a"))
    cassette.save()
    newer = Cassette(path, RecordMode.new)
    backend = RecordingBackend(newer, echo)
    ask(backend, request("a"))
    ask(backend, request("b"))
    newer.save()
    assert len(echo.calls) == 2 and len(Cassette(path, RecordMode.none).calls) == 2
    everything = Cassette(path, RecordMode.all)
    ask(RecordingBackend(everything, echo), request("a"))
    everything.save()
    assert len(echo.calls) == 3 and len(Cassette(path, RecordMode.none).calls) == 1


def test_identical_requests_replay_in_recorded_order(tmp_path, scripted):
    answers = iter(["first", "second"])
    backend = scripted(lambda r: next(answers))
    path = tmp_path / "c.jsonl.gz"
    cassette = Cassette(path, RecordMode.once)
    rec = RecordingBackend(cassette, backend)
    assert [ask(rec, request()).text for _ in range(2)] == ["first", "second"]
    cassette.save()
    replay = RecordingBackend(Cassette(path, RecordMode.none))
    assert [ask(replay, request()).text for _ in range(2)] == ["first", "second"]
    with pytest.raises(CassetteMiss):
        ask(replay, request())


def test_miss_shows_a_diff_against_the_nearest_request(tmp_path, echo):
    path = tmp_path / "c.jsonl.gz"
    cassette = Cassette(path, RecordMode.once)
    rec = RecordingBackend(cassette, echo)
    ask(rec, request("The guard is asleep at the desk."))
    ask(rec, request("Completely different text about a roof.", call="other"))
    cassette.save()
    replay = RecordingBackend(Cassette(path, RecordMode.none))
    with pytest.raises(CassetteMiss) as info:
        ask(replay, request("The guard is awake at the desk."))
    message = str(info.value)
    assert "-The guard is asleep at the desk." in message
    assert "+The guard is awake at the desk." in message
    assert "no model was called" in message and replay.model_calls == 0


def test_fingerprint_is_part_of_the_key(tmp_path, echo, scripted):
    path = tmp_path / "c.jsonl.gz"
    cassette = Cassette(path, RecordMode.once)
    ask(RecordingBackend(cassette, echo), request())
    cassette.save()
    other = scripted(lambda r: "x")
    other.fingerprint = lambda model: {"engine": "other", "model": model}
    with pytest.raises(CassetteMiss, match="different backend fingerprint"):
        ask(RecordingBackend(Cassette(path, RecordMode.none), other), request())


def test_saved_bytes_are_stable(tmp_path, echo):
    path = tmp_path / "c.jsonl.gz"
    cassette = Cassette(path, RecordMode.once)
    ask(RecordingBackend(cassette, echo), request())
    cassette.save()
    first = path.read_bytes()
    Cassette(path, RecordMode.none).save()
    assert path.read_bytes() == first
    assert read_records(path)[1]["parsed"] == {"echo": "hello", "seed": 0}


@pytest.mark.parametrize("damage, expected", [
    (lambda p: p.write_bytes(b"not gzip at all"), "not a readable gzip cassette"),
    (lambda p: p.write_bytes(gzip.compress(b'{"type": "header", "format": 1}\n{broken')),
     "line 2: invalid JSON"),
    (lambda p: p.write_bytes(gzip.compress(b'{"type": "call"}\n')), "line 1: expected the header"),
    (lambda p: p.write_bytes(gzip.compress(b'{"type": "header", "format": 99}\n')), "header.format is 99"),
    (lambda p: p.write_bytes(gzip.compress(b'{"type": "header", "format": 1}\n{"type": "call"}\n')),
     "record 2: call record lacks key"),
    (lambda p: p.write_bytes(p.read_bytes()[:-12]), "not a readable gzip cassette"),
])
def test_corrupt_cassettes_are_named_with_line_and_fix(tmp_path, echo, damage, expected):
    path = tmp_path / "c.jsonl.gz"
    cassette = Cassette(path, RecordMode.once)
    ask(RecordingBackend(cassette, echo), request())
    cassette.save()
    damage(path)
    with pytest.raises(CassetteError) as info:
        Cassette(path, RecordMode.none)
    assert str(path) in str(info.value) and expected in str(info.value) and "fix:" in str(info.value)


def test_hand_edited_request_is_detected_even_when_re_signed(tmp_path, echo):
    """An edit written with fresh checksums passes the file's checks; the key catches it."""
    path, records = saved_one_call(tmp_path, echo)
    records[1]["request"]["messages"][1]["content"] = "edited"
    write_records(path, records)
    with pytest.raises(CassetteError, match="key does not match"):
        ask(RecordingBackend(Cassette(path, RecordMode.none)), request())


def test_a_call_record_with_a_null_error_and_no_result_is_one_clear_error(tmp_path, echo):
    path, records = saved_one_call(tmp_path, echo)
    del records[1]["result"]
    records[1]["error"] = None
    write_records(path, records)
    with pytest.raises(CassetteError, match=r"record 2: call record lacks result; fix:"):
        Cassette(path, RecordMode.none)


def reordered(path, records):
    """The cassette's call line rewritten valid but not as we write it (members reordered,
    spaces), its checksum made over the whole of it (as format 2 defines)."""
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    body = json.dumps({k: v for k, v in reversed(records[1].items()) if k != "checksum"})
    checksum = hashlib.blake2b(body.encode(), digest_size=16).hexdigest()
    lines[1] = f'{{"checksum":"{checksum}",' + body[1:]
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))


def test_a_format_3_call_line_written_another_way_is_refused(tmp_path, echo):
    """Format 3 checks a call's checksum without its request member, which must stand where we
    write it: a line written another way is refused, naming the record."""
    path, records = saved_one_call(tmp_path, echo)
    reordered(path, records)
    for unread in (False, True):
        with pytest.raises(CassetteError, match=r"record 2: its request does not match its "
                                                r"request_hash \(edited or corrupted\); fix:"):
            Cassette(path, RecordMode.none, unread_requests=unread).check_unread()


def test_a_call_line_written_another_way_replays_by_its_values(tmp_path, echo):
    """A format-2 line that is valid but not as we write it (members reordered, spaces),
    re-signed: the replay compares the request's values, as it does for a format-1 line."""
    path, records = saved_one_call(tmp_path, echo)
    reordered(path, read_records(in_format_2(path)))
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    assert len(lines) == 2 and line_checksum(lines[1].encode())[1]  # saved: no summary
    replayed = Cassette(path, RecordMode.none)
    assert ask(RecordingBackend(replayed), request()).text == ask(RecordingBackend(Cassette(
        tmp_path / "fresh.jsonl.gz", RecordMode.once), echo), request()).text
    edited = request(content="other")
    with pytest.raises(CassetteMiss):
        ask(RecordingBackend(Cassette(path, RecordMode.none)), edited)
