"""Time the task-clustered bootstrap at the paper's scale.

8 attackers x 40 tasks x 3 seeds, turn-level ratio-of-sums (uneven turns per run),
10,000 resamples, plus all 28 pairwise attacker differences. Synthetic numbers only.

    python benchmarks/bench_audit_stats.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from vcrime_audit.audit.stats import RunValue, cluster_bootstrap, paired_differences

N_ATTACKERS, N_TASKS, N_SEEDS, N_RESAMPLES = 8, 40, 3, 10_000


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


if __name__ == "__main__":
    main()
