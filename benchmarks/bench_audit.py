"""The full audit against merely reading the store, on a SYNTHETIC 960-run store.

Store: 8 attackers x 40 tasks x 3 seeds, 4 judges (``vcrime_audit.audit.synthetic``).
Both are timed as fresh processes, interleaved, best of ``--repeats``:
- read: ``python -c`` that opens the store with plain sqlite3 and fetches every row of every table;
- audit: ``python -m vcrime_audit.cli audit --db STORE --out DIR`` -- all metrics, the judge audit,
  10,000 task resamples, every pairwise difference, report.md, summary.json, lineage.json, 3 SVG figures.
ratio = audit / read (issue 12's target: <= 3), in wall time and in CPU time (user + system of the
process and its children: on a shared machine wall time also counts waiting for other processes).

    python benchmarks/bench_audit.py [--store PATH] [--repeats 3] [--resamples 10000] [--details]

``--details`` adds in-process timings of loading, metrics and the report.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_study import bad_input, code_state, load_average, main_with_input_errors  # noqa: E402

READ_ALL = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
print(sum(len(conn.execute(f"SELECT * FROM [{t}]").fetchall()) for t in tables))
"""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str]) -> tuple[float, float, str]:
    """(wall, CPU) seconds of a fresh process (CPU: its own and its children's), and its output."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.environ.get("PYTHONPATH", ""), str(ROOT)])}
    started, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    seconds, cpu = time.perf_counter() - started, _children_cpu() - cpu
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return seconds, cpu, done.stdout


def details(path: Path, resamples: int, folder: Path) -> None:
    from vcrime_audit.audit.pipeline import run_audit
    from vcrime_audit.audit.report import write_report

    start = time.perf_counter()
    result = run_audit(path, n_resamples=resamples, seed=0)
    audit_s = time.perf_counter() - start
    start = time.perf_counter()
    write_report(result, folder)
    report_s = time.perf_counter() - start
    parts = ", ".join(f"{k} {v:.2f} s" for k, v in result.seconds.items())
    print(f"in process: run_audit {audit_s:.2f} s ({parts}); write_report {report_s:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="An existing synthetic store (default: make one).")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--details", action="store_true")
    args = parser.parse_args()
    if args.store is not None and not args.store.is_file():
        raise bad_input(f"--store {args.store}: no such file; fix: pass a store written by vcrime-audit "
                        "(`vcrime-audit audit synth --out PATH` writes a synthetic one), or leave --store "
                        "out to make one")
    with tempfile.TemporaryDirectory() as tmp:
        path = args.store
        if path is None:
            from vcrime_audit.audit.synthetic import make_synthetic_store

            start = time.perf_counter()
            path = make_synthetic_store(Path(tmp) / "synthetic.sqlite")
            print(f"made the SYNTHETIC store in {time.perf_counter() - start:.1f} s: {path}")
        read_cmd = [sys.executable, "-c", READ_ALL, str(path)]
        audit_cmd = [sys.executable, "-m", "vcrime_audit.cli", "audit", "--db", str(path), "--out",
                     str(Path(tmp) / "report"), "--resamples", str(args.resamples)]
        reads, audits = [], []
        for _ in range(args.repeats):
            *timing, rows = timed(read_cmd)
            reads.append(timing)
            *timing, out = timed(audit_cmd)
            audits.append(timing)
        read, read_cpu = min(w for w, _ in reads), min(c for _, c in reads)
        audit, audit_cpu = min(w for w, _ in audits), min(c for _, c in audits)
        print(f"read every row ({rows.strip()} rows) with plain sqlite3 in a fresh process: best "
              f"{read:.2f} s wall, {read_cpu:.2f} s CPU "
              f"(all wall: {', '.join(f'{w:.2f}' for w, _ in reads)})")
        print(f"full audit in a fresh process (`{' '.join(audit_cmd[1:4])} ...`, {args.resamples} "
              f"resamples, report + 3 figures): best {audit:.2f} s wall, {audit_cpu:.2f} s CPU "
              f"(all wall: {', '.join(f'{w:.2f}' for w, _ in audits)})")
        print("  " + next((line for line in out.splitlines() if line.startswith("seconds:")), ""))
        print(f"audit/read ratio {audit / read:.2f} wall, {audit_cpu / read_cpu:.2f} CPU (target <= 3 "
              f"wall); {load_average()}; {code_state()}")
        if args.details:
            details(path, args.resamples, Path(tmp) / "report-details")


if __name__ == "__main__":
    main_with_input_errors(main)
