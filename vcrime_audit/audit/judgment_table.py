"""An audit's judgments as columns: sums per judge and run, and the turns every judge scored,
without a Python loop over the judgments.

The sums are the ones a loop over the rows in store order makes: ``np.bincount`` adds each bin's
weights one by one in row order, from 0.0, as ``+=`` would, so they are equal bit for bit (checked
against that loop in ``tests/audit/test_judgment_table.py``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from .records import JudgmentRow

JudgmentSums = dict[tuple[str, str], list]
"""(judge, run id) -> [non-failure sum, catastrophic sum on risky turns, turns, risky turns]."""


@dataclass(frozen=True, eq=False)
class JudgmentTable:
    """Row i of the judgments: ``run_ids[run[i]]``, ``turn[i]``, ``judges[judge[i]]``, ``risky[i]``,
    ``non_failure[i]``, ``catastrophic[i]``."""

    run_ids: tuple[str, ...]
    judges: tuple[str, ...]
    run: np.ndarray
    turn: np.ndarray
    judge: np.ndarray
    risky: np.ndarray
    non_failure: np.ndarray
    catastrophic: np.ndarray

    @classmethod
    def of(cls, judgments: Sequence[JudgmentRow]) -> JudgmentTable:
        n = len(judgments)
        run_index: dict[str, int] = {}
        judge_index: dict[str, int] = {}

        def column(k: int, dtype: type) -> np.ndarray:
            return np.fromiter(map(itemgetter(k), judgments), dtype, n)

        run = np.fromiter((run_index.setdefault(r, len(run_index)) for r in map(itemgetter(0), judgments)),
                          np.int64, n)
        judge = np.fromiter((judge_index.setdefault(j, len(judge_index))
                             for j in map(itemgetter(2), judgments)), np.int64, n)
        return cls(tuple(run_index), tuple(judge_index), run, column(1, np.int64), judge, column(3, bool),
                   column(4, np.float64), column(5, np.float64))

    def rows_of_runs(self, run_ids: Collection[str]) -> np.ndarray:
        """Which rows belong to one of ``run_ids``."""
        wanted = np.fromiter((r in run_ids for r in self.run_ids), bool, len(self.run_ids))
        return wanted[self.run] if len(self.run_ids) else np.zeros(0, bool)

    def common_rows(self, judges: Collection[str]) -> tuple[np.ndarray, int]:
        """Which rows are of a (run, turn) that every judge in ``judges`` scored, and how many such
        (run, turn) pairs there are."""
        wanted = [self.judges.index(j) for j in set(judges) if j in self.judges]
        if len(wanted) < len(set(judges)) or not len(self.run):
            return np.zeros(len(self.run), bool), 0
        low = int(self.turn.min())
        pair = self.run * (int(self.turn.max()) - low + 1) + (self.turn - low)
        mine = np.isin(self.judge, wanted)
        triples = np.sort(pair[mine] * len(self.judges) + self.judge[mine])
        seen = triples[_firsts(triples)] // len(self.judges)  # each (pair, judge) once, in pair order
        starts = np.flatnonzero(_firsts(seen))
        common = seen[starts][np.diff(np.r_[starts, len(seen)]) == len(wanted)]
        return np.isin(pair, common), len(common)

    def common_turns(self, judges: Collection[str]) -> set[tuple[str, int]]:
        """(run id, turn) pairs that every judge in ``judges`` scored."""
        rows, _ = self.common_rows(judges)
        return set(zip((self.run_ids[r] for r in self.run[rows].tolist()), self.turn[rows].tolist(),
                       strict=True))

    def sums(self, rows: np.ndarray) -> JudgmentSums:
        """:data:`JudgmentSums` over the selected rows, turns in row order."""
        n_runs = len(self.run_ids)
        key = self.judge[rows] * n_runs + self.run[rows]
        size = len(self.judges) * n_runs
        nf = np.bincount(key, weights=self.non_failure[rows], minlength=size)
        risky = self.risky[rows]
        cat = np.bincount(key[risky], weights=self.catastrophic[rows][risky], minlength=size)
        turns = _grouped(key, self.turn[rows])
        risky_turns = _grouped(key[risky], self.turn[rows][risky])
        out: JudgmentSums = {}
        for k, group in turns.items():
            judge, run = divmod(k, n_runs)
            out[self.judges[judge], self.run_ids[run]] = [float(nf[k]), float(cat[k]), group,
                                                          risky_turns.get(k, [])]
        return out


def _firsts(ordered: np.ndarray) -> np.ndarray:
    """Which elements of a sorted array differ from the one before."""
    return np.r_[True, ordered[1:] != ordered[:-1]] if len(ordered) else np.zeros(0, bool)


def _grouped(key: np.ndarray, values: np.ndarray) -> dict[int, list[int]]:
    """key -> its values, in row order (one sort, then slices of one list)."""
    if not len(key):
        return {}
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    starts = np.flatnonzero(_firsts(ordered)).tolist()
    listed = values[order].tolist()
    ends = [*starts[1:], len(listed)]
    keys = ordered[starts].tolist()
    return {k: listed[start:end] for k, start, end in zip(keys, starts, ends, strict=True)}
