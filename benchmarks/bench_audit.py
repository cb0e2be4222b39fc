"""Time the whole audit on a SYNTHETIC 960-run store (8 attackers x 40 tasks x 3 seeds, 4 judges).

Metrics = Table 1 per judge and median, over-harm, team usage, Pass@1, all pairwise differences,
judge rank agreement and self-preference, every interval from 10,000 task resamples.
Loading the store and drawing the report are timed separately.

    python benchmarks/bench_audit.py [--store PATH] [--repeats 3] [--resamples 10000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from vcrime_audit.audit.judges import judge_audit
from vcrime_audit.audit.load import load_audit_input, open_store
from vcrime_audit.audit.metrics import attacker_metrics
from vcrime_audit.audit.pipeline import run_audit
from vcrime_audit.audit.report import write_report
from vcrime_audit.audit.synthetic import make_synthetic_store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="An existing synthetic store (default: make one).")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.store
        if path is None:
            start = time.perf_counter()
            path = make_synthetic_store(Path(tmp) / "synthetic.sqlite")
            print(f"made the synthetic store in {time.perf_counter() - start:.1f} s")
        load, metrics = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            data = load_audit_input(open_store(path))
            load.append(time.perf_counter() - start)
            start = time.perf_counter()
            table = attacker_metrics(data, n_resamples=args.resamples, seed=0)
            judges = judge_audit(data, n_resamples=args.resamples, seed=0)
            metrics.append(time.perf_counter() - start)
        print(f"store: {len(data.runs)} runs, {len(data.turns)} attacker turns, {len(data.judgments)} "
              f"judgments, {len(data.judges)} judges, {len(data.tasks)} tasks (SYNTHETIC)")
        print(f"all metrics, {args.resamples} resamples ({len(table.attackers)} attackers x "
              f"{len(table.judges)} judges, {sum(map(len, table.pairwise.values()))} pairwise differences, "
              f"{len(judges.biases)} self-preference pairs): best {min(metrics):.3f} s, "
              f"worst {max(metrics):.3f} s over {args.repeats} repeats")
        print(f"loading the store: best {min(load):.3f} s")
        start = time.perf_counter()
        result = run_audit(path, n_resamples=args.resamples, seed=0)
        write_report(result, Path(tmp) / "report")
        print(f"end to end (load, metrics, evidence, report.md, JSON, 3 PNG): "
              f"{time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
