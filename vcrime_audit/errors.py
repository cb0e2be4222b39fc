"""Errors that more than one layer raises."""

from __future__ import annotations


class BackendError(RuntimeError):
    """A backend could not be loaded or failed to answer (not a malformed answer)."""
