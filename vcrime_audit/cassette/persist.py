"""The cassette file: gzip-compressed JSON lines (header, calls, summary), byte-stable."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any

from ..canonical import canonical_json

FORMAT_VERSION = 1


class CassetteFileError(Exception):
    pass


def write_records(path: Path, records: list[dict[str, Any]]) -> None:
    """Write atomically (temp file + rename); gzip header carries no time, so bytes are stable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(canonical_json(r) + "\n" for r in records).encode("utf-8")
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                               compresslevel=9) as gz:
        gz.write(body)
    os.replace(tmp, path)


def read_records(path: Path) -> list[dict[str, Any]]:
    fix = "re-record it (vcrime-audit run --record-mode all) or restore it from git"
    try:
        data = gzip.decompress(path.read_bytes())
    except FileNotFoundError:
        raise CassetteFileError(f"{path}: no such cassette") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise CassetteFileError(f"{path}: not a readable gzip cassette ({exc}); fix: {fix}") from None
    records = []
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CassetteFileError(f"{path}: line {number}: invalid JSON ({exc.msg}); fix: {fix}") from None
        if not isinstance(record, dict) or "type" not in record:
            raise CassetteFileError(f"{path}: line {number}: field 'type' missing; fix: {fix}")
        records.append(record)
    if not records or records[0]["type"] != "header":
        raise CassetteFileError(f"{path}: line 1: expected the header record; fix: {fix}")
    version = records[0].get("format")
    if version != FORMAT_VERSION:
        raise CassetteFileError(f"{path}: header.format is {version!r}, this version reads "
                                f"{FORMAT_VERSION}; fix: {fix}")
    return records
