"""The audit report's section on the determinism checks a store holds (``determinism`` rows,
written by ``vcrime-audit determinism`` and ``study --check-determinism``). Apart from
:mod:`vcrime_audit.determinism`, which sends recorded calls to a live backend: the audit reads
the rows with sqlite3 alone, and starting it imports no cassette or backend code."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def determinism_section(db: Path) -> list[str]:
    """The audit report's section on determinism checks stored in ``db`` (none: no section)."""
    with sqlite3.connect(db) as conn:
        try:
            rows = conn.execute("SELECT backend, COUNT(*), SUM(identical), SUM(fingerprint_match), "
                                "COUNT(DISTINCT cassette) FROM determinism GROUP BY backend "
                                "ORDER BY backend").fetchall()
        except sqlite3.OperationalError:
            return []
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
