"""Build a backend by name, importing its heavy dependencies only then."""

from __future__ import annotations

import importlib

from ..models import ModelEntry
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
    if name not in BACKENDS:
        raise BackendError(f"unknown backend '{name}'; available: {', '.join(sorted(BACKENDS))}")
    wrong = {n: e.backend for n, e in entries.items() if e.backend != name}
    if wrong:
        listed = ", ".join(f"{n} (a {b} model)" for n, b in wrong.items())
        raise BackendError(f"backend '{name}' cannot serve {listed}; fix: pick models whose "
                           f"local_models/ entry says backend: {name}")
    module, cls = BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), cls)(entries)
