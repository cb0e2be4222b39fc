"""Cassette lines and files. A record's line made from canonical JSON already made for some of its
values is the line made from the whole record: the same checksum, the same bytes (or the same
refusal). The final file compressed as its lines come is what GzipFile writes for all of them."""

import gzip
import io
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from zlib_ng import zlib_ng

from tests.test_canonical import DATA, TEXT
from vcrime_audit.canonical import canonical_json
from vcrime_audit.cassette.final_gzip import FinalGzip, WrittenLines
from vcrime_audit.cassette.lines import checksummed, claimed_checksum, line_checksum, split_lines
from vcrime_audit.cassette.persist import (
    INFLATE_ERRORS,
    MAX_BYTES_ENV,
    CassetteFileError,
    decompress,
    read_final,
)

COMMITTED = Path(__file__).resolve().parents[2] / "cassettes"

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
    assert line_checksum(whole[1].encode()) == (whole[0], True)


def gzipfile_bytes(lines: list[str]) -> bytes:
    """What the standard library's GzipFile writes for the lines (no name, no time, level 9)."""
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz:
        gz.write("".join(line + "\n" for line in lines).encode("utf-8"))
    return out.getvalue()


LINES = st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=3000)
                 | st.sampled_from(["", "x" * 70_000, "abc" * 9000]), max_size=12)


@given(LINES, st.data())
def test_compressing_lines_as_they_come_gives_the_bytes_of_compressing_them_at_once(lines, data):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(lines)), max_size=6)))
    final = FinalGzip()
    for start, end in zip([0, *cuts], [*cuts, len(lines)], strict=True):
        final.add(lines[start:end])
        assert final.bytes() == gzipfile_bytes(lines[:end])
    assert gzip.decompress(final.bytes()).decode("utf-8") == "".join(f"{line}\n" for line in lines)


@pytest.mark.parametrize("path", sorted(COMMITTED.rglob("*.jsonl.gz")), ids=lambda p: p.name)
def test_every_committed_cassette_is_what_compressing_its_lines_gives(path):
    lines = gzip.decompress(path.read_bytes()).decode("utf-8").split("\n")[:-1]
    assert FinalGzip(lines).bytes() == path.read_bytes()


RECORD_LINES = st.lists(st.builds(lambda c, body: '{"checksum":"' + c + '",' + body,
                                  st.text("0123456789abcdef", min_size=32, max_size=32),
                                  st.text(st.characters(blacklist_categories=("Cs",),
                                                        blacklist_characters="\n")
                                          | st.sampled_from(["\u2028", "\x85", "\r", "é"]), max_size=500)),
                        max_size=8)


@given(st.lists(st.tuples(RECORD_LINES, st.booleans(), st.booleans()), max_size=6), RECORD_LINES,
       st.booleans())
def test_written_lines_keep_what_a_list_of_the_lines_would_give(adds, more, more_as_bytes):
    """Lines as text (made here) or as bytes (read from a file) alike."""
    written, plain = WrittenLines(), []
    for lines, compress, as_bytes in adds:
        written.add([line.encode() for line in lines] if as_bytes else lines, compress=compress)
        plain += lines
        assert written.lines() == [line.encode() for line in plain] and len(written) == len(plain)
    assert written.checksums == [claimed_checksum(line) for line in plain]
    assert written.final_bytes([line.encode() for line in more] if more_as_bytes else more) \
        == gzipfile_bytes(plain + more)
    assert written.lines() == [line.encode() for line in plain]  # final_bytes's summary is not added


def _inflated(data: bytes, inflater_of: object) -> bytes | str:
    try:
        return decompress(Path("c.jsonl.gz"), data, inflater_of)  # type: ignore[arg-type]
    except INFLATE_ERRORS:
        return "refused by the inflater"
    except CassetteFileError as exc:
        return str(exc)


MEMBER = st.one_of(st.binary(max_size=3000), st.text(alphabet="ab{}\":,\n", max_size=6000).map(str.encode))


@given(members=st.lists(st.tuples(MEMBER, st.integers(0, 9)), min_size=1, max_size=3),
       padding=st.binary(max_size=8), cut=st.integers(0, 1 << 16),
       flips=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(1, 255)), max_size=3),
       limit=st.sampled_from(["", "0", "100", "5000", "20000"]),
       mutate=st.sampled_from(["none", "cut", "flip", "both"]))
def test_cassettes_inflate_to_what_zlib_gives_them_or_are_refused_as_zlib_refuses_them(
        members, padding, cut, flips, limit, mutate):
    """zlib-ng reads a cassette as zlib does: the same bytes, the same refusals (corrupt or
    truncated data, the size cap), whatever is cut or flipped."""
    data = bytearray(b"".join(gzip.compress(m, compresslevel=level, mtime=0) for m, level in members)
                     + padding)
    if mutate in ("cut", "both"):
        del data[cut % (len(data) + 1):]
    if mutate in ("flip", "both") and data:
        for at, bits in flips:
            data[at % len(data)] ^= bits
    with pytest.MonkeyPatch.context() as env:
        env.setenv(MAX_BYTES_ENV, limit)
        assert _inflated(bytes(data), zlib_ng.decompressobj) == _inflated(bytes(data), zlib.decompressobj)


@given(st.lists(st.sampled_from([b"\n", b"a", b"\r", b"{}", b"\xe2\x82\xac", b"\x00"]),
                max_size=40).map(b"".join))
def test_split_lines_splits_as_bytes_split(data):
    assert split_lines(data) == data.split(b"\n")


def test_a_file_larger_than_any_cassette_under_the_cap_is_refused_unread(tmp_path, monkeypatch):
    """The cap on a cassette's decompressed bytes bounds its file too (stored data grows by a
    few bytes in 64 KiB): a larger file is refused before it is decompressed, and one at the
    bound is decompressed (and refused for what it holds)."""
    monkeypatch.setenv(MAX_BYTES_ENV, "1000")
    bound = 1000 + 1 + (1 << 16)
    path = tmp_path / "big.jsonl.gz"
    path.write_bytes(b"\x1f\x8b" + b"\x00" * (bound - 1))
    with pytest.raises(CassetteFileError, match="larger than any cassette of at most 1000 bytes"):
        read_final(path)
    path.write_bytes(b"\x1f\x8b" + b"\x00" * (bound - 2))
    with pytest.raises(CassetteFileError, match="not a readable gzip cassette"):
        read_final(path)
