"""Engine overhead and multi-run replay throughput on the demo study (2 tasks x 2 seeds).

    python benchmarks/bench_study.py            # replay throughput only (no model)
    python benchmarks/bench_study.py --live     # also engine overhead vs direct backend calls

Engine overhead: the recorded requests of one run (then of two runs at once) are sent to the
local backend directly, then the same runs are played live through the engine (recording into
a fresh cassette, validator, store). Ratio = engine wall time / direct wall time; the local
backend serves one call at a time, so concurrency shows the engine's own cost, not batching.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path

from vcrime_audit.backends.base import GenerateRequest
from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.study import load_study, run_study

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "studies" / "demo.yaml"
CASSETTES = ROOT / "cassettes" / "study-demo"


def replay_throughput() -> None:
    calls = sum(len(Cassette(p, RecordMode.none).calls) for p in CASSETTES.glob("*.jsonl.gz"))
    best, turns = float("inf"), 0
    for _ in range(3):
        with tempfile.TemporaryDirectory() as tmp:
            spec = load_study(STUDY).model_copy(update={"db": Path(tmp) / "s.sqlite",
                                                        "cassette_dir": CASSETTES})
            started = time.perf_counter()
            result = asyncio.run(run_study(spec, replay_only=True))
            best = min(best, time.perf_counter() - started)
            turns = result.turns
    size = sum(p.stat().st_size for p in CASSETTES.glob("*.jsonl.gz"))
    print(f"replay: {result.done} runs, {turns} turns, {calls} calls in {best:.3f} s = "
          f"{turns / best:.1f} turns/s, {calls / best:.0f} calls/s; cassettes {size / calls:.0f} bytes/call")


async def direct(requests_per_run: list[list[GenerateRequest]], backend, concurrency: int) -> float:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(requests):
        async with semaphore:
            for r in requests:
                await backend.generate(r)

    started = time.perf_counter()
    await asyncio.gather(*(one(rs) for rs in requests_per_run))
    return time.perf_counter() - started


def engine_overhead(concurrency: int, runs: int) -> None:
    from vcrime_audit.backends.local import LocalBackend
    from vcrime_audit.models import get_model

    model = get_model("smollm2-135m")
    study = load_study(STUDY)
    task, seeds = study.tasks[0], study.seeds[:runs]
    paths = [next(CASSETTES.glob(f"{task}-s{seed}-*.jsonl.gz")) for seed in seeds]
    requests = [[GenerateRequest.model_validate(c["request"]) for c in Cassette(p, RecordMode.none).calls]
                for p in paths]
    backend = LocalBackend({model.name: model})
    asyncio.run(backend.generate(requests[0][0]))  # load the model outside the timings
    direct_s = asyncio.run(direct(requests, backend, concurrency))
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(CASSETTES, Path(tmp) / "c")
        for p in (Path(tmp) / "c").glob("*.jsonl.gz"):
            p.unlink()
        spec = load_study(STUDY).model_copy(update={"db": Path(tmp) / "s.sqlite", "concurrency": concurrency,
                                                    "cassette_dir": Path(tmp) / "c"})
        spec = spec.model_copy(update={"tasks": [task], "seeds": seeds})
        started = time.perf_counter()
        asyncio.run(run_study(spec, backend=backend))
        engine_s = time.perf_counter() - started
    n = sum(len(r) for r in requests)
    print(f"concurrency {concurrency}, {len(requests)} run(s): {n} requests direct {direct_s:.1f} s, "
          f"through the engine {engine_s:.1f} s, ratio {engine_s / direct_s:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--live", action="store_true")
    parser.add_argument("--runs", type=int, default=2, choices=(1, 2),
                        help="runs of the study's first task to time (concurrency 1, then this many)")
    args = parser.parse_args()
    replay_throughput()
    if args.live:
        engine_overhead(1, 1)
        engine_overhead(args.runs, args.runs)
