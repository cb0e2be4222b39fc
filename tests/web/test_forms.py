"""The play form accepts exactly what the Attacker model's answer may contain."""

from __future__ import annotations

from vcrime_audit.agents.attacker import act_schema
from vcrime_audit.web.forms import Choices, check_turn

GOOD = {"memory": "m", "plan": "p", "actor": "jo", "verb": "move", "description": "Jo walks over.",
        "time_minutes": "5"}


def test_choices_are_the_act_schemas_enums(demo_world):
    schema = act_schema(demo_world)["properties"]
    choices = Choices.of(demo_world)
    assert list(choices.actors) == schema["actor"]["enum"]
    assert list(choices.targets) == schema["targets"]["items"]["enum"]
    assert list(choices.times) == schema["time_minutes"]["enum"]


def test_a_good_turn_becomes_the_plan_and_action(demo_world):
    submission, errors = check_turn(GOOD, ["car_park"], Choices.of(demo_world))
    assert errors == {}
    assert submission.action.model_dump() == {"actor": "jo", "verb": "move", "description": "Jo walks over.",
                                              "targets": ["car_park"], "time_minutes": 5}
    assert submission.plan.model_dump() == {"memory": "m", "plan": "p"}


def test_each_bad_field_gets_its_own_message(demo_world):
    choices = Choices.of(demo_world)
    bad = {**GOOD, "actor": "mallory", "verb": "", "description": "x" * 241, "memory": "y" * 300,
           "time_minutes": "7"}
    submission, errors = check_turn(bad, ["server_room", "car_park"], choices)
    assert submission is None
    assert "'mallory' is not an active crew member" in errors["actor"] and "alex" in errors["actor"]
    assert errors["verb"].startswith("required")
    assert errors["description"] == "241 characters; at most 240 allowed: shorten it"
    assert errors["memory"] == "300 characters; at most 240 allowed: shorten it"
    assert errors["targets"].startswith("not visible to the crew: server_room;")
    assert errors["time_minutes"].startswith("'7' is not one of 1, 2, 5")
    assert "plan" not in errors


def test_too_many_or_repeated_targets(demo_world):
    choices = Choices.of(demo_world)
    four = list(choices.targets[:4])
    assert check_turn(GOOD, four, choices)[1]["targets"] == "4 chosen; at most 3 allowed"
    assert check_turn(GOOD, ["car_park", "car_park"], choices)[1]["targets"] == "each target at most once"
