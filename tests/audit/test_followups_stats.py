"""Follow-up statistics on a hand-built SQLite store, each checked against an independent computation:
scikit-learn's kappa, counts by hand, and a slow bootstrap loop over raw rows."""

import random

import pytest
from sklearn.metrics import cohen_kappa_score

from vcrime_audit.audit.followups_load import load_followup_rows
from vcrime_audit.audit.followups_stats import followups_audit
from vcrime_audit.audit.stats import resample_indices
from vcrime_audit.followups.annotate import resolve
from vcrime_audit.followups.rubric import DIMENSIONS
from vcrime_audit.store import Store

from .reference import slow_percentile

RUNS = {"r1": ("t1", "atk_a"), "r2": ("t1", "atk_a"), "r3": ("t2", "atk_a"), "r4": ("t3", "atk_a"),
        "r5": ("t3", "atk_b"), "r6": ("t4", "atk_b"), "r7": ("t4", "atk_b")}
UNFINISHED = "r7"
PAIR, X, Y = "x,y", "x", "y"
R, SEED = 400, 11



def slow_interval(per_run, tasks):
    """per_run: run id -> (numerator, denominator); resample tasks, sum whole runs, ratio, percentiles."""
    reps = []
    for row in resample_indices(len(tasks), R, SEED):
        num = den = 0.0
        for t in row:
            for run_id, (n, d) in per_run.items():
                if RUNS[run_id][0] == tasks[t]:
                    num += n
                    den += d
        if den:
            reps.append(num / den)
    return slow_percentile(reps, 0.025), slow_percentile(reps, 0.975)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    rng = random.Random(4)
    store = Store(tmp_path_factory.mktemp("fu") / "hand.sqlite")
    conn = store.db.conn
    for run_id, (task, attacker) in RUNS.items():
        conn.execute("INSERT INTO runs (run_id, task_id, goal_id, attacker, judge, status, seed) "
                     "VALUES (?, ?, 'theft', ?, 'j_live', ?, 0)",
                     [run_id, task, attacker, "running" if run_id == UNFINISHED else "won"])
    raw = {}  # (run, dim) -> {(annotator, round): score}
    for run_id in RUNS:
        for d in DIMENSIONS:
            got = {(X, 1): rng.choice([3, 4, 5, 5]), (Y, 1): rng.choice([2, 4, 5, 5])}
            if run_id == "r2" and d == "deception":
                del got[(Y, 1)]  # Y gave no usable answer
            elif got[(X, 1)] != got[(Y, 1)]:
                got[(X, 2)], got[(Y, 2)] = rng.choice([(4, 4), (5, 5), (3, 5), (5, 4)])
            raw[(run_id, d)] = got
            status, score = resolve(got.get((X, 1)), got.get((Y, 1)), got.get((X, 2)), got.get((Y, 2)))
            conn.execute("INSERT INTO annotation_results VALUES (?, ?, ?, ?, ?, 'f')",
                         [PAIR, run_id, d, status, score])
            for (who, round_), s in got.items():
                conn.execute("INSERT INTO annotations VALUES (?, ?, ?, ?, ?, ?, 'why', 'f')",
                             [PAIR, run_id, who, d, round_, s])
    answers = {}
    for run_id in RUNS:
        for condition in ("CTRL", "A2"):
            valid = rng.random() > 0.2
            row = (int(valid), int(not valid or rng.random() < 0.3), int(valid and rng.random() < 0.7),
                   int(valid and rng.random() < 0.5))
            answers[(run_id, condition)] = row
            conn.execute("INSERT INTO interrogations VALUES (?, ?, ?, 12, ?, ?, ?, ?, NULL, '', 'g')",
                         [run_id, RUNS[run_id][1], condition, *row])
    live = {("r1", 1): (0.8, 1), ("r1", 2): (0.2, 0), ("r3", 1): (0.5, 1), ("r5", 1): (1.0, 0)}
    rejudged = {("r1", 1): (0.6, 1), ("r1", 2): (0.5, 1), ("r3", 1): (0.5, 0), ("r5", 1): (0.9, 0),
                ("r6", 1): (0.3, 1)}  # r6 turn 1: the live judge gave no usable answer
    for (run_id, turn), (nf, risky) in live.items():
        conn.execute("INSERT INTO judgments (run_id, turn, judge, source, non_failure, risky) "
                     "VALUES (?, ?, 'j_live', 'live', ?, ?)", [run_id, turn, nf, risky])
    for (run_id, turn), (nf, risky) in rejudged.items():
        conn.execute("INSERT INTO judgments (run_id, turn, judge, source, non_failure, risky) "
                     "VALUES (?, ?, 'j_new', 'rejudge', ?, ?)", [run_id, turn, nf, risky])
        conn.execute("INSERT INTO rejudged_turns VALUES ('h', ?, ?, 'j_new', 'judged', '')", [run_id, turn])
    conn.execute("INSERT INTO rejudged_turns VALUES ('h', 'r4', 1, 'j_new', 'failed', 'no')")
    conn.commit()
    audit = followups_audit(load_followup_rows(store), n_resamples=R, seed=SEED)
    return audit, raw, answers, live, rejudged


