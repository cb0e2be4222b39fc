"""A report folder replaced as a set (audit/staging.py): killed at any point, the folder holds the
previous report whole, the new one whole, or no report.md and no summary.json."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import vcrime_audit.audit.staging as staging
from vcrime_audit.audit.pipeline import run_audit
from vcrime_audit.audit.report import write_report
from vcrime_audit.audit.synthetic import SyntheticConfig, make_synthetic_store

ROOT = Path(__file__).resolve().parents[2]
FIRST = ("report.md", "summary.json")


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _whole(out: Path, old: dict[str, bytes], new: dict[str, bytes]) -> None:
    """Every file is one audit's whole file; report.md or summary.json present only beside files of
    the audit it came from."""
    files = {k: v for k, v in _files(out).items() if not k.startswith(staging.PREFIX)}
    for name, data in files.items():
        assert data in (old.get(name), new.get(name)), f"{name} is neither audit's"
    for name in FIRST:
        if name in files:
            same = new if files[name] == new[name] else old
            assert all(files[k] == same[k] for k in files), f"{name} beside another audit's files"


@pytest.fixture(scope="module")
def two_results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("staging")
    stores = [make_synthetic_store(folder / f"{n}.sqlite", SyntheticConfig(
        attackers=2, tasks=3, seeds=2, judges=2, min_turns=3, max_turns=6, seed=n)) for n in (1, 2)]
    return stores, [run_audit(path, n_resamples=30, seed=0) for path in stores]


def test_a_write_stopped_at_each_step_leaves_whole_files_of_one_audit(two_results, tmp_path, monkeypatch):
    _, (first, second) = two_results
    write_report(first, tmp_path / "old")
    write_report(second, tmp_path / "new")
    old, new = _files(tmp_path / "old"), _files(tmp_path / "new")
    assert old.keys() == new.keys() and all(old[k] != new[k] for k in FIRST)
    replace, write_text = os.replace, Path.write_text
    calls: list[str] = []

    def counted(real):
        def call(*args, **kwargs):
            calls.append(str(args[1] if real is replace else args[0]))
            if len(calls) == stop:
                raise KeyboardInterrupt(f"stopped at {calls[-1]}")
            return real(*args, **kwargs)
        return call

    stop, steps = -1, None
    monkeypatch.setattr(staging.os, "replace", counted(replace))
    monkeypatch.setattr(Path, "write_text", counted(write_text))
    write_report(second, tmp_path / "counted")
    steps = len(calls)  # every file written, then every file moved
    for stop in range(1, steps + 1):
        out = tmp_path / f"out{stop}"
        monkeypatch.undo()
        write_report(first, out)
        calls.clear()
        monkeypatch.setattr(staging.os, "replace", counted(replace))
        monkeypatch.setattr(Path, "write_text", counted(write_text))
        with pytest.raises(KeyboardInterrupt):
            write_report(second, out)
        monkeypatch.undo()
        _whole(out, old, new)
        write_report(second, out)
        assert _files(out) == new


def test_a_killed_audit_leaves_whole_files_and_the_next_removes_what_it_left(two_results, tmp_path):
    stores, _ = two_results
    out = tmp_path / "out"

    def audit(store: Path) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "vcrime_audit.cli", "audit", "--db", str(store),
                                 "--out", str(out), "--resamples", "30"], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    started = time.perf_counter()
    assert audit(stores[1]).wait(120) == 0
    took = time.perf_counter() - started
    new = _files(out)
    assert audit(stores[0]).wait(120) == 0
    old = _files(out)
    for n in range(8):  # kills spread over the second half of an audit, where the files are written
        process = audit(stores[1])
        time.sleep(took * (0.5 + n / 16))
        process.send_signal(signal.SIGKILL)
        process.wait(60)
        _whole(out, old, new)
    assert audit(stores[1]).wait(120) == 0
    assert _files(out) == new
    assert not list(out.glob(f"{staging.PREFIX}*"))


def test_a_staging_folder_of_a_running_process_is_left_alone(tmp_path):
    live = tmp_path / f"{staging.PREFIX}{os.getpid()}-x"
    dead = tmp_path / f"{staging.PREFIX}999999999-x"
    other = tmp_path / f"{staging.PREFIX}name-x"
    for folder in (live, dead, other):
        folder.mkdir()
        (folder / "f").write_text("x")
    with staging.staging_folder(tmp_path) as made:
        assert made.parent == tmp_path and made.name.startswith(f"{staging.PREFIX}{os.getpid()}-")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])
