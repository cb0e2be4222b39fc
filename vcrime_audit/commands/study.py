"""`vcrime-audit study` and `vcrime-audit merge`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from .common import command_line, make_console, say_next

if TYPE_CHECKING:
    from ..study import StudyConfig, StudyProgress
    from ..study_ray import RayStudy
    from ..warm_workers import StartedProcess

console = make_console()
STUDY_WORKERS_WARM = ("vcrime_audit.study_processes", "vcrime_audit.harm:prepare_default_lexicon")
"""What each ``study --processes`` worker loads before its job (``warm_workers.warm``)."""


def study(
    config: Path = typer.Argument(..., help="Study file (YAML): attackers, roles, tasks, seeds."),
    shard: str = typer.Option(None, help="Run only shard i of n of the grid, as i/n (1-based)."),
    concurrency: int = typer.Option(None, help="Episodes in flight at once (default: the file's)."),
    processes: int = typer.Option(1, help="Worker processes that share the grid, the episodes in "
                                  "flight and the store (one event loop keeps ~510-550 calls/s "
                                  "going; use more against a fast server)."),
    db: Path = typer.Option(None, help="Store (default: the file's)."),
    cassette_dir: Path = typer.Option(None, help="Cassettes folder (default: the file's)."),
    replay_only: bool = typer.Option(False, "--replay", help="Replay the cassettes only; call no model."),
    check_determinism: int = typer.Option(0, help="Afterwards send K recorded calls per run to the "
                                                  "live backend again and store the comparison."),
    executor: str = typer.Option("local", help=escape(
        "local: episodes as asyncio tasks in this process; ray: episodes as Ray tasks across a "
        "cluster (pip install 'vcrime-audit[ray]').")),
    address: str = typer.Option(None, help="With --executor ray: the Ray head's HOST:PORT (or "
                                "'auto'); default: start Ray on this machine."),
    task_cpus: float = typer.Option(1.0, help="With --executor ray: CPUs Ray reserves per episode."),
) -> None:
    """Run a grid of attackers x tasks x seeds; finished runs are skipped, half-done ones resume."""
    from ..warm_workers import start_processes

    # the workers start while this process imports and reads the study (~0.4 s each way)
    workers = start_processes(processes, STUDY_WORKERS_WARM, "vcrime-study") \
        if processes > 1 and executor == "local" else []
    try:
        _study(config, shard, concurrency, processes, replay_only, check_determinism, executor, address,
               task_cpus, db, cassette_dir, workers)
    finally:
        for process in workers:
            if process.process.is_alive() and not process.jobs.closed:
                process.dismiss()


def _study(config: Path, shard: str | None, concurrency: int | None, processes: int, replay_only: bool,
           check_determinism: int, executor: str, address: str | None, task_cpus: float, db: Path | None,
           cassette_dir: Path | None, workers: list[StartedProcess]) -> None:
    import asyncio

    from ..ids import IdError
    from ..study import grid, load_study, parse_shard, run_study
    from ..study_processes import run_study_processes
    from .checks import check_positive
    from .common import fail, user_errors

    try:
        part = parse_shard(shard)
        check_executor(executor, address, task_cpus)
        check_positive(processes, "--processes", "use at least 1 process")
        if processes > 1 and executor != "local":
            raise IdError("--processes is for --executor local; fix: drop --processes (Ray "
                          "spreads the episodes itself)")
        if concurrency is not None:
            check_positive(concurrency, "--concurrency", "run at least 1 episode at a time")
        spec = load_study(config)
        updates = {k: v for k, v in {"concurrency": concurrency, "db": db,
                                     "cassette_dir": cassette_dir}.items() if v is not None}
        spec = spec.model_copy(update=updates)
        total = len(grid(spec, part))
    except user_errors() as exc:
        fail(exc)
    started = time.perf_counter()
    if executor == "ray":
        result = _run_on_ray(spec, part, replay_only, address, task_cpus)
        _report(spec, result, time.perf_counter() - started, replay_only, check_determinism, part)
        return
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[turns]} turns, {task.fields[rate]:.3f} turns/s"),
               TimeRemainingColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task(f"{spec.name} runs", total=total, turns=0, rate=0.0)

        def on_turn(run_id, record) -> None:
            nonlocal turns
            turns += 1
            bar.update(task, turns=turns, rate=turns / (time.perf_counter() - started))

        def on_run(outcome) -> None:
            bar.advance(task)

        turns = 0
        try:
            if processes > 1:
                result = run_study_processes(spec, processes, part, replay_only=replay_only,
                                             on_turn=lambda run_id: on_turn(run_id, None), on_run=on_run,
                                             expected_errors=user_errors(), started=workers)
            else:
                result = asyncio.run(run_study(spec, part, replay_only=replay_only, on_turn=on_turn,
                                               on_run=on_run))
        except user_errors() as exc:
            bar.stop()
            fail(exc)
        bar.update(task, completed=result.done + result.skipped)
    _report(spec, result, time.perf_counter() - started, replay_only, check_determinism, part)


def check_executor(executor: str, address: str | None, task_cpus: float) -> None:
    from ..ids import IdError

    if executor not in ("local", "ray"):
        raise IdError(f"--executor {executor}: unknown executor; fix: use --executor local or "
                      "--executor ray")
    if address is not None and executor != "ray":
        raise IdError("--address is for a Ray cluster; fix: add --executor ray, or drop --address")
    if not task_cpus > 0:
        raise IdError(f"--task-cpus {task_cpus}: must be above 0; fix: e.g. --task-cpus 0.5")


def _run_on_ray(spec: StudyConfig, part: tuple[int, int], replay_only: bool, address: str | None,
                task_cpus: float) -> RayStudy:
    from ..progress import on_stderr
    from ..study_ray import run_study_ray
    from .common import fail, user_errors

    try:
        with on_stderr():
            return run_study_ray(spec, part, replay_only=replay_only, address=address,
                                 task_cpus=task_cpus)
    except user_errors() as exc:
        fail(exc)


def _report(spec: StudyConfig, result: StudyProgress, seconds: float, replay_only: bool,
            check_determinism: int, part: tuple[int, int]) -> None:
    console.print(f"{result.done} run(s) played, {result.skipped} already finished, {result.turns} turns "
                  f"in {seconds:.1f} s; store {spec.db}, cassettes {spec.cassette_dir}")
    if result.finalised:
        console.print(f"{result.finalised} finished run(s) had an uncompressed cassette: compressed now")
    if result.outcomes:  # one print: 960 runs' lines printed one by one took ~85 ms, joined ~13
        console.print("\n".join(f"  {o.run_id}: {o.status} after {o.turns} turn(s); "
                                f"{o.check.line('turn rows')}"
                                for o in sorted(result.outcomes, key=lambda o: o.run_id)),
                      highlight=False, soft_wrap=True)
    for run_id, reason in result.crashed:
        console.print(f"  {run_id}: crashed: {reason}", highlight=False, soft_wrap=True)
    failed = getattr(result, "failed", None) or []
    for run_id, reason in failed:
        console.print(f"  {run_id}: failed on Ray: {reason}", highlight=False, soft_wrap=True)
    verdicts = getattr(result, "verdicts", None)
    bad_verdicts = [v for v in verdicts or [] if not v.ok and v.state != "crashed"]
    if verdicts is not None:
        console.print(f"verified  {sum(v.ok for v in verdicts)} merged run(s) re-derived from their "
                      f"cassettes, {len(bad_verdicts)} with problems"
                      + (f"; shard stores merged into {spec.db}" if verdicts else ""), highlight=False)
        for v in bad_verdicts:
            console.print(f"  {v.line()}", highlight=False, soft_wrap=True)
    reused = [o for o in result.outcomes if o.replayed_calls and not o.model_calls]
    if reused and not replay_only:
        console.print(f"reused    {len(reused)} run(s) replayed from cassettes already in "
                      f"{spec.cassette_dir} "
                      "(no model called); to record afresh: delete them or pass --cassette-dir NEW_FOLDER")
    say_next(command_line("vcrime-audit", "runs", "--db", spec.db),
             command_line("vcrime-audit", "audit", "--db", spec.db))
    if check_determinism > 0:
        import asyncio

        from ..determinism import check_study
        from ..progress import on_stderr

        with on_stderr():
            reports = asyncio.run(check_study(spec, part, check_determinism))
        sent = sum(len(r.checks) for r in reports)
        same = sum(r.n_identical for r in reports)
        rate = f" ({same / sent:.2f})" if sent else ""
        console.print(f"determinism {same}/{sent} re-sent call(s) identical{rate} over {len(reports)} "
                      f"run(s) on backend {spec.backend}; table determinism in {spec.db}",
                      highlight=False)
    if result.crashed or result.not_verified or failed or bad_verdicts:
        console.print(f"{len(result.crashed) + len(failed)} run(s) crashed, "
                      f"{len(result.not_verified) + len(bad_verdicts)} replay(s) "
                      "differ or cannot be checked; fix: see the lines above (crashed runs run again "
                      "when the study is started again)", highlight=False, soft_wrap=True)
        raise typer.Exit(1)


def merge(
    out: Path = typer.Argument(..., help="Store to merge into (created if missing)."),
    stores: list[Path] = typer.Argument(..., help="Stores to merge."),
    cassettes_out: Path = typer.Option(None, help="Folder to gather cassettes into."),
    cassettes: list[Path] = typer.Option(None, help="Cassette folders to gather (repeatable)."),
) -> None:
    """Combine the stores (and cassettes) of study shards; conflicting runs are an error."""
    from ..merge import merge_cassettes, merge_stores
    from .common import fail, user_errors

    try:
        report = merge_stores(out, stores)
        if cassettes_out is not None:
            merge_cassettes(cassettes_out, cassettes or [], report)
    except user_errors() as exc:
        fail(exc)
    console.print(f"{len(report.runs_added)} run(s) added, {len(report.runs_same)} already present; "
                  f"{report.cassettes_copied} cassette(s) copied, {report.cassettes_same} identical")
    if report.runs_replaced or report.runs_older:
        console.print(f"{len(report.runs_replaced)} unfinished copy(ies) replaced by the shards' own; "
                      f"{len(report.runs_older)} unfinished shard copy(ies) left out, the store holding "
                      "those runs finished")
    console.print(f"store     {out}" + (f"; cassettes {cassettes_out}" if cassettes_out else ""))
    say_next(command_line("vcrime-audit", "runs", "--db", out),
             command_line("vcrime-audit", "audit", "--db", out))
