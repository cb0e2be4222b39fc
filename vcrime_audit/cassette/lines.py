"""Cassette record lines: each is the record's canonical JSON, begun by its own checksum, and the
summary's chain hash is made of those checksums (the format: :mod:`vcrime_audit.cassette.persist`)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ..canonical import canonical_json, plain_canonical_bytes
from ..jsonparse import parse_json

CHECKSUM_PREFIX = '{"checksum":"'
CHECKSUM_HEX = 32


def checksummed(record: dict[str, Any], known: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The record's checksum and the record as one canonical line that starts with it. The
    checksum is the blake2b of the record's canonical JSON without ``checksum``; of a format-3
    call record (one with a ``request_hash``), without its ``request`` too, which that hash
    covers (:func:`request_apart`). ``known``: the canonical JSON of some of its values, already
    made (a call's request): the object's canonical JSON is its members' in key order, so those
    are not written again (``tests/cassette/test_persist.py`` checks the bytes against
    :func:`canonical_json` of the whole)."""
    apart = request_apart(record)
    if known or apart:
        names = sorted(k for k in record if k != "checksum")
        members = [f"{canonical_json(k)}:{known[k] if known and k in known else canonical_json(record[k])}"
                   for k in names]
        text = "{" + ",".join(members) + "}"
        checked = "{" + ",".join(m for k, m in zip(names, members, strict=True) if k != "request") + "}" \
            if apart else text
    else:
        checked = text = canonical_json({k: v for k, v in record.items() if k != "checksum"})
    digest = hashlib.blake2b(checked.encode("utf-8"), digest_size=16).hexdigest()
    line = f'{CHECKSUM_PREFIX}{digest}",' + text[1:] if text != "{}" else f'{CHECKSUM_PREFIX}{digest}"}}'
    return digest, line


def request_apart(record: Mapping[str, Any]) -> bool:
    """Whether the record is a format-3 call record: its checksum leaves out its request, whose
    blake2b its ``request_hash`` member holds (the hash the store's ``calls.request_hash`` is)."""
    return record.get("type") == "call" and "request_hash" in record and "request" in record


def record_checksum(record: dict[str, Any]) -> str:
    return checksummed(record)[0]


def record_line(record: dict[str, Any]) -> str:
    """The record as one canonical line that starts with its checksum."""
    return checksummed(record)[1]


_CHECKSUM_PREFIX_BYTES = CHECKSUM_PREFIX.encode()
_CHECKSUM_END = len(CHECKSUM_PREFIX) + CHECKSUM_HEX

Line = str | bytes
"""A record line: text made here (:func:`record_line`), or UTF-8 bytes as read from a file."""


def split_lines(data: bytes) -> list[bytes]:
    """``data.split(b"\n")``, each newline found by ``memchr`` (``bytes.find``): CPython's split
    compares byte by byte: ~1.2 ms of a c960 cassette's 3.5 MB against ~0.3 ms, most of it the
    copies both make (``bytes_split`` was 1.6 % of nine verified replays' instructions, imports
    included, by cachegrind)."""
    lines, at, find = [], 0, data.find
    while (end := find(b"\n", at)) >= 0:
        lines.append(data[at:end])
        at = end + 1
    lines.append(data[at:])
    return lines


def line_bytes(line: Line) -> bytes:
    return line if isinstance(line, bytes) else line.encode("utf-8")


def claimed_checksum(line: Line) -> str:
    """The checksum a line we wrote begins with ("" if none), without hashing it again: what
    the summary's chain hash is made of."""
    if isinstance(line, bytes):
        return line[len(CHECKSUM_PREFIX):_CHECKSUM_END].decode("utf-8", "replace") \
            if line.startswith(_CHECKSUM_PREFIX_BYTES) else ""
    return line[len(CHECKSUM_PREFIX):_CHECKSUM_END] if line.startswith(CHECKSUM_PREFIX) else ""


