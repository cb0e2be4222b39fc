"""Cassette files.

A cassette has two forms:

- the *journal* ``<name>.jsonl.journal``: plain JSON lines, appended and flushed to disk one unit
  (turn, conversation, item) at a time while a job records. A crash leaves a readable journal; a
  torn last line is cut off when it is reopened.
- the *final* cassette ``<name>.jsonl.gz``: the same lines, gzip-compressed (level 9, as the
  lines come: :mod:`.final_gzip`) and written when the job closes, with no time in the gzip
  header, so equal content gives equal bytes.

Every record line is the record's canonical JSON and begins with its own checksum,
``{"checksum":"<hex>",...}``: the blake2b of the line without that member (:mod:`.lines`). The
summary record carries a chain hash over the checksums of every record before it, so a dropped,
swapped or duplicated line is caught too.

Format 3 (written now) hashes a call's request once: a call line holds ``request_hash``, the
blake2b of the request's canonical JSON (the store's ``calls.request_hash``); its checksum covers
the line without its request member, and its key is the blake2b of ``{"fingerprint": ...,
"request_hash": ...}`` (:mod:`.keys`). In format 2 the checksum covered the request and the key
hashed it again: three passes over ~14 KB a call, ~12 % of a replay's CPU. Formats 2 and 1 (gzip
JSON lines without checksums) are still read, and a cassette read in format 2 or 1 is written on
in format 2.
"""

from __future__ import annotations

import json
import os
import shutil
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from zlib_ng import zlib_ng

from ..canonical import blake2b_hex, plain_content_hash
from ..jsonparse import parse_json
from ..regular_files import NotARegularFile, read_regular
from .final_gzip import FinalGzip, lines_bytes
from .lines import (
    Line,
    RequestUnread,
    chain_update,
    claimed_checksum,
    line_checksum,
    read_without_request,
    record_line,
    request_cut,
    split_lines,
)

FORMAT_VERSION = 3
READABLE_FORMATS = (1, 2, 3)
MAX_BYTES_ENV = "VCRIME_MAX_CASSETTE_BYTES"
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
RECORD_TYPES = ("header", "call", "summary")
FIX = "re-record it (--record-mode all) or restore it from git"
INFLATE_ERRORS = (zlib.error, zlib_ng.error)
"""Cassettes are inflated by zlib-ng (~4 times zlib's speed on this machine: 0.9 against 4.0 ms
a 30-turn c120 cassette); its output, and which data it refuses, are zlib's
(``tests/cassette/test_persist.py`` compares them on generated and corrupted gzip data). They
are still deflated by zlib, whose output the committed cassettes' bytes are."""


class CassetteFileError(Exception):
    pass


def journal_path(path: Path) -> Path:
    """Where the journal of the cassette ``path`` lives while its job records."""
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return path.with_name(name + ".journal")


def max_bytes() -> int:
    raw = os.environ.get(MAX_BYTES_ENV, "")
    try:
        return int(raw) if raw else DEFAULT_MAX_BYTES
    except ValueError:
        raise CassetteFileError(f"{MAX_BYTES_ENV}={raw!r} is not a whole number of bytes; fix: set it "
                                "to one, or unset it") from None


def decompress(path: Path, data: bytes, inflater_of: Callable[..., Any] = zlib_ng.decompressobj) -> bytes:
    """gunzip ``data`` (all members), refusing more than :func:`max_bytes` of output.
    ``inflater_of``: zlib's ``decompressobj`` or one that does what it does."""
    limit = max_bytes()
    out: list[bytes] = []
    total = 0
    while data:
        inflater = inflater_of(wbits=31)
        chunk = inflater.decompress(data, limit - total + 1)
        while True:
            total += len(chunk)
            if total > limit:
                raise CassetteFileError(
                    f"{path}: decompresses to more than {limit} bytes; fix: if it is a real "
                    f"cassette, raise the cap with {MAX_BYTES_ENV}=BYTES, else {FIX}")
            out.append(chunk)
            if inflater.eof or not inflater.unconsumed_tail:
                break
            chunk = inflater.decompress(inflater.unconsumed_tail, limit - total + 1)
        if not inflater.eof:
            raise CassetteFileError(f"{path}: not a readable gzip cassette (truncated); fix: {FIX}")
        data = inflater.unused_data.lstrip(b"\x00")
    return b"".join(out)


