"""Generated bad inputs (scenario files, YAML, command-line options, stores) end in one clear
line and exit 2: never a traceback, a hang or a silently wrong result."""

from __future__ import annotations

import json
import os
import shutil
import string
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests import committed
from vcrime_audit.cli import app
from vcrime_audit.scenario import ScenarioError, ScenarioErrors, load_task
from vcrime_audit.yamlio import MAX_DEPTH, YamlInputError, loads

ROOT = Path(__file__).resolve().parent.parent
TASK = "robotics_company__data_theft"
TASK_TEXT = (ROOT / "scenarios" / "tasks" / f"{TASK}.yaml").read_bytes()


@pytest.fixture(scope="module")
def scenario_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("scen")
    for folder in ("maps", "goals", "tasks"):
        shutil.copytree(ROOT / "scenarios" / folder, root / folder)
    return root


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.binary(min_size=0, max_size=4)),
                min_size=1, max_size=4),
       st.floats(0.05, 1.0))
def test_a_mutated_task_file_loads_or_names_its_problem(scenario_root, edits, keep):
    data = bytearray(TASK_TEXT[:max(1, int(len(TASK_TEXT) * keep))])
    for where, insert in edits:
        i = int(where * len(data))
        data[i:i + len(insert)] = insert
    (scenario_root / "tasks" / f"{TASK}.yaml").write_bytes(bytes(data))
    try:
        load_task(TASK, scenario_root)
    except ScenarioErrors as exc:
        assert all(str(e.file).endswith(f"{TASK}.yaml") for e in exc.errors)
    except ScenarioError as exc:
        assert f"{TASK}.yaml" in str(exc.file) or "tasks" in str(exc.file)
        assert "\n" not in str(exc)


@pytest.mark.parametrize("text, problem", [
    ("a: 1\nb: 2\na: 3\n", "key 'a' appears twice"),
    ("items: !!set {x, y}\n", "type !!set is not plain data"),
    ("cmd: !!python/object/apply:os.system ['true']\n", "python/object/apply"),
    ("when: 2024-01-01\n", "!!timestamp"),
    ("raw: !!binary aGVsbG8=\n", "!!binary"),
    ("a: &x [1, 2]\nb: *x\n", "aliases"),
    ("deep: " + "[" * 3000 + "]" * 3000 + "\n", f"deeper than {MAX_DEPTH}"),
    ("{[1, 2]: x}\n", "mapping key"),
])
def test_the_strict_loader_refuses_non_json_yaml(text, problem):
    with pytest.raises(YamlInputError) as info:
        loads(text)
    assert problem in str(info.value) and "line " in str(info.value) and "fix:" in str(info.value)


TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Cf", "Co", "Cn", "Zl", "Zp")),
               max_size=8)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                                       allow_infinity=False) | TEXT,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                    max_leaves=20))
def test_the_strict_loader_reads_json_as_json(value):
    """JSON is YAML: every JSON document reads back as the same data (PyYAML reads YAML 1.1,
    which has no surrogate-pair escapes, so the text is written unescaped)."""
    assert loads(json.dumps(value, ensure_ascii=False)) == value