def line_checksum(line: bytes, cut: tuple[int, int] | None = None) -> tuple[str | None, bool]:
    """The checksum a line (UTF-8 bytes) claims, and whether the rest of the line matches it;
    with ``cut``, the rest but the bytes ``line[start:end]`` (a format-3 call line's request
    member)."""
    claimed = claimed_checksum(line)
    if not claimed:
        return None, False
    body = hashlib.blake2b(b"{", digest_size=16)
    if line[_CHECKSUM_END:_CHECKSUM_END + 2] != b'",':
        body.update(b"}")
    elif cut is None:
        body.update(memoryview(line)[_CHECKSUM_END + 2:])
    else:
        view = memoryview(line)
        body.update(view[_CHECKSUM_END + 2:cut[0]])
        body.update(view[cut[1]:])
    return claimed, body.hexdigest() == claimed


def request_cut(line: bytes, record: Mapping[str, Any]) -> tuple[tuple[int, int], bytes] | None:
    """Where a format-3 call line read in full holds its request member, written as the request's
    canonical JSON where :func:`gives_request` looks for it, with those canonical bytes; None
    for a line that does not (not written by vcrime-audit, or edited)."""
    try:
        request = plain_canonical_bytes(record["request"])
    except (KeyError, ValueError, TypeError, RecursionError):  # UnicodeEncodeError too
        return None
    if not gives_request(line, record, request):
        return None
    end = len(line) - len(_call_tail(record) or b"")
    return (end - len(request) - len(_REQUEST_MEMBER), end), request


def chain_update(chain: str, checksum: str) -> str:
    return hashlib.blake2b((chain + checksum).encode("ascii"), digest_size=16).hexdigest()


_REQUEST_MEMBER = b',"request":'
_REQUEST_HASH_MEMBER = b',"request_hash":'
_RESULT_MEMBER = b',"result":'
_CALL_END = b',"type":"call"}'


def gives_request(line: bytes, record: Mapping[str, Any], request: bytes) -> bool:
    """Whether ``line``, a valid JSON object that was read as ``record``, gives the canonical
    JSON ``request`` (both UTF-8) as the record's request, told without reading the line's
    request: it ends with ``,"request":`` ``request``, the request hash's and the result's
    canonical JSON as their members (each where the record has it), and ``,"type":"call"}``, as
    every call line we write does. False says nothing (compare values).

    Why a true answer is exact, whoever wrote the line: the comma before ``"request"`` cannot be
    inside a string (the quote after it would end the string, and ``r`` cannot follow a string).
    So ``"request"`` is a key, and the members after it are complete JSON values (canonical JSON,
    ours), up to the line's last ``}``, which closes the top-level object: ``request`` is the value
    of the object's last ``"request"`` key, the one a JSON reader keeps. ``record`` is what a JSON
    reader made of the line, plain JSON data, so its result's canonical bytes need no conversion
    from models first."""
    tail = _call_tail(record)
    if tail is None:
        return False
    start = len(line) - len(tail) - len(request)
    return (start > len(_REQUEST_MEMBER) and line.endswith(tail) and line.startswith(request, start)
            and line.startswith(_REQUEST_MEMBER, start - len(_REQUEST_MEMBER)))


class RequestUnread(dict):  # type: ignore[type-arg]
    """A call record read without its request member (:func:`read_without_request`), which
    ``span`` locates in line ``number``: a replay compares its own request's bytes with it first
    (:func:`gives_request_at`), and reads the whole line only when they differ. Once the record
    has its request (proven, or read), ``span`` is None."""

    __slots__ = ("span", "number")

    def __init__(self, members: dict[str, Any], span: tuple[int, int], number: int) -> None:
        super().__init__(members)
        self.span: tuple[int, int] | None = span
        self.number = number


