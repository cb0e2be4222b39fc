"""Play a few engine turns of every task on the embedded model; report status and runtime.

Acceptance check for the scenarios: every task must run without an engine error (an exception
out of the engine). A turn that ends in ``error`` because the model's output could not be
parsed is a model failure and is counted separately. One line per task is printed (and
flushed) as soon as it finishes, so a partial run still reports numbers.

    nice -n 10 python benchmarks/all_tasks_two_turns.py [--turns 2] [--tasks a,b] [--json out.json]

About 40 s per turn on 2 CPU cores with smollm2-135m: the full loop is about an hour.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import traceback
from dataclasses import asdict, dataclass, field

from vcrime_audit.backends.local import LocalBackend
from vcrime_audit.engine import ERROR, Engine, EpisodeLimits, Roles, TurnRecord
from vcrime_audit.models import DEFAULT_MODEL, get_model
from vcrime_audit.scenario import initial_world, list_task_ids, load_task


@dataclass
class TaskResult:
    task: str
    seconds: float
    turns: int = 0
    statuses: list[str] = field(default_factory=list)
    model_output_errors: int = 0
    error_reasons: list[str] = field(default_factory=list)
    phase_errors: int = 0
    patches_applied: int = 0
    patches_dropped: int = 0
    engine_error: str = ""


async def play(task_id: str, engine: Engine, seed: int) -> TaskResult:
    world = initial_world(load_task(task_id))
    records: list[TurnRecord] = []

    async def on_turn(record: TurnRecord) -> None:
        records.append(record)

    started = time.perf_counter()
    error = ""
    try:
        await engine.run(world, seed, on_turn)
    except Exception as exc:  # an engine error is exactly what this script looks for
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        error = f"{type(exc).__name__}: {exc} (at {frame.filename}:{frame.lineno})"
    return TaskResult(
        task=task_id, seconds=time.perf_counter() - started, turns=len(records),
        statuses=[r.status for r in records],
        model_output_errors=sum(r.status == ERROR for r in records),
        error_reasons=[r.reason[:300] for r in records if r.status == ERROR],
        phase_errors=sum(len(r.phase_errors) for r in records),
        patches_applied=sum(p.applied for r in records for p in r.patches),
        patches_dropped=sum(not p.applied for r in records for p in r.patches),
        engine_error=error)


async def main(task_ids: list[str], turns: int, seed: int, model_name: str,
               threads: int | None) -> list[TaskResult]:
    model = get_model(model_name)
    backend = LocalBackend({model.name: model}, n_threads=threads)
    engine = Engine(backend, Roles(model, model, model), EpisodeLimits(max_turns=turns))
    results: list[TaskResult] = []
    try:
        for i, task_id in enumerate(task_ids, 1):
            result = await play(task_id, engine, seed)
            results.append(result)
            verdict = "ENGINE ERROR " + result.engine_error if result.engine_error else "ok"
            print(f"[{i:2d}/{len(task_ids)}] {task_id:38s} {result.seconds:7.1f} s  "
                  f"turns {result.turns}  statuses {','.join(result.statuses) or '-'}  "
                  f"model-output errors {result.model_output_errors}  phase errors "
                  f"{result.phase_errors}  patches {result.patches_applied}/"
                  f"{result.patches_applied + result.patches_dropped} applied  {verdict}",
                  flush=True)
            for reason in result.error_reasons:
                print(f"        model output error: {reason}", flush=True)
    finally:
        await backend.aclose()
    return results


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--tasks", default="", help="Comma-separated task ids (default: all).")
    parser.add_argument("--json", default="", help="Also write the per-task results here.")
    args = parser.parse_args()
    task_ids = args.tasks.split(",") if args.tasks else list_task_ids()
    started = time.perf_counter()
    results = asyncio.run(main(task_ids, args.turns, args.seed, args.model, args.threads))
    total = time.perf_counter() - started
    failed = [r.task for r in results if r.engine_error]
    turns = sum(r.turns for r in results)
    print(f"{len(results)} tasks, {turns} turns in {total:.0f} s "
          f"({total / max(turns, 1):.1f} s per turn); engine errors: {len(failed)}"
          + (f" ({', '.join(failed)})" if failed else ""), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"total_seconds": total, "results": [asdict(r) for r in results]}, handle,
                      indent=1)
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    cli()
