"""The transformers backend: device/dtype/weights resolution, fingerprint, and live calls with the
embedded GGUF through transformers + outlines on CPU."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json

import pytest

from vcrime_audit.backends.base import BackendError, GenerateRequest, Message, Sampling
from vcrime_audit.backends.registry import make_backend
from vcrime_audit.backends.transformers import (
    TransformersBackend,
    finish_reason,
    resolve_device,
    resolve_dtype,
    weights_location,
)
from vcrime_audit.backends.weights import folder_file_hashes
from vcrime_audit.cassette import Cassette, RecordingBackend, RecordMode
from vcrime_audit.models import ModelEntry, get_model

HF_MODEL = "smollm2-135m-hf"
COLOR_SCHEMA = {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}},
                "required": ["color"], "additionalProperties": False}


def entry(**options: object) -> ModelEntry:
    base = get_model(HF_MODEL)
    return base.model_copy(update={"options": {**base.options, **options}})


def color_request(max_tokens: int = 24, seed: int = 0) -> GenerateRequest:
    return GenerateRequest(role="judge", call="color", model=HF_MODEL,
                           messages=[Message(role="user", content="Name one colour of the sky.")],
                           sampling=Sampling(max_tokens=max_tokens, seed=seed),
                           output_schema=COLOR_SCHEMA)


def blake2b_16(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


# --- pure parts -------------------------------------------------------------------------------

def test_device_and_dtype_follow_the_hardware():
    assert resolve_device("auto", cuda_available=False) == "cpu"
    assert resolve_device("auto", cuda_available=True) == "cuda"
    assert resolve_device("cuda:1", cuda_available=True) == "cuda:1"
    with pytest.raises(BackendError, match="torch sees no CUDA GPU; fix: set options.device"):
        resolve_device("cuda", cuda_available=False)
    assert resolve_dtype("auto", "cpu") == "float32" and resolve_dtype("auto", "cuda") == "bfloat16"
    assert resolve_dtype("float16", "cpu") == "float16"


def test_weights_are_a_gguf_file_or_an_hf_folder(tmp_path):
    gguf = tmp_path / "m.Q4.gguf"
    gguf.write_bytes(b"GGUF")
    assert weights_location(gguf) == (tmp_path, "m.Q4.gguf")
    assert weights_location(tmp_path) == (tmp_path, None)
    other = tmp_path / "model.bin"
    other.write_bytes(b"x")
    with pytest.raises(BackendError, match="takes a .gguf file or an HF model folder"):
        weights_location(other)


def test_folder_file_hashes_hash_every_visible_file(tmp_path):
    (tmp_path / "config.json").write_text('{"a": 1}')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "model.safetensors").write_bytes(b"\x00\x01weights")
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "lock").write_text("ignored")
    assert folder_file_hashes(tmp_path) == {"folder": tmp_path.name, "files": {
        "config.json": blake2b_16(b'{"a": 1}'), "sub/model.safetensors": blake2b_16(b"\x00\x01weights")}}


def test_finish_reason_from_the_generated_ids():
    assert finish_reason([5, 9, 2], {2}, max_tokens=3) == "stop"
    assert finish_reason([5, 9, 7], {2}, max_tokens=3) == "length"
    assert finish_reason([5, 9], {2}, max_tokens=3) == "stop"


def test_bad_options_name_the_file_and_field():
    with pytest.raises(BackendError, match=r"smollm2-135m-hf\.yaml\): options\.dtype"):
        TransformersBackend({HF_MODEL: entry(dtype="int3")}).fingerprint(HF_MODEL)
    with pytest.raises(BackendError, match=r"options\.n_threads: Extra inputs"):
        TransformersBackend({HF_MODEL: entry(n_threads=2)}).fingerprint(HF_MODEL)


# --- with transformers + outlines installed -----------------------------------------------------

needs_stack = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None
        for m in ("torch", "transformers", "outlines", "gguf")),
    reason="the transformers backend needs: pip install transformers outlines gguf accelerate "
           "'torch==2.13.0'")


@needs_stack
def test_fingerprint_without_loading_the_model():
    from importlib import metadata

    backend = make_backend("transformers", {HF_MODEL: get_model(HF_MODEL)})
    fingerprint = backend.fingerprint(HF_MODEL)
    weights = get_model(HF_MODEL).weights_path()
    assert fingerprint["weights"] == {"file": weights.name, "bytes": weights.stat().st_size,
                                      "blake2b": blake2b_16(weights.read_bytes())}
    assert fingerprint["engine_version"] == metadata.version("transformers")
    assert fingerprint["outlines"] == metadata.version("outlines")
    assert fingerprint["grammar"] == {"backend": "outlines_core",
                                      "version": metadata.version("outlines_core")}
    import torch

    on_gpu = torch.cuda.is_available()
    assert fingerprint["device"]["type"] == ("cuda" if on_gpu else "cpu")
    assert fingerprint["dtype"] == ("bfloat16" if on_gpu else "float32")
    assert backend._loaded == {}
    half = TransformersBackend({HF_MODEL: entry(dtype="float16")}).fingerprint(HF_MODEL)
    assert half["dtype"] == "float16" and half != fingerprint


@pytest.fixture(scope="module")
def live():
    backend = TransformersBackend({HF_MODEL: get_model(HF_MODEL)})
    asyncio.run(backend.generate(color_request(max_tokens=1)))
    yield backend
    asyncio.run(backend.aclose())


@needs_stack
@pytest.mark.live
def test_constrained_call_on_the_real_model(live):
    first = asyncio.run(live.generate(color_request(seed=4)))
    assert json.loads(first.text)["color"] in ("red", "green", "blue")
    assert first.finish_reason == "stop" and 0 < first.usage.completion_tokens < 24
    assert first.usage.prompt_tokens > 10
    cut = asyncio.run(live.generate(color_request(max_tokens=3)))
    assert cut.finish_reason == "length" and cut.usage.completion_tokens == 3
    assert first.text.startswith(cut.text) and not cut.text.rstrip().endswith("}")


@needs_stack
@pytest.mark.live
def test_record_a_call_then_replay_it_without_the_model(live, tmp_path):
    path = tmp_path / "hf.jsonl.gz"
    request = color_request(seed=9)
    recorder = RecordingBackend(Cassette(path, RecordMode.once), live)
    recorded = asyncio.run(recorder.generate(request))
    recorder.cassette.save()
    assert recorder.model_calls == 1

    player = RecordingBackend(Cassette(path, RecordMode.none), None)
    replayed = asyncio.run(player.generate(request))
    assert replayed == recorded and player.model_calls == 0 and player.replayed == 1
    assert player.fingerprint(HF_MODEL) == live.fingerprint(HF_MODEL)