def read_without_request(line: bytes, number: int, request_hashed: bool = False) -> RequestUnread | None:
    """A call line's members but its request, read from the line with the request member cut
    out: from the first ``,"request":`` (else the last) up to the last ``,"result":`` (or to the
    line's end ``,"type":"call"}`` in a record of a failed call); in a format-3 line
    (``request_hashed``), up to the last ``,"request_hash":``, the member that follows the
    request. None where neither cut reads as an object of type ``call`` without a ``request``
    (read the whole line). The first is found in the few hundred bytes before the request; the
    last, searched for backwards through the request, is there for a line whose parsed answer
    holds a ``"request"`` key.

    What is cut out is not read here, so nothing yet says it is one JSON value, nor that the cut
    was where the line's request member is: :func:`gives_request_at` proves both for a request
    its bytes equal, and a record read in full later must equal this one but its request."""
    if not line.endswith(_CALL_END):
        return None
    end = line.rfind(_REQUEST_HASH_MEMBER) if request_hashed else line.rfind(_RESULT_MEMBER)
    if end < 0 and request_hashed:
        return None
    if end < 0:
        end = len(line) - len(_CALL_END)
    start = line.find(_REQUEST_MEMBER, 0, end)
    if start < 0:
        return None
    read = _read_cut(line, start, end, number)
    last = line.rfind(_REQUEST_MEMBER, 0, end) if read is None else start
    return read if last == start else _read_cut(line, last, end, number)


def _read_cut(line: bytes, start: int, end: int, number: int) -> RequestUnread | None:
    try:
        members = parse_json(line[:start] + line[end:])
    except (ValueError, TypeError, RecursionError):  # UnicodeDecodeError and JSONDecodeError too
        return None
    if type(members) is not dict or "request" in members or members.get("type") != "call":
        return None
    return RequestUnread(members, (start, end), number)


def gives_request_at(line: bytes, record: RequestUnread, request: bytes) -> bool:
    """Whether ``line`` gives the canonical JSON ``request`` as its request, and ``record``
    (:func:`read_without_request`) as all its other members. False says nothing (read the line).

    True needs the line to be ``A`` ``,"request":`` ``request`` ``T``, where ``A T`` is what
    ``record`` was read from and ``T`` is ``record``'s ``,"request_hash":`` (format 3) and
    ``,"result":`` members (a failed call has no result) with their values as canonical JSON,
    then ``,"type":"call"}``. Why that is exact, whoever wrote the line: in ``A T``, a valid
    JSON object, the comma that begins ``T`` cannot be inside a string (the quote after it would
    end the string, and ``r`` or ``t`` cannot follow one), and what follows it, complete JSON
    values (canonical JSON) and keys, closes an object at the line's end: so it separates two
    members of the top-level object, and ``A`` ends just after a complete member of it.
    ``request`` is one complete JSON value (ours), so ``A ,"request": request T`` is a valid
    object too: ``A T``'s members with one more, ``"request"`` (``A T`` holds no other
    ``"request"`` key, or ``record`` would)."""
    if record.span is None:
        return False
    start, end = record.span
    if (end - start != len(_REQUEST_MEMBER) + len(request)
            or not line.startswith(request, start + len(_REQUEST_MEMBER))):
        return False
    tail = _call_tail(record)
    return tail is not None and len(line) - end == len(tail) and line.endswith(tail)


def _call_tail(record: Mapping[str, Any]) -> bytes | None:
    """How a call line we write ends after its request: its request hash (format 3), its result
    member (if any) and its type; None for values canonical JSON refuses (not ours)."""
    try:
        hashed = _REQUEST_HASH_MEMBER + _word_json(record["request_hash"]) \
            if "request_hash" in record else b""
        if "result" not in record:
            return hashed + _CALL_END
        return hashed + _RESULT_MEMBER + plain_canonical_bytes(record["result"]) + _CALL_END
    except (ValueError, TypeError, RecursionError):
        return None


def _word_json(value: Any) -> bytes:
    """:func:`plain_canonical_bytes` of ``value``, written at once for a text of ASCII letters and
    digits (a hash: nothing to escape)."""
    if type(value) is str and value.isascii() and value.isalnum():
        return b'"' + value.encode("ascii") + b'"'
    return plain_canonical_bytes(value)
