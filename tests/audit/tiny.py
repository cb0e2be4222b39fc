"""Hand-built stores: real SQLite files written row by row, so tests know every rate by hand."""

from __future__ import annotations

import json
from pathlib import Path

from vcrime_audit.harm import default_lexicon
from vcrime_audit.outcomes import catastrophic, non_failure
from vcrime_audit.store import Store


def distribution(nf: float, cat: float = 0.0) -> list[dict]:
    """A judge distribution with non-failure `nf` (split over two success tiers) and catastrophic `cat`."""
    parts = [("full_success", nf / 2), ("partial_success", nf / 2), ("catastrophic_failure", cat),
             ("failure_no_consequence", 1.0 - nf - cat)]
    return [{"type": t, "description": t, "probability": p} for t, p in parts if p > 0]


class TinyStore:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.store = Store(self.path)
        self.conn = self.store.db.conn
        self.conn.execute("PRAGMA synchronous = OFF")
        self.digest = default_lexicon().digest

    def run(self, run_id: str, task: str, goal: str, attacker: str, status: str = "won",
            judge: str = "j1", synthetic: int = 0) -> None:
        with self.conn:
            self.conn.execute(
                "INSERT INTO runs (run_id, task_id, map_id, goal_id, seed, attacker, judge, status, "
                "synthetic) VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?)",
                [run_id, task, task.split("__")[0], goal, attacker, judge, status, synthetic])

    def turn(self, run_id: str, turn: int, *, leader: bool = True, force: int | None = 0,
             damage: int | None = 0, verb: str | None = "move",
             description: str = "Walk to the lobby.", targets: tuple[str, ...] = ()) -> None:
        """An attacker turn; force/damage None leaves no harm reading (the audit must classify it);
        verb None makes a turn without an action (e.g. an error turn)."""
        with self.conn:
            self.conn.execute(
                "INSERT INTO turns (run_id, turn, actor, actor_is_leader, verb, description, targets, "
                "status) VALUES (?, ?, ?, ?, ?, ?, ?, 'running')",
                [run_id, turn, "lead" if leader else "mate", int(leader), verb,
                 description if verb else None, json.dumps(list(targets)) if verb else None])
            if verb and force is not None:
                self.conn.execute("INSERT INTO harm (run_id, turn, force, damage, lexicon_digest) "
                                  "VALUES (?, ?, ?, ?, ?)", [run_id, turn, force, damage, self.digest])

    def judge(self, run_id: str, turn: int, judge: str, nf: float, cat: float = 0.0,
              risky: bool = False, columns: bool = True) -> None:
        """A judgment; columns=False leaves non_failure/catastrophic NULL (the audit reads the
        distribution instead)."""
        dist = distribution(nf, cat)
        with self.conn:
            self.conn.execute(
                "INSERT INTO judgments (run_id, turn, judge, source, distribution, risky, non_failure, "
                "catastrophic) VALUES (?, ?, ?, 'live', ?, ?, ?, ?)",
                [run_id, turn, judge, json.dumps(dist), int(risky),
                 non_failure(dist) if columns else None, catastrophic(dist) if columns else None])

    def model(self, name: str, vendor: str, fingerprint: str | None = None) -> None:
        with self.conn:
            self.conn.execute("INSERT INTO models (name, family, vendor, source, fingerprint) "
                              "VALUES (?, ?, ?, 'test', ?)", [name, name, vendor, fingerprint])

    def close(self) -> Path:
        self.conn.close()
        return self.path
