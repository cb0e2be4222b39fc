"""Calls in flight and event-loop stalls of a study against a simulated model server.

The SCRIPTED backend (no model) answers after ``--latency-ms`` (default 200 ms) with unlimited
parallelism, like a vLLM server batching hundreds of sequences. A real server makes its answers
on its own machine; the scripted backend makes them in the study's process, on its event loop
(~0.3 ms of CPU a call, a third of the loop's). So by default (``--answers ahead``) pass 1 plays
the same grid at no latency, keeping every answer by its request, and the timed pass 2 looks each
answer up (the study is seeded: it sends the same requests; any it lacks is made then and counted).
``--answers on-loop`` times the study with the answers made on the loop. The study runs in this process
(``run_study``, what ``vcrime-audit study --concurrency N`` calls) or, with ``--processes N``, in
N worker processes sharing the grid and the store (``run_study_processes``, what ``study
--processes N`` calls), recording cassettes and a store in a temporary folder. Each event loop
has a heartbeat task next to the study.

Definitions:
- in flight: calls the simulated server is working on: from the moment the engine sends a call
  until ``latency`` later (an answer that waits for a blocked event loop no longer counts);
- ideal: min(concurrency, runs not yet finished) at each moment -- a run has at most one call in
  flight at a time;
- in-flight ratio: time integral of in-flight calls / time integral of the ideal, over the study;
- CPU per call: CPU time of the event loops' threads over the study / calls, split into the
  simulated server's (making the scripted answers, or looking them up) and the study's own; the
  ideal leaves latency / concurrency x loops of loop time per call. Also the CPU time of the
  study's processes on every thread (the store's writer, the journal's fsync threads, the
  cassettes' compression) / calls, and what that costs at the ideal rate: CPU per call x
  concurrency / latency CPUs (above the machine's CPUs, the ideal cannot be reached);
- peak memory: the largest peak resident set of a process that played the study (with one
  process and ``--answers ahead``, pass 1 ran in it too);
- blocked: how long one callback of the event loop ran (``asyncio.Handle._run`` timed): while it
  runs no other run, timer or answer moves. The issue's "never blocked for more than 50 ms" is the
  longest of these;
- stall: how late a heartbeat (a 5 ms sleep) wakes up, from its first beat (the study's first
  pause; nothing waits on the loop before it). It adds to the blocked time every callback queued
  before the heartbeat's (the loop *busy*, not blocked) and, with several processes, the time
  the OS gave the loop's thread to another one. A watchdog thread samples the loop thread's
  stack during stalls and names the code that held the loop (a thread only gets to sample when
  the loop thread lets go of the GIL, so calls that release it -- compression, SQLite -- are
  over-represented; the list says where to look, not exact shares);
- both count until a loop's last call was answered (what it does after, closing the study, holds
  no call back); the cycle collector's passes are listed from the loop's first call.

    python benchmarks/bench_concurrency.py [--concurrency 256] [--latency-ms 200] [--processes 1]
                                           [--attackers 8 --tasks 40 --seeds 3] [--max-turns 60]
                                           [--answers ahead|on-loop] [--diagnose]

``--diagnose`` turns on asyncio debug mode, which logs every callback that held the loop
longer than 50 ms (debug mode itself slows the loop; use it to find, not to measure).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import marshal
import os
import resource
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_study import code_state, load_average, study_spec  # noqa: E402

from vcrime_audit.canonical import blake2b_hex  # noqa: E402

HEARTBEAT_S = 0.005
STALL_S = 0.050


class Wrapping:
    """A backend around the scripted one: its name, fingerprint and closing are the inner one's."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name = inner, inner.name

    def fingerprint(self, model: str) -> dict[str, Any]:
        return self.inner.fingerprint(model)

    async def aclose(self) -> None:
        await self.inner.aclose()


