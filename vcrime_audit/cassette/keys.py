"""Cassette keys: blake2b of the backend fingerprint with the canonical request (format 2) or with
the request's hash (format 3, which hashes each request once: :mod:`.persist`)."""

from __future__ import annotations

from typing import Any

from ..backends.base import GenerateRequest
from ..canonical import blake2b_hex, blake2b_hex_of, content_hash, plain_canonical_json
from ..memo import IdentityMemo

REQUEST_HASHED = 3
"""The first format whose keys and checksums take a call's request through its hash."""
_FINGERPRINT_JSON: IdentityMemo[str] = IdentityMemo(16)
"""A fingerprint's canonical JSON, per fingerprint object: a replay's or a recording's backend
hands every call of a model the one object it keeps for it (``RecordingBackend.fingerprint``),
and nothing changes a fingerprint once made. Made per call, it was ~1 % of a replay (py-spy)."""


def cassette_key(request: GenerateRequest | dict[str, Any], fingerprint: dict[str, Any],
                 version: int) -> str:
    """The key of a call in a cassette of format ``version``: ``content_hash({"fingerprint":
    fingerprint, "request_hash": content_hash(request)})`` from format 3 on, else
    ``content_hash({"request": request, "fingerprint": fingerprint})``. For a request object the
    same bytes are put together from its cached canonical JSON and hash (sorted keys:
    "fingerprint" comes first), and the key is made once per request, fingerprint and
    definition."""
    hashed = version >= REQUEST_HASHED
    if isinstance(request, GenerateRequest):
        fingerprint_json = _FINGERPRINT_JSON.of(fingerprint, plain_canonical_json)
        if hashed:
            return request.keyed((hashed, fingerprint_json), lambda: blake2b_hex(
                f'{{"fingerprint":{fingerprint_json},"request_hash":"{request.digest()}"}}'))
        return request.keyed((hashed, fingerprint_json), lambda: blake2b_hex_of((
            f'{{"fingerprint":{fingerprint_json},"request":'.encode(),
            request.canonical_bytes(), b"}")))
    if hashed:
        return content_hash({"fingerprint": fingerprint, "request_hash": content_hash(request)})
    return content_hash({"request": request, "fingerprint": fingerprint})
