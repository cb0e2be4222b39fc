"""Damage a store file the way a failing disk or a stray write would: a table's pages zeroed."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def zero_table_pages(db: Path, table: str) -> int:
    """Overwrite every page of ``table``'s b-tree (SQLite's ``dbstat`` lists them) with zeros;
    the number of pages. The schema stays readable: the store opens, and reading the table fails
    with "database disk image is malformed"."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [n for (n,) in conn.execute("SELECT pageno FROM dbstat WHERE name = ?", [table])]
    conn.close()
    assert pages, f"{table} has no page in {db}"
    with open(db, "r+b") as file:
        for page in pages:
            file.seek((page - 1) * size)
            file.write(bytes(size))
    return len(pages)
