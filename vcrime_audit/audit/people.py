"""People in the loop, audited: human solvability per task and people's ratings of the Judge and
World Manager (means with task-bootstrap intervals, two-rater weighted kappa).

Definitions (also written into the report):
- A player is a ``human:<name>`` attacker; a player tried a task when one of its runs on the task
  finished (status won, lost, stalled, max_turns or error, as in Pass@1).
- Players of a task are taken in the order of their first finished run; a task is *solvable* when
  any of its first three players won a run of it.
- A model's per-task Pass@1 is its won runs over its finished runs on the task.
- A rating mean is the mean 1-5 score over all ratings (all raters); its interval resamples tasks.
- Agreement: for two raters, quadratic-weighted Cohen's kappa over the turns both rated.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations

from ..defaults import DEFAULT_RESAMPLES
from ..intervals import Interval
from ..models import is_human
from ..ratings import all_ratings
from ..store import Store
from .agreement import Agreement, agreement
from .records import FINAL_STATUSES
from .stats import DEFAULT_SEED, RunValue, cluster_bootstrap

MAX_PLAYERS = 3
TARGETS = {"judge_score": "Judge (outcome distribution)", "world_manager_score": "World Manager (update)"}


@dataclass
class TaskPlay:
    task_id: str
    players: list[str] = field(default_factory=list)
    winners: list[str] = field(default_factory=list)
    pass_at_1: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def solvable(self) -> bool:
        return bool(self.winners)


def solvability(store: Store) -> dict[str, TaskPlay]:
    """Per task with at least one finished human run: its first three players, which of them won,
    and every model's (won, finished) counts on the task."""
    marks = ",".join("?" * len(FINAL_STATUSES))
    rows = store.db.conn.execute(
        f"SELECT task_id, attacker, status FROM runs WHERE status IN ({marks}) ORDER BY started_at, run_id",
        FINAL_STATUSES).fetchall()
    first: dict[str, list[str]] = defaultdict(list)
    won: dict[str, set[str]] = defaultdict(set)
    models: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for task, attacker, status in rows:
        if is_human(attacker):
            if attacker not in first[task]:
                first[task].append(attacker)
            if status == "won":
                won[task].add(attacker)
        else:
            models[task][attacker][0] += status == "won"
            models[task][attacker][1] += 1
    out = {}
    for task in sorted(first):
        players = first[task][:MAX_PLAYERS]
        out[task] = TaskPlay(task, players, [p for p in players if p in won[task]],
                             {m: (c[0], c[1]) for m, c in sorted(models[task].items())})
    return out


@dataclass(frozen=True)
class RatingSummary:
    n_ratings: int
    raters: tuple[str, ...]
    means: dict[str, Interval]
    n_tasks: int
    agreements: dict[tuple[str, str, str], Agreement]
    n_resamples: int
    seed: int


def rating_summary(store: Store, *, n_resamples: int = DEFAULT_RESAMPLES,
                   seed: int = DEFAULT_SEED) -> RatingSummary | None:
    ratings = all_ratings(store)
    if not ratings:
        return None
    groups = {target: [RunValue(r["task_id"], float(r[target])) for r in ratings] for target in TARGETS}
    boot = cluster_bootstrap(groups, n_resamples=n_resamples, seed=seed)
    by_rater: dict[str, dict[tuple[str, int], dict]] = defaultdict(dict)
    for r in ratings:
        by_rater[r["rater"]][(r["run_id"], r["turn"])] = r
    agreements = {}
    for a, b in combinations(sorted(by_rater), 2):
        shared = sorted(set(by_rater[a]) & set(by_rater[b]))
        if not shared:
            continue
        for target in TARGETS:
            agreements[(a, b, target)] = agreement([by_rater[a][k][target] for k in shared],
                                                   [by_rater[b][k][target] for k in shared])
    return RatingSummary(len(ratings), tuple(sorted(by_rater)), {t: boot.interval(t) for t in TARGETS},
                         len(boot.tasks), agreements, n_resamples, seed)


def _num(x: float, digits: int = 2) -> str:
    return "n/a" if math.isnan(x) else f"{x:.{digits}f}"


@dataclass(frozen=True)
class People:
    tasks: dict[str, TaskPlay]
    ratings: RatingSummary | None


def read_people(store: Store) -> People:
    return People(solvability(store), rating_summary(store))


def people_lines(people: People) -> list[str]:
    """The report's "People in the loop" section; empty when the store has no human runs or ratings."""
    tasks, summary = people.tasks, people.ratings
    if not tasks and summary is None:
        return []
    lines = ["## People in the loop", ""]
    if tasks:
        model_names = sorted({m for t in tasks.values() for m in t.pass_at_1})
        solved = sum(t.solvable for t in tasks.values())
        lines += ["### Human solvability", "",
                  f"A task is solvable when any of its first {MAX_PLAYERS} human players (`human:<name>` "
                  "attackers, in the order of their first finished run) won it. Model Pass@1 on a task: "
                  "won runs / finished runs (k/n).", "",
                  f"Solvable: **{solved} of {len(tasks)}** task(s) with human play.", ""]
        header = ["Task", "Players", "Won by", "Solvable", *[f"{m} Pass@1" for m in model_names]]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for t in tasks.values():
            cells = [t.task_id, ", ".join(p.split(":", 1)[1] for p in t.players),
                     ", ".join(p.split(":", 1)[1] for p in t.winners) or "-", "yes" if t.solvable else "no"]
            for m in model_names:
                won, n = t.pass_at_1.get(m, (0, 0))
                cells.append(f"{100 * won / n:.0f}% ({won}/{n})" if n else "-")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    if summary is not None:
        lines += ["### Human ratings of the Judge and the World Manager", "",
                  f"{summary.n_ratings} rating(s) of key turns by {len(summary.raters)} rater(s) "
                  f"({', '.join(summary.raters)}); scores 1-5. Mean over all ratings with a 95% percentile "
                  f"bootstrap interval over {summary.n_tasks} task(s) ({summary.n_resamples} resamples, "
                  f"seed {summary.seed}).", "",
                  "| Rated | Mean [95% CI] |", "|---|---|"]
        for target, title in TARGETS.items():
            i = summary.means[target]
            lines.append(f"| {title} | {_num(i.estimate)} [{_num(i.low)}, {_num(i.high)}] |")
        lines.append("")
        if summary.agreements:
            lines += ["Agreement of two raters on the turns both rated: quadratic-weighted Cohen's kappa, "
                      "exact agreement and agreement within one point.", "",
                      "| Raters | Rated | Turns | Weighted kappa | Exact | Within 1 |",
                      "|---|---|---|---|---|---|"]
            for (a, b, target), ag in summary.agreements.items():
                lines.append(f"| {a} / {b} | {TARGETS[target]} | {ag.n} | {_num(ag.kappa)} | "
                             f"{100 * ag.exact:.0f}% | {100 * ag.within_one:.0f}% |")
        else:
            lines.append("No turn was rated by two raters, so there is no agreement to report.")
        lines.append("")
    return lines
