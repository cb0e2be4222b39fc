"""``cassette upgrade``: a committed format-2 cassette rewritten in format 3 replays identically,
with the same rows, and every call keeps its request and answer."""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil

import pytest

from tests.committed import DEMO_RUN
from vcrime_audit.canonical import content_hash
from vcrime_audit.cassette import Cassette, CassetteError, RecordMode
from vcrime_audit.runner import replay
from vcrime_audit.store import Store
from vcrime_audit.store.db import trajectory_rows
from vcrime_audit.upgrade import upgrade_cassette


def test_a_format_2_run_cassette_upgraded_to_format_3_replays_with_the_same_rows(tmp_path):
    old = Cassette(DEMO_RUN, RecordMode.none)
    assert old.format == 2
    path = tmp_path / DEMO_RUN.name
    shutil.copyfile(DEMO_RUN, path)
    assert "from format 2 to format 3" in upgrade_cassette(path)
    new = Cassette(path, RecordMode.none)
    assert new.format == 3 and new.summary["turn_rows_hash"] == old.summary["turn_rows_hash"]
    for before, after in zip(old.calls, new.calls, strict=True):
        assert after["request"] == before["request"] and after["result"] == before["result"]
        assert after["request_hash"] == content_hash(before["request"])
        assert after["key"] == content_hash({"fingerprint": before["fingerprint"],
                                             "request_hash": after["request_hash"]})
    first = asyncio.run(replay(DEMO_RUN, tmp_path / "old.sqlite"))
    second = asyncio.run(replay(path, tmp_path / "new.sqlite"))
    assert first.identical and second.identical and second.turn_rows_hash == first.turn_rows_hash
    assert trajectory_rows(Store(tmp_path / "old.sqlite"), first.run_id) == \
        trajectory_rows(Store(tmp_path / "new.sqlite"), second.run_id)
    assert upgrade_cassette(path) == f"{path}: already format 3"


def test_an_upgrade_leaves_a_broken_cassette_as_it_was(tmp_path):
    path = tmp_path / DEMO_RUN.name
    shutil.copyfile(DEMO_RUN, path)
    lines = gzip.decompress(path.read_bytes()).split(b"\n")
    lines[2] = lines[2].replace(b'"role":"user"', b'"role":"usr"', 1)
    path.write_bytes(gzip.compress(b"\n".join(lines)))
    before = path.read_bytes()
    with pytest.raises(CassetteError, match="record 3 does not match its checksum"):
        upgrade_cassette(path)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    assert json.loads(gzip.decompress(path.read_bytes()).split(b"\n")[0])["format"] == 2
