"""`vcrime-audit rejudge-plan PLAN`: every re-judge of a plan file, one ``rejudge`` each.

Mounted in cli.py with ``app.command("rejudge-plan")(rejudge_plan)``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from .common import fail, user_errors
from .followups import RecordModeOpt, _execute, _report


def rejudge_plan(
    plan: Annotated[Path, typer.Argument(help="Re-judging plan (YAML), e.g. studies/paper-rejudge.yaml.")],
    record_mode: RecordModeOpt = "once",
) -> None:
    """Re-score the same sample of recorded turns with each judge of a plan."""
    from ..followups.plan import load_rejudge_plan
    from ..followups.rejudge import Rejudge

    try:
        spec = load_rejudge_plan(plan)
        configs = spec.configs()
    except user_errors() as exc:
        fail(str(exc))
    typer.echo(f"plan      {spec.name}: {len(configs)} judge(s), {spec.per_attacker} turn(s) per "
               f"attacker, seed {spec.seed}, store {spec.db}")
    for config in configs:
        started = time.perf_counter()
        outcome = _execute(Rejudge(), lambda c=config: c, spec.db, spec.backend, spec.cassette_dir,
                           record_mode, None, spec.concurrency)
        typer.echo(f"judge     {config.judge}: {len(outcome.sample.get('turns', []))} turn(s)")
        _report(outcome, "turn(s) re-judged", time.perf_counter() - started)
