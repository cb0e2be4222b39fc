"""Defaults shared by the library and the command line (a light module: the CLI imports it)."""

from pathlib import Path

# New stores, recordings and reports go under runs/ (ignored by git); cassettes/ holds only the
# committed recordings, which the tests and scripts/demo_report.sh name one by one.
RUNS = Path("runs")
DEFAULT_DB = RUNS / "vcrime.sqlite"
DEFAULT_CASSETTES = RUNS / "cassettes"
DEFAULT_REPORTS = RUNS / "reports"
DEFAULT_TASK = "robotics_company__data_theft"
DEFAULT_RESAMPLES = 10_000
DEFAULT_MIN_TURNS = 10  # interrogation: runs with at least this many executed turns (the paper)
DEFAULT_PER_ATTACKER = 50  # re-judging: turns sampled per attacker
DEMO_QUERIES = "demo"
