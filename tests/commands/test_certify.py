"""`certify` on a typer app of its own (the lead mounts it in cli.py): replay, once-mode reuse, errors."""

from __future__ import annotations

import asyncio

import pytest
import typer
from typer.testing import CliRunner

from tests.certify.scripted import WordEmbedder, target_answer
from tests.conftest import ScriptedBackend
from vcrime_audit.certify import store as cstore
from vcrime_audit.certify.run import CertifyConfig, run_certification
from vcrime_audit.commands.certify import certify
from vcrime_audit.store import Store

runner = CliRunner()
app = typer.Typer()
app.command()(certify)
OPTIONS = ["--n", "12", "--seed", "7", "--jailbreak-p", "0.5"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("certify")
    config = CertifyConfig(n=12, seed=7, jailbreak_p=0.5)
    outcome = asyncio.run(run_certification(config, folder / "rec.sqlite", folder / "cassettes",
                                            backend=ScriptedBackend(target_answer),
                                            embedder=WordEmbedder()))
    return folder, outcome


def test_replay_prints_the_certificate_and_confirms_identical_rows(recorded, tmp_path):
    _, outcome = recorded
    db = tmp_path / "replay.sqlite"
    done = runner.invoke(app, ["--replay", str(outcome.cassette), "--db", str(db)])
    assert done.exit_code == 0, done.output
    c = outcome.certificate
    assert f"k = {c.n_catastrophic} of 12 conversations" in done.output
    assert f"[{c.judged.lower:.4f}, {c.judged.upper:.4f}]" in done.output
    assert "0 missing judgment(s)" in done.output and "0 to a model" in done.output
    assert f"identical rows: hash {outcome.rows_hash}" in done.output
    assert str(db) in done.output
    assert cstore.certification(Store(db), outcome.certification_id)["k"] == c.n_catastrophic


def test_the_same_options_replay_the_existing_cassette(recorded, tmp_path):
    folder, outcome = recorded
    done = runner.invoke(app, [*OPTIONS, "--cassette-dir", str(folder / "cassettes"),
                               "--db", str(tmp_path / "again.sqlite")])
    assert done.exit_code == 0, done.output
    assert outcome.certification_id in done.output and "identical rows" in done.output
    [reused] = [line for line in done.output.splitlines() if line.startswith("reused")]
    assert str(outcome.cassette) in reused and "no model was called" in reused
    assert "add --record-mode all" in reused


@pytest.mark.parametrize(("arguments", "message"), [
    (["--distribution", "zz"], "choose rn, gp or ar"),
    (["--n", "0"], "n must be at least 1"),
    (["--record-mode", "sometimes"], "--record-mode must be one of"),
    (["--queries", "no/such/file.yaml"], "file not found"),
    (["--replay", "no/such/cassette.jsonl.gz"], "no such cassette"),
    (["--preset", "qrlm"], "unknown preset 'qrlm'; choose one of paper, qrllm"),
    (["--ar-dead-end", "teleport"], "ar_dead_end (--ar-dead-end): Input should be 'stop' or 'jump'"),
    (["--refusal", "maybe"], "refusal (--refusal): Input should be"),
    (["--gp-tries", "0"], "gp_tries (--gp-tries): Input should be greater than or equal to 1"),
])
def test_bad_input_exits_2_with_the_reason(arguments, message, tmp_path):
    done = runner.invoke(app, [*arguments, "--db", str(tmp_path / "x.sqlite"),
                               "--cassette-dir", str(tmp_path)])
    assert done.exit_code == 2 and message in done.output, done.output


def test_rule_options_reach_the_certificate_and_its_printout(tmp_path):
    config = CertifyConfig(n=6, seed=2, preset="qrllm", distribution="gp", gp_tries=2,
                           final_turn=False)
    outcome = asyncio.run(run_certification(config, tmp_path / "rec.sqlite", tmp_path / "c",
                                            backend=ScriptedBackend(target_answer),
                                            embedder=WordEmbedder()))
    assert outcome.definition.gp_tries == 2 and not outcome.definition.final_turn
    done = runner.invoke(app, ["--replay", str(outcome.cassette), "--db", str(tmp_path / "r.db")])
    assert done.exit_code == 0, done.output
    assert "preset qrllm:" in done.output and "gp_tries=2" in done.output
    assert "final_turn=false" in done.output and "identical rows" in done.output
