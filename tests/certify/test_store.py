"""Certification tables (migration m003) and the writes of vcrime_audit.certify.store."""

from __future__ import annotations

import sqlite3

import pytest

from vcrime_audit.certify import store as cstore
from vcrime_audit.store import Store


def cert_row(cid: str, started: str = "2025-01-01T00:00:00+00:00") -> dict:
    return {"certification_id": cid, "name": "demo", "status": "running", "n": 2,
            "started_at": started}


def conv_row(cid: str, idx: int, catastrophic: int | None) -> dict:
    return {"certification_id": cid, "idx": idx, "node_ids": '["a"]', "pr_gamma": 0.5,
            "turns": "[]", "catastrophic": catastrophic, "missing": int(catastrophic is None)}


def test_migration_creates_both_tables_once(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    assert {"certifications", "conversations"} <= set(store.db.table_names())
    Store(tmp_path / "s.sqlite")
    names = [r["name"] for r in store.db["_migrations"].rows]
    assert names.count("m003_certifications") == 1
    assert store.db["conversations"].pks == ["certification_id", "idx"]


def test_restarting_a_certification_replaces_its_rows(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    cstore.start_certification(store, cert_row("c1"))
    cstore.commit_conversation(store, conv_row("c1", 0, 1))
    cstore.start_certification(store, cert_row("c2", "2025-01-02T00:00:00+00:00"))
    cstore.commit_conversation(store, conv_row("c2", 0, 0))
    cstore.start_certification(store, cert_row("c1", "2025-01-03T00:00:00+00:00"))
    assert cstore.conversations(store, "c1") == []
    assert len(cstore.conversations(store, "c2")) == 1
    cstore.finish_certification(store, "c1", status="done", k=0)
    assert cstore.certification(store, "c1")["status"] == "done"
    with Store.open_existing(store.path) as reader:
        assert [r["certification_id"] for r in cstore.certifications(reader)] == ["c2", "c1"]
    assert cstore.certification(store, "nope") is None


def test_a_conversation_that_fails_to_insert_leaves_no_partial_row(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    cstore.start_certification(store, cert_row("c1"))
    cstore.commit_conversation(store, conv_row("c1", 0, 1))
    with pytest.raises(sqlite3.IntegrityError):
        cstore.commit_conversation(store, conv_row("c1", 0, 0))
    assert [r["catastrophic"] for r in cstore.conversations(store, "c1")] == [1]


def test_rows_hash_ignores_the_certification_id_only():
    a = [conv_row("c1", 0, 1), conv_row("c1", 1, None)]
    b = [conv_row("c2", 0, 1), conv_row("c2", 1, None)]
    assert cstore.rows_hash(a, "{}") == cstore.rows_hash(b, "{}")
    assert cstore.rows_hash(a, "{}") != cstore.rows_hash(a, '{"k":1}')
    assert cstore.rows_hash(a, "{}") != cstore.rows_hash([a[0], conv_row("c1", 1, 0)], "{}")
