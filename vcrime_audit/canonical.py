"""The one canonical JSON used for hashing, cassettes and the store."""

from __future__ import annotations

import hashlib
import json
import math
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson
import pydantic_core
from pydantic import BaseModel

from .memo import IdentityMemo

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


def stdlib_canonical_json(plain: Any) -> str:
    """The definition of canonical JSON: the standard library's encoder with sorted keys."""
    return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


_ORJSON_OPTIONS = (orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS
                   | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS)
"""Dataclasses, dates and subclasses of str, int, dict and list go to ``_refuse``, and from there
to the standard library, which writes subclasses its own way and refuses the rest."""


def _small_float(text: bytes) -> bool:
    """Whether ``text`` may hold a float that orjson writes its own way: under 1e-4, ``0.00001``
    for Python's ``1e-05``, or ``3e-7`` for ``3e-07`` (a one-digit negative exponent). Found
    wherever it stands, in a string too."""
    if b"0.0000" in text:
        return True
    at = text.find(b"e-")  # a byte search: Python's regular expressions scan ~10 times slower
    while at != -1:
        if (0 < at and text[at - 1] in _DIGITS and text[at + 2:at + 3] in _ONE_DIGIT
                and text[at + 3:at + 4] not in _ONE_DIGIT):
            return True
        at = text.find(b"e-", at + 2)
    return False


_DIGITS = frozenset(b"0123456789")
_ONE_DIGIT = frozenset(bytes([d]) for d in b"0123456789")


