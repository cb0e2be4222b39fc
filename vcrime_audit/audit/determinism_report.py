"""The audit report's section on the determinism checks a store holds (``determinism`` rows,
written by ``vcrime-audit determinism`` and ``study --check-determinism``). Apart from
:mod:`vcrime_audit.determinism`, which sends recorded calls to a live backend: the audit reads
the rows with sqlite3 alone, and starting it imports no cassette or backend code."""

from __future__ import annotations

import sqlite3

DeterminismRow = tuple[str, int, int, int, int]
"""backend, calls sent, identical, same fingerprint, cassettes."""


def read_determinism(conn: sqlite3.Connection) -> list[DeterminismRow]:
    """Per backend: calls sent again, identical, same fingerprint, cassettes (none: no table)."""
    try:
        return conn.execute("SELECT backend, COUNT(*), SUM(identical), SUM(fingerprint_match), "
                            "COUNT(DISTINCT cassette) FROM determinism GROUP BY backend "
                            "ORDER BY backend").fetchall()
    except sqlite3.OperationalError:
        return []


def determinism_lines(rows: list[DeterminismRow]) -> list[str]:
    if not rows:
        return []
    lines = ["## Determinism", "",
             "Recorded calls sent to the live backend again (`vcrime-audit determinism`, `study "
             "--check-determinism`); a call is identical when the live answer equals the recorded "
             "one byte for byte; rate = identical / sent.", "",
             "| Backend | Cassettes | Calls sent | Identical | Rate | Same fingerprint |",
             "| --- | --- | --- | --- | --- | --- |"]
    for backend, sent, same, fp, cassettes in rows:
        lines.append(f"| {backend} | {cassettes} | {sent} | {same} | {same / sent:.2f} | {fp}/{sent} |")
    return lines + [""]
