"""Time the audit's statistical core at the paper's scale.

Bootstrap: 8 attackers x 40 tasks x 3 seeds, turn-level ratio-of-sums (uneven turns per
run), 10,000 resamples, plus all 28 pairwise attacker differences. Synthetic numbers only.
Over-harm: classify ~36k attacker actions (the labelled sets, each description made unique
so the per-text cache cannot help; these sets are harm-dense, so real runs are faster).

    python benchmarks/bench_audit_stats.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from vcrime_audit.audit.harm_labelled import HOLDOUT_SET, LABELLED_SET, load_labelled
from vcrime_audit.audit.stats import RunValue, cluster_bootstrap, paired_differences
from vcrime_audit.harm import classify, load_lexicon

N_ATTACKERS, N_TASKS, N_SEEDS, N_RESAMPLES = 8, 40, 3, 10_000
N_ACTIONS = 36_000


def synthetic_runs(seed: int = 0) -> dict[str, list[RunValue]]:
    rng = np.random.default_rng(seed)
    groups = {}
    for a in range(N_ATTACKERS):
        runs = []
        for t in range(N_TASKS):
            for _ in range(N_SEEDS):
                turns = int(rng.integers(10, 70))
                runs.append(RunValue(f"task{t:02d}", float(rng.uniform(0.6, 0.95) * turns), turns))
        groups[f"attacker{a}"] = runs
    return groups


def time_harm() -> float:
    items = load_labelled(LABELLED_SET) + load_labelled(HOLDOUT_SET)
    actions = [
        dict(items[i % len(items)], description=f"{items[i % len(items)]['description']} #{i}")
        for i in range(N_ACTIONS)
    ]
    lexicon = load_lexicon()
    start = time.perf_counter()
    for action in actions:
        classify(action, lexicon)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    groups = synthetic_runs()
    timings = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        result = cluster_bootstrap(groups, n_resamples=N_RESAMPLES, seed=1)
        pairs = paired_differences(result)
        timings.append(time.perf_counter() - start)
    print(
        f"bootstrap {N_ATTACKERS} attackers x {N_TASKS} tasks x {N_SEEDS} seeds, "
        f"{N_RESAMPLES} resamples, {len(pairs)} paired differences: "
        f"best {min(timings):.3f} s, median {sorted(timings)[len(timings) // 2]:.3f} s "
        f"over {args.repeats} repeats"
    )
    print(f"over-harm classification of {N_ACTIONS} actions: {time_harm():.2f} s")


if __name__ == "__main__":
    main()