def _refuse(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def _non_finite(plain: Any) -> bool:
    """Whether ``plain`` may hold NaN or an infinity (orjson writes them as ``null``): pydantic's
    encoder writes them as ``NaN`` and ``Infinity``, found wherever they stand, in a string too."""
    try:
        text = pydantic_core.to_json(plain, inf_nan_mode="constants")
    except Exception:  # noqa: BLE001 -- whatever it refuses goes the standard library's way
        return True
    return b"NaN" in text or b"Infinity" in text


_WALK_BYTES_PER_VALUE = 32
_WALK_VALUES = 16
"""Data that holds ``null`` and few values (a column of a row digest), or more bytes per value
than ``_WALK_BYTES_PER_VALUE`` (long texts: stored rows, worlds, requests), is checked value by
value (:func:`written_alike`, ~60 ns a value); other data with ``null`` byte by byte
(:func:`_small_float`, :func:`_non_finite`: ~2 ns a byte, and ~1 us to call pydantic's encoder).
Data without ``null`` needs only :func:`_small_float`."""


def written_alike(plain: Any) -> bool:
    """Whether orjson writes every value of ``plain`` as the standard library does: no float
    that is not finite or under 1e-4, and nothing but plain JSON data (a float subclass, say)."""
    stack = [plain]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is str or kind is int or kind is bool or value is None:
            continue
        if kind is dict:
            stack.extend(value.values())
        elif kind is list or kind is tuple:
            stack.extend(value)
        elif kind is not float or not math.isfinite(value) or 0.0 < abs(value) < 1e-4:
            return False
    return True


_SHARED_PARTS: IdentityMemo[bool] = IdentityMemo(16, per_run=True)


def written_alike_shared_parts(plain: dict[str, Any]) -> bool:
    """:func:`written_alike` of an object whose object and list values are shared and never
    changed once made, each walked once. An output schema is one: its parts are made once
    (``agents/schema.py``, ``world_manager.phase_schema``) and pydantic copies only the top
    object into each request; walking it every call took ~1.5 % of a replay's CPU."""
    for value in plain.values():
        kind = type(value)
        if kind is str or kind is bool or value is None:
            continue
        if kind is dict or kind is list:
            if not _SHARED_PARTS.of(value, written_alike):
                return False
        elif not written_alike(value):
            return False
    return True


def _orjson_canonical(plain: Any) -> bytes | None:
    """orjson's bytes where they are :func:`stdlib_canonical_json`'s, else None.

    orjson writes what the standard library writes (sorted keys by code point, no whitespace, no
    escaping but what JSON requires, shortest round-trip floats) except: floats under 1e-4
    (``0.00001`` and ``3e-7`` where Python writes ``1e-05`` and ``3e-07``), NaN and infinities
    (``null`` where the standard library raises), and what it refuses (integers beyond 64
    bits, lone surrogates, keys that are not strings, dataclasses, dates and subclasses). Each
    of those gets None, so the caller takes the standard library's path, which writes the
    defined text or raises as before. Bytes without ``null`` are checked for the shapes of a
    small float (:func:`_small_float`), found wherever they stand, in a string too: that costs
    time, never bytes. Where ``null`` stands (a None, or NaN written so), data of few values, or
    few for its length, is checked value by value (:func:`written_alike`); other data by its
    bytes and pydantic's encoder (:func:`_non_finite`).

    One difference is left: an ``Enum`` member or a ``UUID`` is written (as its value, as its
    text) where the standard library raises ``TypeError``; plain JSON data, what every caller
    passes (models go through :func:`to_plain` first), holds neither.
    """
    try:
        fast = orjson.dumps(plain, default=_refuse, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return None
    if b"null" not in fast:  # no None, nor a float orjson wrote as null
        return None if _small_float(fast) else fast
    values = fast.count(b",") + 1  # at least the values it holds, keys counted as values
    if values <= _WALK_VALUES or len(fast) > _WALK_BYTES_PER_VALUE * values:
        return fast if written_alike(plain) else None
    return None if _small_float(fast) or _non_finite(plain) else fast


def canonical_form_of_texts(plain: dict[str, Any], checked: tuple[Any, ...]) -> bytes | str:
    """:func:`plain_canonical_json` of ``plain``, whose values are text, integers, lists and
    objects of them, and the ``checked`` parts (any plain JSON data): only those are walked for
    values orjson writes its own way (a request: its sampling, not its ~15 KB of messages).
    Where orjson writes it, its UTF-8 bytes (what a hash reads: no text made and encoded again);
    else the standard library's text."""
    if all(written_alike(part) for part in checked):
        try:
            return orjson.dumps(plain, default=_refuse, option=_ORJSON_OPTIONS)
        except TypeError:  # a lone surrogate in a text: the standard library writes it escaped
            pass
    return plain_canonical_json(plain)


def plain_canonical_bytes(plain: Any) -> bytes:
    """UTF-8 bytes of :func:`plain_canonical_json` (what the hashes read)."""
    fast = _orjson_canonical(plain)
    return fast if fast is not None else stdlib_canonical_json(plain).encode("utf-8")


def plain_canonical_json(plain: Any) -> str:
    """:func:`canonical_json` of data that is already plain JSON data (no models to convert)."""
    fast = _orjson_canonical(plain)
    return fast.decode("utf-8") if fast is not None else stdlib_canonical_json(plain)


GIL_KEPT_BYTES = 2047
"""hashlib lets go of the interpreter lock to hash 2,048 bytes or more at once. The event loop
(on the main thread) hashes requests (~18 KB) and worlds several times a call, and getting the
lock back can wait for the store's writer thread (up to the 5 ms switch interval); fed in pieces
under that size, the hash keeps the lock (~1 us more for 18 KB). Other threads (the writer)
hash at once and let the loop run meanwhile, and so does a process with no other thread."""
_MAIN_THREAD_ID = threading.main_thread().ident
_STARTED_THREADS: dict[int, threading.Thread] | None = getattr(threading, "_active", None)
"""The threads started and not yet ended, by id: ``threading.active_count()`` counts them, and
those being started, under a lock (~0.2 us, several times a call); their number alone is read
here where this Python keeps it."""


def _lock_contended() -> bool:
    """Whether letting go of the interpreter lock to hash may cost the main thread: only on the
    main thread, with another Python thread alive to take the lock (a replay or ``verify``
    worker has none; fed whole, its 14 KB requests hash in ~17 against ~21 us). A thread still
    starting (for a moment in ``threading._limbo``) is not counted: this chooses how to hash,
    never what the hash is."""
    if threading.get_ident() != _MAIN_THREAD_ID:
        return False
    started = len(_STARTED_THREADS) if _STARTED_THREADS is not None else threading.active_count()
    return started > 1


def blake2b_hex(data: str | bytes, digest_size: int = 16) -> str:
    """blake2b of ``data`` (text as UTF-8); on the main thread beside other threads, without
    letting go of the interpreter lock."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if len(data) <= GIL_KEPT_BYTES or not _lock_contended():
        return hashlib.blake2b(data, digest_size=digest_size).hexdigest()
    return blake2b_hex_of((data,), digest_size)


def blake2b_hex_of(parts: tuple[bytes, ...], digest_size: int = 16) -> str:
    """blake2b of the parts one after the other (as of their concatenation, not made); on the
    main thread beside other threads, without letting go of the interpreter lock."""
    if not _lock_contended():
        digest = hashlib.blake2b(digest_size=digest_size)
        for part in parts:
            digest.update(part)
        return digest.hexdigest()
    digest = hashlib.blake2b(digest_size=digest_size)
    for part in parts:
        if len(part) <= GIL_KEPT_BYTES:
            digest.update(part)
            continue
        view = memoryview(part)
        for at in range(0, len(part), GIL_KEPT_BYTES):
            digest.update(view[at:at + GIL_KEPT_BYTES])
    return digest.hexdigest()


def content_hash(obj: Any, digest_size: int = 16) -> str:
    return blake2b_hex(plain_canonical_bytes(to_plain(obj)), digest_size)


def plain_content_hash(plain: Any, digest_size: int = 16) -> str:
    """:func:`content_hash` of data that is already plain JSON data, such as rows read from a
    store (:func:`to_plain` would copy every row and change nothing)."""
    return blake2b_hex(plain_canonical_bytes(plain), digest_size)


def rows_content_hash(rows: Any, digest_size: int = 16) -> str:
    """:func:`plain_content_hash` of rows read from a store: data of long texts (a run's rows hold
    each turn's world as canonical JSON), whose values :func:`written_alike` checks in less time
    than :func:`_orjson_canonical` takes to choose its check by counting the bytes' commas (of a
    1.1 MB run's rows: 0.8 against 1.5 ms, with ``b"null"`` looked for). Any data gives the
    definition's hash or its refusal."""
    try:
        fast = orjson.dumps(rows, default=_refuse, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        fast = None
    if fast is None or not written_alike(rows):
        fast = stdlib_canonical_json(rows).encode("utf-8")
    return blake2b_hex(fast, digest_size)


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
