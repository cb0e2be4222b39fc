"""collector: the cycle collector paused, or kept to young objects, inside a block, and as it was
after (an error included)."""

import gc
import weakref

import pytest

from vcrime_audit.collector import OLD_GENERATION_NEVER, collector_paused, young_collections_only


class Node:
    pass


def cycle() -> tuple[Node, weakref.ref]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a, weakref.ref(a)


def allocate(n: int) -> None:
    keep = [{} for _ in range(n)]  # containers: each counts as an allocation for the collector
    del keep


def test_paused_inside_and_restored_after_an_error():
    assert gc.isenabled()
    with pytest.raises(KeyError), collector_paused():
        assert not gc.isenabled()
        raise KeyError("fails inside")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled(), "left off when it was off"
    finally:
        gc.enable()


def test_a_cycle_made_while_paused_outlives_any_allocation_and_is_collected_after():
    with collector_paused():
        node, alive = cycle()
        del node
        allocate(20_000)
        assert alive() is not None
    gc.collect()
    assert alive() is None


def test_young_collections_only_collect_young_cycles_and_leave_old_ones():
    before = gc.get_threshold()
    old, old_alive = cycle()
    gc.collect()  # `old` survives a full collection: it is in the old generation now
    with pytest.raises(KeyError), young_collections_only(threshold=100):
        assert gc.get_threshold() == (100, OLD_GENERATION_NEVER, OLD_GENERATION_NEVER)
        young, young_alive = cycle()
        del young, old
        allocate(20_000)
        assert young_alive() is None, "a young cycle is collected automatically"
        assert old_alive() is not None, "the old generation is not walked"
        raise KeyError("fails inside")
    assert gc.get_threshold() == before
    gc.collect()
    assert old_alive() is None



def test_overlapping_blocks_restore_the_thresholds_when_the_last_one_closes():
    """Two replays of one event loop: the first to start ends first (not last-in, first-out)."""
    import asyncio

    before = gc.get_threshold()

    async def replay(started: asyncio.Event, other_started: asyncio.Event, leave: asyncio.Event) -> None:
        with young_collections_only():
            started.set()
            await other_started.wait()
            await leave.wait()
            assert gc.get_threshold()[2] == OLD_GENERATION_NEVER

    async def main() -> None:
        a_started, b_started, a_leave, b_leave = (asyncio.Event() for _ in range(4))
        a = asyncio.create_task(replay(a_started, b_started, a_leave))
        b = asyncio.create_task(replay(b_started, a_started, b_leave))
        await a_started.wait(), await b_started.wait()
        a_leave.set()
        await a
        assert gc.get_threshold()[2] == OLD_GENERATION_NEVER, "b is still inside"
        b_leave.set()
        await b

    asyncio.run(main())
    assert gc.get_threshold() == before


EXIT_SCRIPT = """
import gc, sys
from vcrime_audit.collector import no_collection_at_exit

gc.disable()  # no collection before the exit's (which runs all the same)

class Finalized:
    def __del__(self):
        print("finalized", flush=True)

a, b = Finalized(), Finalized()
a.other, b.other = b, a  # a cycle: only the collector frees it
del a, b
if sys.argv[1] == "skip":
    no_collection_at_exit()
    no_collection_at_exit()  # once is enough; a second call changes nothing
print("done", flush=True)
"""


@pytest.mark.parametrize("mode", ["collect", "skip"])
def test_no_collection_at_exit_leaves_the_last_objects_to_the_os(mode):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, mode], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    expected = ["done"] if mode == "skip" else ["done", "finalized", "finalized"]
    assert done.stdout.split() == expected
