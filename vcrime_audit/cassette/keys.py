"""Cassette keys: blake2b of the canonical request plus the backend fingerprint."""

from __future__ import annotations

from typing import Any

from ..backends.base import GenerateRequest
from ..canonical import content_hash


def cassette_key(request: GenerateRequest | dict[str, Any], fingerprint: dict[str, Any]) -> str:
    return content_hash({"request": request, "fingerprint": fingerprint})
