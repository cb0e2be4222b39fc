"""Hugging Face transformers models, JSON-Schema-constrained through outlines' logits processors.

Weights are an HF folder or a GGUF file (dequantized by transformers on load). GPU when present,
CPU otherwise (``options.device``). torch, transformers and outlines are imported on first use.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..canonical import canonical_json
from ..models import ModelEntry
from .base import BackendError, GenerateRequest, GenerateResult, Usage
from .local import weights_fingerprint
from .weights import folder_file_hashes

INSTALL = "pip install transformers outlines gguf accelerate 'torch==2.13.0'"
GRAMMAR_PACKAGES = {"outlines_core": "outlines_core", "llguidance": "llguidance", "xgrammar": "xgrammar"}
PROCESSOR_CACHE = 16


class TransformersOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    device: str = Field("auto", description="auto (cuda when present, else cpu), cpu, cuda, cuda:N.")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto", description="auto: float32 on CPU, bfloat16 on GPU.")
    grammar_backend: Literal["outlines_core", "llguidance", "xgrammar"] = "outlines_core"


def parse_options(entry: ModelEntry) -> TransformersOptions:
    return entry.backend_options(TransformersOptions)


def resolve_device(wanted: str, cuda_available: bool) -> str:
    if wanted == "auto":
        return "cuda" if cuda_available else "cpu"
    if wanted.startswith("cuda") and not cuda_available:
        raise BackendError(f"options.device is '{wanted}' but torch sees no CUDA GPU; fix: set "
                           "options.device to auto or cpu, or install a CUDA build of torch")
    return wanted


def resolve_dtype(wanted: str, device: str) -> str:
    if wanted != "auto":
        return wanted
    return "float32" if device == "cpu" else "bfloat16"


def weights_location(path: Path) -> tuple[Path, str | None]:
    """``(folder, gguf_file)`` for ``from_pretrained``: a GGUF file or an HF model folder."""
    if path.is_file() and path.suffix == ".gguf":
        return path.parent, path.name
    if path.is_dir():
        return path, None
    raise BackendError(f"{path}: the transformers backend takes a .gguf file or an HF model folder; "
                       "fix: point weights.path (or weights.package + file) at one")


def weights_id(path: Path) -> dict[str, Any]:
    folder, gguf = weights_location(path)
    return weights_fingerprint(path) if gguf else folder_file_hashes(folder)


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        raise BackendError(f"the transformers backend needs {package}, which is not installed; "
                           f"fix: {INSTALL}") from None


@lru_cache(maxsize=1)
def _cuda() -> tuple[bool, str]:
    import torch

    available = torch.cuda.is_available()
    return available, torch.cuda.get_device_name(0) if available else ""


def finish_reason(generated: list[int], eos_ids: set[int], max_tokens: int) -> Literal["stop", "length"]:
    if generated and generated[-1] in eos_ids:
        return "stop"
    return "length" if len(generated) >= max_tokens else "stop"


def pad_id(tokenizer: Any) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


@dataclass
class _Loaded:
    model: Any
    tokenizer: Any
    outlines_model: Any
    device: str
    eos_ids: set[int]
    processors: OrderedDict[str, Any] = field(default_factory=OrderedDict)


class TransformersBackend:
    """One transformers model per registry entry, loaded on first use; calls run one at a time."""

    name = "transformers"

    def __init__(self, entries: dict[str, ModelEntry]) -> None:
        self.entries = entries
        self._loaded: dict[str, _Loaded] = {}
        self._fingerprints: dict[str, dict[str, Any]] = {}
        self._lock = asyncio.Lock()

    def _entry(self, model: str) -> ModelEntry:
        if model not in self.entries:
            raise BackendError(f"model '{model}' was not given to the transformers backend")
        return self.entries[model]

    def _placement(self, entry: ModelEntry) -> tuple[str, str, str]:
        options = parse_options(entry)
        _version("torch")
        cuda, gpu_name = _cuda()
        device = resolve_device(options.device, cuda)
        return device, resolve_dtype(options.dtype, device), gpu_name if device.startswith("cuda") else ""

    def fingerprint(self, model: str) -> dict[str, Any]:
        if model not in self._fingerprints:
            entry = self._entry(model)
            options = parse_options(entry)
            device, dtype, gpu = self._placement(entry)
            grammar = options.grammar_backend
            self._fingerprints[model] = {
                "engine": "transformers", "engine_version": _version("transformers"),
                "outlines": _version("outlines"),
                "grammar": {"backend": grammar, "version": _version(GRAMMAR_PACKAGES[grammar])},
                "torch": _version("torch"), "weights": weights_id(entry.weights_path()),
                "dtype": dtype, "device": {"type": device.split(":")[0], "name": gpu},
                "revision": entry.revision, "sampler": "temperature+top_p (top_k off)",
            }
        return self._fingerprints[model]

    def _load(self, model: str) -> _Loaded:
        if model in self._loaded:
            return self._loaded[model]
        entry = self._entry(model)
        device, dtype, _ = self._placement(entry)
        folder, gguf = weights_location(entry.weights_path())
        try:
            import outlines
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise BackendError(f"the transformers backend needs {exc.name}; fix: {INSTALL}") from None
        try:
            tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf)
            hf = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf,
                                                      dtype=getattr(torch, dtype)).to(device).eval()
        except (OSError, ValueError, ImportError) as exc:
            raise BackendError(f"model '{model}' ({entry.source_file}): transformers could not load "
                               f"{folder / (gguf or '')}: {exc}") from None
        if not tokenizer.chat_template:
            raise BackendError(f"model '{model}' ({entry.source_file}): the tokenizer has no chat "
                               "template; fix: use an instruct model whose tokenizer ships one")
        eos = hf.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None} or {tokenizer.eos_token_id}
        loaded = _Loaded(hf, tokenizer, outlines.from_transformers(hf, tokenizer), device, eos_ids)
        self._loaded[model] = loaded
        return loaded

    def _processor(self, loaded: _Loaded, schema: dict[str, Any], grammar: str) -> Any:
        """outlines' JSON-Schema logits processor, compiled once per schema (LRU)."""
        key = canonical_json(schema)
        if key in loaded.processors:
            loaded.processors.move_to_end(key)
        else:
            from outlines.backends import get_json_schema_logits_processor

            try:
                loaded.processors[key] = get_json_schema_logits_processor(grammar, loaded.outlines_model,
                                                                          json.dumps(schema))
            except ImportError as exc:
                raise BackendError(f"grammar backend '{grammar}' needs {exc.name}; fix: pip install "
                                   f"{GRAMMAR_PACKAGES[grammar]} or set options.grammar_backend "
                                   "to outlines_core") from None
            if len(loaded.processors) > PROCESSOR_CACHE:
                loaded.processors.popitem(last=False)
        processor = loaded.processors[key]
        processor.reset()
        return processor

    def _generate_sync(self, request: GenerateRequest) -> GenerateResult:
        import torch
        from transformers import LogitsProcessorList, set_seed

        entry = self._entry(request.model)
        loaded = self._load(request.model)
        tokenizer, s = loaded.tokenizer, request.sampling
        prompt = tokenizer.apply_chat_template([m.model_dump() for m in request.messages],
                                               tokenize=False, add_generation_prompt=True)
        inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(loaded.device)
        prompt_tokens = int(inputs["input_ids"].shape[1])
        if prompt_tokens + s.max_tokens > entry.context_length:
            raise BackendError(f"the {request.role} '{request.call}' prompt has {prompt_tokens} tokens; "
                               f"with max_tokens {s.max_tokens} it exceeds context_length "
                               f"{entry.context_length} of '{entry.name}'")
        processors = None
        if request.output_schema is not None:
            grammar = parse_options(entry).grammar_backend
            processors = LogitsProcessorList([self._processor(loaded, request.output_schema, grammar)])
        sampler: dict[str, Any] = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
        if s.temperature > 0:
            sampler = {"do_sample": True, "temperature": s.temperature, "top_p": s.top_p, "top_k": 0}
        set_seed(s.seed)
        started = time.perf_counter()
        with torch.inference_mode():
            output = loaded.model.generate(**inputs, logits_processor=processors,
                                           max_new_tokens=s.max_tokens,
                                           pad_token_id=pad_id(tokenizer),
                                           **sampler)
        generated = output[0, prompt_tokens:].tolist()
        return GenerateResult(
            text=tokenizer.decode(generated, skip_special_tokens=True),
            finish_reason=finish_reason(generated, loaded.eos_ids, s.max_tokens),
            usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=len(generated)),
            seconds=round(time.perf_counter() - started, 4))

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        async with self._lock:
            return await asyncio.to_thread(self._generate_sync, request)

    async def aclose(self) -> None:
        on_gpu = any(loaded.device.startswith("cuda") for loaded in self._loaded.values())
        self._loaded.clear()
        if on_gpu:
            import torch

            torch.cuda.empty_cache()
