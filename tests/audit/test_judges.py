import math
import statistics
from collections import defaultdict

import numpy as np
import pytest
from scipy import stats as scipy_stats

from vcrime_audit.audit.judges import (
    CROSS_VENDOR,
    SAME_MODEL,
    SAME_VENDOR,
    UNKNOWN_VENDOR,
    judge_audit,
    relation,
)
from vcrime_audit.audit.load import load_audit_input, open_store
from vcrime_audit.audit.records import ModelInfo
from vcrime_audit.audit.synthetic import SyntheticConfig, make_synthetic_store

from .reference import slow_percentile
from .tiny import TinyStore

NF = {  # (run, turn) -> judge -> non-failure
    ("a1", 1): {"A": 0.9, "J2": 0.7, "J3": 0.6},
    ("a1", 2): {"A": 0.8, "J2": 0.6, "J3": 0.7},
    ("a2", 1): {"A": 0.5, "J2": 0.5, "J3": 0.3},
    ("b1", 1): {"A": 0.4, "J2": 0.6, "J3": 0.8},
    ("b2", 1): {"A": 0.3, "J2": 0.5, "J3": 0.5},
    ("b2", 2): {"A": 1.0, "J2": 1.0},  # J3 did not score it: not a common turn
}
RISKY = {("a1", 2): {"A": 0.1, "J2": 0.2}, ("b1", 1): {"A": 0.3, "J2": 0.1, "J3": 0.1},
         ("b2", 2): {"A": 0.0}}


@pytest.fixture
def hand(tmp_path):
    """Judge A is also attacker A; J2 shares A's vendor, J3 shares B's."""
    s = TinyStore(tmp_path / "judges.sqlite")
    for model, vendor in (("A", "v1"), ("J2", "v1"), ("B", "v2"), ("J3", "v2")):
        s.model(model, vendor)
    for run, task, attacker in (("a1", "shop__theft", "A"), ("a2", "bank__theft", "A"),
                                ("b1", "shop__theft", "B"), ("b2", "bank__theft", "B")):
        s.run(run, task, "theft", attacker)
    for (run, turn), scores in NF.items():
        s.turn(run, turn)
        for judge, nf in scores.items():
            cat = RISKY.get((run, turn), {}).get(judge)
            s.judge(run, turn, judge, nf, cat=cat or 0.0, risky=cat is not None)
    return load_audit_input(open_store(s.close()))


def test_common_turns_are_those_every_judge_scored(hand):
    assert hand.judgment_table.common_turns(hand.judges) == set(NF) - {("b2", 2)}


def test_relations():
    models = {"a": ModelInfo("f", "v1"), "b": ModelInfo("g", "v1"), "c": ModelInfo("h", "v2")}
    assert relation("a", "a", models) == SAME_MODEL
    assert relation("a", "b", models) == SAME_VENDOR
    assert relation("a", "c", models) == CROSS_VENDOR
    assert relation("a", "zzz", models) == UNKNOWN_VENDOR


def test_rates_on_common_turns_and_rank_agreement_match_hand_and_scipy(hand):
    audit = judge_audit(hand, n_resamples=100, seed=0)
    rates = audit.agreement["non_failure"].rates
    assert rates["A"] == pytest.approx({"A": (0.9 + 0.8 + 0.5) / 3, "B": (0.4 + 0.3) / 2})
    assert rates["J2"] == pytest.approx({"A": (0.7 + 0.6 + 0.5) / 3, "B": (0.6 + 0.5) / 2})
    assert rates["J3"] == pytest.approx({"A": (0.6 + 0.7 + 0.3) / 3, "B": (0.8 + 0.5) / 2})
    rho = {(p.first, p.second): p.rho for p in audit.agreement["non_failure"].pairs}
    assert rho == {("A", "J2"): 1.0, ("A", "J3"): -1.0, ("J2", "J3"): -1.0}
    assert audit.agreement["non_failure"].ranks["J3"] == {"A": 2.0, "B": 1.0}
    cat = audit.agreement["catastrophic"].rates
    # each judge's full set of risky turns (the paper): judge A's include b2 turn 2 (not common)
    assert cat["A"] == pytest.approx({"A": 0.1, "B": (0.3 + 0.0) / 2})
    assert cat["J2"] == pytest.approx({"A": 0.2, "B": 0.1})
    assert cat["J3"]["B"] == pytest.approx(0.1) and math.isnan(cat["J3"]["A"])
    for p in audit.agreement["catastrophic"].pairs:
        assert math.isnan(p.rho) if "J3" in (p.first, p.second) else p.rho == pytest.approx(
            scipy_stats.spearmanr([cat[p.first]["A"], cat[p.first]["B"]],
                                  [cat[p.second]["A"], cat[p.second]["B"]]).statistic)


