"""Save cost per unit as a job grows: it must stay flat (linear total), not grow with the job.

    python benchmarks/bench_save.py

For an episode (a unit = a turn: 7 call records and its rows) and a certification (a unit = a
conversation: 5 call records and one row), records N = 10, 100, 1000 units through the real
Recorder, cassette journal and SQLite store, with call records copied from the committed demo
cassette. Prints the commit time per unit (cassette flush + fsync + store transaction), the
closing time (summary + compression) per unit, and their ratio against N = 10.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from vcrime_audit.backends.base import GenerateRequest, GenerateResult
from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.recorder import RUN, Recorder
from vcrime_audit.store import Store

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "cassettes" / "robotics_company__data_theft-s0-e3005c10.jsonl.gz"


def job(n_units: int, calls_per_unit: int, folder: Path) -> tuple[float, float]:
    template = Cassette(DEMO, RecordMode.none).calls
    store = Store(folder / "store.sqlite")
    cassette = Cassette(folder / "job.jsonl.gz", RecordMode.once)
    cassette.meta = {"kind": "bench"}
    recorder = Recorder(RUN, "bench", cassette, store)
    recorder.start({"run_id": "bench", "task_id": "t", "turns": 0})
    world = template[0]["request"]["messages"][-1]["content"]
    commit_seconds = 0.0
    for unit in range(n_units):
        for i in range(calls_per_unit):
            record = template[(unit * calls_per_unit + i) % len(template)]
            request = GenerateRequest.model_validate({**record["request"], "attempt": 0}).model_copy(
                update={"call": f"{record['request']['call']}-{unit}-{i}"})
            cassette.append(request, record["fingerprint"], GenerateResult.model_validate(record["result"]),
                            record["parsed"])
        rows = [{"run_id": "bench", "turn": unit, "seq": i, "role": "judge", "call": "assess",
                 "attempt": 0, "model": "m", "request_hash": "h", "ok": 1, "error": "",
                 "finish_reason": "stop", "prompt_tokens": 100, "completion_tokens": 50,
                 "seconds": 0.5} for i in range(calls_per_unit)]
        turn = {"run_id": "bench", "turn": unit, "world_before": world, "observation": world[:500]}
        started = time.perf_counter()
        recorder.commit(lambda rows=rows, turn=turn: (store.insert_rows("calls", rows),
                                                      store.insert_rows("turns", [turn])))
        commit_seconds += time.perf_counter() - started
    started = time.perf_counter()
    recorder.finish({"status": "max_turns"}, {"turn_rows_hash": "h", "rows": {}}, "turn_rows_hash")
    return commit_seconds / n_units, (time.perf_counter() - started) / n_units


def main() -> None:
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2 cores)")
    for name, calls in (("episode turns", 7), ("certification conversations", 5)):
        base = None
        for n in (10, 100, 1000):
            with tempfile.TemporaryDirectory() as tmp:
                commit, close = job(n, calls, Path(tmp))
            base = base or commit
            print(f"{name:>28} N={n:>4}: commit {commit * 1e3:6.2f} ms/unit "
                  f"(x{commit / base:.2f} of N=10), close {close * 1e3:6.3f} ms/unit")


if __name__ == "__main__":
    main()
