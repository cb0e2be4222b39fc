"""Synthetic stores for tests and benchmarks: made-up runs with the shape of the paper's study.

8 attackers x 40 tasks x 3 seeds (960 runs, ~36k turns), every turn scored by 4 judges: the
first judge (the primary, like the paper's) is every run's live judge, the others re-judge.
Everything is marked synthetic: runs.synthetic = 1, meta 'synthetic' = '1', backend 'synthetic',
model names 'synth-...'. The numbers describe no model; reports made from them say so.
Attacker actions are drawn from the classifier's labelled sets, so over-harm comes from the
real classifier reading real (tabletop) text.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..canonical import content_hash
from ..harm import classify, default_lexicon
from ..outcomes import CATASTROPHIC, catastrophic, non_failure
from ..scenario import scenarios_root
from ..store import Store
from ..yamlio import load_yaml
from .harm_labelled import HOLDOUT_SET, LABELLED_SET, load_labelled

SYNTHETIC_NOTE = "SYNTHETIC store: generated numbers for tests and benchmarks, not an evaluation of any model"
OUTCOME_SPLIT = (("full_success", 0.6), ("success_with_cost", 0.25), ("partial_success", 0.15))
FAILURE_SPLIT = (("failure_no_consequence", 0.6), ("failure_with_consequence", 0.4))


@dataclass(frozen=True)
class SyntheticConfig:
    attackers: int = 8
    tasks: int = 40
    seeds: int = 3
    judges: int = 4
    min_turns: int = 10
    max_turns: int = 60
    seed: int = 0

    def check(self) -> None:
        for name in ("attackers", "tasks", "seeds", "judges", "min_turns"):
            if getattr(self, name) < 1:
                raise ValueError(f"synthetic store: {name} must be >= 1, got {getattr(self, name)}")
        if self.max_turns < self.min_turns:
            raise ValueError(f"synthetic store: max_turns {self.max_turns} < min_turns {self.min_turns}")


@dataclass(frozen=True)
class SyntheticModel:
    name: str
    vendor: str


def model_roster(n_attackers: int, n_judges: int) -> tuple[list[SyntheticModel], list[SyntheticModel]]:
    """Attackers paired by vendor; judges are every other attacker, plus one judge-only model that
    shares the last attacker's vendor, so all three self-preference relations occur."""
    attackers = [SyntheticModel(f"synth-attacker-{i + 1}", f"synth-vendor-{i // 2 + 1}")
                 for i in range(n_attackers)]
    judges = [attackers[2 * k] if 2 * k < n_attackers else
              SyntheticModel(f"synth-judge-{k + 1}", f"synth-judge-vendor-{k + 1}")
              for k in range(n_judges - 1)]
    if n_judges > 1:
        judges.append(SyntheticModel(f"synth-judge-{n_judges}", attackers[-1].vendor))
    else:
        judges = [attackers[0]]
    return attackers, judges


def task_list(n_tasks: int, root: Path | None = None) -> list[tuple[str, str, str]]:
    """(task id, map id, goal id): the real tasks when there are enough, else synthetic ids."""
    root = root or scenarios_root()
    real = sorted((root / "tasks").glob("*.yaml"))
    if len(real) >= n_tasks:
        out = []
        for path in real[:n_tasks]:
            spec = load_yaml(path)
            out.append((spec["id"], spec["map"], spec["goal"]))
        return out
    goals = sorted(p.stem for p in (root / "goals").glob("*.yaml"))
    if not goals:
        raise ValueError(f"{root / 'goals'}: no goal files; synthetic tasks need real goals")
    return [(f"synth_map_{i + 1:02d}__{goals[i % len(goals)]}", f"synth_map_{i + 1:02d}",
             goals[i % len(goals)]) for i in range(n_tasks)]


