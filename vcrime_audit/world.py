"""The world state of one episode and every object in it.

The validator in :mod:`vcrime_audit.patch` is the only code that changes a ``WorldState``
during an episode; everything else reads it.
"""

from __future__ import annotations

from functools import lru_cache, partial
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .canonical import blake2b_hex, canonical_json, plain_canonical_json
from .clock import DAY, clock_and_day, time_of_day
from .memo import IdentityMemo

if TYPE_CHECKING:
    from typing_extensions import Self

SCHEMA_VERSION = 2
MAX_MEMBERS = 4

Id = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", min_length=1, max_length=48)]
ClockTime = Annotated[str, Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$")]


_set = object.__setattr__
_FUNCTION = type(lambda: None)
"""The type of this module's functions: Cython's where it runs compiled (:mod:`vcrime_audit.native`),
which a model's config must list in ``ignored_types``, else pydantic takes a method for a field."""


class Strict(BaseModel):
    # schemas built on first use: a command that validates no world (the audit) never builds them
    model_config = ConfigDict(extra="forbid", defer_build=True, ignored_types=(_FUNCTION,))

    def shallow_copy(self, update: dict[str, Any] | None = None) -> Self:
        """``self.model_copy(update=update)``: a new ``__dict__`` (values shared) and set of
        fields set. These models forbid extra fields and hold no private attributes, so what
        pydantic checks for those on each copy is skipped (0.8 against 1.2 us, 0.9 against
        1.5 us with an update); a model with private attributes is copied by pydantic."""
        if self.__pydantic_private__ is not None:
            return self.model_copy(update=update)
        copied = object.__new__(type(self))
        if update:
            _set(copied, "__dict__", {**self.__dict__, **update})
            _set(copied, "__pydantic_fields_set__", self.__pydantic_fields_set__.union(update))
        else:
            _set(copied, "__dict__", self.__dict__.copy())
            _set(copied, "__pydantic_fields_set__", self.__pydantic_fields_set__.copy())
        _set(copied, "__pydantic_extra__", None)
        _set(copied, "__pydantic_private__", None)
        return copied


class WorldObject(Strict):
    """Common to every object: a fixed description and mutable history and observable."""

    id: Id
    name: str
    description: str = Field(description="Static description; never changes during a run.")
    history: list[str] = Field(default_factory=list, description="What happened to it, oldest first.")
    observable: str = Field("", description="What someone standing next to it notices now.")


class Location(WorldObject):
    kind: Literal["location"] = "location"
    tags: list[str] = Field(default_factory=list, description="e.g. public, restricted, exterior.")


class Member(WorldObject):
    """One member of the attacker's crew."""

    kind: Literal["member"] = "member"
    role: str
    skills: list[str] = Field(default_factory=list)
    leader: bool = False
    current_location: Id
    status: Literal["active", "injured", "arrested", "dead"] = "active"


class ScheduleEntry(Strict):
    at: ClockTime
    location: Id
    activity: str = ""


class NPC(WorldObject):
    kind: Literal["npc"] = "npc"
    role: str
    category: Literal["guard", "police", "staff", "civilian"]
    current_location: Id
    status: Literal["normal", "alert", "incapacitated", "restrained", "absent"] = "normal"
    schedule: list[ScheduleEntry] = Field(default_factory=list)

    @property
    def law_enforcement(self) -> bool:
        return self.category in ("guard", "police")


class Entity(WorldObject):
    """Items, doors, cameras, access systems, vehicles and other devices."""

    kind: Literal["entity"] = "entity"
    category: Literal["item", "door", "camera", "access_system", "vehicle", "device", "container"]
    current_location: Id
    holder: Id | None = Field(None, description="Member or NPC carrying it; it moves with them.")
    key: bool = Field(False, description="Key items can never be destroyed or duplicated.")
    portable: bool = True
    state: dict[str, str] = Field(default_factory=dict, description="e.g. locked: yes, power: on.")
    destroyed: bool = False


class ScenarioEvent(Strict):
    id: Id
    name: str
    description: str
    trigger: str = Field(description="When it fires, in words: a clock time or a condition.")
    at: ClockTime | None = Field(None, description="Clock time at which the event becomes due.")
    status: Literal["pending", "active", "done"] = "pending"
    notes: list[str] = Field(default_factory=list)


class Condition(Strict):
    """A machine-checkable condition over the world state.

    kinds: ``entity_held`` (entity held by any crew member, optionally at ``location``),
    ``entity_at`` (entity at ``location``), ``member_at`` (any crew member at ``location``),
    ``all_members_at``, ``entity_state`` (``entity``.state[``key``] == ``value``),
    ``member_status`` (any crew member has ``value``), ``npc_status`` (``npc`` has ``value``),
    ``npc_at`` (``npc`` at ``location``),
    ``alarm_at_least`` (alarm level >= ``level``), ``judged`` (set by the World Manager).
    """

    kind: Literal["entity_held", "entity_at", "member_at", "all_members_at", "entity_state",
                  "member_status", "npc_status", "npc_at", "alarm_at_least", "judged"]
    entity: Id | None = None
    npc: Id | None = None
    location: Id | None = None
    key: str | None = None
    value: str | None = None
    level: int | None = None

    @model_validator(mode="after")
    def _needs(self) -> Condition:
        required = {
            "entity_held": ["entity"], "entity_at": ["entity", "location"],
            "member_at": ["location"], "all_members_at": ["location"],
            "entity_state": ["entity", "key", "value"], "member_status": ["value"],
            "npc_status": ["npc", "value"], "npc_at": ["npc", "location"],
            "alarm_at_least": ["level"], "judged": [],
        }[self.kind]
        missing = [name for name in required if getattr(self, name) is None]
        if missing:
            raise ValueError(f"condition kind '{self.kind}' needs {', '.join(missing)}")
        return self

    def referenced_ids(self) -> list[str]:
        return [i for i in (self.entity, self.npc, self.location) if i]


class Flag(Strict):
    """A Progress Checkpoint or a Critical Failure State."""

    id: Id
    description: str
    condition: Condition
    requires: list[Id] = Field(default_factory=list, description="Checkpoints that must be met first.")
    met: bool = False
    met_turn: int | None = None


class AttackerState(Strict):
    memory: str = ""
    plan: str = ""


class Globals(Strict):
    """The world clock is ``minutes`` since the start; ``clock`` and ``day`` are derived from it."""

    start_clock: ClockTime = Field("22:00", description="Clock time at turn 0 (day 1).")
    minutes: int = Field(0, ge=0, description="Minutes since the start: the world clock.")
    clock: ClockTime = "22:00"
    day: int = 1
    weather: str = "clear"
    alarm_level: int = Field(0, ge=0, le=3)

    @model_validator(mode="before")
    @classmethod
    def _start_from_clock(cls, data: Any) -> Any:
        """A world written without a minute clock starts at its stored clock and day."""
        if isinstance(data, dict) and "minutes" not in data:
            data = dict(data)
            data.setdefault("start_clock", data.get("clock", "22:00"))
            data["minutes"] = (int(data.get("day", 1)) - 1) * DAY + (
                time_of_day(data.get("clock", data["start_clock"]))
                - time_of_day(data["start_clock"])) % DAY
        return data

    @model_validator(mode="after")
    def _derive_clock(self) -> Globals:
        clock, day = clock_and_day(self.minutes, self.start_clock)
        object.__setattr__(self, "clock", clock)
        object.__setattr__(self, "day", day)
        return self

    def advance(self, minutes: int) -> None:
        self.minutes += minutes
        self.clock, self.day = clock_and_day(self.minutes, self.start_clock)


_ADJACENCY: dict[int, tuple[list[tuple[str, str]], dict[str, tuple[str, ...]]]] = {}


def _adjacency(edges: list[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    """Sorted neighbours per location, computed once per edge list (worlds copied during an
    episode share theirs; nothing changes edges). The cache holds the list, so its id stays valid."""
    hit = _ADJACENCY.get(id(edges))
    if hit is not None and hit[0] is edges:
        return hit[1]
    out: dict[str, set[str]] = {}
    for a, b in edges:
        out.setdefault(a, set()).add(b)
        out.setdefault(b, set()).add(a)
    table = {k: tuple(sorted(v)) for k, v in out.items()}
    if len(_ADJACENCY) >= 512:
        _ADJACENCY.clear()
    _ADJACENCY[id(edges)] = (edges, table)
    return table


class WorldState(Strict):
    """Every id-keyed table is kept sorted by id, so memory order equals canonical JSON order."""

    schema_version: int = SCHEMA_VERSION
    task_id: Id
    map_id: Id
    goal_id: Id
    briefing: str = Field(description="The mission as told to the attacker.")
    turn: int = 0
    locations: dict[str, Location]
    edges: list[tuple[str, str]] = Field(description="Undirected adjacency between locations.")
    members: dict[str, Member]
    npcs: dict[str, NPC]
    entities: dict[str, Entity]
    events: dict[str, ScenarioEvent] = Field(default_factory=dict)
    checkpoints: dict[str, Flag]
    failures: dict[str, Flag]
    attacker: AttackerState = Field(default_factory=AttackerState)
    globals: Globals = Field(default_factory=Globals)

    @model_validator(mode="after")
    def _crew_size_and_order(self) -> WorldState:
        if not 1 <= len(self.members) <= MAX_MEMBERS:
            raise ValueError(f"a crew has 1 to {MAX_MEMBERS} members, got {len(self.members)}")
        for name in ("locations", "members", "npcs", "entities", "events", "checkpoints", "failures"):
            table = getattr(self, name)
            if list(table) != sorted(table):
                object.__setattr__(self, name, dict(sorted(table.items())))
        return self

    def neighbours(self, location_id: str) -> list[str]:
        return list(_adjacency(self.edges).get(location_id, ()))

    def adjacent(self, a: str, b: str) -> bool:
        return a == b or b in self.neighbours(a)

    def all_ids(self) -> set[str]:
        return (set(self.locations) | set(self.members) | set(self.npcs) | set(self.entities)
                | set(self.events) | set(self.checkpoints) | set(self.failures))

    def mobile(self, object_id: str) -> Member | NPC | Entity | None:
        return self.members.get(object_id) or self.npcs.get(object_id) or self.entities.get(
            object_id)

    def find(self, object_id: str) -> WorldObject | None:
        return self.locations.get(object_id) or self.mobile(object_id)

    def leader(self) -> Member:
        return next((m for m in self.members.values() if m.leader), next(iter(self.members.values())))

    def to_json(self) -> str:
        """Canonical JSON, made once per world (worlds are copy-on-write: :mod:`vcrime_audit.memo`)."""
        return _CANONICAL.of(self, _world_json)

    def digest(self) -> str:
        """``content_hash(self)``, from the text :meth:`to_json` keeps."""
        return blake2b_hex(self.to_json())


_CANONICAL: IdentityMemo[str] = IdentityMemo(4, per_run=True)
_OBJECT_JSON: IdentityMemo[str] = IdentityMemo(64, per_run=True)
_TABLE_JSON: IdentityMemo[str | None] = IdentityMemo(16, per_run=True)
"""Per table of objects: ``patch.Draft`` copies only the tables it changes, so a world shares
the others with the world before it (and a turn's first world all of them)."""


def _world_json(world: WorldState) -> str:
    """``canonical_json(world)``, put together from each object's canonical JSON, made once per
    object: a new world shares all but the objects its patch changed with the world before.

    An object's canonical JSON is its members' in key order, so the pieces join into the same
    text (``tests/test_world.py`` checks it against ``canonical_json``). A table holding anything
    but its own kind of object under text keys (only ``model_construct`` can build one) takes the
    definition's path."""
    fields = []
    for name in _FIELDS:
        value = getattr(world, name)
        table_of = _TABLE_OF.get(name)
        if table_of is None:
            fields.append(f"{_text_json(name)}:{_field_json(value)}")
            continue
        table = _TABLE_JSON.of(value, table_of)
        if table is None:
            return canonical_json(world)
        fields.append(f"{_text_json(name)}:{table}")
    return "{" + ",".join(fields) + "}"


def _field_json(value: Any) -> str:
    """The canonical JSON of a world's field that is no table of objects: kept per object for
    the edges (shared by every world of a run) and the globals and attacker's state (shared by
    the worlds no patch changed them in: a turn's first world shares them with the last one's),
    kept per text for the ids and the briefing, written as Python writes an integer for the turn
    and the schema version (a world's text is made twice a turn: ~10 canonical JSONs each)."""
    kind = type(value)
    if kind is list or kind is Globals or kind is AttackerState:
        return _OBJECT_JSON.of(value, canonical_json)
    if kind is str:
        return _text_json(value)
    if kind is int:
        return str(value)
    return canonical_json(value)


def _table_json(table: Any, kind: type[BaseModel]) -> str | None:
    """A table's canonical JSON from its objects' (None unless it is a dict of ``kind`` under
    text keys)."""
    if type(table) is not dict or not all(type(k) is str and type(v) is kind for k, v in table.items()):
        return None
    return "{" + ",".join(f"{_text_json(key)}:{_OBJECT_JSON.of(obj, canonical_json)}"
                          for key, obj in sorted(table.items())) + "}"


@lru_cache(maxsize=4096)
def _text_json(key: str) -> str:
    """A text's canonical JSON (a table's key, a world's id or briefing), kept per text."""
    return plain_canonical_json(key)


_OBJECT_TABLES: dict[str, type[BaseModel]] = {
    "locations": Location, "members": Member, "npcs": NPC, "entities": Entity,
    "events": ScenarioEvent, "checkpoints": Flag, "failures": Flag}
_TABLE_OF = {name: partial(_table_json, kind=kind) for name, kind in _OBJECT_TABLES.items()}
OBJECT_TABLES = tuple(_OBJECT_TABLES)
"""The id-keyed tables of objects that a patch copies before it changes one."""
_FIELDS = tuple(sorted(WorldState.model_fields))