def _one_line_exit_2(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "fix" in lines[0], result.output
    return lines[0]


@settings(max_examples=25, deadline=None)
@given(st.one_of(st.integers(max_value=-1), st.integers(min_value=2**63)))
def test_run_refuses_a_seed_the_store_cannot_hold(tmp_path_factory, seed):
    db = tmp_path_factory.mktemp("seed") / "s.sqlite"
    assert "--seed" in _one_line_exit_2(["run", "--seed", str(seed), "--db", str(db)])
    assert not db.exists()


@settings(max_examples=15, deadline=None)
@given(st.integers(max_value=0), st.sampled_from(["--max-turns", "--stall-turns"]))
def test_run_refuses_turn_limits_below_one(tmp_path_factory, value, option):
    db = tmp_path_factory.mktemp("turns") / "s.sqlite"
    assert option in _one_line_exit_2(["run", option, str(value), "--db", str(db)])
    assert not db.exists()


PLAIN_CHARACTERS = frozenset(string.ascii_letters + string.digits + "_.-")


def _not_a_plain_name(text: str) -> bool:
    """A character outside letters, digits, '_', '.' and '-', or a first one that is not a letter
    or digit ("0." and "a-b" are plain names: ids may hold '.' and '-')."""
    return any(c not in PLAIN_CHARACTERS for c in text) or not (text[:1].isascii() and text[:1].isalnum())


@settings(max_examples=30, deadline=None)
@given(st.one_of(st.text(min_size=129, max_size=400, alphabet="abc_"),
                 st.sampled_from(["../../scenarios/tasks/robotics_company__theft", "/etc/passwd",
                                  "a/b", "..", "a..b", ".hidden", "", "x y"]),
                 st.text(max_size=20).filter(_not_a_plain_name)))
def test_run_refuses_task_ids_that_are_not_plain_names(tmp_path_factory, task):
    folder = tmp_path_factory.mktemp("task")
    line = _one_line_exit_2(["run", "--task", task, "--db", str(folder / "s.sqlite"),
                             "--cassette-dir", str(folder / "c")])
    assert "--task" in line
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("args, named", [
    (["--shard", "5/4"], "--shard"), (["--shard", "x"], "--shard"), (["--shard", "0/3"], "--shard"),
    (["--concurrency", "0"], "--concurrency"), (["--concurrency", "-2"], "--concurrency"),
])
def test_study_refuses_bad_options(tmp_path, args, named):
    study = tmp_path / "s.yaml"
    study.write_text((ROOT / "studies" / "demo.yaml").read_text())
    assert named in _one_line_exit_2(["study", str(study), "--db", str(tmp_path / "s.sqlite"), *args])
    assert not (tmp_path / "s.sqlite").exists()


@pytest.mark.parametrize("content, named", [
    (None, "cannot read study file"),
    (b"name: x\nname: y\n", "appears twice"),
    (b"\xff\xfename: x\n", "not UTF-8"),
    (b"name: x\nattackers: [a]\njudge: j\nworld_manager: w\nseeds: [18446744073709551616]\n", "seeds"),
    (b"name: x\nattackers: [a]\njudge: j\nworld_manager: w\ntasks: ['../../etc']\n", "not a valid id"),
])
def test_study_refuses_bad_files(tmp_path, content, named):
    study = tmp_path / "s.yaml"
    if content is not None:
        study.write_bytes(content)
    assert named in _one_line_exit_2(["study", str(study), "--db", str(tmp_path / "s.sqlite")])


def test_replay_refuses_a_cassette_whose_task_escapes(tmp_path):
    from vcrime_audit.cassette.persist import read_records, write_records

    source = ROOT / "cassettes" / "robotics_company__data_theft-s0-e3005c10.jsonl.gz"
    records = read_records(source)
    records[0]["meta"]["config"]["task"] = "../../outside"
    path = tmp_path / "c.jsonl.gz"
    write_records(path, records)  # re-signed, so only the id check can refuse it
    result = CliRunner().invoke(app, ["replay", str(path)])
    assert result.exit_code == 2 and "not a valid id" in result.output
    assert not (tmp_path.parent / "outside").exists()


def test_the_quick_fuzz_run_has_no_traceback_or_hang():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fuzz_inputs.py"), "--quick",
                           "--parts", "options,scenarios,stores"],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    for part in ("options", "scenarios", "stores"):
        assert summary[part]["tracebacks"] == 0, (part, summary[part], done.stderr[-3000:])
        assert summary[part]["hangs"] == 0, (part, summary[part])
        assert summary[part]["created"] == 0, (part, summary[part])
    assert summary["options"]["not_exit_2"] == []
    assert set(summary["scenarios"]["exit_codes"]) <= {"0", "1", "2"}
    assert set(summary["stores"]["exit_codes"]) <= {"0", "2"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.sampled_from([":memory:", "./:memory:", "", ".", "/", "/dev/null", "/proc/version",
                                  "file::memory:?cache=shared", "a" * 300]),
                 st.text(alphabet=":./\\~$%?* ab", max_size=24).map(lambda t: f"TMP/{t}")))
