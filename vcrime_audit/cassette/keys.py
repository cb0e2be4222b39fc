"""Cassette keys: blake2b of the canonical request plus the backend fingerprint."""

from __future__ import annotations

from typing import Any

from ..backends.base import GenerateRequest
from ..canonical import blake2b_hex_of, content_hash, plain_canonical_json


def cassette_key(request: GenerateRequest | dict[str, Any], fingerprint: dict[str, Any]) -> str:
    """``content_hash({"request": request, "fingerprint": fingerprint})``; for a request object
    the same bytes are put together from its cached canonical JSON (sorted keys: "fingerprint"
    comes first), and the key is made once per request and fingerprint."""
    if isinstance(request, GenerateRequest):
        fingerprint_json = plain_canonical_json(fingerprint)
        return request.keyed(fingerprint_json, lambda: blake2b_hex_of((
            f'{{"fingerprint":{fingerprint_json},"request":'.encode(),
            request.canonical_bytes(), b"}")))
    return content_hash({"request": request, "fingerprint": fingerprint})
