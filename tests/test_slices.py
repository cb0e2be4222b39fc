"""slices: a burst of answers is worked off a slice at a time, and the loop's other handles (a
due timer, a socket) get their turn in between. Deterministic: the jobs' work advances a
virtual clock instead of taking real time."""

import asyncio

import pytest

from vcrime_audit.slices import LoopSlices, take_turn

WORK_S = 0.002  # one answer's continuation
SLICE_S = 0.020


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def burst(jobs: int, sliced: bool) -> tuple[int, list[int]]:
    """``jobs`` answers ready in one pass of the loop, next to a handle that comes round once per
    pass (a heartbeat): the most jobs that ran between two of its turns, and the order the jobs
    ran in."""
    clock = Clock()
    between: list[int] = []
    order: list[int] = []

    async def main() -> None:
        slices = LoopSlices(SLICE_S, clock)
        answers = asyncio.Event()
        done = asyncio.Event()
        ran_since_beat = 0

        async def job(i: int) -> None:
            nonlocal ran_since_beat
            await answers.wait()
            if sliced:
                await slices.take_turn()
            clock.now += WORK_S
            ran_since_beat += 1
            order.append(i)

        async def heartbeat() -> None:
            nonlocal ran_since_beat
            while not done.is_set():
                await asyncio.sleep(0)
                between.append(ran_since_beat)
                ran_since_beat = 0

        tasks = [asyncio.create_task(job(i)) for i in range(jobs)]
        beat = asyncio.create_task(heartbeat())
        await asyncio.sleep(0)
        answers.set()
        await asyncio.gather(*tasks)
        done.set()
        await beat

    asyncio.run(main())
    return max(between), order


def test_without_slices_the_whole_burst_runs_before_the_heartbeat():
    most, order = burst(300, sliced=False)
    assert most == 300 and order == list(range(300))


@pytest.mark.parametrize("jobs", [1, 9, 10, 11, 300])
def test_with_slices_at_most_a_slice_of_work_runs_between_two_heartbeats(jobs):
    most, order = burst(jobs, sliced=True)
    per_slice = round(SLICE_S / WORK_S)
    assert most <= per_slice + 1, f"{most} jobs ({most * WORK_S * 1000:.0f} ms) ran in one pass"
    assert sorted(order) == list(range(jobs)), "every job ran, once"


def test_jobs_start_in_the_order_their_answers_came():
    _, order = burst(300, sliced=True)
    assert order == list(range(300))


def test_each_event_loop_has_its_own_slices_and_does_not_outlive_them():
    import gc
    import weakref

    from vcrime_audit import slices

    async def main() -> tuple[weakref.ref, object]:
        await take_turn()
        loop = asyncio.get_running_loop()
        mine = slices._SLICES[loop]
        await take_turn()
        assert slices._SLICES[loop] is mine
        return weakref.ref(loop), mine

    first, a = asyncio.run(main())
    second, b = asyncio.run(main())
    assert a is not b
    del a, b
    gc.collect()
    assert first() is None and second() is None, "the slices kept a closed loop alive"



def test_a_loop_that_ends_while_jobs_wait_is_freed_with_its_slices():
    import gc
    import weakref

    from vcrime_audit import slices

    async def main() -> weakref.ref:
        loop = asyncio.get_running_loop()
        mine = slices._SLICES[loop] = LoopSlices(SLICE_S, Clock())
        mine.clock.now = 1.0  # the slice is over: whoever comes next waits in line
        mine._round_due = True  # and the round that would let them go never comes
        for _ in range(3):
            asyncio.create_task(take_turn())
        await asyncio.sleep(0)
        assert len(mine._waiting) == 3
        return weakref.ref(loop)  # asyncio.run cancels the waiting jobs and closes the loop

    ended = asyncio.run(main())
    gc.collect()
    assert ended() is None, "a cancelled job's place in line kept the closed loop alive"
