"""Build a backend by name, importing its heavy dependencies only then."""

from __future__ import annotations

from ..models import ModelEntry
from .base import BackendError, ModelBackend

BACKENDS = ("local",)


def make_backend(name: str, entries: dict[str, ModelEntry]) -> ModelBackend:
    wrong = {n: e.backend for n, e in entries.items() if e.backend != name}
    if wrong:
        listed = ", ".join(f"{n} ({b})" for n, b in wrong.items())
        raise BackendError(f"backend '{name}' cannot serve {listed}; fix: pick models of that backend")
    if name == "local":
        from .local import LocalBackend

        return LocalBackend(entries)
    raise BackendError(f"unknown backend '{name}'; available: {', '.join(BACKENDS)}")
