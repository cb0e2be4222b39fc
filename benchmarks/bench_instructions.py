"""Instructions a replay executes, counted by valgrind: a figure that the host's speed does not move.

    python benchmarks/bench_instructions.py [CORPUS] [--runs 8] [--against OTHER_CHECKOUT]

On this shared 2-core host the same replay's CPU time drifts by 10-40 % within an hour, so a
change of a few per cent cannot be seen in seconds (``bench_replay_layers.py``). The number of
instructions it executes hardly moves (±1 % between repeats): it counts work, not how fast the
host does it. What it misses is memory: a change that makes fewer instructions wait longer for
memory counts as a gain here, so give the seconds too before calling a change faster.

Each count is taken in a fresh ``python`` under ``valgrind --tool=cachegrind --cache-sim=no`` (~25
times slower than without) with ``PYTHONHASHSEED=0``: once with one replay (imports, first-use work
and the warm-up), once with that replay and ``--runs`` more, spread across the corpus; the
difference, divided by ``--runs``, is a replay's count. A replay here is what ``verify`` does per
run, but read the store's own rows: the run cassette loaded, replayed into a store in memory
(``verify._replay_in_memory``), checked identical to its recording, and the rows it derived read as
verify reads them to compare.

CORPUS is a folder of run cassettes (``CORPUS/cassettes/*.jsonl.gz``, else any ``*.jsonl.gz`` under it;
default: the committed ``cassettes/``). ``--against DIR`` counts DIR's code too (another
checkout of this repository, e.g. ``git worktree add /tmp/base HEAD~3``), at the same time on
the other core, and prints the ratio; ``--pure`` counts this checkout with every module run as
Python too (``VCRIME_AUDIT_NATIVE=0``), against its compiled copies (``scripts/build_native.py``).
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def child(paths: list[Path]) -> None:
    """Replay each cassette as ``verify`` does (run in the counted process): into a store in
    memory, whose rows are then read as verify reads them to compare, the harm lexicon made
    ready first, as a study or ``verify`` makes it before its runs."""
    from vcrime_audit import harm
    from vcrime_audit.cassette import Cassette, RecordMode
    from vcrime_audit.verify import _replay_in_memory, _run_table_tuples

    try:
        harm.prepare_default_lexicon()
    except TypeError:  # a checkout before stop 40 takes the job's actions
        harm.prepare_default_lexicon(10**6)
    # read as verify and study --replay read it (a checkout before stop 42 reads every request)
    options = {"unread_requests": True} if "unread_requests" in inspect.signature(Cassette).parameters else {}
    for path in paths:
        outcome, _ = _replay_in_memory(Cassette(path, RecordMode.none, **options), _run_table_tuples)
        if not outcome.identical:
            raise SystemExit(f"{path}: replay differs from the recording")


def count(checkout: Path, paths: list[Path], native: bool = True) -> int:
    """Instructions valgrind counts for replaying ``paths`` with ``checkout``'s code (``native``:
    with its compiled modules where built, else all as Python)."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(checkout),
           "VCRIME_AUDIT_NATIVE": "1" if native else "0"}
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
               sys.executable, str(Path(__file__).resolve()), "--child", *map(str, paths)]
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"error: replaying with {checkout} under valgrind exited {done.returncode}:\n"
                         f"{done.stderr[-2000:]}")
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"error: valgrind printed no instruction count:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def per_replay(checkout: Path, paths: list[Path], runs: int, native: bool) -> float:
    warm_up, measured = paths[:1], paths[:1] + paths[1:1 + runs]
    with ThreadPoolExecutor(2) as pool:
        alone, together = pool.map(lambda p: count(checkout, p, native), (warm_up, measured))
    return (together - alone) / runs


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child([Path(p) for p in sys.argv[2:]])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, nargs="?", default=ROOT / "cassettes")
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--against", type=Path, help="Another checkout of this repository to count too.")
    parser.add_argument("--pure", action="store_true", help="Count this checkout with its modules run "
                        "as Python too (VCRIME_AUDIT_NATIVE=0), against its compiled copies.")
    args = parser.parse_args()
    if args.against and not (args.against / "vcrime_audit" / "__init__.py").is_file():
        raise SystemExit(f"error: --against {args.against}: not a checkout of this repository (no "
                         "vcrime_audit/__init__.py in it); fix: pass the folder of another checkout, "
                         "e.g. one made with `git worktree add`")
    if shutil.which("valgrind") is None:
        raise SystemExit("error: valgrind is not installed; fix: apt-get install -y valgrind")
    from bench_replay_layers import evenly_spaced, run_cassettes

    from vcrime_audit import native
    from vcrime_audit.cassette import Cassette, RecordMode

    runs = run_cassettes(args.corpus)
    if len(runs) < 2:
        raise SystemExit(f"error: {args.corpus}: fewer than 2 run cassettes; fix: record a corpus with "
                         "benchmarks/make_study.py --out DIR --attackers 1 --seeds 3")
    measured = evenly_spaced(runs[1:], args.runs)
    calls = sum(len(Cassette(p, RecordMode.none).calls) for p in measured) / len(measured)
    variants = [(str(ROOT), ROOT, native.enabled())]
    if args.pure:
        variants.append((f"{ROOT} as Python", ROOT, False))
    if args.against:
        variants.append((str(args.against.resolve()), args.against.resolve(), native.enabled()))
    print(f"{len(measured)} replays of {args.corpus} ({calls:.0f} calls each on average), counted by "
          f"valgrind (PYTHONHASHSEED=0); {native.summary()}:")
    with ThreadPoolExecutor(len(variants)) as pool:
        played = [runs[0], *measured]  # the warm-up, then the measured replays
        counts = list(pool.map(lambda v: per_replay(v[1], played, len(measured), v[2]), variants))
    for (label, _, _), instructions in zip(variants, counts, strict=True):
        print(f"  {label:40} {instructions / 1e6:8.1f} M instructions a replay "
              f"({instructions / calls / 1e3:.0f} k a call)")
    for (label, _, _), instructions in list(zip(variants, counts, strict=True))[1:]:
        print(f"ratio {variants[0][0]} / {label}: {counts[0] / instructions:.3f}")


if __name__ == "__main__":
    from make_study import main_with_input_errors

    main_with_input_errors(main)