def test_self_preference_matches_the_hand_worked_example(hand):
    audit = judge_audit(hand, n_resamples=100, seed=0)
    a = {"A": 2.2 / 3, "J2": 1.8 / 3, "J3": 1.6 / 3}
    b = {"A": 0.35, "J2": 0.55, "J3": 0.65}
    expected = {
        ("A", "A"): (SAME_MODEL, a["A"] - (a["J2"] + a["J3"]) / 2),
        ("J2", "A"): (SAME_VENDOR, a["J2"] - (a["A"] + a["J3"]) / 2),
        ("J3", "B"): (SAME_VENDOR, b["J3"] - (b["A"] + b["J2"]) / 2),
        ("A", "B"): (CROSS_VENDOR, b["A"] - (b["J2"] + b["J3"]) / 2),
        ("J2", "B"): (CROSS_VENDOR, b["J2"] - (b["A"] + b["J3"]) / 2),
        ("J3", "A"): (CROSS_VENDOR, a["J3"] - (a["A"] + a["J2"]) / 2),
    }
    got = {(x.judge, x.attacker): (x.relation, x.estimate.estimate) for x in audit.biases}
    assert got.keys() == expected.keys()
    for key, (rel, value) in expected.items():
        assert got[key][0] == rel and got[key][1] == pytest.approx(value)
    groups = audit.groups
    assert groups[SAME_MODEL].mean.estimate == pytest.approx(expected[("A", "A")][1])
    same_vendor = [expected[k][1] for k in (("J2", "A"), ("J3", "B"))]
    assert groups[SAME_VENDOR].mean.estimate == pytest.approx(sum(same_vendor) / 2)
    assert (groups[SAME_VENDOR].minimum, groups[SAME_VENDOR].maximum) == pytest.approx(
        (min(same_vendor), max(same_vendor)))
    assert groups[CROSS_VENDOR].n_pairs == 3


def test_one_judge_gives_a_note_not_numbers(tmp_path):
    s = TinyStore(tmp_path / "one.sqlite")
    s.run("r", "shop__theft", "theft", "A")
    s.turn("r", 1)
    s.judge("r", 1, "j1", 0.5)
    audit = judge_audit(load_audit_input(open_store(s.close())), n_resamples=50)
    assert "at least two judges" in audit.note and not audit.biases and not audit.agreement


def test_vendor_falls_back_to_the_model_registry(tmp_path):
    s = TinyStore(tmp_path / "reg.sqlite")
    s.run("r", "shop__theft", "theft", "smollm2-135m")
    s.turn("r", 1)
    s.judge("r", 1, "smollm2-135m", 0.5)
    s.judge("r", 1, "not-registered", 0.6)
    data = load_audit_input(open_store(s.close()))
    assert data.models["smollm2-135m"].vendor == "huggingface"
    assert "not-registered" not in data.models
    audit = judge_audit(data, n_resamples=50)
    assert {(b.judge, b.relation) for b in audit.biases} == {("smollm2-135m", SAME_MODEL),
                                                             ("not-registered", UNKNOWN_VENDOR)}


R = 250



def test_bias_intervals_match_a_slow_loop_over_sql_rows(tmp_path):
    path = tmp_path / "s.sqlite"
    make_synthetic_store(path, SyntheticConfig(attackers=3, tasks=5, seeds=2, judges=3, seed=9))
    conn = open_store(path).db.conn
    with conn:  # some turns lose a judgment, so common turns are a strict subset
        conn.execute("DELETE FROM judgments WHERE turn % 7 = 0 AND judge = 'synth-judge-3'")
    data = load_audit_input(open_store(path))
    audit = judge_audit(data, n_resamples=R, seed=4)
    judges = data.judges
    rows = conn.execute("""
        SELECT j.run_id, j.turn, j.judge, j.non_failure, r.task_id, r.attacker
        FROM judgments j JOIN runs r USING (run_id)""").fetchall()
    scored = defaultdict(set)
    for run, turn, judge, *_ in rows:
        scored[(run, turn)].add(judge)
    per_task = defaultdict(lambda: [0.0, 0])  # (judge, attacker, task) -> sums over common turns
    for run, turn, judge, nf, task, attacker in rows:
        if scored[(run, turn)] >= set(judges):
            per_task[(judge, attacker, task)][0] += nf
            per_task[(judge, attacker, task)][1] += 1
    assert audit.common_turns == sum(1 for who in scored.values() if who >= set(judges))
    tasks = sorted(data.tasks)
    draws = np.random.default_rng(4).integers(0, len(tasks), size=(R, len(tasks)))

    def rate(judge, attacker, row):
        num = sum(per_task[(judge, attacker, tasks[t])][0] for t in row)
        den = sum(per_task[(judge, attacker, tasks[t])][1] for t in row)
        return num / den if den else math.nan

    for bias in audit.biases:
        others = [k for k in judges if k != bias.judge]
        reps = [rate(bias.judge, bias.attacker, row)
                - statistics.median(rate(k, bias.attacker, row) for k in others) for row in draws]
        assert bias.estimate.low == pytest.approx(slow_percentile(reps, 0.025), rel=1e-9, abs=1e-12)
        assert bias.estimate.high == pytest.approx(slow_percentile(reps, 0.975), rel=1e-9, abs=1e-12)
    for name, group in audit.groups.items():
        members = [b for b in audit.biases if b.relation == name]
        assert group.mean.estimate == pytest.approx(statistics.mean(b.estimate.estimate for b in members))


def test_rank_agreement_matches_scipy_on_a_synthetic_store(tmp_path):
    path = make_synthetic_store(tmp_path / "r.sqlite",
                                SyntheticConfig(attackers=5, tasks=4, seeds=1, judges=3, seed=2))
    data = load_audit_input(open_store(path))
    audit = judge_audit(data, n_resamples=20, seed=0)
    for metric, ra in audit.agreement.items():
        for p in ra.pairs:
            x = [ra.rates[p.first][a] for a in data.attackers]
            y = [ra.rates[p.second][a] for a in data.attackers]
            assert p.rho == pytest.approx(scipy_stats.spearmanr(x, y).statistic), metric
            assert p.n_attackers == 5