class Counting(Wrapping):
    """Passes calls through; notes when each call reached the (simulated) server."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.starts: list[float] = []
        self.server_cpu = 0.0
        """CPU seconds the simulated server spent making answers, on the event loop's thread (a
        real server spends them on its own machine)."""

    async def generate(self, request: Any) -> Any:
        self.starts.append(time.perf_counter())
        cpu = time.thread_time()
        result = self.inner.answer(request)
        self.server_cpu += time.thread_time() - cpu
        if result.seconds:
            await asyncio.sleep(result.seconds)
        return result


ANSWERS_ENV = "VCRIME_BENCH_ANSWERS"
"""Folder of the answers made ahead (``--answers ahead``): pass 1's workers write their answers
there, pass 2's workers read them all; a worker process is spawned and only sees the environment."""


def answer_key(request: Any) -> int:
    """The request's model, call, attempt, seed and messages, hashed. Not its canonical JSON:
    the study makes that off the loop, when it records the call; made here, it would be charged
    to the simulated server and moved onto the loop. Two requests alike in all of these would get
    one answer, and the study would then send requests pass 1 never saw: counted as missing."""
    parts = [request.model, request.call, str(request.attempt), str(request.sampling.seed),
             *(m.content for m in request.messages)]
    return int(blake2b_hex("\0".join(parts), 8), 16)


class MakingAnswers(Wrapping):
    """Pass 1 of ``--answers ahead``: the scripted backend (at no latency), keeping every answer
    by its request (the study is seeded: pass 2 sends the same requests)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.answers: dict[int, tuple[str, str, int, int]] = {}

    async def generate(self, request: Any) -> Any:
        result = self.inner.answer(request)
        self.answers[answer_key(request)] = (result.text, result.finish_reason, result.usage.prompt_tokens,
                                             result.usage.completion_tokens)
        return result

    def save(self, folder: Path) -> None:
        (folder / f"answers-{os.getpid()}.marshal").write_bytes(marshal.dumps(self.answers))


class AnswersMadeAhead(Wrapping):
    """Pass 2 of ``--answers ahead``: the scripted backend's answers, looked up (a real server
    makes its answers on its own machine, not on the study's cores); one it lacks is made as
    usual and counted."""

    def __init__(self, inner: Any, answers: dict[int, tuple[str, str, int, int]], load_s: float) -> None:
        super().__init__(inner)
        self.answers, self.load_s, self.missing = answers, load_s, 0

    @classmethod
    def load(cls, inner: Any, folder: Path) -> AnswersMadeAhead:
        started = time.perf_counter()
        answers: dict[int, tuple[str, str, int, int]] = {}
        for path in sorted(folder.glob("answers-*.marshal")):
            answers.update(marshal.loads(path.read_bytes()))
        return cls(inner, answers, time.perf_counter() - started)

    def answer(self, request: Any) -> Any:
        from vcrime_audit.backends.base import GenerateResult, Usage

        made = self.answers.get(answer_key(request))
        if made is None:
            self.missing += 1
            return self.inner.answer(request)
        text, finish, prompt, completion = made
        return GenerateResult(text=text, finish_reason=finish, seconds=self.inner.latency_s(request.model),
                              usage=Usage(prompt_tokens=prompt, completion_tokens=completion))


class Watchdog(threading.Thread):
    """While the event loop has not beaten for STALL_S, samples the loop thread's stack: the
    innermost vcrime_audit frame names what holds the loop."""

    def __init__(self, loop_thread: int) -> None:
        super().__init__(daemon=True)
        self.loop_thread, self.stop = loop_thread, False
        self.last_beat: float | None = None
        """None until the heartbeat's first beat."""
        self.culprits: Counter[str] = Counter()

    def run(self) -> None:
        while not self.stop:
            time.sleep(0.010)
            if self.last_beat is not None and time.perf_counter() - self.last_beat > STALL_S:
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


