import json

import pytest
from typer.testing import CliRunner

from vcrime_audit.audit.load import load_audit_input, open_store
from vcrime_audit.audit.metrics import attacker_metrics
from vcrime_audit.commands.audit import app

runner = CliRunner()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "synth.sqlite"
    done = runner.invoke(app, ["synth", "--out", str(path), "--attackers", "2", "--tasks", "3",
                               "--seeds", "2", "--judges", "2", "--seed", "4"])
    assert done.exit_code == 0, done.output
    assert "synthetic store" in done.output and "12 runs" in done.output
    return path


def test_synth_labels_the_store_synthetic(store):
    conn = open_store(store).db.conn
    assert conn.execute("SELECT value FROM meta WHERE key = 'synthetic'").fetchone() == ("1",)
    assert conn.execute("SELECT MIN(synthetic), COUNT(*) FROM runs").fetchone() == (1, 12)
    assert {v for (v,) in conn.execute("SELECT vendor FROM models")} == {"synth-vendor-1"}


def test_synth_refuses_to_overwrite(store):
    done = runner.invoke(app, ["synth", "--out", str(store)])
    assert done.exit_code == 2 and "already exists" in done.output


def test_audit_writes_the_report_and_prints_table_1(store, tmp_path):
    out = tmp_path / "report"
    done = runner.invoke(app, ["--db", str(store), "--out", str(out), "--resamples", "300", "--seed", "3"])
    assert done.exit_code == 0, done.output
    assert "SYNTHETIC store" in done.output and "300 resamples, seed 3" in done.output
    for name in ("report.md", "summary.json", "lineage.json", "figures/judges_non_failure_catastrophic.svg",
                 "figures/over_harm_vs_non_failure.svg", "figures/over_harm_task_attacker.svg"):
        assert (out / name).is_file(), name
    doc = json.loads((out / "summary.json").read_text())
    assert doc["bootstrap"]["seed"] == 3 and doc["bootstrap"]["resamples"] == 300
    m = attacker_metrics(load_audit_input(open_store(store)), n_resamples=300, seed=3)
    for a in m.attackers:
        assert doc["table1"][a]["team_usage"]["low"] == m.team_usage[a].low
        assert f"{100 * m.pass_at_1[a].estimate:.1f}" in next(
            line for line in done.output.splitlines() if line.startswith(a))


def test_judges_prints_agreement_and_self_preference(store):
    done = runner.invoke(app, ["judges", "--db", str(store), "--resamples", "200"])
    assert done.exit_code == 0, done.output
    assert "Spearman rho" in done.output and "self-preference bias" in done.output
    assert "same model" in done.output and "same vendor" in done.output


@pytest.mark.parametrize("args, message", [
    ([], "pass --db STORE"),
    (["--db", "nowhere.sqlite"], "no store at this path"),
    (["--db", "x.sqlite", "--resamples", "0"], "--resamples must be at least 1"),
    (["judges", "--db", "nowhere.sqlite"], "no store at this path"),
])
def test_bad_input_is_a_clear_error(args, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(app, args)
    assert done.exit_code == 2 and message in done.output
    assert not (tmp_path / "nowhere.sqlite").exists()
