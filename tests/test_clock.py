"""The world clock in minutes since the start, across midnight and over several days."""

from datetime import datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from vcrime_audit.agents.world_manager import due_events, due_schedule
from vcrime_audit.clock import DAY, clock_and_day, due, in_order, offset, upcoming
from vcrime_audit.patch import AdvanceClock, apply_ops
from vcrime_audit.world import Globals, ScenarioEvent, ScheduleEntry

clocks = st.builds(lambda m: f"{m // 60:02d}:{m % 60:02d}", st.integers(0, DAY - 1))


def test_hand_worked_times_around_midnight():
    assert offset("23:30", "22:00") == 90 and offset("01:00", "22:00") == 180
    assert offset("22:00", "22:00") == 0 and offset("21:59", "22:00") == DAY - 1
    assert clock_and_day(0, "22:00") == ("22:00", 1)
    assert clock_and_day(125, "22:00") == ("00:05", 2)
    assert clock_and_day(3 * DAY + 60, "04:30") == ("05:30", 4)
    assert in_order(["23:00", "00:30", "06:00"], "22:00")
    assert not in_order(["23:00", "22:30"], "22:00")
    # string order would call "06:00" due at a 22:00 start, and "23:30" never due after midnight
    assert not due("06:00", 0, "22:00") and due("06:00", 480, "22:00")
    assert due("23:30", 150, "22:00")


def test_schedule_wraps_to_the_next_day():
    entries = [ScheduleEntry(at="23:30", location="a"), ScheduleEntry(at="01:00", location="b")]
    assert upcoming(entries, 0, "22:00") == (entries[0], 90)
    assert upcoming(entries, 100, "22:00") == (entries[1], 180)   # 23:40 -> 01:00
    assert upcoming(entries, 200, "22:00") == (entries[0], 90 + DAY)  # 01:20 -> 23:30 next night


@settings(max_examples=150, deadline=None)
@given(start=clocks, steps=st.lists(st.integers(0, 120), min_size=1, max_size=60),
       times=st.lists(clocks, min_size=1, max_size=5))
def test_clock_schedules_and_events_over_several_days(start, steps, times):
    """Advance by random action times over up to five days; check against calendar arithmetic."""
    origin = datetime(2000, 1, 1, *map(int, start.split(":")))
    def wall(m):  # independent of the code under test: the calendar
        at = origin + timedelta(minutes=m)
        return at.strftime("%H:%M"), (at.date() - origin.date()).days + 1
    clock_at = [wall(m)[0] for m in range(DAY)]
    events = {f"e{i}": ScenarioEvent(id=f"e{i}", name="e", description="d", trigger="t", at=t)
              for i, t in enumerate(times)}
    entries = [ScheduleEntry(at=t, location="x") for t in times]
    g = Globals(start_clock=start, minutes=0)
    seen_due: set[str] = set()
    for step in steps:
        before = g.minutes
        g.advance(step)
        now = g.minutes
        assert now == before + step
        assert (g.clock, g.day) == wall(now)
        assert Globals.model_validate(g.model_dump()) == g
        # events: due from their first occurrence after the start on, also after midnight
        is_due = {k for k, e in events.items() if due(e.at, now, start)}
        brute = {k for k, e in events.items() if e.at in clock_at[:now + 1]}
        assert is_due == brute and seen_due <= is_due
        seen_due = is_due
        # schedule: the next entry is the first minute after now that shows one of its times
        entry, minute = upcoming(entries, now, start)
        first = next(m for m in range(now + 1, now + DAY + 1) if clock_at[m % DAY] in times)
        assert minute == first and clock_at[minute % DAY] == entry.at


def test_engine_clock_op_and_due_events_across_midnight(demo_world):
    data = demo_world.model_dump()
    data["globals"] = {"start_clock": "23:50", "minutes": 0, "weather": "clear"}
    data["events"] = {"late": {"id": "late", "name": "Late", "description": "d", "trigger": "t",
                               "at": "23:55"},
                      "dawn": {"id": "dawn", "name": "Dawn", "description": "d", "trigger": "t",
                               "at": "06:00"}}
    world = type(demo_world).model_validate(data)
    assert due_events(world) == []
    world = apply_ops(world, [AdvanceClock(minutes=20)], "engine").world
    assert (world.globals.clock, world.globals.day, world.globals.minutes) == ("00:10", 2, 20)
    assert due_events(world) == ["late"]
    world = apply_ops(world, [AdvanceClock(minutes=370)], "engine").world
    assert world.globals.clock == "06:20" and due_events(world) == ["dawn", "late"]


def test_a_world_written_before_the_minute_clock_starts_at_its_stored_time():
    g = Globals.model_validate({"clock": "01:15", "day": 2, "weather": "rain", "alarm_level": 0})
    assert (g.start_clock, g.minutes, g.clock, g.day) == ("01:15", DAY, "01:15", 2)


def test_schedule_entries_due_during_an_action_across_midnight(demo_world):
    data = demo_world.model_dump()
    data["globals"] = {"start_clock": "23:50", "minutes": 0, "weather": "clear"}
    npc = next(iter(data["npcs"]))
    data["npcs"][npc]["schedule"] = [{"at": "23:55", "location": "street", "activity": ""},
                                     {"at": "00:05", "location": "car_park", "activity": "parks"}]
    world = type(demo_world).model_validate(data)
    world = apply_ops(world, [AdvanceClock(minutes=10)], "engine").world   # 23:50 -> 00:00
    assert due_schedule(world, 10) == [f"{npc} -> street at 23:55"]
    world = apply_ops(world, [AdvanceClock(minutes=10)], "engine").world   # -> 00:10
    assert due_schedule(world, 10) == [f"{npc} -> car_park at 00:05 (parks)"]
    world = apply_ops(world, [AdvanceClock(minutes=1440)], "engine").world  # a whole day later
    assert [d for d in due_schedule(world, 1440) if d.startswith(f"{npc} ")] == [
        f"{npc} -> street at 23:55", f"{npc} -> car_park at 00:05 (parks)"]
