"""Replay throughput and cassette size for the committed cassettes.

    python benchmarks/bench_replay.py [CASSETTE ...]

Prints, per cassette: calls, bytes per call, replay turns/s and calls/s (best of 5).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.runner import replay

ROOT = Path(__file__).resolve().parent.parent


def measure(path: Path, repeats: int = 5) -> None:
    cassette = Cassette(path, RecordMode.none)
    calls = len(cassette.calls)
    best = float("inf")
    turns = 0
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            outcome = asyncio.run(replay(path, Path(tmp) / "r.sqlite"))
            best = min(best, time.perf_counter() - started)
            turns = outcome.turns
            assert outcome.identical, f"{path}: replay differs from the recording"
    recorded_seconds = sum(c["result"]["seconds"] for c in cassette.calls)
    print(f"{path.name}: {calls} calls, {path.stat().st_size / calls:.0f} bytes/call, "
          f"{turns} turns; replay {best:.3f} s = {turns / best:.1f} turns/s, {calls / best:.0f} calls/s; "
          f"recorded model time {recorded_seconds:.1f} s = {recorded_seconds / max(turns, 1):.1f} s/turn, "
          f"{calls / max(turns, 1):.1f} calls/turn")


if __name__ == "__main__":
    demo = [ROOT / "cassettes" / "robotics_company__data_theft-s0-e3005c10.jsonl.gz"]
    paths = [Path(p) for p in sys.argv[1:]] or demo
    for p in paths:
        measure(p)
