"""What every backend takes and returns, and the protocol they share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..canonical import (
    blake2b_hex_of,
    canonical_form_of_texts,
    plain_canonical_json,
    written_alike_shared_parts,
)
from ..errors import BackendError
from ..memo import made_once
from ..models import Sampling

Role = Literal["attacker", "judge", "world_manager", "annotator", "interrogated", "target",
               "certify_judge"]


_FUNCTION = type(lambda: None)
"""This module's function type, for ``GenerateRequest``'s ``ignored_types`` (as ``world._FUNCTION``)."""


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    role: Literal["system", "user", "assistant"]
    content: str


class GenerateRequest(BaseModel):
    """Everything that can change the answer. Its canonical JSON is half of the cassette key."""

    model_config = ConfigDict(extra="forbid", frozen=True, ignored_types=(made_once, _FUNCTION))
    role: Role
    call: str = Field(description="Which call of the role: plan, act, assess, phase names...")
    model: str = Field(description="Registry name of the model.")
    messages: list[Message]
    sampling: Sampling
    output_schema: dict[str, Any] | None = None
    attempt: int = Field(0, description="Retry number; retries are separate, recorded requests.")

    # The request is frozen, so what is made from it is kept in the instance's __dict__ (a
    # pydantic private attribute costs ~1 us per read, several times per call); pydantic's
    # equality, dumps and validation look at the fields only, and model_copy drops these.
    @made_once
    def _plain(self) -> dict[str, Any]:
        """``model_dump(mode="json")``, put together ~7 times faster: the output schema is
        already plain JSON data (agents/schema.py) and is shared, not copied."""
        return {"role": self.role, "call": self.call, "model": self.model,
                "messages": [{"role": m.role, "content": m.content} for m in self.messages],
                "sampling": self.sampling.model_dump(mode="json"),
                "output_schema": self.output_schema, "attempt": self.attempt}

    @made_once
    def _canonical_form(self) -> bytes | str:
        """The canonical JSON as orjson's bytes where it writes it, else as text."""
        plain = self._plain
        schema = plain["output_schema"]
        if schema is not None and not written_alike_shared_parts(schema):
            return plain_canonical_json(plain)
        return canonical_form_of_texts(plain, (plain["sampling"],))

    @made_once
    def _canonical(self) -> str:
        form = self._canonical_form
        return form if isinstance(form, str) else form.decode("utf-8")

    @made_once
    def _canonical_bytes(self) -> bytes:
        form = self._canonical_form
        return form if isinstance(form, bytes) else form.encode("utf-8")

    @made_once
    def _keys(self) -> dict[tuple[bool, str], str]:
        return {}

    @made_once
    def _digest(self) -> str:
        return blake2b_hex_of((self._canonical_bytes,))

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> GenerateRequest:
        copied = super().model_copy(update=update, deep=deep)
        for name in _MADE_ONCE:
            copied.__dict__.pop(name, None)
        return copied

    def plain(self) -> dict[str, Any]:
        """The request as plain JSON data, made once (the request is frozen); do not modify it."""
        return self._plain

    def canonical(self) -> str:
        """The request's canonical JSON, made once (the cassette key and the stored
        ``request_hash`` hash its bytes, :meth:`canonical_bytes`)."""
        return self._canonical

    def canonical_bytes(self) -> bytes:
        """:meth:`canonical` as UTF-8, made once: what the hashes read."""
        return self._canonical_bytes

    def digest(self) -> str:
        """blake2b of :meth:`canonical` (``calls.request_hash``, and a format-3 cassette's
        ``request_hash``), made once."""
        return self._digest

    def keyed(self, kind: tuple[bool, str], make: Callable[[], str]) -> str:
        """``make()``, made once per ``kind`` (a key's definition and fingerprint): a call's
        cassette key is looked up, then recorded under (``cassette.keys.cassette_key``)."""
        keys = self._keys
        key = keys.get(kind)
        if key is None:
            key = keys[kind] = make()
        return key


_MADE_ONCE = tuple(name for name, member in vars(GenerateRequest).items()
                   if isinstance(member, made_once))


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
