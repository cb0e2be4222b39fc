"""`vcrime-audit audit`: every metric with intervals, the judge audit, a report; synthetic stores.

Mounted in cli.py with ``app.add_typer(audit_app, name="audit")``.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Annotated

import typer

from ..defaults import DEFAULT_CASSETTES, DEFAULT_REPORTS, DEFAULT_RESAMPLES
from .common import command_line, fail, reading_store, report_check, say_next, user_errors

app = typer.Typer(help="Audit a store: Table 1 with task-bootstrap intervals, pairwise differences, "
                       "over-harm, judge agreement and self-preference; writes a report folder.",
                  pretty_exceptions_enable=False)

DB_HELP = "SQLite store written by `vcrime-audit run` / `replay` (or `audit synth`)."


def _check(resamples: int) -> None:
    if resamples < 1:
        fail(f"--resamples must be at least 1, got {resamples}")


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100 * x:.1f}"


def _percent(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100 * x:.1f} %"


@app.callback(invoke_without_command=True)
def audit(
    ctx: typer.Context,
    db: Annotated[Path | None, typer.Option("--db", help=DB_HELP)] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help=f"Report folder (default {DEFAULT_REPORTS}/<store name>).")] = None,
    resamples: Annotated[int, typer.Option(
        help="Bootstrap resamples (tasks drawn with replacement).")] = DEFAULT_RESAMPLES,
    seed: Annotated[int, typer.Option(help="Bootstrap seed; reported in the report and summary.json.")] = 0,
    primary_judge: Annotated[str | None, typer.Option(
        "--primary-judge", help="Judge whose runs are the main runs (over-harm, team usage, Pass@1); "
                                "default: the live judge of most runs, ties alphabetical.")] = None,
) -> None:
    """Compute every metric of the store and write report.md, summary.json, lineage.json and figures."""
    if ctx.invoked_subcommand is not None:
        return
    if db is None:
        fail("pass --db STORE (a store from `vcrime-audit run`/`replay`, or `vcrime-audit audit synth`)")
    _check(resamples)
    from ..audit.pipeline import run_audit
    from ..audit.report import write_report
    from ..collector import collector_paused, no_collection_at_exit

    no_collection_at_exit()  # write_report closes every file it writes; the audit's data is acyclic
    try:
        folder = out or DEFAULT_REPORTS / db.stem
        with reading_store(db), collector_paused():
            result = run_audit(db, n_resamples=resamples, seed=seed, primary_judge=primary_judge)
            start = time.perf_counter()
            files = write_report(result, folder)
            drawn = time.perf_counter() - start
    except user_errors() as exc:
        fail(str(exc))
    m = result.metrics
    if result.data.synthetic:
        typer.echo("SYNTHETIC store: these numbers describe no model")
    typer.echo(f"{len(result.data.runs)} runs, {len(result.data.turns)} attacker turns, "
               f"{len(m.judges)} judge(s), {len(m.tasks)} tasks; {m.n_resamples} resamples, seed {m.seed}")
    typer.echo(f"primary judge: {m.primary.name or '(none)'} ({m.primary.chosen_by}; "
               f"{m.primary.runs} of {m.primary.total_runs} runs)")
    typer.echo(f"{'attacker':<28} {'non-fail':>8} {'catastr.':>8} {'overharm':>8} {'team':>6} {'pass@1':>7}")
    for a in m.attackers:
        typer.echo(f"{a:<28} {_pct(m.non_failure_median[a].estimate):>8} "
                   f"{_pct(m.catastrophic_median[a].estimate):>8} {_pct(m.over_harm[a].estimate):>8} "
                   f"{_pct(m.team_usage[a].estimate):>6} {_pct(m.pass_at_1[a].estimate):>7}")
    s = result.seconds
    typer.echo(f"seconds: load {s['load']:.2f}, metrics {s['metrics']:.2f}, "
               f"waiting for the children {s['children']:.2f}, report {drawn:.2f}")
    typer.echo(f"report   {files.report}")
    typer.echo(f"summary  {files.summary}")
    typer.echo(f"lineage  {files.lineage}")
    say_next(command_line("less", files.report), command_line("vcrime-audit", "audit", "judges", "--db", db))


@app.command()
def judges(
    db: Annotated[Path, typer.Option("--db", help=DB_HELP)],
    resamples: Annotated[int, typer.Option(
        help="Bootstrap resamples for the bias intervals.")] = DEFAULT_RESAMPLES,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
) -> None:
    """Judge rank agreement (Spearman) and self-preference bias by model / vendor relation."""
    _check(resamples)
    from ..audit.judges import RELATIONS, judge_audit
    from ..audit.load import load_audit_input, open_store

    try:
        with reading_store(db), open_store(db, readonly=True) as store:
            data = load_audit_input(store)
    except user_errors() as exc:
        fail(str(exc))
    result = judge_audit(data, n_resamples=resamples, seed=seed)
    if data.synthetic:
        typer.echo("SYNTHETIC store: these numbers describe no model")
    typer.echo(f"judges: {', '.join(result.judges)}; turns every judge scored: {result.common_turns}")
    if result.note:
        typer.echo(f"note: {result.note}")
    for metric, ra in result.agreement.items():
        typer.echo(f"\nSpearman rho between judges' attacker rankings ({metric}; basis: {ra.basis}):")
        for p in ra.pairs:
            rho = "n/a" if math.isnan(p.rho) else f"{p.rho:.3f}"
            typer.echo(f"  {p.first} vs {p.second}: {rho} ({p.n_attackers} attackers)")
    if result.groups:
        typer.echo(f"\nself-preference bias, pp [95% CI] ({resamples} resamples, seed {seed}):")
        for name in RELATIONS:
            g = result.groups.get(name)
            if g:
                e = g.mean
                typer.echo(f"  {name:<15} {g.n_pairs:>3} pairs  mean {100 * e.estimate:+.2f} "
                           f"[{100 * e.low:+.2f}, {100 * e.high:+.2f}]  range {100 * g.minimum:+.2f} "
                           f"... {100 * g.maximum:+.2f}")
                if g.adjusted is not None:
                    a = g.adjusted
                    typer.echo(f"  {'':<15} {'':>9}  adjusted for leniency {100 * a.estimate:+.2f} "
                               f"[{100 * a.low:+.2f}, {100 * a.high:+.2f}]")


@app.command()
def synth(
    out: Annotated[Path, typer.Option("--out", help="Path of the new synthetic store.")],
    attackers: Annotated[int, typer.Option(help="Attacker models.")] = 8,
    tasks: Annotated[int, typer.Option(
        help="Tasks (real ones from scenarios/tasks if there are enough).")] = 40,
    seeds: Annotated[int, typer.Option(help="Runs per attacker and task.")] = 3,
    judges: Annotated[int, typer.Option(help="Judges; each scores every turn.")] = 4,
    seed: Annotated[int, typer.Option(help="Generator seed.")] = 0,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing file at --out.")] = False,
) -> None:
    """Write a SYNTHETIC store (labelled as such) for tests and benchmarks."""
    from ..audit.synthetic import SyntheticConfig, make_synthetic_store

    config = SyntheticConfig(attackers=attackers, tasks=tasks, seeds=seeds, judges=judges, seed=seed)
    start = time.perf_counter()
    try:
        path = make_synthetic_store(out, config, overwrite=overwrite)
    except (FileExistsError, ValueError) as exc:
        fail(str(exc))
    typer.echo(f"synthetic store {path}: {attackers * tasks * seeds} runs, {judges} judges "
               f"({time.perf_counter() - start:.1f} s)")
    say_next(command_line("vcrime-audit", "audit", "--db", path),
             command_line("vcrime-audit", "audit", "judges", "--db", path))


@app.command("harm-check")
def harm_check(
    db: Annotated[Path, typer.Option("--db", help=DB_HELP)],
    out: Annotated[Path | None, typer.Option(
        "--out", help="Folder for the review files (default runs/reports/<store>-harm-check).")] = None,
    labeller: Annotated[str | None, typer.Option(
        help="LLM labeller from the registry (local_models/), e.g. smollm2-135m.")] = None,
    per_attacker: Annotated[int, typer.Option(help="Turns labelled per attacker (all when fewer).")] = 50,
    seed: Annotated[int, typer.Option(help="Sampling and labeller seed.")] = 0,
    backend: Annotated[str, typer.Option(help="Backend for the labeller.")] = "local",
    cassette_dir: Annotated[Path, typer.Option(
        help="Where the labeller's cassette goes.")] = DEFAULT_CASSETTES,
    record_mode: Annotated[str, typer.Option(help="once, new, none or all.")] = "once",
    replay: Annotated[Path | None, typer.Option(
        help="Replay a recorded harmcheck-*.jsonl.gz instead of calling a model.")] = None,
    primary_judge: Annotated[str | None, typer.Option(
        "--primary-judge",
        help="Judge whose runs are the main runs (default: live judge of most runs).")] = None,
) -> None:
    """Validate the over-harm classifier: export every flagged turn for review (precision), label a
    sample with an LLM (recall) and recompute each attacker's over-harm rate with the corrections."""
    if per_attacker < 1:
        fail(f"--per-attacker must be at least 1, got {per_attacker}")
    if record_mode not in ("once", "new", "none", "all"):
        fail(f"--record-mode: {record_mode!r} is not one of once, new, none, all")
    from ..audit.harm_check_run import run_harm_check

    try:
        result = run_harm_check(db, out or DEFAULT_REPORTS / f"{db.stem}-harm-check",
                                labeller=labeller, per_attacker=per_attacker, seed=seed,
                                backend_name=backend, cassette_dir=cassette_dir,
                                record_mode=record_mode, replay=replay, primary_judge=primary_judge)
    except (*user_errors(), ValueError) as exc:
        fail(str(exc))
    typer.echo(f"flagged turns {result.flagged} (review file {result.files['flagged']})")
    typer.echo(f"labelled      {result.labelled} of {result.sampled} sampled ({result.failed} without a "
               f"usable answer); calls {result.model_calls} to a model, {result.replayed} replayed")
    for a in result.recall.values():
        typer.echo(f"recall {a.axis:<7} {_percent(a.recall)} ({a.both}/{a.labeller_harmful}); precision on "
                   f"sample {_percent(a.precision)} ({a.both}/{a.classifier_flagged})")
    for c in result.changes:
        typer.echo(f"over-harm {c.attacker:<28} {c.before}/{c.runs} -> {c.after}/{c.runs} "
                   f"({c.change_pp:+.1f} pp)")
    typer.echo(f"report   {result.files['report']}")
    typer.echo(f"cassette {result.cassette}")
    report_check(result.check, "labels")
