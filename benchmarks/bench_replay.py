"""Replay speed against the speed of the cassette's own data.

    python benchmarks/bench_replay.py [CASSETTE ...] [--repeats 5] [--profile]

Per cassette (default: the committed demo cassettes):
- replay: wall time of ``runner.replay`` into a new temporary store (best of ``--repeats``),
  checked identical to the recording;
  and into a new store that already has its tables (a copy of an empty migrated store), which
  leaves out the one-off cost of creating tables;
- limit: wall time of merely reading the file, decompressing it and parsing every JSON line
  (best of ``--repeats``), with the cycle collector off as the replay has it
  (``collector_off_while_runs_play``): with it on, its passes over the ~60,000 objects a replay
  leaves alive (the memos, the modules) made the same read take 15-27 ms in one process;
- ratio = limit / replay, i.e. replay speed as a share of the speed of its own data (issue 12's
  target is >= 20 %), in wall time and in CPU time of this process (CPU time leaves out waiting
  for the disk and for other processes on a shared machine): best against best, and the median
  of each round's own ratio. The three are measured in turn within each of ``--repeats`` rounds,
  so that a round's figures share the host's speed of the moment.
``--profile`` adds the top functions of one profiled replay into a store with tables (cProfile,
by own time and by cumulative time), each marked with the layer it belongs to.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import gzip
import json
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from vcrime_audit.runner import replay
from vcrime_audit.store import Store

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_study import code_state, load_average, main_with_input_errors, read_cassette  # noqa: E402


def read_limit(path: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of reading, decompressing and parsing the cassette, the cycle
    collector off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        started, cpu = time.perf_counter(), time.process_time()
        data = gzip.decompress(path.read_bytes())
        for line in data.decode("utf-8").splitlines():
            json.loads(line)
        return time.perf_counter() - started, time.process_time() - cpu
    finally:
        if enabled:
            gc.enable()


def replay_once(path: Path, template: Path | None = None) -> tuple[float, float, int]:
    """(wall, CPU) seconds and turns of one replay into a new store (a copy of ``template``,
    whose tables exist, when given)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "r.sqlite"
        if template is not None:
            shutil.copyfile(template, db)
        started, cpu = time.perf_counter(), time.process_time()
        outcome = asyncio.run(replay(path, db))
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    if not outcome.identical:
        raise SystemExit(f"{path}: replay differs from the recording")
    return seconds, cpu, outcome.turns


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


def measure(path: Path, calls: int, repeats: int, with_profile: bool) -> None:
    """``repeats`` rounds, each the limit, a replay into a new store and one into a store whose
    tables exist, one after the other: this host's speed drifts by 10-40 % within minutes, so each
    round's three figures are taken at one speed. Printed: each figure's best over the rounds and
    their ratio, and the median of the rounds' own ratios."""
    with tempfile.TemporaryDirectory() as tmp:
        template = Path(tmp) / "template.sqlite"
        Store(template).db.conn.close()
        limits: list[tuple[float, float]] = []
        runs: list[tuple[float, float, int]] = []
        warm: list[tuple[float, float, int]] = []
        for _ in range(repeats):
            limits.append(read_limit(path))
            runs.append(replay_once(path))
            warm.append(replay_once(path, template))
        limit, limit_cpu = min(w for w, _ in limits), min(c for _, c in limits)
        turns = runs[0][2]
        print(f"{path.name}: {calls} calls, {turns} turns, {path.stat().st_size / calls:.0f} bytes/call; "
              f"read+decompress+parse {1000 * limit:.2f} ms wall, {1000 * limit_cpu:.2f} ms CPU "
              f"(best of {repeats} rounds); {load_average()}; {code_state()}")
        for title, results in (("into a new store", runs), ("into a store whose tables exist", warm)):
            best, best_cpu = min(r[0] for r in results), min(r[1] for r in results)
            paired = list(zip(limits, results, strict=True))
            rounds, rounds_cpu = (statistics.median(lim[i] / r[i] for lim, r in paired) for i in (0, 1))
            print(f"  replay {title}: {1000 * best:.1f} ms wall ({turns / best:.1f} turns/s), "
                  f"{1000 * best_cpu:.1f} ms CPU; replay/limit ratio {100 * limit / best:.2f} % wall, "
                  f"{100 * limit_cpu / best_cpu:.2f} % CPU (best against best); median of the rounds' "
                  f"ratios {100 * rounds:.2f} % wall, {100 * rounds_cpu:.2f} % CPU")
        if with_profile:
            profile(path, template)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cassettes", nargs="*", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="Also print a cProfile of one replay.")
    args = parser.parse_args()
    paths = args.cassettes or [ROOT / "cassettes" / "robotics_company__data_theft-s0-e3005c10.jsonl.gz"]
    calls = [len(read_cassette(p).calls) for p in paths]  # every input checked before the first measure
    for p, count in zip(paths, calls, strict=True):
        measure(p, count, args.repeats, args.profile)


if __name__ == "__main__":
    main_with_input_errors(main)
