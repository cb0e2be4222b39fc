"""What a job's status says. An outcome is a result about the evaluated model; a crash is a fault
of the infrastructure (a backend failure, a replay miss, a bug, a killed process) and says nothing
about the model, so audits leave crashed jobs out of every metric and list them instead."""

from __future__ import annotations

RUNNING = "running"
WON, LOST, STALLED, MAX_TURNS = "won", "lost", "stalled", "max_turns"
MODEL_ERROR = "model_error"
"""The model's output stayed unusable after every attempt: an outcome, counted as not won."""
CRASHED = "crashed"
DONE = "done"
"""A certification or follow-up that ran to its end."""

RUN_OUTCOMES: tuple[str, ...] = (WON, LOST, STALLED, MAX_TURNS, MODEL_ERROR)
JOB_FINISHED: tuple[str, ...] = (*RUN_OUTCOMES, DONE)
