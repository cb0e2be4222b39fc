"""A recorded study re-checked from its cassettes: replay on every core, merge, verify, audit.

    python benchmarks/make_study.py --out DIR [--attackers 8 --tasks 40 --seeds 3]
    python benchmarks/bench_recheck.py DIR [--workers 2]

The grid is the one make_study.py wrote to DIR/study.yaml.

Phases, each a fresh process (as a user runs them), timed in wall seconds:
1. replay: ``study --replay --shard i/W`` for i = 1..W at once, each into its own store; every
   run is replayed from its cassette, its turn rows compared with the recording (checksums,
   chain and row hashes on);
2. merge: ``merge`` of the W shard stores into one;
3. verify: ``verify --db --workers W`` of the merged store: every run re-derived from its
   cassette again, in W processes, and compared row by row;
4. audit: ``audit`` of the merged store (all metrics, 10,000 resamples, report and figures).
Prints each phase, the total (issue 12's target: < 60 s on 2 cores for the 960-run grid), the
peak resident memory of the largest process (target < 1 GB) and the load average.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_study import SCRIPTED_MODELS, STUDY_FILE, load_average  # noqa: E402

from vcrime_audit.study import StudyConfig  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def phase(name: str, commands: list[list[str]], env: dict[str, str]) -> float:
    """Run the commands at once; their wall time. Any failure stops the benchmark."""
    started = time.perf_counter()
    procs = [subprocess.Popen(c, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for c in commands]
    outputs = [p.communicate()[0] for p in procs]
    seconds = time.perf_counter() - started
    for command, proc, output in zip(commands, procs, outputs, strict=True):
        if proc.returncode:
            raise SystemExit(f"{name}: `{' '.join(command[2:])}` exited {proc.returncode}:\n{output[-3000:]}")
    last = [line for out in outputs for line in out.splitlines() if line.strip()][-1:]
    print(f"{name:7} {seconds:7.1f} s  ({len(commands)} process(es); last line: {last[0] if last else ''})",
          flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="Folder written by make_study.py --out.")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    corpus = args.corpus.resolve()
    spec = StudyConfig.model_validate(yaml.safe_load((corpus / STUDY_FILE).read_text(encoding="utf-8")))
    cli = [sys.executable, "-m", "vcrime_audit.cli"]
    env = {**os.environ, "VCRIME_MODELS": str(corpus / SCRIPTED_MODELS),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory(prefix="vcrime-recheck-") as tmp:
        out = Path(tmp)
        config = out / "study.yaml"
        config.write_text(yaml.safe_dump(spec.model_copy(update={"db": out / "study.sqlite"}).model_dump(
            mode="json")), encoding="utf-8")
        shards = [out / f"shard-{i}.sqlite" for i in range(1, args.workers + 1)]
        print(f"re-checking {len(list(spec.cassette_dir.glob('*.jsonl.gz')))} cassettes of {corpus} "
              f"on {args.workers} worker(s); {load_average()}")
        seconds = {
            "replay": phase("replay", [[*cli, "study", str(config), "--replay", "--shard",
                                        f"{i}/{args.workers}", "--db", str(db)]
                                       for i, db in enumerate(shards, start=1)], env),
            "merge": phase("merge", [[*cli, "merge", str(out / "merged.sqlite"), *map(str, shards)]], env),
            "verify": phase("verify", [[*cli, "verify", "--db", str(out / "merged.sqlite"), "--workers",
                                        str(args.workers), str(spec.cassette_dir)]], env),
            "audit": phase("audit", [[*cli, "audit", "--db", str(out / "merged.sqlite"), "--out",
                                      str(out / "report")]], env),
        }
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    total = sum(seconds.values())
    print(f"total {total:.1f} s wall (target < 60 s for 960 runs on 2 cores); peak memory of one "
          f"process {peak_mb:.0f} MB (target < 1024 MB); {load_average()}")


if __name__ == "__main__":
    main()
