"""A backend wrapper that answers from the cassette and records what it must ask the model."""

from __future__ import annotations

import json
from typing import Any

from ..backends.base import BackendError, GenerateRequest, GenerateResult, ModelBackend
from ..jsonparse import parse_json
from ..scrub import scrub_obj, scrub_text
from ..slices import take_turn
from .cassette import Cassette


def parse_json_or_none(text: str) -> Any:
    try:
        return parse_json(text, strict=False)
    except (json.JSONDecodeError, RecursionError):
        return None


class RecordingBackend:
    """Cassette first; the inner backend only on a miss, and only when recording is allowed.

    ``inner`` may be ``None`` (pure replay): then fingerprints come from the cassette. A call the
    backend fails (:class:`BackendError`) is recorded with its scrubbed message and raised with
    that same message, so the live run and its replay see the same error.
    """

    name = "recording"

    def __init__(self, cassette: Cassette, inner: ModelBackend | None = None) -> None:
        self.cassette, self.inner = cassette, inner
        self.model_calls = 0
        self.replayed = 0
        self._fingerprints: dict[str, dict[str, Any]] = {}

    def fingerprint(self, model: str) -> dict[str, Any]:
        known = self._fingerprints.get(model)
        if known is not None:
            return known
        if self.inner is not None:
            found = scrub_obj(self.inner.fingerprint(model))
        else:
            found = self.cassette.fingerprint_for(model)
            if found is None:
                raise self.cassette.miss_for_unknown_model(model)
        self._fingerprints[model] = found
        return found

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        fingerprint = self.fingerprint(request.model)
        hit = self.cassette.play(request, fingerprint)
        if hit is not None:
            self.replayed += 1
            return hit
        if not self.cassette.recording or self.inner is None:
            raise self.cassette.miss(request, fingerprint)
        self.model_calls += 1
        try:
            result = await self.inner.generate(request)
            await take_turn()
        except BackendError as exc:
            message = scrub_text(str(exc))
            self.cassette.append(request, fingerprint, None, None,
                                 error={"type": type(exc).__name__, "message": message})
            raise BackendError(message) from None
        self.cassette.append(request, fingerprint, result, parse_json_or_none(result.text))
        return result

    async def aclose(self) -> None:
        if self.inner is not None:
            await self.inner.aclose()
