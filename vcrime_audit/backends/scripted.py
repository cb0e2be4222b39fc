"""A model-free backend for benchmarks and tests: answers drawn at random from the request's
output schema, deterministically from the request (its seed and its hash).

Not a model and not an evaluation of anything: it exists to record study-sized corpora and to
load the engine like a model server would (``latency_ms`` simulates a server's answer time with
unlimited parallelism). Answer lengths follow the embedded model's cassettes (``FIELD_LENGTHS``).
Episodes end by the normal rules: crews reach the places their open checkpoints name, rare draws
(``catastrophe_weight``, ``hazard``) lose runs, and runs without progress stall. With the defaults
a 60-turn-cap, 30-turn-stall grid averages ~27 turns per run (20 runs measured; the paper-size
study the issue describes averages ~38): most runs meet their first checkpoints, few their last.

Options (``options`` of a ``backend: scripted`` registry entry, all optional; see
``ScriptedOptions``): ``latency_ms`` (simulated answer time; not part of the fingerprint: it never
changes an answer), ``truncate_rate`` (answers cut short with ``finish_reason: length``, as a model
running out of tokens; the engine retries them), ``catastrophe_weight``, ``hazard``,
``move_weight`` and ``aim`` (the mix).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..canonical import blake2b_hex
from ..models import ModelEntry
from .base import BackendError, GenerateRequest, GenerateResult, Message, Usage

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
    "reason": (30, 25), "note": (50, 25), "text": (60, 30), "weather": (8, 4),
    "key": (6, 2), "value": (3, 1),
}
# enum field -> values that end runs; drawn with probability catastrophe_weight / hazard
RARE: dict[str, tuple[Any, ...]] = {
    "type": ("catastrophic_failure",), "level": (3,), "status": ("arrested", "dead"),
}
STATE_KEYS = ("locked", "open", "power", "copied", "disabled", "status")
STATE_VALUES = ("yes", "no", "on", "off")


class ScriptedOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    latency_ms: float = Field(0.0, ge=0.0, description="Simulated answer time per call.")
    truncate_rate: float = Field(0.02, ge=0.0, lt=1.0)
    catastrophe_weight: float = Field(0.006, ge=0.0, le=1.0,
                                      description="Chance a judged outcome is a catastrophe.")
    hazard: float = Field(0.002, ge=0.0, le=1.0, description="Chance a World Manager op sets the alarm "
                          "to its top level, arrests or kills someone, or meets a judged flag.")
    move_weight: float = Field(0.6, ge=0.0, le=1.0,
                               description="Chance a World Manager op is a move when one is allowed.")
    aim: float = Field(0.95, ge=0.0, le=1.0, description="Chance a move or take follows the world "
                       "view (crew as movers, an exit as destination, a taker next to the thing).")


_EXITS = re.compile(r"^- ([a-z][a-z0-9_]*)(?: \([^)\n]*\))?(?: \[[^\]\n]*\])?: exits ([a-z0-9_, ]*)(?:;|$)",
                    re.M)
_AT = re.compile(r"^- ([a-z][a-z0-9_]*) \(.*?\) at ([a-z][a-z0-9_]*)[,:]", re.M)
_NAME = re.compile(r"^- ([a-z][a-z0-9_]*) \(([^,;)\n]*)", re.M)
_OPEN_CHECKPOINT = re.compile(r"^- [a-z][a-z0-9_]* \[not met\] (.*)$", re.M)


_LITERAL = {_EXITS: ": exits ", _AT: ") at ", _NAME: " (", _OPEN_CHECKPOINT: " [not met] "}


def _items(text: str) -> list[str]:
    """The lines of ``text`` that start with "- ", the only ones the patterns above can match:
    matching them line by line finds what ``findall`` over the text finds, ~4 times faster
    (the patterns match within one line; ``tests/backends/test_scripted.py`` compares both)."""
    return [line for line in text.split("\n") if line.startswith("- ")]


def _found(pattern: re.Pattern[str], items: list[str]) -> list[tuple[str, ...]]:
    """The groups of every item ``pattern`` matches; items without its literal part (which
    every match contains) are not tried."""
    needle = _LITERAL[pattern]
    return [m.groups() for m in (pattern.match(i) for i in items if needle in i) if m is not None]


@dataclass
class Hints:
    """What a player would read off the world view in the prompt (agents/render.full_view):
    exits, where people and things are, who is crew, and the ids and words that the checkpoints
    not yet met mention. Empty when the prompt has no world view."""

    exits: dict[str, list[str]] = field(default_factory=dict)
    position: dict[str, str] = field(default_factory=dict)
    crew: set[str] = field(default_factory=set)
    goals: set[str] = field(default_factory=set)
    words: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, messages: list[Message]) -> Hints:
        text = messages[-1].content if messages else ""
        items = _items(text)
        hints = cls({loc: [e.strip() for e in exits.split(",") if e.strip()]
                     for loc, exits in _found(_EXITS, items)}, dict(_found(_AT, items)))
        if "Crew members:" in text:
            crew = text.split("Crew members:", 1)[1].split("\n\n", 1)[0]
            hints.crew = {who for who, _ in _found(_AT, _items(crew))}
        wanted = " ".join(m[0] for m in _found(_OPEN_CHECKPOINT, items)).lower()
        hints.words = set(re.findall(r"[a-z]+", wanted))
        names = {i: n.lower() for i, n in _found(_NAME, items)}
        hints.goals = {i for i in [*hints.exits, *hints.position]
                       if i.replace("_", " ") in wanted or (names.get(i) or "\0") in wanted}
        return hints

    def goal_places(self) -> set[str]:
        """Locations a checkpoint names, and where the things and people it names are."""
        places = self.goals & set(self.exits)
        places |= {self.position[g] for g in self.goals if g in self.position and g not in self.crew}
        return places

    def step_towards_goal(self, here: str, exits: list[str]) -> list[str]:
        """The exits on a shortest path from ``here`` to the nearest goal location (none if none)."""
        targets = self.goal_places()
        if not targets or here in targets:
            return []
        first: dict[str, str] = {e: e for e in exits}
        frontier = list(exits)
        while frontier:
            hits = sorted({first[n] for n in frontier if n in targets})
            if hits:
                return hits
            following = []
            for node in frontier:
                for nxt in self.exits.get(node, ()):
                    if nxt not in first and nxt != here:
                        first[nxt] = first[node]
                        following.append(nxt)
            frontier = following
        return []


class _Sampler:
    """Walks a decoding schema (as made by agents/schema.py) and draws a valid value; moves and
    takes lean on the world view (``Hints``) the way a player would, so crews make progress."""

    def __init__(self, rng: random.Random, options: ScriptedOptions, hints: Hints) -> None:
        self.rng, self.options, self.hints = rng, options, hints
        self.partial: dict[str, Any] = {}

    def text(self, name: str, max_length: int | None) -> str:
        preferred = self.preferred([], name)
        if preferred and self.rng.random() < self.options.aim:
            return self.rng.choice(preferred)
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
            outer, out = self.partial, {}
            for key in schema.get("required", list(props)):
                self.partial = out
                out[key] = self.value(props[key], key)
            self.partial = outer
            return out
        if kind == "array":
            return self.array(schema, name)
        if kind == "string":
            return self.text(name, schema.get("maxLength"))
        if kind == "boolean":
            chance = {"physically_possible": 0.9, "risky": 0.3, "met": self.options.hazard}.get(name, 0.5)
            return self.rng.random() < chance
        if kind == "integer":
            return self.rng.randint(int(schema.get("minimum", 0)), int(schema.get("maximum", 100)))
        if kind == "number":
            return round(self.rng.uniform(schema.get("minimum", 0.0), schema.get("maximum", 1.0)), 2)
        raise BackendError(f"scripted backend: cannot draw a value for schema {json.dumps(schema)[:200]}")

    def enum(self, choices: list[Any], name: str) -> Any:
        preferred = self.preferred(choices, name)
        if preferred and self.rng.random() < self.options.aim:
            return self.rng.choice(preferred)
        rare = RARE.get(name, ())
        if rare and any(c in rare for c in choices):
            chance = self.options.catastrophe_weight if name == "type" else self.options.hazard
            pick_rare = self.rng.random() < chance
            pool = [c for c in choices if (c in rare) == pick_rare]
            return self.rng.choice(pool or choices)
        return self.rng.choice(choices)

    def preferred(self, choices: list[Any], name: str) -> list[Any]:
        """Choices a player would favour: crew as movers, the exit towards a checkpoint's place
        (else any exit), things a checkpoint names, a taker standing next to the thing."""
        h, op = self.hints, self.partial.get("op")
        if op == "move" and name == "target":
            return [c for c in choices if c in h.crew]
        if op == "move" and name == "to":
            here = h.position.get(self.partial.get("target", ""), "")
            exits = [c for c in choices if c in h.exits.get(here, ())]
            return h.step_towards_goal(here, exits) or exits
        if op in ("take", "set_state") and name == "entity":
            return [c for c in choices if c in h.goals]
        if op == "take" and name == "by":
            where = h.position.get(self.partial.get("entity", ""))
            return [c for c in choices if c in h.crew and where and h.position.get(c) == where]
        if op == "set_state" and name == "key":
            return [k for k in STATE_KEYS if k in h.words] or sorted(w for w in h.words if len(w) > 4)
        if op == "set_state" and name == "value":
            return ["yes"] if self.partial.get("key") in h.words else []
        return []

    def variant(self, variants: list[dict[str, Any]]) -> dict[str, Any]:
        moves = [v for v in variants if v.get("properties", {}).get("op", {}).get("const") == "move"]
        if moves and self.rng.random() < self.options.move_weight:
            return moves[0]
        return self.rng.choice(variants)

    def array(self, schema: dict[str, Any], name: str) -> list[Any]:
        low = schema.get("minItems", 0)
        high = schema.get("maxItems", low + 3)
        if name in ("outcomes", "ops"):
            low = max(low, 2 if name == "outcomes" else 1)
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

    def latency_s(self, model: str) -> float:
        """The simulated answer time of ``model``'s calls."""
        return self.options[self._entry(model).name].latency_ms / 1000

    def answer(self, request: GenerateRequest) -> GenerateResult:
        """The answer without the simulated wait (pure, cheap: one hash and one walk)."""
        options = self.options[self._entry(request.model).name]
        if request.output_schema is None:
            raise BackendError(f"scripted backend: the {request.role} '{request.call}' request has no "
                               "output schema; the scripted backend only answers structured calls")
        seed = int(blake2b_hex(request.canonical(), 8), 16) ^ request.sampling.seed
        rng = random.Random(seed)
        sampler = _Sampler(rng, options, Hints.read(request.messages))
        text = json.dumps(sampler.value(request.output_schema))
        finish = "stop"
        if rng.random() < options.truncate_rate:
            text, finish = text[: max(1, len(text) // 2)], "length"
        prompt = sum(len(m.content) for m in request.messages) // 4
        return GenerateResult(text=text, finish_reason=finish,
                              usage=Usage(prompt_tokens=prompt, completion_tokens=len(text) // 3),
                              seconds=self.latency_s(request.model))

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        result = self.answer(request)
        if result.seconds:
            await asyncio.sleep(result.seconds)
        return result

    async def aclose(self) -> None:
        pass
