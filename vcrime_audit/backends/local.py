"""The embedded CPU default: a GGUF model through llama-cpp-python, JSON-Schema-constrained."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from ..canonical import file_blake2b
from ..models import ModelEntry
from .base import BackendError, GenerateRequest, GenerateResult, Usage


@contextmanager
def _without_extra_buffer_types() -> Iterator[None]:
    """Load with ``use_extra_bufts=False``: llama.cpp's AMX buffer path segfaults on the first
    token on some CPUs, and ``Llama()`` has no argument for it, so the default params are wrapped
    while the model loads."""
    import llama_cpp.llama_cpp as lib

    original = lib.llama_model_default_params

    def params() -> Any:
        p = original()
        p.use_extra_bufts = False
        return p

    lib.llama_model_default_params = params
    try:
        yield
    finally:
        lib.llama_model_default_params = original


LLAMA_DEFAULTS = {"n_batch": 2048, "n_ubatch": 2048, "flash_attn": True}


def weights_fingerprint(path: Path) -> dict[str, Any]:
    return {"file": path.name, "bytes": path.stat().st_size, "blake2b": file_blake2b(path)}


class LocalBackend:
    """One llama.cpp model per registry entry, loaded on first use; calls run one at a time, each
    from an empty KV cache.

    llama-cpp-python keeps the previous call's tokens in the model's KV cache and evaluates only
    what follows the longest prefix they share. The cached tokens' values depend on how they were
    evaluated (a generated token alone, a prompt's in one batch), so an answer depended on the calls
    before it: a retry sent after the first attempt answered otherwise than the same retry sent first
    (a resumed run, ``check determinism``, or another run's call in between). Emptied, every request
    is evaluated from position 0, as in a fresh process: its answer depends on the request alone (for
    one build and CPU). ``tests/backends/test_local_live.py`` sends a retry both ways. Not part of
    the fingerprint: requests that hold no earlier answer were answered the same either way in
    every check here (the committed demo run's determinism check, the crash-resume tests), and
    recordings made with the cache kept stay the record of what was answered then (a study over
    them replays them; ``check determinism`` may find their retries answered otherwise now)."""

    name = "local"

    def __init__(self, entries: dict[str, ModelEntry], n_threads: int | None = None) -> None:
        self.entries = entries
        self.n_threads = n_threads
        self._models: dict[str, Any] = {}
        self._fingerprints: dict[str, dict[str, Any]] = {}
        self._locks: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}
        self._llama_lock = threading.Lock()  # llama.cpp contexts are not thread-safe

    def _entry(self, model: str) -> ModelEntry:
        if model not in self.entries:
            raise BackendError(f"model '{model}' was not given to the local backend")
        return self.entries[model]

    def fingerprint(self, model: str) -> dict[str, Any]:
        if model not in self._fingerprints:
            entry = self._entry(model)
            self._fingerprints[model] = {
                "engine": "llama-cpp-python", "engine_version": metadata.version("llama-cpp-python"),
                "weights": weights_fingerprint(entry.weights_path()),
                "grammar": "llama.cpp json-schema-to-gbnf", "revision": entry.revision,
                "load_options": {**LLAMA_DEFAULTS, **entry.options.get("llama_cpp", {}),
                                 "n_ctx": entry.context_length, "use_extra_bufts": False},
            }
        return self._fingerprints[model]

    def _load(self, model: str) -> Any:
        if model in self._models:
            return self._models[model]
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise BackendError(f"the local backend needs llama-cpp-python ({exc}); fix: "
                               "pip install -e '.[local]' (see .ci/run for the CPU build flags)") from None
        entry = self._entry(model)
        options = {**LLAMA_DEFAULTS, **entry.options.get("llama_cpp", {})}
        with _without_extra_buffer_types():
            llm = Llama(model_path=str(entry.weights_path()), n_ctx=entry.context_length,
                        n_threads=self.n_threads, seed=0, verbose=False, **options)
        self._models[model] = llm
        return llm

    def _generate_sync(self, request: GenerateRequest) -> GenerateResult:
        llm = self._load(request.model)
        kwargs: dict[str, Any] = {}
        if request.output_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": request.output_schema}
        started = time.perf_counter()
        try:
            with self._llama_lock:
                llm.reset()
                response = llm.create_chat_completion(
                    messages=[m.model_dump() for m in request.messages],
                    temperature=request.sampling.temperature, top_p=request.sampling.top_p,
                    max_tokens=request.sampling.max_tokens, seed=request.sampling.seed, **kwargs)
        except ValueError as exc:
            raise BackendError(
                f"llama.cpp rejected the {request.role} '{request.call}' call: {exc}") from None
        choice = response["choices"][0]
        usage = response.get("usage", {})
        return GenerateResult(
            text=choice["message"]["content"] or "",
            finish_reason="length" if choice.get("finish_reason") == "length" else "stop",
            usage=Usage(prompt_tokens=usage.get("prompt_tokens", 0),
                        completion_tokens=usage.get("completion_tokens", 0)),
            seconds=round(time.perf_counter() - started, 4))

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        loop = asyncio.get_running_loop()  # a lock per event loop: the backend may outlive one
        async with self._locks.setdefault(loop, asyncio.Lock()):
            return await asyncio.to_thread(self._generate_sync, request)

    async def aclose(self) -> None:
        for llm in self._models.values():
            close = getattr(llm, "close", None)
            if close:
                close()
        self._models.clear()


