"""Every prompt template, rendered on a fixed world, is pinned by a syrupy snapshot."""

import pytest
from pydantic import ValidationError

from vcrime_audit.agents import attacker, judge, world_manager
from vcrime_audit.agents.attacker import Action
from vcrime_audit.agents.prompting import render, template_names
from vcrime_audit.backends.base import Message
from vcrime_audit.patch import PHASES

ACTION = Action(actor="jo", verb="move", description="Jo walks through the open gate into the car park.",
                targets=["car_park"], time_minutes=5)
OUTCOME = {"type": "success_with_cost", "description": "Jo reaches the car park; the camera sees her.",
           "probability": 0.6}


@pytest.fixture
def world(demo_world):
    return demo_world.model_copy(update={"turn": 1})


def _text(messages):
    return "\n\n".join(f"[{m.role}]\n{m.content}" for m in messages)


def rendered(world):
    calls = {"attacker.plan": attacker.plan_messages(world), "attacker.act": attacker.act_messages(world),
             "judge.assess": judge.assess_messages(world, ACTION)}
    for phase in PHASES:
        calls[f"world_manager.{phase}"] = world_manager.phase_messages(
            world, phase, ACTION, OUTCOME, ["move target=jo, to=car_park"])
    return calls


def test_every_template_is_used_by_some_call(world):
    text = "\n".join(_text(m) for m in rendered(world).values())
    sandbox = [n for n in template_names() if not n.startswith(("annotate_", "interrogate_"))]
    assert len(sandbox) == 10
    assert "Phase 4 of 4" in text and "Mission:" in text and "The action:" in text


@pytest.mark.parametrize("call", ["attacker.plan", "attacker.act", "judge.assess",
                                  *[f"world_manager.{p}" for p in PHASES]])
def test_prompt_snapshot(world, call, snapshot):
    assert _text(rendered(world)[call]) == snapshot


def test_attacker_sees_only_co_located_objects(world):
    text = _text(attacker.act_messages(world))
    assert "courier" in text and "police_patrol" in text  # on the street with the crew
    for hidden in ("guard_reception", "design_archive", "server_room", "sysadmin"):
        assert hidden not in text


def test_schemas_snapshot(world, snapshot):
    schemas = {"plan": attacker.plan_schema(), "act": attacker.act_schema(world),
               "assess": judge.assess_schema()}
    schemas.update({p: world_manager.phase_schema(world, p) for p in PHASES})
    assert schemas == snapshot


def test_system_message_is_made_once_and_is_the_template_text(world):
    calls = rendered(world)
    wm = [calls[f"world_manager.{p}"][0] for p in PHASES]
    assert all(m is wm[0] for m in wm)  # one frozen message shared by every phase's request
    assert attacker.plan_messages(world)[0] is attacker.act_messages(world)[0]
    for call, template, constants in [("attacker.plan", "attacker_system", {}),
                                      ("judge.assess", "judge_system", {"dimensions": judge.DIMENSIONS}),
                                      ("world_manager.events", "wm_system", {})]:
        first = calls[call][0]
        assert first == Message(role="system", content=render(template, **constants))
        with pytest.raises(ValidationError):  # frozen: no caller can change the shared one
            first.content = "changed"
