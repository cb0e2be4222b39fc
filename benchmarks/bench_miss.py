"""How long a replay takes to report a miss: the nearest recorded request found, its diff shown.

    python benchmarks/make_study.py --out DIR --attackers 1 --seeds 3
    python benchmarks/bench_miss.py DIR [--cassettes 8]

Copies the first ``--cassettes`` run cassettes of DIR with one location's description edited in
their recorded initial world, each signed afresh (``persist.write_records``: only the replay can
tell), replays each, and prints the seconds to the miss and how many of them ranking the
recorded requests took (``cassette.diff.nearest``). Every run of a study meets a miss when it is
replayed after a prompt or scenario change.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_study import bad_input, load_average, main_with_input_errors, read_cassette  # noqa: E402

import vcrime_audit.cassette.cassette as cassette_module  # noqa: E402
from vcrime_audit.cassette import Cassette, CassetteMiss, RecordMode  # noqa: E402
from vcrime_audit.cassette.persist import read_records, write_records  # noqa: E402
from vcrime_audit.runner import replay_loaded  # noqa: E402
from vcrime_audit.store import Store  # noqa: E402


def edited_copy(path: Path, folder: Path) -> Path:
    records = read_records(path)
    location = next(iter(records[0]["meta"]["initial_world"]["locations"].values()))
    location["description"] += " (edited)"
    copy = folder / path.name
    write_records(copy, records)
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--cassettes", type=int, default=8)
    args = parser.parse_args()
    ranking: list[float] = []
    ranked = cassette_module.nearest

    def timed_nearest(*a, **k):
        started = time.perf_counter()
        try:
            return ranked(*a, **k)
        finally:
            ranking.append(time.perf_counter() - started)

    cassette_module.nearest = timed_nearest
    paths = sorted(args.corpus.glob("cassettes/*.jsonl.gz"))[:args.cassettes]
    if not paths:
        raise bad_input(f"{args.corpus}: no cassettes (*.jsonl.gz) in its cassettes/ folder; fix: record "
                        f"a corpus with `python benchmarks/make_study.py --out {args.corpus}`")
    for path in paths:
        if "initial_world" not in read_cassette(path).meta:
            raise bad_input(f"{path}: not a run's cassette (its meta holds no initial_world); fix: "
                            "give a corpus of run cassettes (benchmarks/make_study.py)")
    print(f"{len(paths)} cassettes of {args.corpus}, each edited; {load_average()}")
    total = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            cassette = Cassette(edited_copy(path, Path(tmp)), RecordMode.none)
            store = Store.in_memory()
            started = time.perf_counter()
            try:
                asyncio.run(replay_loaded(cassette, store))
                raise SystemExit(f"{path.name}: replayed without a miss")
            except CassetteMiss:
                seconds = time.perf_counter() - started
            finally:
                store.close()
            total += seconds
            print(f"  {path.name}: miss after {seconds:.3f} s ({ranking[-1]:.3f} s ranking "
                  f"{len(cassette.calls)} recorded calls)")
    print(f"seconds to a miss: {total / len(paths):.3f} on average, {max(ranking):.3f} the longest "
          f"ranking; {load_average()}")


if __name__ == "__main__":
    main_with_input_errors(main)
