"""The validator: unit cases and property tests of its invariants over random op sequences."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.world_ops import op_sequences
from vcrime_audit.canonical import canonical_json
from vcrime_audit.patch import (
    PHASE_OPS,
    AdvanceClock,
    Destroy,
    Draft,
    Drop,
    FlagUpdate,
    Move,
    Note,
    SetAlarm,
    SetAttacker,
    SetStatus,
    SetWeather,
    Take,
    apply_ops,
    turn_start_locations,
)
from vcrime_audit.world import OBJECT_TABLES


def test_move_one_edge_applies_and_carries_held_items(demo_world):
    result = apply_ops(demo_world, [Move(target="jo", to="car_park")], "direct_effects")
    assert [op.op for op in result.applied] == ["move"]
    assert result.world.members["jo"].current_location == "car_park"
    assert result.world.entities["usb_drive"].current_location == "car_park"
    assert demo_world.members["jo"].current_location == "street", "input world is not mutated"


def test_second_step_in_the_same_turn_is_dropped(demo_world):
    start = turn_start_locations(demo_world)
    first = apply_ops(demo_world, [Move(target="jo", to="car_park")], "direct_effects", start)
    second = apply_ops(first.world, [Move(target="jo", to="lobby")], "npcs", start)
    assert not second.applied
    [(op, reason)] = second.dropped
    assert "started the turn in 'street', not adjacent to 'lobby'" in reason
    assert second.world.members["jo"].current_location == "car_park"


def test_teleport_unknown_ids_and_key_item_destruction_are_dropped(demo_world):
    ops = [Move(target="alex", to="server_room"), Move(target="ghost", to="lobby"),
           Note(target="nowhere", text="x"), Destroy(entity="usb_drive"),
           Take(entity="design_archive", by="alex"), SetStatus(target="alex", status="flying")]
    result = apply_ops(demo_world, ops, "direct_effects")
    assert not result.applied
    reasons = [reason for _, reason in result.dropped]
    assert "not adjacent" in reasons[0]
    assert reasons[1] == "unknown id 'ghost'" and reasons[2] == "unknown id 'nowhere'"
    assert "key item" in reasons[3] and "cannot be carried" in reasons[4]
    assert "member status must be one of" in reasons[5]
    assert result.world is demo_world, "nothing applied: the same world, not a copy"


def test_ops_outside_their_phase_are_dropped(demo_world):
    result = apply_ops(demo_world, [FlagUpdate(flag="drive_out", met=True)], "direct_effects")
    assert "not allowed in phase 'direct_effects'" in result.dropped[0][1]
    result = apply_ops(demo_world, [FlagUpdate(flag="drive_out", met=True)], "synthesis")
    assert "decided by its condition" in result.dropped[0][1]


def test_drop_then_take_by_someone_else_at_the_same_place(demo_world):
    result = apply_ops(demo_world, [Drop(entity="usb_drive"), Take(entity="usb_drive", by="sam")],
                       "direct_effects")
    assert len(result.applied) == 2 and result.world.entities["usb_drive"].holder == "sam"


def _with_member_status(world, member, status):
    data = world.model_dump()
    data["members"][member]["status"] = status
    return type(world).model_validate(data)


@pytest.mark.parametrize("phase", ["direct_effects", "npcs", "engine"])
@pytest.mark.parametrize("revived", ["active", "injured"])
def test_an_arrest_stands_in_every_phase(demo_world, phase, revived):
    world = _with_member_status(demo_world, "jo", "arrested")
    result = apply_ops(world, [SetStatus(target="jo", status=revived)], phase)
    assert not result.applied
    [(op, reason)] = result.dropped
    assert reason == ("member 'jo' is arrested; an arrest stands and death is final, "
                      f"so it cannot become {revived}")
    assert result.world.members["jo"].status == "arrested"


def test_arrested_or_dead_members_neither_move_nor_take_and_the_dead_stay_dead(demo_world):
    world = _with_member_status(_with_member_status(demo_world, "jo", "arrested"), "sam", "dead")
    ops = [Move(target="jo", to="car_park"), Take(entity="usb_drive", by="sam"),
           SetStatus(target="sam", status="active"), SetStatus(target="sam", status="arrested"),
           SetStatus(target="jo", status="arrested")]
    result = apply_ops(world, ops, "direct_effects")
    assert [op for op in result.applied] == [ops[-1]], "re-stating an arrest is harmless"
    reasons = [reason for _, reason in result.dropped]
    assert reasons[:2] == ["member 'jo' is arrested", "member 'sam' is dead"]
    assert all("death is final" in r for r in reasons[2:])
    assert result.world.members["sam"].status == "dead"


# --- properties -----------------------------------------------------------------------------

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_invariants_hold_for_any_op_sequence(demo_world, data):
    world = demo_world
    start = turn_start_locations(world)
    for phase, ops in data.draw(op_sequences(demo_world)):
        before = canonical_json(world)  # not world.to_json(): that is made once per world
        final = {m.id: m.status for m in world.members.values() if m.status in ("arrested", "dead")}
        result = apply_ops(world, ops, phase, start)
        assert canonical_json(world) == before, "apply_ops changed its input world"
        assert (result.world is world) == (not result.applied and canonical_json(result.world) == before)
        assert result.world.to_json() == canonical_json(result.world), "a kept text went stale"
        following = result.world.shallow_copy({"turn": result.world.turn + 1})  # a turn's first world
        assert following.to_json() == canonical_json(following), "a kept text went stale"
        shared = [t for t in (*OBJECT_TABLES, "globals", "attacker")
                  if getattr(result.world, t) is getattr(world, t)]
        assert all(canonical_json(getattr(result.world, t)) == canonical_json(getattr(world, t))
                   for t in shared), "a table or part shared with the input world was changed"
        # an arrest stands and death is final, whatever the phase
        assert {m: result.world.members[m].status for m in final} == final
        assert len(result.applied) + len(result.dropped) == len(ops)
        assert all(isinstance(op, PHASE_OPS[phase]) for op in result.applied)
        world = result.world
    # no teleport: everything that moves is within one edge of where it started the turn
    for obj in [*world.members.values(), *world.npcs.values()]:
        assert demo_world.adjacent(start[obj.id], obj.current_location), obj.id
    # conservation: NPCs and key items are never created, destroyed or duplicated
    assert set(world.npcs) == set(demo_world.npcs)
    key_before = {e.id for e in demo_world.entities.values() if e.key}
    assert {e.id for e in world.entities.values() if e.key} == key_before
    assert not any(world.entities[k].destroyed for k in key_before)
    # references stay valid: locations exist, holders exist and stand with what they carry
    for obj in [*world.members.values(), *world.npcs.values(), *world.entities.values()]:
        assert obj.current_location in world.locations
    for ent in world.entities.values():
        if ent.holder is not None:
            holder = world.mobile(ent.holder)
            assert holder is not None and holder.current_location == ent.current_location


@pytest.mark.parametrize(("ops", "copied"), [
    ([Move(target="alex", to="car_park")], {"members"}),
    ([Move(target="jo", to="car_park")], {"members", "entities"}),  # jo carries the usb drive
    ([SetAlarm(level=2)], set()),
])
def test_a_patch_copies_only_the_tables_it_changes(demo_world, ops, copied):
    phase = "events" if isinstance(ops[0], SetAlarm) else "direct_effects"
    result = apply_ops(demo_world, ops, phase)
    assert result.applied == ops
    assert {t for t in OBJECT_TABLES if getattr(result.world, t) is not getattr(demo_world, t)} == copied
    assert demo_world.members["jo"].current_location == "street", "input world is not mutated"
    assert result.world.to_json() == canonical_json(result.world)


@pytest.mark.parametrize(("ops", "phase", "copied"), [
    ([Move(target="alex", to="car_park")], "direct_effects", set()),
    ([SetAlarm(level=2)], "events", {"globals"}),
    ([SetWeather(weather="fog")], "synthesis", {"globals"}),
    ([AdvanceClock(minutes=15), SetAttacker(memory="m", plan="p")], "engine", {"globals", "attacker"}),
])
def test_a_patch_copies_globals_and_the_attackers_state_only_to_change_them(demo_world, ops, phase,
                                                                            copied):
    before = canonical_json(demo_world)
    result = apply_ops(demo_world, ops, phase)
    assert result.applied == ops
    assert {p for p in ("globals", "attacker")
            if getattr(result.world, p) is not getattr(demo_world, p)} == copied
    assert canonical_json(demo_world) == before, "input world is not mutated"
    assert result.world.to_json() == canonical_json(result.world)


def test_own_part_refuses_anything_but_globals_and_the_attackers_state(demo_world):
    with pytest.raises(ValueError, match="'members' is not a part"):
        Draft(demo_world).own_part("members")


def test_copy_for_writing_is_a_deep_copy_of_every_object_of_every_task():
    from vcrime_audit.patch import _copy_for_writing
    from vcrime_audit.scenario import initial_world, list_task_ids, load_task
    from vcrime_audit.world import OBJECT_TABLES

    for task_id in list_task_ids():
        world = initial_world(load_task(task_id))
        for table in OBJECT_TABLES:
            for obj in getattr(world, table).values():
                copied, deep = _copy_for_writing(obj), obj.model_copy(deep=True)
                assert copied == deep and copied.model_fields_set == deep.model_fields_set
                for name, value in obj.__dict__.items():
                    if isinstance(value, (list, dict)):
                        assert copied.__dict__[name] is not value, (task_id, obj.id, name)
                        inner = value.values() if isinstance(value, dict) else value
                        others = (copied.__dict__[name].values() if isinstance(value, dict)
                                  else copied.__dict__[name])
                        for a, b in zip(inner, others, strict=True):  # only what cannot change is shared
                            assert type(a) in (str, int, float, bool) or a is not b, (task_id, name)
