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


def burst(jobs: int, sliced: bool) -> tuple[int, list[int], list[int]]:
    """``jobs`` answers ready in one pass of the loop, next to a handle that comes round once per
    pass (a heartbeat): the most jobs that ran between two of its turns, the order the jobs ran
    in, and the jobs the slices counted."""
    clock = Clock()
    between: list[int] = []
    order: list[int] = []

    async def main() -> None:
        slices = LoopSlices(asyncio.get_running_loop(), SLICE_S, clock)
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
    return max(between), order, list(range(jobs))


def test_without_slices_the_whole_burst_runs_before_the_heartbeat():
    most, order, _ = burst(300, sliced=False)
    assert most == 300 and order == list(range(300))


@pytest.mark.parametrize("jobs", [1, 9, 10, 11, 300])
def test_with_slices_at_most_a_slice_of_work_runs_between_two_heartbeats(jobs):
    most, order, everyone = burst(jobs, sliced=True)
    per_slice = round(SLICE_S / WORK_S)
    assert most <= per_slice + 1, f"{most} jobs ({most * WORK_S * 1000:.0f} ms) ran in one pass"
    assert sorted(order) == everyone, "every job ran, once"


def test_jobs_start_in_the_order_their_answers_came():
    _, order, everyone = burst(300, sliced=True)
    assert order == everyone


def test_the_running_loop_has_one_set_of_slices():
    async def main() -> None:
        await take_turn()
        await take_turn()

    asyncio.run(main())