class CallbackTimes:
    """How long each callback of this process's event loops ran (``asyncio.Handle._run`` timed):
    the loop is *blocked* while one runs, and no other run, timer or answer moves. A heartbeat
    stall also counts the callbacks queued before the heartbeat's (the loop *busy*). Also the
    cycle collector's pauses, which happen inside callbacks."""

    def __init__(self) -> None:
        self.long: list[tuple[float, float, float, str]] = []
        """(when it started, seconds, CPU seconds of its thread, what) of each callback over
        STALL_S / 5 (CPU well under the wall time: the thread waited, for the interpreter lock or
        for a core)."""
        self.gc_pauses: list[tuple[float, int, float]] = []
        """(when it started, generation, seconds) of each pass."""
        self._gc_started = 0.0

    def install(self) -> None:
        import gc

        original = asyncio.events.Handle._run
        times = self

        def timed(handle: asyncio.Handle) -> None:
            started, cpu = time.perf_counter(), time.thread_time()
            original(handle)
            took = time.perf_counter() - started
            if took > STALL_S / 5:
                times.note(took, time.thread_time() - cpu, handle, started)

        asyncio.events.Handle._run = timed  # type: ignore[method-assign]
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.gc_pauses.append((self._gc_started, info["generation"],
                                   time.perf_counter() - self._gc_started))

    def note(self, took: float, cpu: float, handle: asyncio.Handle, started: float) -> None:
        callback = getattr(handle, "_callback", None)
        owner = getattr(callback, "__self__", None)
        coro = owner.get_coro() if isinstance(owner, asyncio.Task) else None
        what = getattr(coro, "__qualname__", None) or getattr(callback, "__qualname__", repr(callback))
        self.long.append((started, took, cpu, what))

    def figures(self) -> dict[str, Any]:
        return {"long_callbacks": self.long, "gc_pauses": self.gc_pauses}


def ideal_integral(concurrency: int, total_runs: int, start: float, finishes: list[float],
                   end: float) -> float:
    """Integral over the study of min(concurrency, runs not yet finished) dt."""
    area, t, left = 0.0, start, total_runs
    for finish in sorted(finishes):
        area += min(concurrency, left) * (finish - t)
        t, left = finish, left - 1
    return area + min(concurrency, left) * max(0.0, end - t)


class Instruments:
    """What one event loop measures: the calls it sends, its heartbeat's stalls, its CPU."""

    def __init__(self, inner: Any) -> None:
        self.backend = Counting(inner)
        self.stalls: list[tuple[float, float]] = []
        """(when, seconds) of each late beat: how late it woke, and when it was due."""
        self.watchdog = Watchdog(threading.get_ident())
        self.loop_cpu = 0.0
        self.process_cpu = 0.0
        self.callbacks = CallbackTimes()
        self.callbacks.install()

    async def around(self, work: Any) -> Any:
        """Await ``work`` with the heartbeat beating and the watchdog watching. The heartbeat's
        first beat comes at the study's first pause: what runs before it (reading the store,
        compiling the harm screen) holds no call back, as none has been sent."""
        done = asyncio.Event()

        async def heartbeat() -> None:
            last = time.perf_counter()
            self.watchdog.last_beat = last
            while not done.is_set():
                await asyncio.sleep(HEARTBEAT_S)
                now = time.perf_counter()
                self.stalls.append((last + HEARTBEAT_S, now - last - HEARTBEAT_S))
                self.watchdog.last_beat = last = now

        beat = asyncio.create_task(heartbeat())
        self.watchdog.start()
        cpu, process_cpu = time.thread_time(), time.process_time()
        try:
            return await work
        finally:
            self.loop_cpu = time.thread_time() - cpu
            self.process_cpu = time.process_time() - process_cpu
            done.set()
            await beat
            self.watchdog.stop = True

    def figures(self) -> dict[str, Any]:
        return {"starts": self.backend.starts, "stalls": self.stalls, "culprits": self.watchdog.culprits,
                "loop_cpu": self.loop_cpu, "server_cpu": self.backend.server_cpu,
                "process_cpu": self.process_cpu,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "missing": getattr(self.backend.inner, "missing", 0),
                "answers_load_s": getattr(self.backend.inner, "load_s", 0.0),
                **self.callbacks.figures()}


