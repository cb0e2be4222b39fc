"""Calls in flight and event-loop stalls of a study against a simulated model server.

The SCRIPTED backend (no model) answers after ``--latency-ms`` (default 200 ms) with unlimited
parallelism, like a vLLM server batching hundreds of sequences. The study runs in this process
(``run_study``, what ``vcrime-audit study --concurrency N`` calls), recording cassettes and a
store in a temporary folder, next to a heartbeat task.

Definitions:
- in flight: model calls started and not yet answered, sampled by the heartbeat;
- ideal: min(concurrency, runs not yet finished) -- a run has at most one call in flight;
- in-flight ratio: time integral of in-flight calls / time integral of the ideal, over the study;
- stall: how late the heartbeat (a 5 ms sleep) wakes up; the worst stall is the longest time the
  event loop ran something else without yielding.

    python benchmarks/bench_concurrency.py [--concurrency 256] [--latency-ms 200]
                                           [--attackers 8 --tasks 40 --seeds 3] [--max-turns 60] [--diagnose]

``--diagnose`` turns on asyncio debug mode, which logs every callback that held the loop
longer than 50 ms (debug mode itself slows the loop; use it to find, not to measure).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_study import load_average, study_spec  # noqa: E402

HEARTBEAT_S = 0.005


class Counting:
    """Passes calls through and counts those in flight."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name = inner, inner.name
        self.in_flight = 0
        self.calls = 0

    def fingerprint(self, model: str) -> dict[str, Any]:
        return self.inner.fingerprint(model)

    async def generate(self, request: Any) -> Any:
        self.in_flight += 1
        self.calls += 1
        try:
            return await self.inner.generate(request)
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        await self.inner.aclose()


async def measure(spec: Any) -> dict[str, float]:
    from vcrime_audit.backends.registry import make_backend
    from vcrime_audit.models import get_model
    from vcrime_audit.study import grid, run_study

    runs = grid(spec)
    names = {n for c in runs for n in (c.attacker, c.judge, c.world_manager)}
    backend = Counting(make_backend(spec.backend, {n: get_model(n) for n in names}))
    finished = 0
    done = asyncio.Event()

    def on_run(_: Any) -> None:
        nonlocal finished
        finished += 1

    flight = ideal = 0.0
    worst_stall, stalls_over_50 = 0.0, 0

    async def heartbeat() -> None:
        nonlocal flight, ideal, worst_stall, stalls_over_50
        loop = asyncio.get_running_loop()
        last = loop.time()
        while not done.is_set():
            await asyncio.sleep(HEARTBEAT_S)
            now = loop.time()
            stall = now - last - HEARTBEAT_S
            worst_stall = max(worst_stall, stall)
            stalls_over_50 += stall > 0.050
            dt = now - last
            flight += backend.in_flight * dt
            ideal += min(spec.concurrency, len(runs) - finished) * dt
            last = now

    beat = asyncio.create_task(heartbeat())
    started = time.perf_counter()
    progress = await run_study(spec, backend=backend, on_run=on_run)
    seconds = time.perf_counter() - started
    done.set()
    await beat
    await backend.aclose()
    return {"runs": progress.done, "turns": progress.turns, "calls": backend.calls, "seconds": seconds,
            "ratio": flight / ideal if ideal else float("nan"), "worst_stall": worst_stall,
            "stalls_over_50": stalls_over_50}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--attackers", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--max-turns", type=int, default=60, help="Turn cap (the paper's: 60).")
    parser.add_argument("--diagnose", action="store_true")
    args = parser.parse_args()
    if args.diagnose:
        logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        spec = study_spec(Path(tmp), args.attackers, args.tasks, args.seeds, args.concurrency,
                          args.latency_ms, max_turns=args.max_turns)
        scale = args.attackers * args.tasks * args.seeds
        print(f"grid {args.attackers} x {args.tasks} x {args.seeds} = {scale} runs, {args.max_turns}-turn "
              f"cap (the paper's: 960 runs, 60 turns), concurrency {args.concurrency}, SCRIPTED backend "
              f"with {args.latency_ms:.0f} ms per call; {load_average()}")
        result = asyncio.run(measure(spec), debug=args.diagnose)
    r = result
    print(f"{r['runs']} runs, {r['turns']} turns, {r['calls']} calls in {r['seconds']:.1f} s "
          f"({r['calls'] / r['seconds']:.0f} calls/s; a call takes {args.latency_ms:.0f} ms)")
    print(f"in-flight ratio {100 * r['ratio']:.1f} % of the ideal (target >= 95 %); worst event-loop "
          f"stall {1000 * r['worst_stall']:.1f} ms (target <= 50 ms), {r['stalls_over_50']} stalls over "
          f"50 ms; {load_average()}")


if __name__ == "__main__":
    main()
