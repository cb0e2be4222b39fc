"""The map shows only what the Attacker's observation shows."""

from __future__ import annotations

import re

from vcrime_audit.agents.render import observation
from vcrime_audit.web.view import visible_map


def test_the_map_is_the_crews_locations_and_their_exits(demo_world):
    view = visible_map(demo_world)
    text = observation(demo_world)
    here = set(re.findall(r"^At (\w+) \(", text, re.M))
    exits = {e for line in re.findall(r"^  exits: (.*)$", text, re.M) for e in re.findall(r"(\w+) \(", line)}
    assert {n.id for n in view.nodes} == here | exits
    assert {n.id for n in view.nodes if n.crew} == here
    assert all(a in here or b in here for a, b in view.links)
    moved = demo_world.model_copy(deep=True)
    moved.members["jo"].current_location = "lobby"
    ids = {n.id for n in visible_map(moved).nodes}
    assert ids == {"street", "car_park", "lobby", "security_office", "corridor_ground"}
    assert "server_room" not in ids