def scripted_backend(spec: Any) -> Any:
    from vcrime_audit.backends.registry import make_backend
    from vcrime_audit.models import get_model
    from vcrime_audit.study import grid

    names = {n for c in grid(spec) for n in (c.attacker, c.judge, c.world_manager)}
    return make_backend(spec.backend, {n: get_model(n) for n in names})


def server(spec: Any) -> Any:
    """What answers this process's calls: the scripted backend, or (``--answers ahead``) the
    answers it made in pass 1, looked up."""
    backend = scripted_backend(spec)
    folder = os.environ.get(ANSWERS_ENV)
    return AnswersMadeAhead.load(backend, Path(folder)) if folder else backend


async def making_answers(task: Any) -> Any:
    """A worker of pass 1 (``--answers ahead``): plays its share with no latency, then writes the
    answers it got into the folder ``ANSWERS_ENV`` names."""
    from vcrime_audit.study_processes import play_share

    backend = MakingAnswers(scripted_backend(task.study))
    progress = await play_share(task, backend=backend)
    backend.save(Path(os.environ[ANSWERS_ENV]))
    return progress


def make_answers(spec: Any, processes: int, folder: Path) -> float:
    """Pass 1 of ``--answers ahead``: the study (its registry at no latency), every answer
    written into ``folder`` (the one ``ANSWERS_ENV`` names, for the workers); its wall seconds."""
    from vcrime_audit.study import run_study
    from vcrime_audit.study_processes import run_study_processes, study_worker

    started = time.perf_counter()
    if processes == 1:
        backend = MakingAnswers(scripted_backend(spec))
        asyncio.run(run_study(spec, backend=backend))
        backend.save(folder)
    else:
        run_study_processes(spec, processes, worker=functools.partial(study_worker, play=making_answers))
    return time.perf_counter() - started


async def in_this_process(spec: Any, finishes: list[float]) -> list[dict[str, Any]]:
    """The study on this process's event loop (``study --processes 1``)."""
    from vcrime_audit.study import run_study

    instruments = Instruments(server(spec))
    await instruments.around(run_study(spec, backend=instruments.backend,
                                       on_run=lambda _: finishes.append(time.perf_counter())))
    await instruments.backend.aclose()
    return [instruments.figures()]


async def instrumented_share(task: Any) -> Any:
    """A worker of ``study --processes N`` (:func:`vcrime_audit.study_processes.play_share`)
    with this benchmark's instruments on its event loop; sends their figures to the parent."""
    from vcrime_audit.study_processes import play_share

    instruments = Instruments(server(task.study))
    progress = await instruments.around(play_share(task, backend=instruments.backend))
    await instruments.backend.aclose()
    task.send("measure", instruments.figures())
    return progress


def in_processes(spec: Any, processes: int, finishes: list[float]) -> list[dict[str, Any]]:
    """The study in worker processes, as ``study --processes N`` runs it."""
    from vcrime_audit.study_processes import run_study_processes, study_worker

    figures: list[dict[str, Any]] = []
    run_study_processes(spec, processes, worker=functools.partial(study_worker, play=instrumented_share),
                        on_run=lambda _: finishes.append(time.perf_counter()),
                        on_event=lambda event: figures.append(event[1]))
    return figures


