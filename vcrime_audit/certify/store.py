"""Certification rows in the store: one transaction per certification start/finish or conversation."""

from __future__ import annotations

from typing import Any

from ..canonical import content_hash
from ..store import Store

HASH_EXCLUDED = ("certification_id",)


def _insert(store: Store, table: str, row: dict[str, Any]) -> None:
    columns = list(row)
    sql = (f"INSERT INTO [{table}] ({', '.join(f'[{c}]' for c in columns)}) "
           f"VALUES ({', '.join('?' for _ in columns)})")
    store.db.conn.execute(sql, [row[c] for c in columns])


def start_certification(store: Store, row: dict[str, Any]) -> None:
    """Replace any earlier certification with this id by a fresh ``running`` row."""
    cid = row["certification_id"]
    with store.db.conn:
        store.db.conn.execute("DELETE FROM conversations WHERE certification_id = ?", [cid])
        store.db.conn.execute("DELETE FROM certifications WHERE certification_id = ?", [cid])
        _insert(store, "certifications", row)


def commit_conversation(store: Store, row: dict[str, Any]) -> None:
    with store.db.conn:
        insert_conversation(store, row)


def insert_conversation(store: Store, row: dict[str, Any]) -> None:
    """One conversation row (call inside a transaction)."""
    _insert(store, "conversations", row)


def clear_conversations(store: Store, certification_id: str) -> None:
    store.db.conn.execute("DELETE FROM conversations WHERE certification_id = ?", [certification_id])


def finish_certification(store: Store, certification_id: str, **fields: Any) -> None:
    sets = ", ".join(f"[{k}] = ?" for k in fields)
    with store.db.conn:
        store.db.conn.execute(f"UPDATE certifications SET {sets} WHERE certification_id = ?",
                              [*fields.values(), certification_id])


def certification(store: Store, certification_id: str) -> dict[str, Any] | None:
    rows = list(store.db["certifications"].rows_where("certification_id = ?", [certification_id]))
    return rows[0] if rows else None


def certifications(store: Store) -> list[dict[str, Any]]:
    return list(store.db["certifications"].rows_where(order_by="started_at, certification_id"))


def conversations(store: Store, certification_id: str) -> list[dict[str, Any]]:
    return list(store.db["conversations"].rows_where("certification_id = ?", [certification_id],
                                                     order_by="idx"))


def rows_hash(conversation_rows: list[dict[str, Any]], bounds: str,
              extra: dict[str, Any] | None = None) -> str:
    """Hash of the conversation rows (without their certification id), the certificate and,
    when given, ``extra`` (e.g. the dropped GP samples)."""
    rows = [{k: v for k, v in row.items() if k not in HASH_EXCLUDED} for row in conversation_rows]
    payload: dict[str, Any] = {"conversations": rows, "bounds": bounds}
    if extra:
        payload["extra"] = extra
    return content_hash(payload)
