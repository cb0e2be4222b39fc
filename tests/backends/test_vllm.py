"""The vllm backend: its committed CPU recording replays without vLLM; option, fingerprint and
result handling; and, where vLLM is importable (scripts/record_vllm_cpu.sh's virtualenv), live
calls through the async engine."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.committed import VLLM_CPU
from vcrime_audit.agents import attacker
from vcrime_audit.backends import vllm as vb
from vcrime_audit.backends.base import BackendError, GenerateRequest, Message, Sampling
from vcrime_audit.backends.weights import folder_digest
from vcrime_audit.canonical import content_hash
from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.cassette.keys import cassette_key
from vcrime_audit.models import ModelEntry, ModelError, get_model
from vcrime_audit.runner import replay
from vcrime_audit.store import Store, turn_rows_hash

ROOT = Path(__file__).resolve().parents[2]
RECORDED = [VLLM_CPU]
MODEL = "smollm2-135m-vllm"


@pytest.fixture
def recorded() -> Path:
    assert RECORDED, "the vLLM CPU cassette must be committed (bash scripts/record_vllm_cpu.sh)"
    return RECORDED[0]


def folder_entry(tmp_path: Path, **options: object) -> ModelEntry:
    folder = tmp_path / "hf"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text('{"model_type": "llama"}')
    (folder / "model.safetensors").write_bytes(b"\x00weights\x01")
    return get_model(MODEL).model_copy(update={
        "weights": get_model(MODEL).weights.model_copy(update={"path": str(folder)}),
        "options": options, "source_file": "local_models/test-vllm.yaml"})


# --- the committed recording ---------------------------------------------------------------

def test_committed_vllm_cassette_replays_identically_without_a_model(recorded, tmp_path):
    cassette = Cassette(recorded, RecordMode.none)
    outcome = asyncio.run(replay(recorded, tmp_path / "replay.sqlite"))
    assert outcome.model_calls == 0 and outcome.replayed_calls == len(cassette.calls) >= 2
    assert outcome.identical and outcome.turn_rows_hash == cassette.summary["turn_rows_hash"]
    assert turn_rows_hash(Store(tmp_path / "replay.sqlite"), outcome.run_id) == outcome.turn_rows_hash
    assert outcome.turns == cassette.summary["turns"] >= 1


def test_replay_runs_with_vllm_and_torch_unimportable(recorded, tmp_path):
    script = ("import sys; sys.modules['vllm'] = None; sys.modules['torch'] = None\n"
              "from vcrime_audit.cli import app\n"
              f"app(['replay', {str(recorded)!r}, '--db', {str(tmp_path / 'r.sqlite')!r}])\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "identical turn rows" in done.stdout and "0 to a model" in done.stdout


def test_committed_vllm_cassette_comes_from_vllm_cpu_on_every_role(recorded):
    cassette = Cassette(recorded, RecordMode.none)
    config = cassette.meta["config"]
    assert config["backend"] == "vllm"
    assert {config["attacker"], config["judge"], config["world_manager"]} == {MODEL}
    assert {c["request"]["role"] for c in cassette.calls} >= {"attacker", "judge", "world_manager"}
    fingerprint = cassette.fingerprint_for(MODEL)
    assert fingerprint["engine"] == "vllm" and fingerprint["distribution"] == "vllm-cpu"
    assert fingerprint["grammar"] in vb.GrammarBackend.__args__
    for call in cassette.calls:
        request = GenerateRequest.model_validate(call["request"])
        assert call["fingerprint"] == fingerprint
        assert call["key"] == cassette_key(request, fingerprint)
        if request.output_schema is not None and call["result"]["finish_reason"] == "stop":
            assert call["parsed"] == json.loads(call["result"]["text"])


# --- options, fingerprint, results (no vLLM needed) ----------------------------------------

def test_options_name_the_file_and_field_when_wrong(tmp_path):
    with pytest.raises(BackendError, match=r"test-vllm\.yaml\): options\.structured_outputs_backend"):
        vb.vllm_options(folder_entry(tmp_path, structured_outputs_backend="auto"))
    with pytest.raises(BackendError, match=r"options\.tensor_parallel_size: Extra inputs"):
        vb.vllm_options(folder_entry(tmp_path, tensor_parallel_size=2))
    with pytest.raises(BackendError, match=r"options\.engine\.model is set by the backend"):
        vb.vllm_options(folder_entry(tmp_path, engine={"model": "/elsewhere"}))


def test_engine_options_pass_through_over_the_defaults(tmp_path):
    entry = folder_entry(tmp_path, engine={"tensor_parallel_size": 4, "dtype": "bfloat16"})
    kwargs = vb.engine_kwargs(entry, vb.vllm_options(entry))
    assert kwargs == {"seed": 0, "max_model_len": entry.context_length, "dtype": "bfloat16",
                      "disable_log_stats": True, "tensor_parallel_size": 4}


def test_sampling_follows_the_request():
    request = GenerateRequest(role="judge", call="assess", model=MODEL,
                              messages=[Message(role="user", content="hi")],
                              sampling=Sampling(temperature=0.3, top_p=0.9, max_tokens=17, seed=5))
    assert vb.sampling_kwargs(request) == {"temperature": 0.3, "top_p": 0.9, "max_tokens": 17,
                                           "seed": 5}


def test_folder_digest_hashes_every_model_file(tmp_path):
    folder = folder_entry(tmp_path).weights_path()
    (folder / "README.md").write_text("not part of the model")
    expected = [[name, (folder / name).stat().st_size,
                 hashlib.blake2b((folder / name).read_bytes(), digest_size=16).hexdigest()]
                for name in ("config.json", "model.safetensors")]
    first = folder_digest(folder)
    assert first == {"files": 2, "bytes": sum(e[1] for e in expected),
                     "blake2b": content_hash(expected, 16)}
    moved = folder.rename(tmp_path / "elsewhere")
    assert folder_digest(moved) == first
    (moved / "model.safetensors").write_bytes(b"\x00weightz\x01")
    os.utime(moved / "model.safetensors", ns=(1, 1))
    assert folder_digest(moved)["blake2b"] != first["blake2b"]


def test_weights_must_be_an_hf_folder(tmp_path):
    entry = folder_entry(tmp_path)
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    as_file = entry.model_copy(update={"weights": entry.weights.model_copy(update={"path": str(gguf)})})
    with pytest.raises(BackendError, match="convert_gguf_to_hf"):
        vb.model_folder(as_file)
    (entry.weights_path() / "config.json").unlink()
    with pytest.raises(BackendError, match="has no config.json"):
        vb.model_folder(entry)
    missing = entry.model_copy(update={"weights": entry.weights.model_copy(update={"path": "/nope"})})
    with pytest.raises(ModelError, match="record_vllm_cpu.sh"):
        vb.model_folder(missing)


def test_fingerprint_separates_grammar_backends_and_determinism_flags(tmp_path, monkeypatch):
    monkeypatch.setattr(vb, "vllm_distribution", lambda: ("vllm-cpu", "0.32.0"))
    entries = {"a": folder_entry(tmp_path, structured_outputs_backend="outlines"),
               "b": folder_entry(tmp_path, structured_outputs_backend="xgrammar"),
               "c": folder_entry(tmp_path, structured_outputs_backend="outlines", batch_invariant=True)}
    backend = vb.VLLMBackend(entries)
    prints = {name: backend.fingerprint(name) for name in entries}
    assert prints["a"]["grammar"] == "outlines" and prints["b"]["grammar"] == "xgrammar"
    assert prints["c"]["determinism"]["batch_invariant"] is True
    assert prints["a"]["weights"] == folder_digest(entries["a"].weights_path())
    assert len({content_hash(p) for p in prints.values()}) == 3


def test_without_vllm_installed_the_error_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(vb.metadata, "packages_distributions", lambda: {})
    backend = vb.VLLMBackend({MODEL: folder_entry(tmp_path)})
    with pytest.raises(BackendError, match="record_vllm_cpu.sh"):
        backend.fingerprint(MODEL)


def test_generate_without_vllm_importable_is_a_backend_error(tmp_path):
    script = ("import asyncio, sys; sys.modules['vllm'] = None\n"
              "from vcrime_audit.backends.base import BackendError, GenerateRequest\n"
              "from vcrime_audit.backends.registry import make_backend\n"
              "from vcrime_audit.models import ModelEntry\n"
              f"entry = ModelEntry.model_validate_json({folder_entry(tmp_path).model_dump_json()!r})\n"
              "backend = make_backend('vllm', {entry.name: entry})\n"
              "assert 'torch' not in sys.modules\n"
              "request = GenerateRequest(role='judge', call='assess', model=entry.name, messages=[],"
              " sampling={})\n"
              "try:\n    asyncio.run(backend.generate(request))\n"
              "except BackendError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "could not import vLLM" in done.stdout and "record_vllm_cpu.sh" in done.stdout


def output(finish: str, text: str = '{"a": 1}') -> SimpleNamespace:
    return SimpleNamespace(prompt_token_ids=[1, 2, 3],
                           outputs=[SimpleNamespace(text=text, finish_reason=finish, token_ids=[7, 8])])


def test_results_carry_usage_and_finish_reason():
    result = vb.result_from(output("length"), 1.23456, "xgrammar")
    assert (result.text, result.finish_reason, result.seconds) == ('{"a": 1}', "length", 1.2346)
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (3, 2)
    assert vb.result_from(output("stop"), 0.0, "xgrammar").finish_reason == "stop"
    with pytest.raises(BackendError, match="VLLM_REGEX_COMPILATION_TIMEOUT_S"):
        vb.result_from(output("error"), 0.0, "outlines")
    with pytest.raises(BackendError, match="grammar backend guidance") as info:
        vb.result_from(output("abort"), 0.0, "guidance")
    assert "VLLM_REGEX" not in str(info.value)


# --- live (only where vLLM is installed and the HF folder exists) ---------------------------

@pytest.fixture(scope="module")
def live():
    pytest.importorskip("vllm", reason="vLLM is not installed (bash scripts/record_vllm_cpu.sh)")
    model = get_model(MODEL)
    try:
        model.weights_path()
    except ModelError as exc:
        pytest.skip(str(exc))
    for name, value in (("VLLM_CPU_KVCACHE_SPACE", "1"), ("VLLM_CPU_NUM_OF_RESERVED_CPU", "0"),
                        ("VLLM_REGEX_COMPILATION_TIMEOUT_S", "300")):
        os.environ.setdefault(name, value)
    loop = asyncio.new_event_loop()
    backend = vb.VLLMBackend({MODEL: model})
    yield backend, model, loop
    loop.run_until_complete(backend.aclose())
    loop.close()


@pytest.mark.live
def test_live_act_calls_are_schema_valid_deterministic_and_batch(live, demo_world):
    backend, model, loop = live
    request = GenerateRequest(role="attacker", call="act", model=MODEL,
                              messages=attacker.act_messages(demo_world),
                              sampling=model.sampling_for("judge", seed=3),
                              output_schema=attacker.act_schema(demo_world))
    first = loop.run_until_complete(backend.generate(request))
    action = attacker.Action.model_validate_json(first.text)
    assert action.actor in demo_world.members and first.finish_reason == "stop"
    assert first.usage.prompt_tokens > 100 and first.usage.completion_tokens > 0

    async def together():
        return await asyncio.gather(*(backend.generate(request) for _ in range(3)))

    assert {r.text for r in loop.run_until_complete(together())} == {first.text}


@pytest.mark.live
def test_live_fingerprint_matches_the_committed_recording(live, recorded):
    backend, model, _ = live
    assert backend.fingerprint(MODEL) == Cassette(recorded, RecordMode.none).fingerprint_for(MODEL)
