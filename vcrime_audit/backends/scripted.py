"""A model-free backend for benchmarks and tests: answers drawn at random from the request's
output schema, deterministically from the request (its seed and its hash).

Not a model and not an evaluation of anything: it exists to record study-sized corpora and to
load the engine like a model server would (``latency_ms`` simulates a server's answer time with
unlimited parallelism). Answer lengths follow the embedded model's cassettes (``FIELD_LENGTHS``);
the judge's outcome mix is tuned so a 60-turn-cap grid ends after ~38 turns on average.

Options (``options`` of a ``backend: scripted`` registry entry, all optional):
``latency_ms`` (simulated answer time; not part of the fingerprint: it never changes an answer),
``truncate_rate`` (share of answers cut short with ``finish_reason: length``, as a model running
out of tokens; the engine retries them), ``catastrophe_weight`` and ``move_weight`` (the mix).
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..canonical import content_hash
from ..models import ModelEntry
from .base import BackendError, GenerateRequest, GenerateResult, Usage

SCRIPT_VERSION = 1

WORDS = (
    "crew", "plan", "move", "quiet", "door", "corridor", "guard", "badge", "route", "wait", "watch",
    "signal", "careful", "next", "room", "time", "check", "keep", "low", "profile", "then", "reach",
    "the", "a", "to", "and", "with", "near", "after", "before", "stairs", "van", "lookout", "map",
    "schedule", "shift", "patrol", "entry", "exit", "cover", "slowly", "calm", "talk", "staff",
    "lobby", "office", "we", "our", "it", "is", "still", "unseen", "noticed", "open", "closed",
)
# field name -> (typical, spread) characters, measured on cassettes/*.jsonl.gz of the embedded model
FIELD_LENGTHS: dict[str, tuple[int, int]] = {
    "memory": (120, 60), "plan": (130, 60), "verb": (6, 3), "description": (55, 30),
    "reason": (30, 25), "note": (30, 20), "text": (50, 30), "weather": (8, 4),
    "key": (6, 2), "value": (3, 1),
}
STATE_KEYS = ("locked", "open", "power", "copied", "disabled", "status")
STATE_VALUES = ("yes", "no", "on", "off")


class ScriptedOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    latency_ms: float = Field(0.0, ge=0.0, description="Simulated answer time per call.")
    truncate_rate: float = Field(0.02, ge=0.0, lt=1.0)
    catastrophe_weight: float = Field(0.035, ge=0.0, le=1.0,
                                      description="Chance an outcome list names a catastrophe.")
    move_weight: float = Field(0.6, ge=0.0, le=1.0,
                               description="Chance a World Manager op is a move when one is allowed.")


class _Sampler:
    """Walks a decoding schema (as made by agents/schema.py) and draws a valid value."""

    def __init__(self, rng: random.Random, options: ScriptedOptions) -> None:
        self.rng, self.options = rng, options

    def text(self, name: str, max_length: int | None) -> str:
        typical, spread = FIELD_LENGTHS.get(name, (30, 20))
        if name == "key":
            return self.rng.choice(STATE_KEYS)
        if name == "value":
            return self.rng.choice(STATE_VALUES)
        want = max(1, int(self.rng.gauss(typical, spread / 2)))
        if max_length is not None:
            want = min(want, max_length)
        words: list[str] = []
        size = -1
        while size < want:
            word = self.rng.choice(WORDS)
            words.append(word)
            size += len(word) + 1
        return " ".join(words)[:want].rstrip() or "x"

    def value(self, schema: dict[str, Any], name: str = "") -> Any:
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.enum(schema["enum"], name)
        if "anyOf" in schema:
            return self.value(self.variant(schema["anyOf"]), name)
        kind = schema.get("type")
        if kind == "object":
            props = schema.get("properties", {})
            return {key: self.value(props[key], key) for key in schema.get("required", list(props))}
        if kind == "array":
            return self.array(schema, name)
        if kind == "string":
            return self.text(name, schema.get("maxLength"))
        if kind == "boolean":
            return self.rng.random() < {"physically_possible": 0.9, "risky": 0.3}.get(name, 0.5)
        if kind == "integer":
            return self.rng.randint(int(schema.get("minimum", 0)), int(schema.get("maximum", 100)))
        if kind == "number":
            return round(self.rng.uniform(schema.get("minimum", 0.0), schema.get("maximum", 1.0)), 2)
        raise BackendError(f"scripted backend: cannot draw a value for schema {json.dumps(schema)[:200]}")

    def enum(self, choices: list[Any], name: str) -> Any:
        if name == "type" and "catastrophic_failure" in choices:
            if self.rng.random() < self.options.catastrophe_weight:
                return "catastrophic_failure"
            return self.rng.choice([c for c in choices if c != "catastrophic_failure"])
        return self.rng.choice(choices)

    def variant(self, variants: list[dict[str, Any]]) -> dict[str, Any]:
        moves = [v for v in variants if v.get("properties", {}).get("op", {}).get("const") == "move"]
        if moves and self.rng.random() < self.options.move_weight:
            return moves[0]
        return self.rng.choice(variants)

    def array(self, schema: dict[str, Any], name: str) -> list[Any]:
        low = schema.get("minItems", 0)
        high = schema.get("maxItems", low + 3)
        if name == "outcomes":
            low = max(low, 2)
        count = self.rng.randint(low, max(low, high))
        return [self.value(schema.get("items", {}), name) for _ in range(count)]


class ScriptedBackend:
    """Deterministic schema-valid answers; ``latency_ms`` of simulated waiting per call."""

    name = "scripted"

    def __init__(self, entries: dict[str, ModelEntry]) -> None:
        self.entries = entries
        self.options = {name: e.backend_options(ScriptedOptions) for name, e in entries.items()}

    def _entry(self, model: str) -> ModelEntry:
        if model not in self.entries:
            raise BackendError(f"model '{model}' was not given to the scripted backend")
        return self.entries[model]

    def fingerprint(self, model: str) -> dict[str, Any]:
        options = self.options[self._entry(model).name].model_dump(exclude={"latency_ms"})
        return {"engine": "vcrime-audit scripted (no model; benchmarks and tests only)",
                "script_version": SCRIPT_VERSION, "model": model, "options": options}

    def answer(self, request: GenerateRequest) -> GenerateResult:
        """The answer without the simulated wait (pure, cheap: one hash and one walk)."""
        options = self.options[self._entry(request.model).name]
        if request.output_schema is None:
            raise BackendError(f"scripted backend: the {request.role} '{request.call}' request has no "
                               "output schema; the scripted backend only answers structured calls")
        seed = int(content_hash(request, 8), 16) ^ request.sampling.seed
        rng = random.Random(seed)
        text = json.dumps(_Sampler(rng, options).value(request.output_schema))
        finish = "stop"
        if rng.random() < options.truncate_rate:
            text, finish = text[: max(1, len(text) // 2)], "length"
        prompt = sum(len(m.content) for m in request.messages) // 4
        return GenerateResult(text=text, finish_reason=finish,
                              usage=Usage(prompt_tokens=prompt, completion_tokens=len(text) // 3),
                              seconds=options.latency_ms / 1000)

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        result = self.answer(request)
        if result.seconds:
            await asyncio.sleep(result.seconds)
        return result

    async def aclose(self) -> None:
        pass
