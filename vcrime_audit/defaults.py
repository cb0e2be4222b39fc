"""Defaults shared by the library and the command line (a light module: the CLI imports it)."""

from pathlib import Path

DEFAULT_DB = Path("runs/vcrime.sqlite")
DEFAULT_CASSETTES = Path("cassettes")
DEFAULT_TASK = "robotics_company__data_theft"
DEFAULT_RESAMPLES = 10_000
DEFAULT_MIN_TURNS = 10  # interrogation: runs with at least this many executed turns (the paper)
DEFAULT_PER_ATTACKER = 50  # re-judging: turns sampled per attacker
DEMO_QUERIES = "demo"
