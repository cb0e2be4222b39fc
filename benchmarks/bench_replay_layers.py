"""Where a replay's CPU goes, layer by layer, and the floor that leaves for issue 12's targets.

    python benchmarks/bench_replay_layers.py [CORPUS] [--runs 20] [--rounds 3]

CORPUS is a folder of run cassettes (``CORPUS/cassettes/*.jsonl.gz``, else any under it),
e.g. one ``benchmarks/make_study.py --out /tmp/c120 --attackers 1 --seeds 3`` records; by default
the committed ``cassettes/`` (the demo runs). ``--runs`` run cassettes, evenly spaced in name
order (others, such as certifications, are left out), are played in this process, each layer
timed apart, in CPU time of this process, best of ``--rounds``. Spaced, not the first ones: names
sort by task, and a grid's first 20 are all one map's (aircraft, whose small worlds projected the
960-run re-check at 53 s; 20 spread across the grid projected 57-61 s, and it took 65.6-66.6 s).

- read: reading, decompressing and parsing the file with the standard library (issue 12's
  "limit": the speed of the cassette's own data);
- load: ``Cassette(path, unread_requests=True)``, the checked reading a run's replay starts with
  (checksums, the summary's chain, the index of keys; the call lines read without their
  requests, which the replay proves from the bytes);
- engine: the episode derived again with the answers handed over in recorded order: prompts
  rendered, requests built, answers parsed and checked, patches applied and validated. No
  cassette keys, no comparison with the recording, no rows. The least any replay that re-derives
  the run must do in this code;
- + cassette: the same through the cassette (each request keyed, looked up and compared with the
  recorded one);
- + rows: ``runner.replay_loaded`` into a store in memory: the turns' rows written, read back and
  hashed, and the run checked identical to its recording (what ``verify`` does per run);
- replay to a file: ``runner.replay`` of the path into a new store file whose tables exist (what
  ``study --replay`` does per run; load included).

The projection scales each layer, per call, to the 960-run study (``--study-calls``: the
calls of the grid ``make_study.py`` records, 193,798 as ``bench_concurrency.py`` counted them) on
2 cores, both busy and nothing else to pay: the re-check (``study --replay`` + ``verify``) costs
about calls x (replay to a file + load + rows) / 2, and any re-check that derives each run twice
at least calls x 2 x (load + engine) / 2.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_replay import read_limit  # noqa: E402
from make_study import load_average, main_with_input_errors, read_cassette  # noqa: E402

from vcrime_audit.backends.base import GenerateRequest, GenerateResult  # noqa: E402
from vcrime_audit.cassette import Cassette, RecordMode  # noqa: E402
from vcrime_audit.cassette.cassette import RecordedCallError  # noqa: E402
from vcrime_audit.cassette.recording import RecordingBackend  # noqa: E402
from vcrime_audit.collector import collector_off_while_runs_play  # noqa: E402
from vcrime_audit.engine import Engine, EpisodeLimits, TurnRecord  # noqa: E402
from vcrime_audit.runner import _from_meta, _roles, replay, replay_loaded  # noqa: E402
from vcrime_audit.store import Store  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
STUDY_CALLS = 193_798
CORES = 2
TARGET_S = 60.0


class InOrder:
    """Answers each call with the next recorded answer, whatever was asked."""

    name = "in-order"

    def __init__(self, cassette: Cassette) -> None:
        self.records = cassette.calls
        self.fingerprints = {r["request"]["model"]: r["fingerprint"] for r in self.records}
        self.next = 0

    def fingerprint(self, model: str) -> dict[str, Any]:
        return self.fingerprints[model]

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        record = self.records[self.next]
        self.next += 1
        if record.get("error") is not None:
            raise RecordedCallError(record["error"]["message"])
        return GenerateResult.model_validate(record["result"])

    async def aclose(self) -> None:
        pass


async def _derive(cassette: Cassette, backend: Any) -> None:
    config, world, entries = _from_meta(cassette)
    engine = Engine(backend, _roles(config, entries), EpisodeLimits(config.max_turns, config.stall_turns))

    async def on_turn(record: TurnRecord) -> None:
        pass

    with collector_off_while_runs_play():
        await engine.run(world, config.seed, on_turn)


def timed(prepare: Callable[[], Any], work: Callable[[Any], Any]) -> float:
    """CPU seconds of ``work(prepare())``, ``prepare`` left out."""
    made = prepare()
    started = time.process_time()
    work(made)
    return time.process_time() - started


def loaded(path: Path, unread_requests: bool = True) -> Callable[[], Cassette]:
    """The cassette as a run's replay reads it; in full (``unread_requests=False``) for the
    engine alone, which is handed the recorded answers in order (``Cassette.calls``)."""
    return lambda: Cassette(path, RecordMode.none, unread_requests=unread_requests)


def replay_in_memory(cassette: Cassette) -> None:
    store = Store.in_memory()
    try:
        outcome = asyncio.run(replay_loaded(cassette, store))
    finally:
        store.close()
    if not outcome.identical:
        raise SystemExit(f"{cassette.path}: replay differs from the recording")


def replay_to_file(template: Path, folder: Path, path: Path) -> Callable[[], Path]:
    def prepare() -> Path:
        db = folder / "replayed.sqlite"
        for stale in folder.glob("replayed.sqlite*"):
            stale.unlink()
        shutil.copyfile(template, db)
        return db

    return prepare


def layers(path: Path, template: Path, folder: Path) -> dict[str, float]:
    def play_to_file(db: Path) -> None:
        if not asyncio.run(replay(path, db)).identical:
            raise SystemExit(f"{path}: replay differs from the recording")

    return {
        "read": timed(lambda: None, lambda _: read_limit(path)),
        "load": timed(lambda: None, lambda _: loaded(path)()),
        "engine": timed(loaded(path, False), lambda c: asyncio.run(_derive(c, InOrder(c)))),
        "+ cassette": timed(loaded(path), lambda c: asyncio.run(_derive(c, RecordingBackend(c)))),
        "+ rows": timed(loaded(path), replay_in_memory),
        "replay to a file": timed(replay_to_file(template, folder, path), play_to_file),
    }


def run_cassettes(corpus: Path) -> list[Path]:
    """The run cassettes of a corpus, sorted by name: ``CORPUS/cassettes/*.jsonl.gz``, else any
    ``*.jsonl.gz`` under CORPUS (certifications and follow-ups left out)."""
    found = sorted(corpus.glob("cassettes/*.jsonl.gz")) or sorted(corpus.rglob("*.jsonl.gz"))
    return [p for p in found if "initial_world" in read_cassette(p).meta]


def evenly_spaced(items: list[Path], count: int) -> list[Path]:
    """``count`` of ``items`` (all of them if fewer), spaced evenly from the first on."""
    if count >= len(items):
        return list(items)
    return [items[i * len(items) // count] for i in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, nargs="?", default=ROOT / "cassettes")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--study-calls", type=int, default=STUDY_CALLS,
                        help="Calls of the study the projection is for (default: the 960-run grid).")
    args = parser.parse_args()
    paths = evenly_spaced(run_cassettes(args.corpus), args.runs)
    if not paths:
        raise SystemExit(f"error: {args.corpus}: no run cassettes (*.jsonl.gz) in it or in its "
                         "cassettes/ folder")
    calls = sum(len(Cassette(p, RecordMode.none).calls) for p in paths)
    print(f"{len(paths)} cassettes of {args.corpus}, {calls} calls; {load_average()}")
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        template = Path(tmp) / "template.sqlite"
        Store(template).close()
        for round_ in range(args.rounds):
            totals: dict[str, float] = {}
            for path in paths:
                for name, seconds in layers(path, template, Path(tmp)).items():
                    totals[name] = totals.get(name, 0.0) + seconds
            best = {k: min(v, best.get(k, v)) for k, v in totals.items()}
            print(f"round {round_ + 1}: " + ", ".join(f"{k} {1000 * v:.0f} ms" for k, v in totals.items()))
    runs = len(paths)
    print(f"CPU per run, best of {args.rounds} rounds (per call in brackets):")
    previous = None
    for name, seconds in best.items():
        step = "" if previous is None or name in ("read", "load", "engine", "replay to a file") \
            else f"  (+{1000 * (seconds - previous) / runs:.1f} ms over the layer above)"
        print(f"  {name:17} {1000 * seconds / runs:7.1f} ms  ({1e6 * seconds / calls:6.0f} us){step}")
        previous = seconds
    print(f"replay/limit ratio (issue 12: >= 20 %): {100 * best['read'] / best['replay to a file']:.1f} % "
          f"to a file, {100 * best['read'] / (best['load'] + best['+ rows']):.1f} % in memory")
    per_call = (best["replay to a file"] + best["load"] + best["+ rows"]) / calls
    floor = 2 * (best["load"] + best["engine"]) / calls
    print(f"projected re-check of {args.study_calls} calls (the 960-run study) on {CORES} busy cores "
          f"(study --replay + verify, nothing else to pay): {args.study_calls * per_call / CORES:.0f} s "
          f"(target < {TARGET_S:.0f} s); deriving each run twice with no cassette matching, rows or "
          f"hashes at all: {args.study_calls * floor / CORES:.0f} s")


if __name__ == "__main__":
    main_with_input_errors(main)
