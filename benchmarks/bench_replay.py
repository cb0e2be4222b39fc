"""Replay speed against the speed of the cassette's own data.

    python benchmarks/bench_replay.py [CASSETTE ...] [--repeats 5] [--profile]

Per cassette (default: the committed demo cassettes):
- replay: wall time of ``runner.replay`` into a new temporary store (best of ``--repeats``),
  checked identical to the recording;
  and into a new store that already has its tables (a copy of an empty migrated store), which
  leaves out the one-off cost of creating tables;
- limit: wall time of merely reading the file, decompressing it and parsing every JSON line
  (best of ``--repeats``);
- ratio = limit / replay, i.e. replay speed as a share of the speed of its own data (issue 12's
  target is >= 20 %).
``--profile`` adds the top functions of one profiled replay into a store with tables (cProfile,
by own time and by cumulative time), each marked with the layer it belongs to.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gzip
import json
import os
import pstats
import shutil
import tempfile
import time
from pathlib import Path

from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.runner import replay
from vcrime_audit.store import Store

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


def replay_once(path: Path, template: Path | None = None) -> tuple[float, int]:
    """Seconds of one replay into a new store (a copy of ``template``, tables made, when given)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "r.sqlite"
        if template is not None:
            shutil.copyfile(template, db)
        started = time.perf_counter()
        outcome = asyncio.run(replay(path, db))
        seconds = time.perf_counter() - started
    if not outcome.identical:
        raise SystemExit(f"{path}: replay differs from the recording")
    return seconds, outcome.turns


def layer(filename: str, func: str) -> str:
    where = f"{filename} {func}"
    for part, name in (("/cassette/", "cassette"), ("/store/", "store"), ("sqlite", "store"),
                       ("/vcrime_audit/", "engine"), ("pydantic", "pydantic"), ("jinja2", "jinja2"),
                       ("json", "json")):
        if part in where:
            return name
    return "other"


def profile(path: Path, template: Path, top: int = 15) -> None:
    """cProfile of one replay into a store whose tables exist (creating them is profiled apart)."""
    profiler = cProfile.Profile()
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copyfile(template, Path(tmp) / "r.sqlite")
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
            print(f"    {tt if column == 2 else ct:7.3f} s {calls:>8} calls  [{layer(filename, func):8}] "
                  f"{short}:{line} {func}")


def measure(path: Path, repeats: int, with_profile: bool) -> None:
    calls = len(Cassette(path, RecordMode.none).calls)
    with tempfile.TemporaryDirectory() as tmp:
        template = Path(tmp) / "template.sqlite"
        Store(template).db.conn.close()
        runs = [replay_once(path) for _ in range(repeats)]
        warm = [replay_once(path, template) for _ in range(repeats)]
        limit = min(read_limit(path) for _ in range(repeats))
        best, turns = min(s for s, _ in runs), runs[0][1]
        best_warm = min(s for s, _ in warm)
        print(f"{path.name}: {calls} calls, {turns} turns, {path.stat().st_size / calls:.0f} bytes/call; "
              f"read+decompress+parse {1000 * limit:.2f} ms (best of {repeats}); {load_average()}")
        print(f"  replay into a new store: {1000 * best:.1f} ms ({turns / best:.1f} turns/s); "
              f"replay/limit ratio {100 * limit / best:.2f} %")
        print(f"  replay into a store whose tables exist: {1000 * best_warm:.1f} ms "
              f"({turns / best_warm:.1f} turns/s); replay/limit ratio {100 * limit / best_warm:.2f} %")
        if with_profile:
            profile(path, template)


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
