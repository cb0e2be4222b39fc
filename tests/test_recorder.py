"""The recorder's claim on a job, taken on the store's writer thread while a job records, and its
turn commits, which run behind the next turn's model calls."""

import asyncio
import threading

import pytest

from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.recorder import RUN, Recorder, TurnCommits, WriterBusy
from vcrime_audit.store import Store

ROW = {"run_id": "job", "task_id": "t", "seed": 0, "attacker": "a", "judge": "j"}


def test_two_tasks_starting_one_recording_job_claim_it_once(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    first, second = (Recorder(RUN, "job", Cassette(tmp_path / f"{name}.jsonl.gz", RecordMode.once), store)
                     for name in ("first", "second"))

    async def main() -> list[object]:
        return await asyncio.gather(first.start_off_loop(ROW), second.start_off_loop(ROW),
                                    return_exceptions=True)

    try:
        results = asyncio.run(main())
        assert results[0] is None
        assert isinstance(results[1], WriterBusy) and "listed twice" in str(results[1])
        assert store.run("job")["status"] == "running"
    finally:
        store.close()


def test_a_failed_claim_off_the_loop_leaves_the_job_free(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    recorder = Recorder(RUN, "job", Cassette(tmp_path / "a.jsonl.gz", RecordMode.once), store)

    def broken(_store: Store) -> None:
        raise RuntimeError("the clear step fails")

    try:
        try:
            asyncio.run(recorder.start_off_loop(ROW, clear=broken))
        except RuntimeError:
            pass
        else:
            raise AssertionError("the failure was swallowed")
        asyncio.run(recorder.start_off_loop(ROW))  # not "listed twice": the claim was dropped
        assert store.run("job")["status"] == "running"
    finally:
        store.close()


@pytest.fixture
def recorder(tmp_path):
    """A recording job's recorder on a fresh store (closed after the test)."""
    store = Store(tmp_path / "s.sqlite")
    yield Recorder(RUN, "job", Cassette(tmp_path / "a.jsonl.gz", RecordMode.once), store)
    store.close()


def test_turn_commits_run_behind_the_next_calls_one_at_a_time_in_order(recorder):
    commits = TurnCommits(recorder)
    second_may_commit = threading.Event()
    written, told = [], []

    def turn(n: int):
        def write(s: Store) -> None:
            if n == 2:
                assert second_may_commit.wait(10)
            s.db.conn.execute("UPDATE runs SET turns = ? WHERE run_id = 'job'", [n])
            written.append(n)
        return write

    async def main() -> None:
        await recorder.start_off_loop(ROW)
        await commits.add(turn(1), lambda: told.append(1))  # the first opens the journal: in line
        assert written == told == [1] and recorder.cassette.journal_open
        await commits.add(turn(2), lambda: told.append(2))  # returns while its commit waits
        assert written == told == [1]
        asyncio.get_running_loop().call_later(0.2, second_may_commit.set)
        await commits.add(turn(3), lambda: told.append(3))  # waits for the second first
        assert written[:2] == told[:2] == [1, 2]
        await commits.wait()
        assert written == told == [1, 2, 3]

    asyncio.run(main())
    assert recorder.store.run("job")["turns"] == 3


def test_a_failed_commit_is_raised_by_the_next_turn_and_settled_after_a_crash(recorder):
    commits = TurnCommits(recorder)

    def broken(_store: Store) -> None:
        raise RuntimeError("the store refused the turn")

    async def main() -> None:
        await recorder.start_off_loop(ROW)
        await commits.add(lambda s: None)
        await commits.add(broken)
        with pytest.raises(RuntimeError, match="refused"):
            await commits.add(lambda s: None)
        await commits.add(broken)
        await commits.settle()  # the job's own failure is the one reported; this one is retrieved
        await commits.wait()  # nothing left in flight

    asyncio.run(main())
