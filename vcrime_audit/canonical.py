"""The one canonical JSON used for hashing, cassettes and the store."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

_LEAVES = frozenset({str, int, float, bool, type(None)})
"""Exact types that pass through unchanged; checked first because ``isinstance`` against
BaseModel (an ABC metaclass) is slow, and canonical JSON visits millions of leaves in a study."""


def to_plain(obj: Any) -> Any:
    """Pydantic models become plain JSON data (by field name); other values pass through."""
    if type(obj) in _LEAVES:
        return obj
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, dict):
        return {str(k): v if type(v) in _LEAVES else to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [v if type(v) in _LEAVES else to_plain(v) for v in obj]
    return obj


def canonical_json(obj: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 text, floats in Python's shortest round-trip form."""
    return plain_canonical_json(to_plain(obj))


def plain_canonical_json(plain: Any) -> str:
    """:func:`canonical_json` of data that is already plain JSON data (no models to convert)."""
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def blake2b_hex(data: str | bytes, digest_size: int = 16) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.blake2b(data, digest_size=digest_size).hexdigest()


def content_hash(obj: Any, digest_size: int = 16) -> str:
    return blake2b_hex(canonical_json(obj), digest_size)


@lru_cache(maxsize=16)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_blake2b(path: Path | str) -> str:
    """blake2b of a file's bytes, cached per (path, size, mtime) so big weights hash once."""
    stat = Path(path).stat()
    return _file_digest(str(path), stat.st_size, stat.st_mtime_ns)