def test_agreement_before_and_after_match_sklearn(built):
    audit, raw, _, _, _ = built
    (pair,) = audit.annotation
    assert pair.annotators == PAIR
    finished = [r for r in RUNS if r != UNFINISHED]
    for dim in pair.dimensions:
        items = [raw[(r, dim.dimension)] for r in finished]
        before = [(g[(X, 1)], g[(Y, 1)]) for g in items if (Y, 1) in g]
        after = [(g.get((X, 2), g[(X, 1)]), g.get((Y, 2), g[(Y, 1)])) for g in items if (Y, 1) in g]
        for got, pairs in ((dim.before, before), (dim.after, after)):
            xs, ys = [a for a, _ in pairs], [b for _, b in pairs]
            assert got.n == len(pairs)
            assert got.kappa == pytest.approx(cohen_kappa_score(xs, ys, weights="quadratic",
                                                                labels=[1, 2, 3, 4, 5]))
            assert got.exact == pytest.approx(sum(a == b for a, b in pairs) / len(pairs))
            assert got.within_one == pytest.approx(sum(abs(a - b) <= 1 for a, b in pairs) / len(pairs))
        disputed = [g for g in items if (X, 2) in g]
        assert dim.statuses["agreed"] == sum(1 for g in items if (Y, 1) in g and g[(X, 1)] == g[(Y, 1)])
        assert dim.statuses["reconciled"] == sum(1 for g in disputed if g[(X, 2)] == g[(Y, 2)])
        assert dim.statuses["dropped"] == sum(1 for g in disputed if g[(X, 2)] != g[(Y, 2)])
        assert dim.statuses["missing"] == sum(1 for g in items if (Y, 1) not in g)
    assert sum(pair.pooled.statuses.values()) == len(finished) * len(DIMENSIONS)
    assert pair.pooled.before.n == sum(d.before.n for d in pair.dimensions)


def test_level5_rates_and_intervals(built):
    audit, raw, _, _, _ = built
    (pair,) = audit.annotation
    tasks = sorted({t for r, (t, _) in RUNS.items() if r != UNFINISHED})
    final = {}
    for (run_id, dim), g in raw.items():
        if run_id == UNFINISHED or (Y, 1) not in g:
            continue
        if g[(X, 1)] == g[(Y, 1)]:
            final[(run_id, dim)] = g[(X, 1)]
        elif g[(X, 2)] == g[(Y, 2)]:
            final[(run_id, dim)] = g[(X, 2)]
    assert set(pair.level5) == {"atk_a", "atk_b"}
    for attacker, rates in pair.level5.items():
        runs = [r for r, (_, a) in RUNS.items() if a == attacker and r != UNFINISHED]
        for dim in (*DIMENSIONS, "all"):
            dims = DIMENSIONS if dim == "all" else (dim,)
            per_run = {r: (sum(final[(r, d)] == 5 for d in dims if (r, d) in final),
                           sum((r, d) in final for d in dims)) for r in runs}
            per_run = {r: v for r, v in per_run.items() if v[1] or dim == "all"}
            if not any(d for _, d in per_run.values()):
                assert dim not in rates
                continue
            rate = rates[dim]
            k, n = sum(v[0] for v in per_run.values()), sum(v[1] for v in per_run.values())
            assert (rate.k, rate.n) == (k, n) and rate.estimate == pytest.approx(k / n)
            low, high = slow_interval(per_run, tasks)
            assert (rate.low, rate.high) == (pytest.approx(low), pytest.approx(high))


def test_interrogation_cells_and_intervals(built):
    audit, _, answers, _, _ = built
    tasks = sorted({t for r, (t, _) in RUNS.items() if r != UNFINISHED})
    cells = {(c.model, c.condition): c for c in audit.interrogation}
    assert list(cells) == [("atk_a", "CTRL"), ("atk_a", "A2"), ("atk_b", "CTRL"), ("atk_b", "A2")]
    for (model, condition), cell in cells.items():
        runs = [r for r, (_, a) in RUNS.items() if a == model and r != UNFINISHED]
        rows = {r: answers[(r, condition)] for r in runs}
        assert cell.n == len(runs) and cell.valid == sum(v[0] for v in rows.values())
        for i, metric in ((1, "refused"), (2, "admission"), (3, "credible")):
            rate = cell.rates[metric]
            k = sum(v[i] for v in rows.values())
            assert (rate.k, rate.n, rate.estimate) == (k, len(runs), pytest.approx(k / len(runs)))
            low, high = slow_interval({r: (v[i], 1) for r, v in rows.items()}, tasks)
            assert (rate.low, rate.high) == (pytest.approx(low), pytest.approx(high))


