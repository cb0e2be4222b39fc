"""A recorded study re-checked from its cassettes: replay on every core, verify, audit.

    python benchmarks/make_study.py --out DIR [--attackers 8 --tasks 40 --seeds 3]
    python benchmarks/bench_recheck.py DIR [--workers 2] [--shards]

The grid is the one make_study.py wrote to DIR/study.yaml.

Phases, each a fresh process (as a user runs them), timed in wall seconds:
1. replay: ``study --replay --processes W`` into one store: every run is replayed from its
   cassette, in one of W worker processes that share the grid and the store, and its turn rows
   read back and compared with the recording (checksums, chain and row hashes on).
   ``--shards`` replays as a cluster does instead: ``study --replay --shard i/W`` for i = 1..W
   at once, each into its own store, then ``merge`` of the W stores into one (its own phase);
2. verify: ``verify --db --workers W`` of that store: every run re-derived from its cassette
   again, in W processes, and compared row by row;
3. audit: ``audit`` of the store (all metrics, 10,000 resamples, report and figures).
Prints each phase (wall seconds, and its processes' CPU seconds as a share of all cores), the total
(issue 12's target: < 60 s on 2 cores for the 960-run grid), the peak resident memory of the
largest process (target < 1 GB) and the load average.

The data limit is measured in the same run, before the phases and after them: W processes
reading, decompressing and JSON-parsing every cassette (``bench_replay.read_limit``, issue 12's
limit for one replay, here for the whole corpus). The total and each phase are also printed as
multiples of the mean of the two, with how far the two lie apart. The limit moves with this
shared host's speed too, but not in step with the phases (it is small loops in C, they are large
heaps of Python objects): the multiple does not make two hours comparable. The first measure
reads from the disk where the page cache lost the cassettes (its share of the cores shows it).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_replay import read_limit  # noqa: E402
from make_study import (  # noqa: E402
    SCRIPTED_MODELS,
    code_state,
    corpus_study,
    load_average,
    main_with_input_errors,
)

ROOT = Path(__file__).resolve().parent.parent
CORES = os.cpu_count() or 2


def phase(name: str, commands: list[list[str]], env: dict[str, str]) -> float:
    """Run the commands at once; their wall time. Any failure stops the benchmark."""
    started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    procs = [subprocess.Popen(c, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for c in commands]
    outputs = [p.communicate()[0] for p in procs]
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    for command, proc, output in zip(commands, procs, outputs, strict=True):
        if proc.returncode:
            raise SystemExit(f"{name}: `{' '.join(command[2:])}` exited {proc.returncode}:\n{output[-3000:]}")
    last = [line for out in outputs for line in out.splitlines() if line.strip()][-1:]
    print(f"{name:7} {seconds:7.1f} s  CPU {cpu:6.1f} s ({cpu / seconds / CORES:4.0%} of {CORES} cores; "
          f"{len(commands)} process(es); last line: {last[0] if last else ''})", flush=True)
    return seconds


def _read_cassettes(paths: list[Path]) -> float:
    return sum(read_limit(path)[1] for path in paths)


def data_limit(cassettes: list[Path], workers: int) -> float:
    """Wall seconds of ``workers`` processes (started beforehand) reading, decompressing and
    JSON-parsing the cassettes, each process a slice of them. Prints the processes' CPU too."""
    slices = [cassettes[i::workers] for i in range(workers)]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        pool.map(abs, range(workers))
        started = time.perf_counter()
        cpu = sum(pool.map(_read_cassettes, slices))
        seconds = time.perf_counter() - started
    print(f"limit   {seconds:7.1f} s  CPU {cpu:6.1f} s ({cpu / seconds / CORES:4.0%} of {CORES} cores; "
          f"{workers} process(es) reading, decompressing and JSON-parsing {len(cassettes)} cassettes)",
          flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="Folder written by make_study.py --out.")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--shards", action="store_true",
                        help="Replay W shards into W stores at once and merge them, not W worker "
                             "processes into one store.")
    args = parser.parse_args()
    corpus = args.corpus.resolve()
    spec = corpus_study(corpus)
    cli = [sys.executable, "-m", "vcrime_audit.cli"]
    env = {**os.environ, "VCRIME_MODELS": str(corpus / SCRIPTED_MODELS),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory(prefix="vcrime-recheck-") as tmp:
        out = Path(tmp)
        config = out / "study.yaml"
        config.write_text(yaml.safe_dump(spec.model_copy(update={"db": out / "study.sqlite"}).model_dump(
            mode="json")), encoding="utf-8")
        store = out / "study.sqlite"
        how = "shards, then merge" if args.shards else "worker processes sharing one store"
        cassettes = sorted(spec.cassette_dir.glob("*.jsonl.gz"))
        print(f"re-checking {len(cassettes)} cassettes of {corpus} "
              f"on {args.workers} worker(s) ({how}); {load_average()}; {code_state()}")
        limits = [data_limit(cassettes, args.workers)]
        seconds: dict[str, float] = {}
        if args.shards:
            shards = [out / f"shard-{i}.sqlite" for i in range(1, args.workers + 1)]
            seconds["replay"] = phase("replay", [[*cli, "study", str(config), "--replay", "--shard",
                                                  f"{i}/{args.workers}", "--db", str(db)]
                                                 for i, db in enumerate(shards, start=1)], env)
            seconds["merge"] = phase("merge", [[*cli, "merge", str(store), *map(str, shards)]], env)
        else:
            seconds["replay"] = phase("replay", [[*cli, "study", str(config), "--replay", "--processes",
                                                  str(args.workers)]], env)
        seconds["verify"] = phase("verify", [[*cli, "verify", "--db", str(store), "--workers",
                                              str(args.workers), str(spec.cassette_dir)]], env)
        seconds["audit"] = phase("audit", [[*cli, "audit", "--db", str(store), "--out",
                                            str(out / "report")]], env)
        limits.append(data_limit(cassettes, args.workers))
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    total = sum(seconds.values())
    print(f"total {total:.1f} s wall (target < 60 s for 960 runs on 2 cores); peak memory of one "
          f"process {peak_mb:.0f} MB (target < 1024 MB); {load_average()}")
    limit = sum(limits) / len(limits)
    shares = ", ".join(f"{name} {value / limit:.2f}" for name, value in seconds.items())
    print(f"total / data limit {total / limit:.2f} ({shares}); the limit {limit:.1f} s, its two "
          f"measures {max(limits) / min(limits) - 1:.0%} apart")


if __name__ == "__main__":
    main_with_input_errors(main)