def _distribution(nf: float, cat: float) -> list[dict[str, Any]]:
    parts = [(t, nf * w) for t, w in OUTCOME_SPLIT]
    parts += [(t, (1.0 - nf - cat) * w) for t, w in FAILURE_SPLIT] + [(CATASTROPHIC, cat)]
    return [{"type": t, "description": t.replace("_", " "), "probability": round(p, 6)}
            for t, p in parts if round(p, 6) > 0]


def _sample(distribution: list[dict[str, Any]], draw: float) -> str:
    cumulative = 0.0
    for outcome in distribution:
        cumulative += outcome["probability"]
        if draw < cumulative:
            return outcome["type"]
    return distribution[-1]["type"]


class _Generator:
    def __init__(self, config: SyntheticConfig, scenarios: Path | None) -> None:
        self.config = config
        self.rng = np.random.default_rng(config.seed)
        self.attackers, self.judges = model_roster(config.attackers, config.judges)
        self.tasks = task_list(config.tasks, scenarios)
        items = load_labelled(LABELLED_SET) + load_labelled(HOLDOUT_SET)
        self.benign = [i for i in items if i["force"] == "none" and i["damage"] == "none"]
        self.harmful = [i for i in items if not (i["force"] == "none" and i["damage"] == "none")]
        n = config.attackers
        order = self.rng.permutation(n)
        spread = np.linspace(0.0, 1.0, n) if n > 1 else np.array([0.5])
        self.skill = 0.74 + 0.14 * spread
        self.win = 0.14 + 0.57 * spread[order]
        self.team = 0.31 + 0.31 * spread[self.rng.permutation(n)]
        self.harm = 0.04 + 0.16 * spread[self.rng.permutation(n)]
        self.cat_share = 0.30 + 0.40 * spread[::-1]
        self.judge_bias = self.rng.uniform(-0.04, 0.04, size=len(self.judges))
        self.taste = self.rng.normal(0.0, 0.012, size=(len(self.judges), n))
        self.difficulty = {t[0]: float(self.rng.normal(0.0, 0.06)) for t in self.tasks}
        self.lexicon = default_lexicon()
        self.rows: dict[str, list[tuple]] = {"runs": [], "turns": [], "judgments": [], "harm": []}

    def self_bias(self, judge: SyntheticModel, attacker: SyntheticModel) -> float:
        if judge.name == attacker.name:
            return 0.03
        return 0.015 if judge.vendor == attacker.vendor else 0.0

    def run(self, a: int, task: tuple[str, str, str], seed: int) -> None:
        rng, attacker = self.rng, self.attackers[a]
        task_id, map_id, goal_id = task
        run_id = f"{task_id}-s{seed}-{attacker.name}"
        live = self.judges[0]
        n = int(rng.integers(self.config.min_turns, self.config.max_turns + 1))
        won = rng.random() < np.clip(self.win[a] + 3 * self.difficulty[task_id], 0.0, 1.0)
        status = "won" if won else str(rng.choice(["lost", "stalled", "max_turns"], p=[0.5, 0.3, 0.2]))
        if status == "max_turns":
            n = self.config.max_turns
        harmful_turns = set()
        if rng.random() < self.harm[a]:
            harmful_turns = set(rng.choice(np.arange(1, n + 1), size=min(n, int(rng.integers(1, 4))),
                                           replace=False).tolist())
        quality = rng.normal(self.skill[a] + self.difficulty[task_id], 0.15, size=n)
        risky = rng.random(n) < 0.3
        offsets = np.array([self.judge_bias[j] + self.taste[j, a] + self.self_bias(judge, attacker)
                            for j, judge in enumerate(self.judges)])
        nf_all = np.clip(quality[:, None] + offsets[None, :]
                         + rng.normal(0.0, 0.05, size=(n, len(self.judges))), 0.0, 1.0)
        risky_all = risky[:, None] != (rng.random((n, len(self.judges))) < 0.08)
        share_all = self.cat_share[a] * rng.uniform(0.5, 1.5, size=(n, len(self.judges)))
        draws = rng.random(n)
        for turn in range(1, n + 1):
            pool = self.harmful if turn in harmful_turns else self.benign
            item = pool[int(rng.integers(len(pool)))]
            leader = rng.random() >= self.team[a]
            actor = "m1" if leader else f"m{int(rng.integers(2, 5))}"
            reading = classify(item, self.lexicon)
            self.rows["harm"].append((run_id, turn, reading.force, reading.damage, self.lexicon.digest))
            live_outcome, live_draw = None, None
            for j, judge in enumerate(self.judges):
                nf = float(nf_all[turn - 1, j])
                judged_risky = bool(risky_all[turn - 1, j])
                cat = min(1.0 - nf, (1.0 - nf) * float(share_all[turn - 1, j])) if judged_risky else 0.0
                dist = _distribution(nf, cat)
                is_live = judge.name == live.name
                draw = float(draws[turn - 1]) if is_live else None
                sampled = _sample(dist, draw) if draw is not None else None
                if is_live:
                    live_outcome, live_draw = sampled, draw
                self.rows["judgments"].append((
                    run_id, turn, judge.name, "live" if is_live else "rejudge", json.dumps(dist),
                    int(judged_risky), non_failure(dist), catastrophic(dist), sampled, draw))
            turn_status = status if turn == n else "running"
            self.rows["turns"].append((
                run_id, turn, actor, int(leader), item["verb"], item["description"],
                json.dumps(item["targets"]), 10, live_outcome, live_draw, turn_status))
        self.rows["runs"].append((
            run_id, task_id, map_id, goal_id, seed, attacker.name, live.name, live.name, "synthetic",
            status, f"synthetic {status}", n, self.config.max_turns, 30, "", 1))

    def generate(self) -> None:
        for a in range(len(self.attackers)):
            for task in self.tasks:
                for seed in range(self.config.seeds):
                    self.run(a, task, seed)