def test_invalid_answers_count_as_refusals(built):
    _, _, answers, _, _ = built
    assert all(row[1] == 1 for row in answers.values() if row[0] == 0)
    assert any(row[0] == 0 for row in answers.values())


def test_rejudge_beside_the_live_judge(built):
    audit, _, _, live, rejudged = built
    (c,) = audit.rejudge
    paired = [k for k in rejudged if k in live]
    assert (c.judge, c.live_judges, c.turns, c.failed, c.compared) == ("j_new", ("j_live",), 5, 1, 4)
    assert c.live_non_failure == pytest.approx(sum(live[k][0] for k in paired) / 4)
    assert c.non_failure == pytest.approx(sum(rejudged[k][0] for k in paired) / 4)
    assert c.mean_difference == pytest.approx((-0.2 + 0.3 + 0.0 - 0.1) / 4)
    assert c.mean_absolute_difference == pytest.approx((0.2 + 0.3 + 0.0 + 0.1) / 4)
    assert c.risky_agreement == pytest.approx(2 / 4)


def test_an_empty_store_has_no_followups(tmp_path):
    audit = followups_audit(load_followup_rows(Store(tmp_path / "empty.sqlite")), n_resamples=10)
    assert audit.empty


# --- issue 11 items 13 and 14: annotator self-preference; interrogation by log source -----------

def _rows(**fields):
    from vcrime_audit.audit.followups_load import FollowupRows, RunKey

    runs = {"p1": RunKey("p1", "t1", "atk_x"), "p2": RunKey("p2", "t2", "atk_x"),
            "p3": RunKey("p3", "t2", "atk_y")}
    base = {"runs": runs, "rejudged": (), "rejudge_failed": {}, "scores": (), "results": (),
            "interrogations": (), "fingerprints": {}}
    return FollowupRows(**{**base, **fields})


def test_annotator_self_preference_by_hand():
    """Annotator 'x-alias' has atk_x's weights: on p1 and p2 (atk_x's runs) its round-1 scores
    minus y's: (4-3) + (5-5) on p1, (2-4) on p2 = -1 over 3 items. y's model played no run."""
    from vcrime_audit.audit.followups_load import AnnotationResult, AnnotationScore
    from vcrime_audit.audit.followups_stats import annotation_audit

    pair, a, b = "x-alias,y", "x-alias", "y"
    scores = []
    for run_id, dim, sa, sb in (("p1", "deception", 4, 3), ("p1", "teamwork", 5, 5),
                                ("p2", "deception", 2, 4), ("p3", "deception", 1, 5)):
        scores += [AnnotationScore(pair, run_id, a, dim, 1, sa), AnnotationScore(pair, run_id, b, dim, 1, sb)]
    scores.append(AnnotationScore(pair, "p2", a, "deception", 2, 4))  # round 2: not counted
    results = [AnnotationResult(pair, "p1", "deception", "agreed", 4)]
    rows = _rows(scores=tuple(scores), results=tuple(results),
                 fingerprints={"x-alias": "w1", "atk_x": "w1", "y": "w2", "atk_y": "w3"})
    [audit] = annotation_audit(rows, n_resamples=200, seed=0)
    [bias] = audit.self_preference
    assert (bias.annotator, bias.other, bias.own_runs) == (a, b, 2)
    assert (bias.rate.k, bias.rate.n, bias.rate.estimate) == (-1.0, 3.0, pytest.approx(-1 / 3))
    # the two tasks' per-task means are +0.5 (t1) and -2 (t2): every resample lies between
    assert -2.0 <= bias.rate.low <= bias.rate.high <= 0.5


def test_interrogations_are_split_by_log_source():
    from vcrime_audit.audit.followups_load import Interrogation
    from vcrime_audit.audit.followups_stats import interrogation_audit

    rows = _rows(interrogations=(
        Interrogation("p1", "atk_x", "A1", True, False, True, False),
        Interrogation("p3", "atk_x", "A1", False, True, False, False),
        Interrogation("p2", "atk_x", "A1+free", True, True, False, False)))
    cells = {(c.model, c.source, c.condition): c for c in interrogation_audit(rows, n_resamples=50)}
    assert set(cells) == {("atk_x", "own", "A1"), ("atk_x", "other", "A1"), ("atk_x", "own", "A1+free")}
    assert cells[("atk_x", "other", "A1")].rates["refused"].estimate == 1.0
    assert cells[("atk_x", "own", "A1")].rates["admission"].estimate == 1.0
