"""The recorder's claim on a job, taken on the store's writer thread while a job records."""

import asyncio

from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.recorder import RUN, Recorder, WriterBusy
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