_SQL = {
    "runs": "INSERT INTO runs (run_id, task_id, map_id, goal_id, seed, attacker, judge, world_manager, "
            "backend, status, reason, turns, max_turns, stall_turns, cassette, synthetic) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "turns": "INSERT INTO turns (run_id, turn, actor, actor_is_leader, verb, description, targets, "
             "time_minutes, outcome_type, draw, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "judgments": "INSERT INTO judgments (run_id, turn, judge, source, distribution, risky, non_failure, "
                 "catastrophic, sampled_outcome, draw) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    "harm": "INSERT INTO harm (run_id, turn, force, damage, lexicon_digest) VALUES (?, ?, ?, ?, ?)",
}


def make_synthetic_store(path: str | Path, config: SyntheticConfig | None = None, *,
                         scenarios: Path | None = None, overwrite: bool = False) -> Path:
    """Write a synthetic store at `path`; refuses to touch an existing file unless `overwrite`."""
    config = config or SyntheticConfig()
    config.check()
    path = Path(path)
    if path.exists():
        if not overwrite:
            raise FileExistsError(f"{path}: already exists; fix: choose a new path or pass overwrite")
        path.unlink()
    generator = _Generator(config, scenarios)
    generator.generate()
    with Store(path) as store:
        conn = store.db.conn
        with conn:
            for table, sql in _SQL.items():
                conn.executemany(sql, generator.rows[table])
            models = {m.name: m for m in generator.attackers + generator.judges}
            conn.executemany("INSERT INTO models (name, family, vendor, source, fingerprint) "
                             "VALUES (?, ?, ?, ?, ?)",
                             [(m.name, m.name, m.vendor, "synthetic", content_hash(["synthetic", m.name]))
                              for m in models.values()])
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", [
                ("synthetic", "1"), ("note", SYNTHETIC_NOTE),
                ("generator", "vcrime_audit.audit.synthetic"), ("config", json.dumps(asdict(config)))])
    return path
