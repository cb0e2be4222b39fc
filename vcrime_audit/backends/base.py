"""What every backend takes and returns, and the protocol they share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from ..canonical import blake2b_hex, plain_canonical_json
from ..errors import BackendError
from ..models import Sampling

Role = Literal["attacker", "judge", "world_manager", "annotator", "interrogated", "target",
               "certify_judge"]


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    role: Literal["system", "user", "assistant"]
    content: str


class GenerateRequest(BaseModel):
    """Everything that can change the answer. Its canonical JSON is half of the cassette key."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    role: Role
    call: str = Field(description="Which call of the role: plan, act, assess, phase names...")
    model: str = Field(description="Registry name of the model.")
    messages: list[Message]
    sampling: Sampling
    output_schema: dict[str, Any] | None = None
    attempt: int = Field(0, description="Retry number; retries are separate, recorded requests.")
    _plain: dict[str, Any] | None = PrivateAttr(default=None)
    _canonical: str | None = PrivateAttr(default=None)
    _keys: dict[str, str] = PrivateAttr(default_factory=dict)

    def plain(self) -> dict[str, Any]:
        """The request as plain JSON data, made once (the request is frozen); do not modify it."""
        if self._plain is None:
            self._plain = self.model_dump(mode="json")
        return self._plain

    def canonical(self) -> str:
        """The request's canonical JSON, made once: the cassette key and the stored
        ``request_hash`` both hash it."""
        if self._canonical is None:
            self._canonical = plain_canonical_json(self.plain())
        return self._canonical

    def digest(self) -> str:
        """blake2b of :meth:`canonical` (``calls.request_hash``)."""
        return blake2b_hex(self.canonical())

    def keyed(self, fingerprint_json: str, make: Callable[[], str]) -> str:
        """``make()``, made once per fingerprint: a call's cassette key is looked up, then
        recorded under (``cassette.keys.cassette_key``)."""
        key = self._keys.get(fingerprint_json)
        if key is None:
            key = self._keys[fingerprint_json] = make()
        return key


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt_tokens: int = 0
    completion_tokens: int = 0


class GenerateResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    finish_reason: Literal["stop", "length", "error"] = "stop"
    usage: Usage = Field(default_factory=Usage)
    seconds: float = 0.0


class ModelBackend(Protocol):
    name: str

    def fingerprint(self, model: str) -> dict[str, Any]:
        """Engine + version, weights hash, grammar backend: what makes answers differ."""
        ...

    async def generate(self, request: GenerateRequest) -> GenerateResult: ...

    async def aclose(self) -> None: ...


__all__ = ["BackendError", "GenerateRequest", "GenerateResult", "Message", "ModelBackend", "Role",
           "Sampling", "Usage"]
