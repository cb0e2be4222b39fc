"""Re-judging: recorded turns scored again by another judge, trajectory untouched.

The sample (``--per-attacker`` turns per attacker, seeded hash ranks) is drawn from the primary
judge's runs only, and does not depend on the re-judge: every re-judge scores the same turns.

The judge gets exactly the request the live judge got (same prompt on the same world, same
seed); only the model differs. Its judgments go to ``judgments`` with source ``rejudge``, keyed
by the judge model, so the judge-agreement and self-preference audits use them as they are.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from ..agents import judge
from ..agents.calling import ModelOutputError
from ..agents.judge import JudgeOutput
from ..canonical import content_hash
from ..defaults import DEFAULT_PER_ATTACKER
from ..models import ModelEntry
from ..seeds import blake2b_seed
from ..store import Store
from ..store.rows import judgment_row as store_judgment_row
from .inputs import (
    FollowupInputError,
    RunInfo,
    TurnInput,
    attacker_turns,
    finished_runs,
    judge_world,
)
from .sampling import sample_turns
from .session import Prepared, Session, Workflow, with_role_sampling

SOURCE = "rejudge"


@dataclass(frozen=True)
class RejudgeConfig:
    judge: str
    per_attacker: int = DEFAULT_PER_ATTACKER
    seed: int = 0
    max_tokens: int | None = None
    """Judge max_tokens; ``None`` keeps the model entry's."""

    def __post_init__(self) -> None:
        if self.per_attacker < 1:
            raise ValueError(f"--per-attacker must be at least 1, got {self.per_attacker}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"--max-tokens must be at least 1, got {self.max_tokens}")


def primary_judge(runs: list[RunInfo]) -> str:
    """The live judge of most finished runs; a tie goes to the alphabetically first (as the audit)."""
    counts = Counter(r.judge for r in runs)
    if not counts:
        return ""
    best = max(counts.values())
    return min(j for j, n in counts.items() if n == best)


def judgment_row(run_id: str, turn: int, judge_model: str, output: JudgeOutput) -> dict[str, Any]:
    """A `judgments` row like the live one, without an outcome draw (the trajectory is fixed)."""
    return store_judgment_row(run_id, turn, judge_model, output, SOURCE)


async def judge_turn(session: Session, entry: ModelEntry, turn: TurnInput) -> JudgeOutput:
    """The live judge's request for this turn, sent to ``entry``'s model."""
    run = turn.run
    return await session.call(
        entry, item=f"{run.run_id}:{turn.turn}", role="judge", call="assess",
        messages=judge.assess_messages(judge_world(turn), turn.action_model()),
        output_model=JudgeOutput, schema=judge.assess_schema(), check=judge.check_judgment,
        seed=blake2b_seed(run.seed, run.task_id, turn.turn, "judge.assess"))


class Rejudge(Workflow[RejudgeConfig]):
    kind = "rejudge"

    @staticmethod
    def config_from(data: dict[str, Any]) -> RejudgeConfig:
        return RejudgeConfig(**data)

    def prepare(self, store: Store, config: RejudgeConfig) -> Prepared:
        """The sample: turns of the primary judge's runs only (the paper's main trajectories),
        drawn independently of the re-judge, so every re-judge scores the same turns."""
        runs = finished_runs(store)
        primary = primary_judge(runs)
        turns = attacker_turns(store, runs)
        population = [t for t in turns if t.run.judge == primary]
        excluded = len(turns) - len(population)
        if not population or config.judge == primary:
            why = (f"all {len(population)} attacker turns were judged live by {config.judge} (the "
                   "primary judge)" if population
                   else "it holds no attacker turn of a finished run")
            raise FollowupInputError(f"{store.path}: nothing to re-judge: {why}; fix: pick another "
                                     "--judge, or record runs first")
        chosen = set(sample_turns(((t.run.attacker, t.run.run_id, t.turn) for t in population),
                                  config.per_attacker, config.seed))
        items = [t for t in population if (t.run.run_id, t.turn) in chosen]
        per_attacker = Counter(t.run.attacker for t in population)
        sampled = Counter(t.run.attacker for t in items)
        sample = {"turns": [[t.run.run_id, t.turn] for t in items],
                  "population": {a: per_attacker[a] for a in sorted(per_attacker)},
                  "sampled": {a: sampled[a] for a in sorted(sampled)},
                  "primary_judge": primary, "excluded_other_live_judges": excluded}
        return Prepared(items, content_hash([t.identity() for t in population]), sample,
                        [config.judge])

    def clear(self, store: Store, followup_id: str) -> None:
        store.db.conn.execute(
            "DELETE FROM judgments WHERE source = ? AND EXISTS (SELECT 1 FROM rejudged_turns r "
            "WHERE r.followup_id = ? AND r.run_id = judgments.run_id AND r.turn = judgments.turn "
            "AND r.judge = judgments.judge)", [SOURCE, followup_id])
        store.db.conn.execute("DELETE FROM rejudged_turns WHERE followup_id = ?", [followup_id])

    async def work(self, session: Session, config: RejudgeConfig, prepared: Prepared,
                   entries: dict[str, ModelEntry]) -> int:
        entry = with_role_sampling(entries[config.judge], "judge", max_tokens=config.max_tokens)
        store = session.store

        async def one(turn: TurnInput) -> bool:
            key = {"followup_id": session.followup_id, "run_id": turn.run.run_id,
                   "turn": turn.turn, "judge": config.judge}
            try:
                output = await judge_turn(session, entry, turn)
            except ModelOutputError as exc:
                with store.db.conn:
                    store._insert("rejudged_turns", [{**key, "status": "failed", "error": str(exc)}],
                                  replace=True)
                return True
            with store.db.conn:
                store._insert("judgments", [judgment_row(turn.run.run_id, turn.turn, config.judge,
                                                         output)], replace=True)
                store._insert("rejudged_turns", [{**key, "status": "judged", "error": ""}],
                              replace=True)
            return False

        return sum(await session.each(prepared.items, one))

    def result_rows(self, store: Store, followup_id: str) -> dict[str, list[dict[str, Any]]]:
        items = list(store.db["rejudged_turns"].rows_where(
            "followup_id = ?", [followup_id], order_by="run_id, turn"))
        judgments = []
        for item in items:
            judgments += store.db["judgments"].rows_where(
                "run_id = ? AND turn = ? AND judge = ? AND source = ?",
                [item["run_id"], item["turn"], item["judge"], SOURCE])
        return {"rejudged_turns": items, "judgments": judgments}