def parse_record(path: Path, number: int, line: bytes) -> dict[str, Any]:
    """Line ``number`` of ``path`` read as a record (JSON of a known type), or one clear error."""
    try:
        record = parse_json(line)
    except UnicodeDecodeError as exc:
        raise CassetteFileError(f"{path}: line {number}: not UTF-8 text at byte {exc.start} of the "
                                f"line; fix: {FIX}") from None
    except json.JSONDecodeError as exc:
        raise CassetteFileError(f"{path}: line {number}: invalid JSON ({exc.msg}); fix: {FIX}") from None
    except RecursionError:
        raise CassetteFileError(f"{path}: line {number}: JSON nested too deeply; fix: {FIX}") from None
    except ValueError as exc:  # an integer beyond Python's digit limit for int()
        raise CassetteFileError(f"{path}: line {number}: invalid JSON ({exc}); fix: {FIX}") from None
    if not isinstance(record, dict) or record.get("type") not in RECORD_TYPES:
        raise CassetteFileError(f"{path}: line {number}: field 'type' missing or not one of "
                                f"{', '.join(RECORD_TYPES)}; fix: {FIX}")
    return record


def parse_lines(path: Path, data: bytes, *, torn_tail_ok: bool = False, unread_requests: bool = False
                ) -> tuple[list[dict[str, Any]], list[bytes]]:
    """Records of a cassette's bytes (UTF-8 text), checked line by line, and their lines.

    With ``torn_tail_ok`` (a journal) whatever follows the last newline is a line torn by a crash
    and is left out; every whole line must still be valid.

    With ``unread_requests`` a format-2 call line is read without its request where that can be
    done (:class:`.lines.RequestUnread`): ~9/16 of reading a line, which a replay needs only where
    its own request's bytes differ. Every line's checksum is still checked here.

    The lines stay bytes: the checksums hash them as they are, and a replay compares its requests'
    canonical bytes with them (:func:`.lines.gives_request`). Made text, a c960 cassette's 3.6 MB
    were decoded, split, sliced and encoded again for the checksums: 3.2 % of a replay's
    instructions (``benchmarks/bench_instructions.py``). A newline byte is never part of a longer
    UTF-8 character, so splitting the bytes splits the text's lines; bytes that are not UTF-8
    are refused line by line (:func:`vcrime_audit.jsonparse.parse_json`), naming the line and the
    byte.
    """
    records: list[dict[str, Any]] = []
    lines = split_lines(data)
    complete = lines[:-1] if data.endswith(b"\n") or torn_tail_ok else lines
    version = 0
    for number, line in enumerate(complete, start=1):
        if not line:
            raise CassetteFileError(f"{path}: line {number}: empty line; fix: {FIX}")
        record = (version >= 2 and unread_requests and read_without_request(line, number, version >= 3)
                  or parse_record(path, number, line))
        if number == 1:
            version = check_header(path, [record])
        if version >= 2:
            check_line(path, number, line, record, version)
        records.append(record)
    return records, complete[:len(records)]


def check_line(path: Path | str, number: int, line: bytes, record: dict[str, Any], version: int) -> None:
    """A format-2 or -3 line's checksum. A format-3 call line's checksum leaves out its request
    member: read without it (:class:`.lines.RequestUnread`), the replay proves later that the
    member cut out is its own request, whose hash it compares with ``request_hash``; read in
    full, the request must stand where a line we write holds it, written canonically, and hash
    to ``request_hash`` here."""
    cut = None
    if version >= 3 and record.get("type") == "call":
        if type(record) is RequestUnread:
            cut = record.span
        else:
            found = request_cut(line, record)
            if found is None or not isinstance(record.get("request_hash"), str) \
                    or blake2b_hex(found[1]) != record["request_hash"]:
                raise CassetteFileError(f"{path}: record {number}: its request does not match its "
                                        f"request_hash (edited or corrupted); fix: {FIX}")
            cut = found[0]
    claimed, ok = line_checksum(line, cut)
    if claimed is None:
        raise CassetteFileError(f"{path}: record {number} has no checksum; fix: {FIX}")
    if not ok:
        raise CassetteFileError(f"{path}: record {number} does not match its checksum (edited or "
                                f"corrupted); fix: {FIX}")


def check_header(path: Path, records: list[dict[str, Any]]) -> int:
    if not records or records[0]["type"] != "header":
        raise CassetteFileError(f"{path}: line 1: expected the header record; fix: {FIX}")
    version = records[0].get("format")
    if version not in READABLE_FORMATS:
        raise CassetteFileError(f"{path}: header.format is {version!r}, this version reads "
                                f"{' and '.join(map(str, READABLE_FORMATS))}; fix: {FIX}")
    if not isinstance(records[0].get("meta", {}), dict):
        raise CassetteFileError(f"{path}: header.meta must be an object; fix: {FIX}")
    return int(version)


