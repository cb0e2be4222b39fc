"""Behaviour annotation: two annotators score each run's attacker actions on four 1-5 dimensions.

Round 1: each annotator scores alone. Round 2 (only where they differ): each re-scores the
disputed dimensions after seeing the other's score and reason. A dimension still in dispute is
dropped; one an annotator gave no usable answer for is missing. Both are stored and counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..agents.calling import ModelOutputError
from ..agents.prompting import render
from ..agents.schema import decoding_schema
from ..backends.base import Message
from ..canonical import content_hash
from ..models import ModelEntry
from ..seeds import blake2b_seed
from ..store import Store
from .inputs import FollowupInputError, RunInfo, attacker_turns, finished_runs
from .rubric import AGREED, DIMENSIONS, DROPPED, MISSING, RECONCILED, Rubric, default_rubric
from .session import Prepared, Session, Workflow, with_role_sampling

ROLE = "annotator"


class DimensionScore(BaseModel):
    model_config = ConfigDict(extra="forbid")
    score: int = Field(ge=1, le=5)
    reason: str = Field(max_length=100)


@lru_cache(maxsize=32)
def scores_model(dimensions: tuple[str, ...]) -> type[BaseModel]:
    """An output model with one DimensionScore field per named dimension."""
    fields: dict[str, Any] = {d: (DimensionScore, ...) for d in dimensions}
    return create_model("Scores", __config__=ConfigDict(extra="forbid"), **fields)


@dataclass(frozen=True)
class AnnotateConfig:
    annotators: tuple[str, str]
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        names = tuple(sorted(a.strip() for a in self.annotators))
        if len(names) != 2 or names[0] == names[1] or not all(names):
            raise ValueError(f"--annotators takes two different model names, e.g. A,B; got "
                             f"{','.join(self.annotators)!r}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"--max-tokens must be at least 1, got {self.max_tokens}")
        object.__setattr__(self, "annotators", names)

    @property
    def pair(self) -> str:
        return ",".join(self.annotators)


@dataclass(frozen=True)
class RunActions:
    run: RunInfo
    actions: list[dict[str, Any]]


def score_messages(rubric: Rubric, actions: list[dict[str, Any]]) -> list[Message]:
    dims = [rubric.dimensions[d] for d in DIMENSIONS]
    return [Message(role="system", content=render("annotate_system", dimensions=dims)),
            Message(role="user", content=render("annotate_score", actions=actions, names=DIMENSIONS))]


def reconcile_messages(rubric: Rubric, actions: list[dict[str, Any]],
                       disputed: list[dict[str, Any]]) -> list[Message]:
    """``disputed``: name, own_score, own_reason, other_score, other_reason per dimension."""
    dims = [rubric.dimensions[d] for d in DIMENSIONS]
    return [Message(role="system", content=render("annotate_system", dimensions=dims)),
            Message(role="user", content=render("annotate_reconcile", actions=actions,
                                                disputed=disputed))]


def resolve(first: int | None, second: int | None, first_again: int | None,
            second_again: int | None) -> tuple[str, int | None]:
    """Status and final score of one dimension from both rounds (None = no usable answer)."""
    if first is None or second is None:
        return MISSING, None
    if first == second:
        return AGREED, first
    if first_again is None or second_again is None:
        return MISSING, None
    if first_again == second_again:
        return RECONCILED, first_again
    return DROPPED, None


class Annotate(Workflow[AnnotateConfig]):
    kind = "annotate"

    def __init__(self, rubric: Rubric | None = None) -> None:
        self.rubric = rubric or default_rubric()

    @staticmethod
    def config_from(data: dict[str, Any]) -> AnnotateConfig:
        return AnnotateConfig(**{**data, "annotators": tuple(data["annotators"])})

    def prepare(self, store: Store, config: AnnotateConfig) -> Prepared:
        runs = finished_runs(store)
        by_run: dict[str, list[dict[str, Any]]] = {}
        for t in attacker_turns(store, runs):
            by_run.setdefault(t.run.run_id, []).append({"turn": t.turn, **t.action})
        items = [RunActions(r, by_run[r.run_id]) for r in runs if r.run_id in by_run]
        if not items:
            raise FollowupInputError(f"{store.path}: no finished run has an attacker action to "
                                     "annotate; fix: record runs first")
        identity = [[i.run.run_id, i.run.seed, i.run.task_id, i.actions] for i in items]
        sample = {"runs": [i.run.run_id for i in items],
                  "runs_without_actions": len(runs) - len(items), "rubric": self.rubric.digest}
        return Prepared(items, content_hash({"runs": identity, "rubric": self.rubric.digest}),
                        sample, list(config.annotators))

    def clear(self, store: Store, followup_id: str) -> None:
        for table in ("annotations", "annotation_results"):
            store.db.conn.execute(f"DELETE FROM [{table}] WHERE followup_id = ?", [followup_id])

    async def _round(self, session: Session, entry: ModelEntry, item: RunActions, round_: int,
                     dims: tuple[str, ...], messages: list[Message]) -> BaseModel | None:
        run = item.run
        model = scores_model(dims)
        try:
            return await session.call(
                entry, item=f"{run.run_id}/{entry.name}/{round_}", role=ROLE,
                call="score" if round_ == 1 else "reconcile", messages=messages,
                output_model=model, schema=decoding_schema(model),
                seed=blake2b_seed(run.seed, run.task_id, 0, f"annotate.{entry.name}.{round_}"))
        except ModelOutputError:
            return None

    async def work(self, session: Session, config: AnnotateConfig, prepared: Prepared,
                   entries: dict[str, ModelEntry]) -> int:
        who = {n: with_role_sampling(entries[n], ROLE, max_tokens=config.max_tokens)
               for n in config.annotators}
        async def one(item: RunActions) -> bool:
            return MISSING in await self._annotate_run(session, config, who, item)

        return sum(await session.each(prepared.items, one))

    async def _annotate_run(self, session: Session, config: AnnotateConfig,
                            who: dict[str, ModelEntry], item: RunActions) -> list[str]:
        first, second = config.annotators
        scores = score_messages(self.rubric, item.actions)
        r1 = {n: await self._round(session, who[n], item, 1, DIMENSIONS, scores) for n in (first, second)}
        rows = _rows(config.pair, item.run.run_id, session.followup_id, r1, 1)
        disputed: tuple[str, ...] = ()
        if r1[first] is not None and r1[second] is not None:
            disputed = tuple(d for d in DIMENSIONS
                             if getattr(r1[first], d).score != getattr(r1[second], d).score)
        r2: dict[str, BaseModel | None] = {first: None, second: None}
        if disputed:
            for own, other in ((first, second), (second, first)):
                context = [{"name": d, "own_score": getattr(r1[own], d).score,
                            "own_reason": getattr(r1[own], d).reason,
                            "other_score": getattr(r1[other], d).score,
                            "other_reason": getattr(r1[other], d).reason} for d in disputed]
                r2[own] = await self._round(session, who[own], item, 2, disputed,
                                            reconcile_messages(self.rubric, item.actions, context))
            rows += _rows(config.pair, item.run.run_id, session.followup_id, r2, 2)
        results = []
        for d in DIMENSIONS:
            status, score = resolve(*(_score(r1[n], d) for n in (first, second)),
                                    *(_score(r2[n], d) for n in (first, second)))
            results.append({"annotators": config.pair, "run_id": item.run.run_id, "dimension": d,
                            "status": status, "score": score, "followup_id": session.followup_id})
        with session.store.db.conn:
            for table in ("annotations", "annotation_results"):
                session.store.db.conn.execute(f"DELETE FROM [{table}] WHERE annotators = ? AND "
                                              "run_id = ?", [config.pair, item.run.run_id])
            session.store._insert("annotations", rows, replace=True)
            session.store._insert("annotation_results", results, replace=True)
        return [r["status"] for r in results]

    def result_rows(self, store: Store, followup_id: str) -> dict[str, list[dict[str, Any]]]:
        return {
            "annotations": list(store.db["annotations"].rows_where(
                "followup_id = ?", [followup_id], order_by="run_id, round, annotator, dimension")),
            "annotation_results": list(store.db["annotation_results"].rows_where(
                "followup_id = ?", [followup_id], order_by="run_id, dimension"))}


def _score(answer: BaseModel | None, dimension: str) -> int | None:
    if answer is None or dimension not in type(answer).model_fields:
        return None
    return getattr(answer, dimension).score


def _rows(pair: str, run_id: str, followup_id: str, answers: dict[str, BaseModel | None],
          round_: int) -> list[dict[str, Any]]:
    rows = []
    for name, answer in answers.items():
        if answer is None:
            continue
        for d, value in answer:
            rows.append({"annotators": pair, "run_id": run_id, "annotator": name, "dimension": d,
                         "round": round_, "score": value.score, "reason": value.reason,
                         "followup_id": followup_id})
    return rows
