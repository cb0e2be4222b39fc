"""The benchmarks' bad inputs (a folder that is no corpus, a broken study file, a corrupt or
missing cassette, a hostile path) end in one line that names the file and the fix, exit 1: never
a traceback, and nothing written where the input was missing."""

from __future__ import annotations

import gzip
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from unittest.mock import patch

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import committed

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"


def _make_study_module():
    spec = importlib.util.spec_from_file_location("make_study", BENCHMARKS / "make_study.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_study = _make_study_module()


def _corpus(root: Path) -> Path:
    """A corpus as make_study.py leaves it (its study file, one committed run cassette), not
    recorded: the benchmarks read only these."""
    with patch.dict(os.environ):  # study_spec points VCRIME_MODELS at the corpus's registry
        spec = make_study.study_spec(root, attackers=1, tasks=1, seeds=1)
    (root / make_study.STUDY_FILE).write_text(yaml.safe_dump(spec.model_dump(mode="json")), encoding="utf-8")
    spec.cassette_dir.mkdir()
    shutil.copy(committed.DEMO_RUN, spec.cassette_dir)
    return root


def _one_error_line(args: list[str], cwd: Path = ROOT) -> str:
    done = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "fix:" in lines[0], done.stderr
    return lines[0]


def _broken_study(corpus: Path) -> Path:
    study = corpus / make_study.STUDY_FILE
    study.write_text(study.read_text(encoding="utf-8").replace("max_turns: 60", "max_turns: many"),
                     encoding="utf-8")
    return corpus


def _empty_cassettes(corpus: Path) -> Path:
    for cassette in (corpus / "cassettes").iterdir():
        cassette.unlink()
    return corpus


def _corrupt_cassette(corpus: Path) -> Path:
    (corpus / "cassettes" / committed.DEMO_RUN.name).write_bytes(b"\x1f\x8b not gzip")
    return corpus


CASES = {
    "recheck, no corpus": (["bench_recheck.py", "{tmp}/none"], None, "{tmp}/none/study.yaml: no study file"),
    "recheck, broken study file": (["bench_recheck.py", "{tmp}/c"], _broken_study,
                                   "{tmp}/c/study.yaml: max_turns:"),
    "recheck, no cassettes": (["bench_recheck.py", "{tmp}/c"], _empty_cassettes, "holds no cassettes"),
    "replay, missing cassette": (["bench_replay.py", "{tmp}/none.jsonl.gz"], None,
                                 "{tmp}/none.jsonl.gz: no such cassette"),
    "replay, a folder": (["bench_replay.py", "{tmp}/c/cassettes"], None, "{tmp}/c/cassettes: is a folder"),
    "replay, corrupt cassette": (["bench_replay.py", "{tmp}/c/cassettes/" + committed.DEMO_RUN.name],
                                 _corrupt_cassette, "not a readable gzip cassette"),
    "layers, corrupt cassette": (["bench_replay_layers.py", "{tmp}/c"], _corrupt_cassette,
                                 "not a readable gzip cassette"),
    "miss, no corpus": (["bench_miss.py", "{tmp}/none"], None, "{tmp}/none: no cassettes"),
    "instructions, not a checkout": (["bench_instructions.py", "{tmp}/c", "--against", "{tmp}/c"], None,
                                     "--against {tmp}/c: not a checkout"),
    "audit, missing store": (["bench_audit.py", "--store", "{tmp}/none.sqlite"], None,
                             "--store {tmp}/none.sqlite: no such file"),
    "recheck, a name too long": (["bench_recheck.py", "{tmp}/" + "a" * 300], None, "File name too long"),
    "make_study, a name too long": (["make_study.py", "--out", "{tmp}/" + "a" * 300 + "/x", "--tasks", "1"],
                                    None, "File name too long"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_benchmark_given_bad_input_says_so_in_one_line(tmp_path, case):
    args, damage, expected = CASES[case]
    corpus = _corpus(tmp_path / "c")
    if damage is not None:
        damage(corpus)
    script, *rest = (a.format(tmp=tmp_path) for a in args)
    line = _one_error_line([str(BENCHMARKS / script), *rest])
    assert expected.format(tmp=tmp_path) in line, line
    assert not (tmp_path / "none.sqlite").exists() and not (tmp_path / "none").exists()


STUDY_EDITS = st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.binary(max_size=6)), min_size=1,
                       max_size=4)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=STUDY_EDITS, keep=st.floats(0.0, 1.0))
def test_a_mutated_study_file_reads_or_ends_in_one_line_naming_it(tmp_path_factory, edits, keep):
    corpus = _corpus(tmp_path_factory.mktemp("corpus"))
    study = corpus / make_study.STUDY_FILE
    data = bytearray(study.read_bytes()[:int(len(study.read_bytes()) * keep)])
    for where, insert in edits:
        at = int(where * len(data))
        data[at:at + len(insert)] = insert
    study.write_bytes(bytes(data))
    try:
        spec = make_study.corpus_study(corpus)
    except SystemExit as exc:
        message = str(exc.code)
        assert message.startswith(f"error: {study}") and "\n" not in message and "fix" in message, message
    else:
        assert next(spec.cassette_dir.glob("*.jsonl.gz"), None) is not None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(inside=st.booleans(), edits=STUDY_EDITS, keep=st.floats(0.0, 1.0))
def test_a_mutated_cassette_reads_or_ends_in_one_line_naming_it(tmp_path_factory, inside, edits, keep):
    """Bytes flipped, inserted and cut in the gzip file, or in its text (compressed again)."""
    raw = committed.DEMO_RUN.read_bytes()
    data = bytearray(gzip.decompress(raw) if inside else raw)
    data = data[:max(1, int(len(data) * keep))]
    for where, insert in edits:
        at = int(where * len(data))
        data[at:at + len(insert)] = insert
    path = tmp_path_factory.mktemp("cassette") / committed.DEMO_RUN.name
    path.write_bytes(gzip.compress(bytes(data)) if inside else bytes(data))
    try:
        make_study.read_cassette(path)
    except SystemExit as exc:
        message = str(exc.code)
        assert message.startswith(f"error: {path}") and "\n" not in message and "fix" in message, message
