"""Fixtures: the demo store (committed demo run replayed) with the committed re-judging replayed
into it, so it holds two judges."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.followups.conftest import ROOT, demo_store, demo_store_file  # noqa: F401  (fixtures)
from vcrime_audit.cli import app


@pytest.fixture(scope="session")
def judged_store_file(demo_store_file, tmp_path_factory) -> Path:  # noqa: F811
    path = tmp_path_factory.mktemp("judged") / "vcrime.sqlite"
    shutil.copy(demo_store_file, path)
    rejudge = sorted((ROOT / "cassettes").glob("rejudge-*.jsonl.gz"))[0]
    done = CliRunner().invoke(app, ["rejudge", "--db", str(path), "--replay", str(rejudge)])
    assert done.exit_code == 0, done.output
    return path


@pytest.fixture
def judged_store(judged_store_file, tmp_path) -> Path:
    return Path(shutil.copy(judged_store_file, tmp_path / "vcrime.sqlite"))
