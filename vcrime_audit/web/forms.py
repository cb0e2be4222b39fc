"""Check a submitted turn against the rules the Attacker model's answer must meet."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from ..agents.attacker import TIME_CHOICES, Action, PlanOutput, active_members
from ..agents.render import visible_ids
from ..world import WorldState
from .human_backend import Submission

TEXT_LIMITS = {"memory": 240, "plan": 240, "verb": 24, "description": 240}
MAX_TARGETS = 3


@dataclass(frozen=True)
class Choices:
    """What the act call's decoding schema allows (see ``attacker.act_schema``)."""

    actors: tuple[str, ...]
    targets: tuple[str, ...]
    times: tuple[int, ...]

    @classmethod
    def of(cls, world: WorldState) -> Choices:
        return cls(tuple(active_members(world)), tuple(visible_ids(world)), tuple(TIME_CHOICES))


def _listed(values: Sequence[object]) -> str:
    return ", ".join(str(v) for v in values)


def check_turn(form: Mapping[str, str], targets: Sequence[str],
               choices: Choices) -> tuple[Submission | None, dict[str, str]]:
    """A submission, or a message per bad field (field name -> what is wrong and how to fix it)."""
    errors: dict[str, str] = {}
    text = {name: form.get(name, "").replace("\r\n", "\n").strip() for name in TEXT_LIMITS}
    for name, limit in TEXT_LIMITS.items():
        if len(text[name]) > limit:
            errors[name] = f"{len(text[name])} characters; at most {limit} allowed: shorten it"
    for name in ("verb", "description"):
        if not text[name] and name not in errors:
            errors[name] = "required: say what the crew member does"
    if " " in text["verb"] or "\n" in text["verb"]:
        errors.setdefault("verb", "one word (e.g. move, talk, take, wait)")
    actor = form.get("actor", "")
    if actor not in choices.actors:
        errors["actor"] = (f"'{actor}' is not an active crew member; choose one of "
                           f"{_listed(choices.actors)}" if actor else "required: choose who acts")
    unknown = [t for t in targets if t not in choices.targets]
    if unknown:
        errors["targets"] = (f"not visible to the crew: {_listed(unknown)}; choose from "
                             f"{_listed(choices.targets)}")
    elif len(targets) > MAX_TARGETS:
        errors["targets"] = f"{len(targets)} chosen; at most {MAX_TARGETS} allowed"
    elif len(set(targets)) != len(targets):
        errors["targets"] = "each target at most once"
    raw_time = form.get("time_minutes", "")
    time_minutes = int(raw_time) if raw_time.isdigit() else None
    if time_minutes not in choices.times:
        errors["time_minutes"] = f"'{raw_time}' is not one of {_listed(choices.times)} minutes"
    if errors:
        return None, errors
    try:
        plan = PlanOutput(memory=text["memory"], plan=text["plan"])
        action = Action(actor=actor, verb=text["verb"], description=text["description"],
                        targets=list(targets), time_minutes=time_minutes)
    except ValidationError as exc:  # the checks above mirror the models; this is a safety net
        first = exc.errors()[0]
        return None, {str(first["loc"][0]): first["msg"]}
    return Submission(plan, action), {}
