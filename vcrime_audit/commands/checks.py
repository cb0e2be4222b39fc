"""Checks of command-line options made before any file is written or any model is called."""

from __future__ import annotations

from collections.abc import Iterable

from ..ids import IdError, check_id, check_seed

RECORD_MODES = ("once", "new", "none", "all")


def check_positive(value: int, option: str, fix: str) -> int:
    if value < 1:
        raise IdError(f"{option}: {value} is not allowed; fix: {fix}")
    return value


def check_turn_limits(max_turns: int, stall_turns: int) -> None:
    """An episode's limits (`run`, `play`): each at least one turn."""
    check_positive(max_turns, "--max-turns", "give at least 1 turn")
    check_positive(stall_turns, "--stall-turns", "give at least 1 turn")


def check_run_options(*, task: str, seed: int, max_turns: int, stall_turns: int,
                      record_mode: str, models: Iterable[str]) -> None:
    """The options of `run`: ids that become file names, a seed the store can hold, limits
    of at least one turn and a known record mode."""
    check_id(task, "--task")
    for name in models:
        check_id(name, "model")
    check_seed(seed)
    check_turn_limits(max_turns, stall_turns)
    if record_mode not in RECORD_MODES:
        raise IdError(f"--record-mode: '{record_mode}' is not a record mode; fix: use one of "
                      f"{', '.join(RECORD_MODES)}")
