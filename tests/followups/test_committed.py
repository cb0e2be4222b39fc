"""The committed follow-up cassettes (recorded with the embedded model on the demo store) replay in
CI with identical stored results and zero model calls, and the audit report shows them."""

import gzip
import json
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from tests.committed import FOLLOWUPS
from tests.followups.conftest import ROOT
from tests.followups.record import OPTIONS, SECOND_MODEL
from vcrime_audit.audit.pipeline import run_audit
from vcrime_audit.audit.report import write_report
from vcrime_audit.commands.followups import annotate, interrogate, rejudge
from vcrime_audit.store import Store

KINDS = ("rejudge", "annotate", "interrogate")
COMMITTED = {kind: [FOLLOWUPS[kind]] for kind in KINDS}
app = typer.Typer()
for command in (rejudge, annotate, interrogate):
    app.command()(command)


def _summary(path):
    records = [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]
    return records[0]["meta"], records[-1], sum(r["type"] == "call" for r in records)


@pytest.mark.parametrize("kind", KINDS)
def test_one_committed_cassette_per_kind_recorded_with_the_embedded_model(kind):
    assert len(COMMITTED[kind]) == 1, f"commit exactly one cassettes/{kind}-*.jsonl.gz"
    meta, summary, calls = _summary(COMMITTED[kind][0])
    assert meta["followup"] == kind and summary["type"] == "summary" and calls >= 1
    assert set(meta["models"]) <= {"smollm2-135m", SECOND_MODEL}
    assert all(fp["engine"] == "llama-cpp-python" for fp in meta["fingerprints"].values())
    assert COMMITTED[kind][0].stat().st_size < 64_000


@pytest.mark.parametrize("kind", KINDS)
def test_replay_gives_the_recorded_rows_without_a_model(kind, demo_store):
    path = COMMITTED[kind][0]
    _, summary, calls = _summary(path)
    done = CliRunner().invoke(app, [kind, "--db", str(demo_store), "--replay", str(path)])
    assert done.exit_code == 0, done.output
    assert f"calls     0 to a model, {calls} replayed" in done.output
    assert f"identical rows: hash {summary['rows_hash']} matches the recording" in done.output
    row = Store(demo_store).db.conn.execute("SELECT status, rows_hash, n_items FROM followups").fetchone()
    assert row == ("done", summary["rows_hash"], summary["n_items"])


def test_recorded_options_are_the_documented_ones():
    rejudge_meta = _summary(COMMITTED["rejudge"][0])[0]
    assert rejudge_meta["config"]["judge"] == SECOND_MODEL
    assert str(rejudge_meta["config"]["per_attacker"]) == OPTIONS["rejudge"][3]
    assert _summary(COMMITTED["interrogate"][0])[0]["config"]["conditions"] == [
        "CTRL", "B1", "A1", "A1B1", "A2", "A2B1"]


def test_all_three_replay_with_llama_cpp_unimportable_and_reach_the_report(demo_store, tmp_path):
    lines = ["import sys; sys.modules['llama_cpp'] = None", "import typer",
             "from vcrime_audit.commands.followups import annotate, interrogate, rejudge",
             "app = typer.Typer()",
             "[app.command()(c) for c in (rejudge, annotate, interrogate)]"]
    for kind in KINDS:
        lines.append(f"app([{kind!r}, '--db', {str(demo_store)!r}, '--replay', "
                     f"{str(COMMITTED[kind][0])!r}], standalone_mode=False)")
    done = subprocess.run([sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("identical rows") == 3 and done.stdout.count("0 to a model") == 3
    result = run_audit(demo_store, n_resamples=100)
    assert result.judges.judges == ("smollm2-135m", SECOND_MODEL) and result.judges.common_turns == 3
    assert len(result.followups.annotation) == 1 and len(result.followups.interrogation) == 6
    text = write_report(result, tmp_path / "report").report.read_text()
    assert "| smollm2-135m-t07 | smollm2-135m | 3 |" in text
    assert "### Annotators smollm2-135m and smollm2-135m-t07" in text
    assert "| smollm2-135m | own | A2B1 (A2 B1), schema | 1 |" in text
