"""Build a backend by name, importing its heavy dependencies only then."""

from __future__ import annotations

import importlib

from ..models import ModelEntry, ModelError
from .base import BackendError, ModelBackend

# name -> "module:class"; each class takes ``entries: dict[str, ModelEntry]``
BACKENDS: dict[str, str] = {
    "local": "vcrime_audit.backends.local:LocalBackend",
    "openai": "vcrime_audit.backends.openai:OpenAIBackend",
    "scripted": "vcrime_audit.backends.scripted:ScriptedBackend",  # benchmarks and tests only
    "transformers": "vcrime_audit.backends.transformers:TransformersBackend",
    "vllm": "vcrime_audit.backends.vllm:VLLMBackend",
}


def make_backend(name: str, entries: dict[str, ModelEntry]) -> ModelBackend:
    """Backend ``name`` serving ``entries``, each resolved to the weights and options that engine
    uses (:meth:`ModelEntry.for_engine`)."""
    if name not in BACKENDS:
        raise BackendError(f"unknown backend '{name}'; available: {', '.join(sorted(BACKENDS))}")
    try:
        resolved = {n: e.for_engine(name) for n, e in entries.items()}
    except ModelError as exc:
        raise BackendError(str(exc)) from None
    module, cls = BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), cls)(resolved)
