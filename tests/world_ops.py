"""Random sequences of patch operations on a world, for property tests of the patch validator
and of what is kept per world, table and object."""

from hypothesis import strategies as st

from vcrime_audit.patch import (
    PHASES,
    AdvanceClock,
    Destroy,
    Drop,
    EventUpdate,
    FlagUpdate,
    Move,
    Note,
    SetAlarm,
    SetAttacker,
    SetStatus,
    SetWeather,
    Take,
)


def _ids(world):
    return sorted(world.all_ids()) + ["ghost", "x_unknown"]


@st.composite
def op_sequences(draw, world):
    ids = _ids(world)
    locations = sorted(world.locations) + ["atlantis"]
    people = sorted([*world.members, *world.npcs]) + ["ghost"]
    entities = sorted(world.entities) + ["ghost_item"]
    one = st.one_of(
        st.builds(Move, target=st.sampled_from(ids), to=st.sampled_from(locations)),
        st.builds(Take, entity=st.sampled_from(entities), by=st.sampled_from(people)),
        st.builds(Drop, entity=st.sampled_from(entities)),
        st.builds(Destroy, entity=st.sampled_from(entities)),
        st.builds(SetStatus, target=st.sampled_from(people),
                  status=st.sampled_from(["active", "arrested", "dead", "alert", "bogus"])),
        st.builds(Note, target=st.sampled_from(ids), text=st.just("something happened")),
        st.builds(SetAlarm, level=st.integers(0, 3)),
        st.builds(SetWeather, weather=st.sampled_from(["rain", "fog"])),
        st.builds(AdvanceClock, minutes=st.integers(0, 90)),
        st.builds(SetAttacker, memory=st.text(max_size=8), plan=st.text(max_size=8)),
        st.builds(EventUpdate, event=st.sampled_from(sorted(world.events) + ["ghost_event"]),
                  status=st.sampled_from(["pending", "active", "done"]), note=st.just("noted")),
        st.builds(FlagUpdate, flag=st.sampled_from(sorted([*world.checkpoints, *world.failures])
                                                   + ["ghost_flag"]), met=st.booleans()),
    )
    phases = draw(st.lists(st.tuples(st.sampled_from(PHASES + ("engine",)),
                                     st.lists(one, max_size=6)), min_size=1, max_size=4))
    return phases
