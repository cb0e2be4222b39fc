"""A backend wrapper that answers from the cassette and records what it must ask the model."""

from __future__ import annotations

import json
from typing import Any

from ..backends.base import GenerateRequest, GenerateResult, ModelBackend
from .cassette import Cassette


def parse_json_or_none(text: str) -> Any:
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError:
        return None


class RecordingBackend:
    """Cassette first; the inner backend only on a miss, and only when recording is allowed.

    ``inner`` may be ``None`` (pure replay): then fingerprints come from the cassette.
    """

    name = "recording"

    def __init__(self, cassette: Cassette, inner: ModelBackend | None = None) -> None:
        self.cassette, self.inner = cassette, inner
        self.model_calls = 0
        self.replayed = 0

    def fingerprint(self, model: str) -> dict[str, Any]:
        if self.inner is not None:
            return self.inner.fingerprint(model)
        recorded = self.cassette.fingerprint_for(model)
        if recorded is None:
            raise self.cassette.miss_for_unknown_model(model)
        return recorded

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        fingerprint = self.fingerprint(request.model)
        hit = self.cassette.play(request, fingerprint)
        if hit is not None:
            self.replayed += 1
            return hit
        if not self.cassette.recording or self.inner is None:
            raise self.cassette.miss(request, fingerprint)
        result = await self.inner.generate(request)
        self.model_calls += 1
        self.cassette.append(request, fingerprint, result, parse_json_or_none(result.text))
        return result

    async def aclose(self) -> None:
        if self.inner is not None:
            await self.inner.aclose()
