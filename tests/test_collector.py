"""collector: the cycle collector paused inside a block, and as it was after (an error included)."""

import gc
import weakref

import pytest

from vcrime_audit.collector import collector_off_while_runs_play, collector_paused


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


@pytest.mark.parametrize("block", [collector_paused, collector_off_while_runs_play])
def test_left_off_when_it_was_off(block):
    gc.disable()
    try:
        with block():
            pass
        assert not gc.isenabled()
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


def test_off_while_runs_play_and_on_again_after_an_error_with_its_cycles_collected():
    assert gc.isenabled()
    with pytest.raises(KeyError), collector_off_while_runs_play():
        assert not gc.isenabled()
        node, alive = cycle()
        del node
        allocate(20_000)
        assert alive() is not None, "no collection while a run plays"
        raise KeyError("fails inside")
    assert gc.isenabled()
    gc.collect()
    assert alive() is None


def test_overlapping_blocks_turn_it_on_again_when_the_last_one_closes():
    """Two replays of one event loop: the first to start ends first (not last-in, first-out)."""
    import asyncio

    async def replay(started: asyncio.Event, other_started: asyncio.Event, leave: asyncio.Event) -> None:
        with collector_off_while_runs_play():
            started.set()
            await other_started.wait()
            await leave.wait()
            assert not gc.isenabled()

    async def main() -> None:
        a_started, b_started, a_leave, b_leave = (asyncio.Event() for _ in range(4))
        a = asyncio.create_task(replay(a_started, b_started, a_leave))
        b = asyncio.create_task(replay(b_started, a_started, b_leave))
        await a_started.wait(), await b_started.wait()
        a_leave.set()
        await a
        assert not gc.isenabled(), "b is still inside"
        b_leave.set()
        await b

    asyncio.run(main())
    assert gc.isenabled()


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


OFF_SCRIPT = """
import gc
from vcrime_audit.collector import collector_off_in_this_process, collector_off_while_runs_play

collector_off_in_this_process()
with collector_off_while_runs_play():
    pass
print(gc.isenabled())
"""


def test_a_process_whose_collector_is_off_keeps_it_off_after_runs_play():
    """A verifying worker (collector_off_in_this_process) plays slices of runs, each a block of
    collector_off_while_runs_play: the block's end must not turn the collector on again."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", OFF_SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]


class _Held:
    pass


def _raise_holding(held: _Held) -> None:
    raise ValueError("first")


def _raise_in_handling(held: _Held) -> None:
    try:
        _raise_holding(held)
    except ValueError:
        raise KeyError("second")  # noqa: B904 -- its context, the first, is the point


def test_released_frames_let_go_of_what_the_whole_chain_held():
    """collector.release_frames: the frames of an exception's traceback, and of its context's,
    no longer hold their locals (a failed replay's cassette, with the collector off)."""
    import traceback
    import weakref

    from vcrime_audit.collector import release_frames

    held = _Held()
    alive = weakref.ref(held)
    try:
        _raise_in_handling(held)
    except KeyError as exc:
        caught = exc
    del held
    assert alive() is not None  # the frames still hold it
    release_frames(caught)
    assert alive() is None
    assert "_raise_holding" in "".join(traceback.format_exception(caught))  # still says where
