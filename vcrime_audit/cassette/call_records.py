"""What a call record read from a cassette must hold, and reading in full a record read without
its request (:class:`.lines.RequestUnread`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..backends.base import GenerateRequest
from .errors import CassetteError
from .keys import REQUEST_HASHED, cassette_key
from .lines import RequestUnread
from .persist import CassetteFileError, check_line, parse_record

CALL_FIELDS = ("key", "request", "fingerprint")


def check_call(where: Path, number: int, record: dict[str, Any], version: int) -> None:
    """A call record's fields (in a cassette of format ``version``); of a record read without its
    request, all but the request (checked once it is read, :func:`read_request`)."""
    unread = type(record) is RequestUnread
    missing = [k for k in CALL_FIELDS if k not in record and not (unread and k == "request")]
    if version >= REQUEST_HASHED and not isinstance(record.get("request_hash"), str):
        missing.append("request_hash")
    if "result" not in record and record.get("error") is None:
        missing.append("result")
    if missing:
        raise CassetteError(f"{where}: record {number}: call record lacks "
                            f"{', '.join(missing)}; fix: re-record the cassette")
    request = None if unread else record["request"]
    if not (unread or isinstance(request, dict)) or not isinstance(record["fingerprint"], dict):
        raise CassetteError(f"{where}: record {number}: request and fingerprint must be "
                            "objects; fix: re-record the cassette")
    if isinstance(request, dict) and not (isinstance(request.get("model"), str)
                                          and isinstance(request.get("role"), str)):
        raise CassetteError(f"{where}: record {number}: request.model/role missing; fix: "
                            "re-record the cassette")
    error = record.get("error")
    if error is not None and not (isinstance(error, dict) and isinstance(error.get("message"), str)):
        raise CassetteError(f"{where}: record {number}: error must be an object with a "
                            "message; fix: re-record the cassette")


def read_request(where: Path, record: RequestUnread, line: bytes, version: int) -> None:
    """Read ``record``'s line in full and give the record its request. The rest of the line
    must read as it did without the request: else the request was not cut out where the line's
    request member is, and the record may have been looked up under the wrong key. A format-3
    line is checked again as a whole (:func:`.persist.check_line`): its request written
    canonically where a line we write holds it, hashing to the line's ``request_hash``."""
    try:
        full = parse_record(where, record.number, line)
        check_call(where, record.number, full, version)
        if version >= REQUEST_HASHED:
            check_line(where, record.number, line, full, version)
    except CassetteFileError as exc:
        raise CassetteError(str(exc)) from None
    request = full.pop("request")
    if full != record:
        raise CassetteError(
            f"{where}: record {record.number}: its members read otherwise with its request "
            "member cut out (a member repeated or nested where a call line written by "
            "vcrime-audit has none); fix: re-record the cassette or restore it from git")
    record["request"], record.span = request, None


def check_keys(path: Path, calls: Iterable[dict[str, Any]]) -> None:
    """Each call's key against its request (format 1, whose lines carry no checksums)."""
    for record in calls:
        try:
            request = GenerateRequest.model_validate(record["request"])
        except ValueError as exc:
            raise CassetteError(f"{path}: a call record's request is malformed "
                                f"({str(exc).splitlines()[0]}); fix: re-record") from None
        if cassette_key(request, record["fingerprint"], 1) != record["key"]:
            raise CassetteError(f"{path}: a call record's key does not match its request "
                                "(edited by hand?); fix: re-record the cassette")