def measure(spec: Any, latency_s: float, processes: int, debug: bool) -> dict[str, Any]:
    """Run the study and put the loops' figures together. Times are ``perf_counter`` (the
    system's monotonic clock, the same in every process); the study's clock starts before the
    workers are started, so their start-up counts against the in-flight ratio."""
    from vcrime_audit.study import grid

    finishes: list[float] = []
    started = time.perf_counter()
    if processes == 1:
        figures = asyncio.run(in_this_process(spec, finishes), debug=debug)
    else:
        figures = in_processes(spec, processes, finishes)
    ended = time.perf_counter()
    starts = [s for f in figures for s in f["starts"]]
    # what a loop does once its last call was answered (the collector's pass over what the study
    # left, closing) holds no call back: a stall or callback counts if it began before then; the
    # collector's passes are counted from the loop's first call (not the imports before it)
    serving = [max(f["starts"], default=started) + latency_s for f in figures]
    first_calls = [min(f["starts"], default=started) for f in figures]
    stalls = [s for f, until in zip(figures, serving, strict=True) for when, s in f["stalls"] if when < until]
    long = sorted(((took, cpu, what) for f, until in zip(figures, serving, strict=True)
                   for when, took, cpu, what in f["long_callbacks"] if when < until), reverse=True)
    busy = sum(min(s + latency_s, ended) - s for s in starts)
    ideal = ideal_integral(spec.concurrency, len(grid(spec)), started, finishes, ended)
    return {"runs": len(finishes), "calls": len(starts), "seconds": ended - started,
            "ratio": busy / ideal if ideal else float("nan"), "loops": len(figures),
            "worst_stall": max(stalls, default=0.0), "stalls_over_50": sum(s > STALL_S for s in stalls),
            "stalled_s": sum(s for s in stalls if s > STALL_S),
            "culprits": sum((f["culprits"] for f in figures), Counter()),
            "longest_callbacks": long[:5], "callbacks_over_50": sum(t > STALL_S for t, _, _ in long),
            "gc_pauses": [(g, p) for f, since, until in zip(figures, first_calls, serving, strict=True)
                          for when, g, p in f["gc_pauses"] if since <= when < until],
            "loop_cpu": sum(f["loop_cpu"] for f in figures),
            "server_cpu": sum(f["server_cpu"] for f in figures),
            "process_cpu": sum(f["process_cpu"] for f in figures),
            "peak_rss_mb": max(f["peak_rss_mb"] for f in figures),
            "missing": sum(f["missing"] for f in figures),
            "answers_load_s": max(f["answers_load_s"] for f in figures)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--attackers", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--max-turns", type=int, default=60, help="Turn cap (the paper's: 60).")
    parser.add_argument("--processes", type=int, default=1,
                        help="Worker processes sharing the grid (study --processes N).")
    parser.add_argument("--answers", choices=("ahead", "on-loop"), default="ahead",
                        help="ahead: the scripted answers are made in a first pass and looked up in "
                        "the timed one (a real server makes them on its own machine); on-loop: made "
                        "on the study's event loop as each call is sent.")
    parser.add_argument("--diagnose", action="store_true")
    args = parser.parse_args()
    if args.diagnose:
        logging.basicConfig(level=logging.WARNING)
    os.environ.pop(ANSWERS_ENV, None)
    with tempfile.TemporaryDirectory() as tmp:
        grid_args = (args.attackers, args.tasks, args.seeds, args.concurrency)
        scale = args.attackers * args.tasks * args.seeds
        print(f"grid {args.attackers} x {args.tasks} x {args.seeds} = {scale} runs, {args.max_turns}-turn "
              f"cap (the paper's: 960 runs, 60 turns), concurrency {args.concurrency} in "
              f"{args.processes} process(es), SCRIPTED backend "
              f"with {args.latency_ms:.0f} ms per call, answers {args.answers}; {load_average()}; "
              f"{code_state()}")
        if args.answers == "ahead":
            folder = Path(tmp) / "answers"
            folder.mkdir()
            os.environ[ANSWERS_ENV] = str(folder)  # read by both passes' workers
            seconds = make_answers(study_spec(Path(tmp) / "ahead", *grid_args, 0.0, max_turns=args.max_turns),
                                   args.processes, folder)
            size = sum(p.stat().st_size for p in folder.iterdir())
            print(f"pass 1 (answers made, no latency): {seconds:.1f} s, {size / 1e6:.0f} MB of answers")
        spec = study_spec(Path(tmp) / "timed", *grid_args, args.latency_ms, max_turns=args.max_turns)
        result = measure(spec, args.latency_ms / 1000, args.processes, args.diagnose)
    r = result
    if args.answers == "ahead":
        print(f"answers looked up (loaded in {r['answers_load_s']:.2f} s before the first call, counted "
              f"in the study's time); {r['missing']} calls had no answer made ahead and were made then")
    print(f"{r['runs']} runs, {r['calls']} calls in {r['seconds']:.1f} s "
          f"({r['calls'] / r['seconds']:.0f} calls/s; a call takes {args.latency_ms:.0f} ms)")
    print(f"in-flight ratio {100 * r['ratio']:.1f} % of the ideal (target >= 95 %); worst event-loop "
          f"stall {1000 * r['worst_stall']:.1f} ms (target <= 50 ms), {r['stalls_over_50']} stalls over "
          f"50 ms ({r['stalled_s']:.1f} s in all); {load_average()}")
    longest = r["longest_callbacks"]
    gc_pauses = r["gc_pauses"]
    print(f"longest callback (the loop blocked) {1000 * longest[0][0] if longest else 0:.1f} ms "
          f"(target <= 50 ms), {r['callbacks_over_50']} callbacks over 50 ms; the longest: "
          + ", ".join(f"{1000 * t:.0f} ms ({1000 * cpu:.0f} ms CPU) {what}" for t, cpu, what in longest))
    if not gc_pauses:
        print("cycle collector while serving: no passes")
    for generation in sorted({g for g, _ in gc_pauses}):
        pauses = sorted(p for g, p in gc_pauses if g == generation)
        print(f"cycle collector while serving, generation {generation}: {len(pauses)} passes, median "
              f"{1000 * pauses[len(pauses) // 2]:.1f} ms, longest {1000 * pauses[-1]:.1f} ms, "
              f"{sum(pauses):.2f} s in all")
    per_call = 1000 * r["loop_cpu"] / r["calls"]
    own = 1000 * (r["loop_cpu"] - r["server_cpu"]) / r["calls"]
    budget = args.latency_ms / args.concurrency * r["loops"]
    print(f"CPU of the event loops' threads ({r['loops']}) {r['loop_cpu']:.1f} s = {per_call:.2f} ms "
          f"per call, "
          f"of which the simulated server's answers (or their look-up) {r['server_cpu']:.1f} s; the "
          f"study's own "
          f"{own:.2f} ms per call, where the ideal ({args.concurrency} calls in flight, "
          f"{args.latency_ms:.0f} ms each) leaves {budget:.2f} ms per call")
    cores = os.cpu_count() or 1
    cpu_per_call = r["process_cpu"] / r["calls"]
    print(f"CPU of the study's processes, every thread ({r['loops']}) {r['process_cpu']:.1f} s = "
          f"{1000 * cpu_per_call:.2f} ms per call, of which the simulated server's "
          f"{r['server_cpu']:.1f} s; {r['process_cpu'] / r['seconds']:.2f} of the {cores} CPUs over "
          f"the study's wall time"
          + (f"; at this cost per call, {args.concurrency} calls in flight "
             f"({args.concurrency / args.latency_ms * 1000:.0f} calls/s) take "
             f"{cpu_per_call * args.concurrency / args.latency_ms * 1000:.2f} CPUs"
             if args.latency_ms > 0 else ""))
    print(f"peak resident memory of a study process {r['peak_rss_mb']:.0f} MB"
          + (" (pass 1 ran in it too)" if args.processes == 1 and args.answers == "ahead" else ""))
    samples = sum(r["culprits"].values())
    if samples:
        print("what held the loop during stalls (share of 10 ms watchdog samples, innermost "
              "vcrime_audit frame <- its caller):")
        for where, n in r["culprits"].most_common(12):
            print(f"  {100 * n / samples:5.1f} %  {where}")


if __name__ == "__main__":
    main()
