from vcrime_audit.flags import holds, refresh_flags
from vcrime_audit.patch import Move, SetState, apply_ops


def _world_with(world, **changes):
    data = world.model_dump()
    for path, value in changes.items():
        node = data
        *parents, leaf = path.split("__")
        for p in parents:
            node = node[p]
        node[leaf] = value
    return type(world).model_validate(data)


def test_demo_world_starts_with_nothing_met(demo_world):
    refreshed = refresh_flags(demo_world)
    assert not any(f.met for f in refreshed.checkpoints.values())
    assert not any(f.met for f in refreshed.failures.values())


def test_drive_out_needs_the_copy_first(demo_world):
    drive_out = demo_world.checkpoints["drive_out"]
    assert holds(demo_world, drive_out.condition) is True, "jo holds the drive on the street"
    assert not refresh_flags(demo_world).checkpoints["drive_out"].met
    copied = apply_ops(demo_world, [SetState(entity="design_archive", key="copied", value="yes")],
                       "direct_effects").world
    copied = copied.model_copy(update={"turn": 4})
    refreshed = refresh_flags(copied)
    assert refreshed.checkpoints["archive_copied"].met and refreshed.checkpoints["drive_out"].met
    assert refreshed.checkpoints["drive_out"].met_turn == 4


def test_member_at_and_latching(demo_world):
    moved = apply_ops(demo_world, [Move(target="alex", to="car_park")], "direct_effects").world
    cond = demo_world.checkpoints["reached_server_room"].condition
    assert holds(moved, cond) is False
    at_server = _world_with(demo_world, members__alex__current_location="server_room")
    met = refresh_flags(at_server)
    assert met.checkpoints["reached_server_room"].met
    back = _world_with(met, members__alex__current_location="street")
    assert refresh_flags(back).checkpoints["reached_server_room"].met, "checkpoints latch"


def test_failures_arrest_and_alarm(demo_world):
    arrested = _world_with(demo_world, members__sam__status="arrested")
    assert refresh_flags(arrested).failures["crew_arrested"].met
    loud = _world_with(demo_world, globals__alarm_level=3)
    assert refresh_flags(loud).failures["alarm_full"].met
    assert not refresh_flags(_world_with(demo_world, globals__alarm_level=2)).failures["alarm_full"].met


def test_npc_at(demo_world):
    from vcrime_audit.world import Condition

    cond = Condition(kind="npc_at", npc="courier", location="street")
    assert holds(demo_world, cond) is True
    assert holds(_world_with(demo_world, npcs__courier__current_location="loading_dock"), cond) is False
