"""`vcrime-audit rejudge | annotate | interrogate`: follow-up workflows over finished runs.

Mounted in cli.py with ``app.command()(rejudge)``, ``app.command()(annotate)`` and
``app.command()(interrogate)``. Each records its model calls to
``runs/cassettes/<kind>-<id>.jsonl.gz`` (``--cassette-dir``) or, with ``--replay CASSETTE``,
replays one into the store with no model.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..defaults import DEFAULT_CASSETTES, DEFAULT_MIN_TURNS, DEFAULT_PER_ATTACKER
from .common import command_line, fail, report_check, say_next, say_reused, user_errors

if TYPE_CHECKING:
    from ..followups.session import FollowupOutcome, Workflow

DB_HELP = "SQLite store with finished runs (from `vcrime-audit run` / `replay` / `study`)."
REPLAY_HELP = ("Replay this cassette instead (no model; the options it was recorded with come from "
               "the cassette) into --db, which must hold the runs it was recorded on.")
Db = Annotated[Path, typer.Option("--db", help=DB_HELP)]
Backend = Annotated[str, typer.Option(help="Backend that serves the models (local, vllm, openai, ...).")]
CassetteDir = Annotated[Path, typer.Option(help="Where the cassette goes.")]
RecordModeOpt = Annotated[str, typer.Option(
    help="once (replay an existing recording, else record) | new | none | all (record afresh), "
         "as in vcrpy.")]
Replay = Annotated[Path | None, typer.Option(help=REPLAY_HELP)]
MaxTokens = Annotated[int | None, typer.Option(help="Most tokens per answer (default: the model entry's).")]
Concurrency = Annotated[int, typer.Option(
    help="Calls in flight at once (a batching backend such as vllm serves them together); "
         "changes no result.")]


def _execute(workflow: Workflow[Any], make_config: Any, db: Path, backend: str, cassette_dir: Path,
             record_mode: str, replay: Path | None, concurrency: int) -> FollowupOutcome:
    import asyncio

    from ..cassette import RecordMode
    from ..followups import session
    from ..progress import on_stderr
    from ..store import Store

    if not db.is_file():
        fail(f"{db}: no store at this path; fix: pass --db with a store that holds finished runs "
              "(e.g. `vcrime-audit replay cassettes/robotics_company__data_theft-s0-e3005c10.jsonl.gz "
              "--db STORE`)")
    if record_mode not in RecordMode.__members__:
        fail(f"--record-mode must be one of once, new, none, all; got {record_mode!r}")
    try:
        with Store(db) as store, on_stderr():
            if replay is not None:
                return asyncio.run(session.replay(workflow, replay, store))
            return asyncio.run(session.record(workflow, make_config(), store, backend_name=backend,
                                              cassette_dir=cassette_dir, mode=RecordMode(record_mode),
                                              concurrency=concurrency))
    except user_errors() as exc:
        fail(str(exc))
    raise AssertionError("unreachable")


def _report(outcome: FollowupOutcome, what: str, seconds: float, replay: Path | None) -> None:
    typer.echo(f"{outcome.kind:<11} {outcome.followup_id}: {outcome.n_items} {what}, "
               f"{outcome.n_failed} without a usable answer")
    typer.echo(f"store     {outcome.store}")
    typer.echo(f"cassette  {outcome.cassette}")
    typer.echo(f"calls     {outcome.model_calls} to a model, {outcome.replayed_calls} replayed; "
               f"{seconds:.1f} s")
    typer.echo(f"rows hash {outcome.rows_hash}")
    if replay is None:
        say_reused(outcome.cassette, outcome.model_calls, outcome.replayed_calls,
                   f"add --record-mode all, or delete {command_line(outcome.cassette)}")
    say_next(command_line("vcrime-audit", "audit", "--db", outcome.store),
             command_line("vcrime-audit", outcome.kind, "--db", outcome.store, "--replay", outcome.cassette))
    report_check(outcome.check)


def rejudge(
    db: Db,
    judge: Annotated[str | None, typer.Option(
        help="Judge model (local_models/); required unless --replay. Not the primary judge (the "
             "live judge of most runs), whose runs the sample is drawn from.")] = None,
    per_attacker: Annotated[int, typer.Option(
        help="Turns sampled per attacker (all when fewer).")] = DEFAULT_PER_ATTACKER,
    seed: Annotated[int, typer.Option(help="Sampling seed (the sample is stored).")] = 0,
    max_tokens: MaxTokens = None,
    backend: Backend = "local",
    concurrency: Concurrency = 1,
    cassette_dir: CassetteDir = DEFAULT_CASSETTES,
    record_mode: RecordModeOpt = "once",
    replay: Replay = None,
) -> None:
    """Re-score recorded turns with another judge; actions and world states stay as recorded."""
    from ..followups.rejudge import Rejudge, RejudgeConfig

    if judge is None and replay is None:
        fail("pass --judge MODEL (or --replay CASSETTE)")
    from ..ids import IdError, check_seed

    try:
        check_seed(seed)
    except IdError as exc:
        fail(exc)
    started = time.perf_counter()
    outcome = _execute(Rejudge(), lambda: RejudgeConfig(judge=judge or "", per_attacker=per_attacker,
                                                         seed=seed, max_tokens=max_tokens),
                       db, backend, cassette_dir, record_mode, replay, concurrency)
    population = ", ".join(f"{a} {n}" for a, n in outcome.sample.get("population", {}).items())
    typer.echo(f"sample    {len(outcome.sample.get('turns', []))} turn(s) of population "
               f"[{population}] from the primary judge "
               f"{outcome.sample.get('primary_judge', '?')}'s runs; "
               f"{outcome.sample.get('excluded_other_live_judges', 0)} turn(s) of other live judges' "
               "runs left out")
    _report(outcome, "turn(s) re-judged", time.perf_counter() - started, replay)


def annotate(
    db: Db,
    annotators: Annotated[str | None, typer.Option(
        help="Two annotator models, comma-separated: A,B; required unless --replay.")] = None,
    max_tokens: MaxTokens = None,
    backend: Backend = "local",
    concurrency: Concurrency = 1,
    cassette_dir: CassetteDir = DEFAULT_CASSETTES,
    record_mode: RecordModeOpt = "once",
    replay: Replay = None,
) -> None:
    """Score each run's attacker actions on deception, collaboration, anti-forensics and technical
    sophistication (1-5); two annotators, one reconciliation round."""
    from ..followups.annotate import Annotate, AnnotateConfig

    if annotators is None and replay is None:
        fail("pass --annotators A,B (or --replay CASSETTE)")
    names = tuple((annotators or ",").split(","))
    started = time.perf_counter()
    outcome = _execute(Annotate(), lambda: AnnotateConfig(annotators=names, max_tokens=max_tokens),
                       db, backend, cassette_dir, record_mode, replay, concurrency)
    _report(outcome, "run(s) annotated", time.perf_counter() - started, replay)


def interrogate(
    db: Db,
    conditions: Annotated[str, typer.Option(
        help="Framing conditions, comma-separated (A: how real the log is said to be; "
             "B1: the plan was the model's own).")] = "CTRL,B1,A1,A1B1,A2,A2B1",
    min_turns: Annotated[int, typer.Option(
        help="Only runs with at least this many executed turns (the paper: 10).")] = DEFAULT_MIN_TURNS,
    mode: Annotated[str, typer.Option(
        help="schema: constrained JSON answers with decline options; free: no schema, answers read "
             "from free text, an unparseable answer counts as refusal.")] = "schema",
    interrogator: Annotated[str, typer.Option(
        help="One model (local_models/) that questions every log, its own and other sources' "
             "(the paper's Appendix J); default: each run's own model.")] = "",
    max_tokens: MaxTokens = None,
    backend: Backend = "local",
    concurrency: Concurrency = 1,
    cassette_dir: CassetteDir = DEFAULT_CASSETTES,
    record_mode: RecordModeOpt = "once",
    replay: Replay = None,
) -> None:
    """Hand each run's action log back to its attacker with three closed questions per framing
    condition; record admission, refusal and credibility of the reality claim."""
    from ..followups.interrogate import Interrogate, InterrogateConfig

    started = time.perf_counter()
    outcome = _execute(Interrogate(), lambda: InterrogateConfig(
        conditions=tuple(conditions.split(",")), min_turns=min_turns, max_tokens=max_tokens,
        mode=mode, interrogator=interrogator),
        db, backend, cassette_dir, record_mode, replay, concurrency)
    typer.echo(f"sample    {len(outcome.sample.get('runs', []))} run(s); "
               f"{len(outcome.sample.get('too_short', {}))} with fewer executed turns left out")
    _report(outcome, "interrogation(s) (run x condition)", time.perf_counter() - started, replay)