def test_a_store_path_that_names_no_store_is_refused_in_one_line(tmp_path, db):
    """A read command given any text as --db where no store is: one line, exit 2, no file made.
    (A NUL character cannot come from a shell; the store refuses it: tests/store.)"""
    before = sorted(p.name for p in tmp_path.iterdir())
    _one_line_exit_2(["runs", "--db", db.replace("TMP", str(tmp_path), 1)])
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("command", [
    ["runs", "--db", "{long}"], ["audit", "--db", "{long}", "--out", "{tmp}/report"],
    ["audit", "--db", "{store}", "--out", "{long}/report"], ["verify", "--db", "{long}"],
    ["verify", "{long}"], ["replay", "{long}"], ["export", "inspect", "--db", "{long}", "--out", "{tmp}/x"],
    ["merge", "{long}", "{store}"]])
def test_a_path_too_long_for_the_file_system_is_one_line(tmp_path, command):
    """Path.exists, is_file and mkdir raise on a name longer than the file system takes; wherever
    that happens below a command, it ends as one line naming the path."""
    store = tmp_path / "s.sqlite"
    assert CliRunner().invoke(app, ["replay", str(committed.DEMO_RUN), "--db", str(store)]).exit_code == 0
    long = tmp_path / ("a" * 300)
    line = _one_line_exit_2([part.format(long=long, tmp=tmp_path, store=store) for part in command])
    assert str(long) in line, line


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=string.ascii_letters + string.digits + "._-", min_size=1, max_size=20),
       st.sampled_from(["", ".jsonl.gz", ".jsonl.journal", "/x.jsonl.gz"]))
def test_a_cassette_path_that_names_nothing_is_called_missing(tmp_path, name, suffix):
    """``replay`` and ``verify`` of a path where no cassette (nor its journal) is: ``replay`` says
    so in one line and exits 2; ``verify`` gives it a ``cassette missing`` verdict and exits 1.
    Neither writes anything there, nor calls it a cassette that lacks its header."""
    missing = tmp_path / "nothing" / f"{name}{suffix}"
    line = _one_line_exit_2(["replay", str(missing), "--db", str(tmp_path / "s.sqlite")])
    assert f"{missing}: no such cassette" in line, line
    verified = CliRunner().invoke(app, ["verify", str(missing)])
    assert verified.exit_code == 1, verified.output
    assert f"cassette missing cassette {missing}: {missing}: no such cassette" in verified.output, \
        verified.output
    assert not (tmp_path / "nothing").exists()


def test_verify_of_a_folder_without_cassettes_fails_naming_it(tmp_path):
    """A folder that holds no cassette (a mistyped or empty one) is a problem, not 0 of 0
    verified: CI that verifies it would pass having checked nothing."""
    (tmp_path / "other.txt").write_text("not a cassette")
    shutil.copyfile(committed.DEMO_RUN, tmp_path / "runs.jsonl.gz.bak")
    result = CliRunner().invoke(app, ["verify", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert f"cassette missing folder {tmp_path}: no cassette (*.jsonl.gz) in it" in result.output
    assert result.output.strip().splitlines()[-1] == "0 verified, 1 with problems"


@pytest.mark.parametrize("command", [
    ["replay", "{odd}", "--db", "{tmp}/s.sqlite"], ["verify", "{odd}"], ["study", "{odd}"],
    ["runs", "--db", "{odd}"], ["certify", "--queries", "{odd}", "--n", "1"],
    ["replay", str(committed.DEMO_RUN), "--db", "{odd}"], ["replay", "{tmp}/journalled.jsonl.gz"]])
@pytest.mark.parametrize("odd", ["fifo", "/dev/zero"])
def test_a_fifo_or_a_device_given_as_a_file_is_named_at_once(tmp_path, command, odd):
    """Each file a command reads (a cassette, its journal, a study or query file, a store) given
    as a FIFO nothing writes into, or as /dev/zero: one line naming what it is, at once. Read
    whole, the FIFO made the command wait for good and /dev/zero took all memory."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    os.symlink(fifo if odd == "fifo" else odd, tmp_path / "journalled.jsonl.journal")
    odd_path = str(fifo) if odd == "fifo" else odd
    args = [part.format(odd=odd_path, tmp=tmp_path) for part in command]
    done = subprocess.run([sys.executable, "-m", "vcrime_audit.cli", *args], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    kind = "a FIFO" if odd == "fifo" else "a character device"
    assert f"{kind}, not a regular file" in done.stdout + done.stderr, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.returncode in (1, 2), done.stderr
