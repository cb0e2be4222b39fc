"""The digest stored in `models.fingerprint`: which weights a registry name stands for."""

from __future__ import annotations

from typing import Any

from .canonical import content_hash


def weights_digest(backend: Any, model: str) -> str:
    """Digest of the backend's weights fingerprint for `model` (its `weights`, else the served
    models listing, else the whole fingerprint); '' when the backend cannot say."""
    from .backends.base import BackendError
    from .cassette import CassetteError

    try:
        fingerprint = backend.fingerprint(model)
    except (BackendError, CassetteError, OSError):
        return ""
    part = fingerprint.get("weights") or fingerprint.get("server_models") or fingerprint
    return content_hash(part)
