"""Replay speed against the speed of the cassette's own data.

    python benchmarks/bench_replay.py [CASSETTE ...] [--repeats 5] [--profile]

Per cassette (default: the committed demo cassettes):
- replay: wall time of ``runner.replay`` into a new temporary store (best of ``--repeats``),
  checked identical to the recording;
- limit: wall time of merely reading the file, decompressing it and parsing every JSON line
  (best of ``--repeats``);
- ratio = limit / replay, i.e. replay speed as a share of the speed of its own data (issue 12's
  target is >= 20 %).
``--profile`` adds the top functions of one profiled replay (cProfile, by own time and by
cumulative time), each marked with the layer it belongs to.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gzip
import json
import os
import pstats
import tempfile
import time
from pathlib import Path

from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.runner import replay

ROOT = Path(__file__).resolve().parent.parent


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs (shared machine)"


def read_limit(path: Path) -> float:
    started = time.perf_counter()
    data = gzip.decompress(path.read_bytes())
    for line in data.decode("utf-8").splitlines():
        json.loads(line)
    return time.perf_counter() - started


def replay_once(path: Path) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        outcome = asyncio.run(replay(path, Path(tmp) / "r.sqlite"))
        seconds = time.perf_counter() - started
    if not outcome.identical:
        raise SystemExit(f"{path}: replay differs from the recording")
    return seconds, outcome.turns


def layer(filename: str) -> str:
    for part, name in (("/cassette/", "cassette"), ("/store/", "store"), ("sqlite", "store"),
                       ("/vcrime_audit/", "engine"), ("pydantic", "pydantic"), ("jinja2", "jinja2")):
        if part in filename:
            return name
    return "other"


def profile(path: Path, top: int = 15) -> None:
    profiler = cProfile.Profile()
    with tempfile.TemporaryDirectory() as tmp:
        profiler.enable()
        asyncio.run(replay(path, Path(tmp) / "r.sqlite"))
        profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    entries = stats.stats  # type: ignore[attr-defined]
    for title, column in (("own time", 2), ("cumulative time", 3)):
        print(f"  profile, top {top} by {title} (of {total:.3f} s profiled):")
        ranked = sorted(entries.items(), key=lambda kv: kv[1][column], reverse=True)[:top]
        for (filename, line, func), (_, calls, tt, ct, _) in ranked:
            short = filename.split("site-packages/")[-1].split("vcrime_audit/")[-1]
            print(f"    {tt if column == 2 else ct:7.3f} s {calls:>8} calls  [{layer(filename):8}] "
                  f"{short}:{line} {func}")


def measure(path: Path, repeats: int, with_profile: bool) -> None:
    calls = len(Cassette(path, RecordMode.none).calls)
    runs = [replay_once(path) for _ in range(repeats)]
    best, turns = min(s for s, _ in runs), runs[0][1]
    limit = min(read_limit(path) for _ in range(repeats))
    print(f"{path.name}: {calls} calls, {turns} turns, {path.stat().st_size / calls:.0f} bytes/call")
    print(f"  replay {1000 * best:.1f} ms ({turns / best:.1f} turns/s), read+decompress+parse "
          f"{1000 * limit:.2f} ms; replay/limit ratio {100 * limit / best:.2f} % (best of {repeats}); "
          f"{load_average()}")
    if with_profile:
        profile(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cassettes", nargs="*", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="Also print a cProfile of one replay.")
    args = parser.parse_args()
    paths = args.cassettes or sorted((ROOT / "cassettes").glob("robotics_company__*.jsonl.gz"))
    for p in paths:
        measure(p, args.repeats, args.profile)


if __name__ == "__main__":
    main()