def _read_file(path: Path, what: str) -> bytes:
    """The bytes of the cassette file or journal ``path``: a regular file, of no more bytes than a
    cassette of :func:`max_bytes` decompressed can take (stored incompressible, deflate adds 5
    bytes to 64 KiB, gzip 18 a member)."""
    limit = max_bytes() + max_bytes() // 1000 + (1 << 16)
    try:
        raw = read_regular(path, limit)
    except FileNotFoundError:
        raise CassetteFileError(f"{path}: no such {what}; fix: check the path") from None
    except IsADirectoryError:
        raise CassetteFileError(f"{path}: is a folder, not a {what} file; fix: give the path of the "
                                f"{what} file itself") from None
    except NotARegularFile as exc:
        raise CassetteFileError(f"{path}: {exc.strerror}; fix: give the {what} file itself") from None
    except OSError as exc:
        raise CassetteFileError(f"{path}: cannot read ({exc.strerror}); fix: check that this user "
                                "may read the file and that its disk answers") from None
    if len(raw) > limit:
        raise CassetteFileError(f"{path}: larger than any {what} of at most {max_bytes()} bytes; "
                                f"fix: if it is a real one, raise the cap with {MAX_BYTES_ENV}=BYTES, "
                                f"else {FIX}")
    return raw


def read_final(path: Path, unread_requests: bool = False) -> tuple[list[dict[str, Any]], list[bytes]]:
    raw = _read_file(path, "cassette")
    try:
        data = decompress(path, raw)
    except INFLATE_ERRORS as exc:
        raise CassetteFileError(f"{path}: not a readable gzip cassette ({exc}); fix: {FIX}") from None
    records, lines = parse_lines(path, data, unread_requests=unread_requests)
    check_header(path, records)
    return records, lines


def read_journal(path: Path, unread_requests: bool = False) -> tuple[list[dict[str, Any]], list[bytes]]:
    """Records of a journal; a torn last line (a crash mid-write) is cut off the file."""
    journal = journal_path(path)
    raw = _read_file(journal, "journal")
    records, lines = parse_lines(journal, raw, torn_tail_ok=True, unread_requests=unread_requests)
    good = sum(map(len, lines)) + len(lines)  # the bytes that held them, newlines included
    if good < len(raw):
        with open(journal, "r+b") as handle:
            handle.truncate(good)
    check_header(journal, records)
    return records, lines


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a cassette: its journal if a job is (or was, before a crash) recording it,
    else the final file."""
    if journal_path(path).exists():
        return read_journal(path)[0]
    return read_final(path)[0]


def drop_empty_journal(path: Path) -> None:
    """Remove a journal that holds no whole line: a kill between creating it and writing its
    header leaves one, and it records nothing (a job resumes as if it were absent)."""
    journal = journal_path(Path(path))
    try:
        if b"\n" in read_regular(journal, (1 << 16) - 1):
            return
    except OSError:
        return
    if journal.stat().st_size < 1 << 16:
        journal.unlink(missing_ok=True)


def cassette_exists(path: Path) -> bool:
    return Path(path).exists() or journal_path(Path(path)).exists()


class Journal:
    """Appends record lines to a cassette's journal and makes them durable."""

    def __init__(self, path: Path) -> None:
        self.path = journal_path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "ab")

    def append(self, records: list[dict[str, Any]], lines: Sequence[Line] | None = None) -> None:
        if not records:
            return
        self._handle.write(lines_bytes(lines or [record_line(r) for r in records]))
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.close()


def write_final(path: Path, lines: Sequence[str]) -> None:
    write_final_bytes(path, FinalGzip(lines).bytes())


def write_final_bytes(path: Path, data: bytes) -> None:
    """Write the compressed, byte-stable cassette atomically: temp file, fsync, rename, then fsync
    the folder."""
    _write_atomically(path, lambda raw: raw.write(data))


def copy_final(source: Path, path: Path) -> None:
    """Copy a cassette file to ``path`` as :func:`write_final_bytes` writes one: a process killed
    meanwhile leaves no part of it under that name."""
    with open(source, "rb") as read:
        _write_atomically(path, lambda raw: shutil.copyfileobj(read, raw, 1 << 20))


def _write_atomically(path: Path, write: Callable[[BinaryIO], object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as raw:
        write(raw)
        raw.flush()
        os.fsync(raw.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_records(path: Path, records: list[dict[str, Any]]) -> None:
    """Write records as a final cassette of their header's format (format 2 for format 1),
    signing each afresh (checksums, a format-3 call's request hash, chain hash).

    For tools and tests that build or edit cassettes on purpose: an edit written this way passes
    the file's own checks, so only the replay's comparison of rows can catch it.
    """
    lines: list[str] = []
    chain = ""
    version = FORMAT_VERSION
    for record in records:
        body = {k: v for k, v in record.items() if k != "checksum"}
        if body.get("type") == "header":
            version = body["format"] = max(2, int(body.get("format") or FORMAT_VERSION))
        if body.get("type") == "call" and version >= 3:
            body["request_hash"] = plain_content_hash(body["request"])
        if body.get("type") == "summary":
            body.update(records=len(lines), chain=chain)
        line = record_line(body)
        lines.append(line)
        chain = chain_update(chain, claimed_checksum(line))
    write_final(path, lines)
