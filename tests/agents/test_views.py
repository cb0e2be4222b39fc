"""Who sees what, on a hand-built world: the attacker only observables of what stands with
its crew; the judge and World Manager the whole world, static descriptions included."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.world_ops import op_sequences
from vcrime_audit.agents import attacker, judge, world_manager
from vcrime_audit.agents.attacker import Action
from vcrime_audit.agents.render import full_view, observation
from vcrime_audit.world import (
    NPC,
    Condition,
    Entity,
    Flag,
    Globals,
    Location,
    Member,
    ScenarioEvent,
    ScheduleEntry,
    WorldState,
)


def _loc(id_):
    return Location(id=id_, name=id_.title(), description=f"DESC-{id_}",
                    observable=f"OBS-{id_}", history=[f"HIST1-{id_}", f"HIST2-{id_}", f"HIST3-{id_}"])


@pytest.fixture
def world() -> WorldState:
    locations = {i: _loc(i) for i in ("yard", "hall", "vault")}
    return WorldState(
        task_id="t", map_id="m", goal_id="g", briefing="Get the ledger.", turn=3,
        locations=locations, edges=[("hall", "yard"), ("hall", "vault")],
        members={"ana": Member(id="ana", name="Ana", role="lead", leader=True, description="DESC-ana",
                               observable="OBS-ana", history=["HIST-ana"], current_location="yard")},
        npcs={
            "gate_guard": NPC(id="gate_guard", name="Gil", role="guard", category="guard",
                              description="DESC-gate_guard", observable="OBS-gate_guard",
                              history=["HIST-gate_guard"], current_location="yard",
                              schedule=[ScheduleEntry(at="23:30", location="hall"),
                                        ScheduleEntry(at="01:00", location="yard")]),
            "clerk": NPC(id="clerk", name="Cleo", role="clerk", category="staff",
                         description="DESC-clerk", observable="OBS-clerk", current_location="vault"),
        },
        entities={
            "crate": Entity(id="crate", name="Crate", category="container", description="DESC-crate",
                            observable="OBS-crate", history=["HIST-crate"], current_location="yard",
                            state={"locked": "yes"}),
            "ledger": Entity(id="ledger", name="Ledger", category="item", description="DESC-ledger",
                             observable="OBS-ledger", current_location="vault", key=True),
        },
        events={"round": ScenarioEvent(id="round", name="Round", description="DESC-round",
                                       trigger="at 23:00", at="23:00", notes=["NOTE-round"])},
        checkpoints={"got": Flag(id="got", description="FLAG-got",
                                 condition=Condition(kind="entity_held", entity="ledger"))},
        failures={"caught": Flag(id="caught", description="FLAG-caught",
                                 condition=Condition(kind="member_status", value="arrested"))},
        globals=Globals(start_clock="22:00", minutes=70, weather="fog"),
    )


def test_attacker_sees_only_observables_of_what_stands_with_its_crew(world):
    text = observation(world)
    for shown in ("OBS-yard", "OBS-gate_guard", "OBS-crate", "23:10", "fog",
                  "hall (Hall)"):  # its exit, by name
        assert shown in text, shown
    for hidden in ("DESC-", "HIST", "NOTE-", "FLAG-", "OBS-hall", "OBS-vault", "OBS-clerk",
                   "OBS-ledger", "clerk", "ledger", "locked", "round", "23:30", "alarm"):
        assert hidden not in text, hidden


def test_attacker_prompts_carry_exactly_the_observation(world):
    for messages in (attacker.plan_messages(world), attacker.act_messages(world)):
        text = "\n".join(m.content for m in messages)
        assert observation(world) in text
        assert "DESC-" not in text and "HIST" not in text


def test_judge_and_world_manager_see_the_whole_world(world):
    text = full_view(world)
    expected = [f"{kind}-{obj}" for kind in ("DESC", "OBS")
                for obj in ("yard", "hall", "vault", "ana", "gate_guard", "clerk", "crate", "ledger")]
    expected += ["HIST2-yard", "HIST3-yard", "HIST-ana", "HIST-gate_guard", "HIST-crate",
                 "DESC-round", "NOTE-round", "FLAG-got", "FLAG-caught", "locked=yes", "KEY ITEM",
                 "23:10 day 1 (70 minutes since the start at 22:00)",
                 "daily schedule: 23:30 hall, 01:00 yard; next: hall at 23:30 (in 20 min)"]
    for shown in expected:
        assert shown in text, shown
    assert "HIST1-yard" not in text, "only the last two history lines"
    action = Action(actor="ana", verb="wait", description="Ana waits.", targets=[], time_minutes=5)
    judged = "\n".join(m.content for m in judge.assess_messages(world, action))
    managed = "\n".join(m.content for m in world_manager.phase_messages(
        world, "npcs", action, {"type": "full_success", "description": "ok"}, []))
    assert text in judged and text in managed


def _view_made_afresh(world: WorldState) -> str:
    """``full_view(world)`` with nothing kept from earlier worlds."""
    from vcrime_audit.agents import render
    from vcrime_audit.memo import IdentityMemo

    kept = render._VIEWS, render._BODIES, render._SECTIONS, render._LOCATIONS, render._NPCS
    render._VIEWS, render._BODIES, render._LOCATIONS = IdentityMemo(8), IdentityMemo(8), IdentityMemo(8)
    render._NPCS = IdentityMemo(8)
    render._SECTIONS = {make: IdentityMemo(8) for make in kept[2]}
    try:
        return full_view(world)
    finally:
        render._VIEWS, render._BODIES, render._SECTIONS, render._LOCATIONS, render._NPCS = kept


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_full_view_kept_per_world_table_and_object_never_goes_stale(demo_world, data):
    """Worlds made by patches share unchanged tables and objects with the worlds before them,
    whose texts are kept: each world's view equals one made with nothing kept."""
    from vcrime_audit.patch import apply_ops, turn_start_locations

    world, start = demo_world, turn_start_locations(demo_world)
    elapsed = data.draw(st.sampled_from([1, 5, 30, 120]))
    _check_views_against_fresh(world, elapsed)
    for phase, ops in data.draw(op_sequences(demo_world)):
        world = apply_ops(world, ops, phase, start).world
        _check_views_against_fresh(world, elapsed)
    other_map = world.model_copy(update={"edges": world.edges[1:], "turn": world.turn + 1})
    _check_views_against_fresh(other_map, elapsed)  # the edges are part of the views
    for later in data.draw(st.lists(st.integers(1, 3000), max_size=3)):
        at = world.model_copy(update={"globals": world.globals.model_copy(
            update={"minutes": world.globals.minutes + later})})
        assert at.npcs is world.npcs
        _check_views_against_fresh(at, elapsed)  # the clock is too
        moved = world.model_copy(update={"globals": world.globals.model_copy()})
        moved.globals.advance(later)
        _check_views_against_fresh(moved, elapsed)
    started = world.model_copy(update={"globals": world.globals.model_copy(update={"start_clock": "03:15"})})
    _check_views_against_fresh(started, elapsed)  # and the clock's start
    for weather in ("hail", world.globals.weather):
        _check_views_against_fresh(world.model_copy(update={"globals": world.globals.model_copy(
            update={"weather": weather})}), elapsed)


def _check_views_against_fresh(world: WorldState, elapsed: int) -> None:
    """The full view, the attacker's observation and the NPC schedule entries due, as kept,
    against the same made with nothing kept."""
    from vcrime_audit.agents import render

    assert full_view(world) == _view_made_afresh(world)
    assert observation(world) == render._observation(world)
    for minutes in (elapsed, 1440 + elapsed):
        assert world_manager.due_schedule(world, minutes) == world_manager._due_schedule(world, minutes)


def test_the_npc_schedule_entries_due_are_kept_per_table_clock_and_elapsed_time(demo_world):
    world = demo_world.model_copy(update={"globals": demo_world.globals.model_copy()})
    world.globals.advance(75)  # 21:30 -> 22:45
    due = world_manager.due_schedule(world, 75)
    assert len(due) > 3 and due == world_manager._due_schedule(world, 75)
    assert world_manager.due_schedule(world, 75) is due, "kept"
    assert world_manager.due_schedule(world, 10) == world_manager._due_schedule(world, 10) != due
