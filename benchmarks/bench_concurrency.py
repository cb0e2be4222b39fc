"""Calls in flight and event-loop stalls of a study against a simulated model server.

The SCRIPTED backend (no model) answers after ``--latency-ms`` (default 200 ms) with unlimited
parallelism, like a vLLM server batching hundreds of sequences. The study runs in this process
(``run_study``, what ``vcrime-audit study --concurrency N`` calls), recording cassettes and a
store in a temporary folder, next to a heartbeat task.

Definitions:
- in flight: calls the simulated server is working on: from the moment the engine sends a call
  until ``latency`` later (an answer that waits for a blocked event loop no longer counts);
- ideal: min(concurrency, runs not yet finished) at each moment -- a run has at most one call in
  flight at a time;
- in-flight ratio: time integral of in-flight calls / time integral of the ideal, over the study;
- CPU per call: CPU time of the event loop's thread over the study / calls, split into the
  simulated server's (making the scripted answers, which a real server does elsewhere) and the
  study's own; the ideal leaves latency / concurrency of loop time per call;
- stall: how late the heartbeat (a 5 ms sleep) wakes up; the worst stall is the longest time the
  event loop ran something else without yielding. A watchdog thread samples the loop thread's
  stack during stalls and names the code that held the loop (a thread only gets to sample when
  the loop thread lets go of the GIL, so calls that release it -- hashing, compression, SQLite
  -- are over-represented; the list says where to look, not exact shares).

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
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_study import load_average, study_spec  # noqa: E402

HEARTBEAT_S = 0.005
STALL_S = 0.050


class Counting:
    """Passes calls through; notes when each call reached the (simulated) server."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name = inner, inner.name
        self.starts: list[float] = []
        self.server_cpu = 0.0
        """CPU seconds the simulated server spent making answers, on the event loop's thread (a
        real server spends them on its own machine)."""

    def fingerprint(self, model: str) -> dict[str, Any]:
        return self.inner.fingerprint(model)

    async def generate(self, request: Any) -> Any:
        self.starts.append(time.perf_counter())
        cpu = time.thread_time()
        result = self.inner.answer(request)
        self.server_cpu += time.thread_time() - cpu
        if result.seconds:
            await asyncio.sleep(result.seconds)
        return result

    async def aclose(self) -> None:
        await self.inner.aclose()


class Watchdog(threading.Thread):
    """While the event loop has not beaten for STALL_S, samples the loop thread's stack: the
    innermost vcrime_audit frame names what holds the loop."""

    def __init__(self, loop_thread: int) -> None:
        super().__init__(daemon=True)
        self.loop_thread, self.last_beat, self.stop = loop_thread, time.perf_counter(), False
        self.culprits: Counter[str] = Counter()

    def run(self) -> None:
        while not self.stop:
            time.sleep(0.010)
            if time.perf_counter() - self.last_beat > STALL_S:
                frame = sys._current_frames().get(self.loop_thread)
                self.culprits[culprit(frame)] += 1


def culprit(frame: Any) -> str:
    """'module.function' of the innermost vcrime_audit frame, with the outermost one for context."""
    ours = []
    while frame is not None:
        name = frame.f_code.co_filename
        if "vcrime_audit" in name:
            ours.append(f"{name.split('vcrime_audit/')[-1]}:{frame.f_code.co_name}")
        frame = frame.f_back
    if not ours:
        return "outside vcrime_audit"
    caller = next((f for f in ours[1:] if not f.startswith("canonical.py")), "")
    return f"{ours[0]} <- {caller}" if caller else ours[0]


def ideal_integral(concurrency: int, total_runs: int, start: float, finishes: list[float],
                   end: float) -> float:
    """Integral over the study of min(concurrency, runs not yet finished) dt."""
    area, t, left = 0.0, start, total_runs
    for finish in sorted(finishes):
        area += min(concurrency, left) * (finish - t)
        t, left = finish, left - 1
    return area + min(concurrency, left) * max(0.0, end - t)


async def measure(spec: Any, latency_s: float) -> dict[str, Any]:
    from vcrime_audit.backends.registry import make_backend
    from vcrime_audit.models import get_model
    from vcrime_audit.study import grid, run_study

    runs = grid(spec)
    names = {n for c in runs for n in (c.attacker, c.judge, c.world_manager)}
    backend = Counting(make_backend(spec.backend, {n: get_model(n) for n in names}))
    finishes: list[float] = []
    done = asyncio.Event()
    stalls: list[float] = []
    watchdog = Watchdog(threading.get_ident())

    async def heartbeat() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(HEARTBEAT_S)
            now = time.perf_counter()
            stalls.append(now - last - HEARTBEAT_S)
            watchdog.last_beat = last = now

    beat = asyncio.create_task(heartbeat())
    watchdog.start()
    started, cpu = time.perf_counter(), time.thread_time()
    progress = await run_study(spec, backend=backend, on_run=lambda _: finishes.append(time.perf_counter()))
    ended, loop_cpu = time.perf_counter(), time.thread_time() - cpu
    done.set()
    await beat
    watchdog.stop = True
    await backend.aclose()
    busy = sum(min(s + latency_s, ended) - s for s in backend.starts)
    ideal = ideal_integral(spec.concurrency, len(runs), started, finishes, ended)
    return {"runs": progress.done, "turns": progress.turns, "calls": len(backend.starts),
            "seconds": ended - started, "ratio": busy / ideal if ideal else float("nan"),
            "worst_stall": max(stalls, default=0.0), "stalls_over_50": sum(s > STALL_S for s in stalls),
            "stalled_s": sum(s for s in stalls if s > STALL_S), "culprits": watchdog.culprits,
            "loop_cpu": loop_cpu, "server_cpu": backend.server_cpu}


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
        result = asyncio.run(measure(spec, args.latency_ms / 1000), debug=args.diagnose)
    r = result
    print(f"{r['runs']} runs, {r['turns']} turns, {r['calls']} calls in {r['seconds']:.1f} s "
          f"({r['calls'] / r['seconds']:.0f} calls/s; a call takes {args.latency_ms:.0f} ms)")
    print(f"in-flight ratio {100 * r['ratio']:.1f} % of the ideal (target >= 95 %); worst event-loop "
          f"stall {1000 * r['worst_stall']:.1f} ms (target <= 50 ms), {r['stalls_over_50']} stalls over "
          f"50 ms ({r['stalled_s']:.1f} s in all); {load_average()}")
    per_call = 1000 * r["loop_cpu"] / r["calls"]
    own = 1000 * (r["loop_cpu"] - r["server_cpu"]) / r["calls"]
    budget = args.latency_ms / args.concurrency
    print(f"CPU of the event loop's thread {r['loop_cpu']:.1f} s = {per_call:.2f} ms per call, "
          f"of which the simulated server's answers {r['server_cpu']:.1f} s; the study's own "
          f"{own:.2f} ms per call, where the ideal ({args.concurrency} calls in flight, "
          f"{args.latency_ms:.0f} ms each) leaves {budget:.2f} ms per call")
    samples = sum(r["culprits"].values())
    if samples:
        print("what held the loop during stalls (share of 10 ms watchdog samples, innermost "
              "vcrime_audit frame <- its caller):")
        for where, n in r["culprits"].most_common(12):
            print(f"  {100 * n / samples:5.1f} %  {where}")


if __name__ == "__main__":
    main()
