"""The report's sections from the other workflows that write to the same store: certifications,
people in the loop and determinism checks. Their rows are read with the audit's, at the same
moment (:meth:`Store.one_moment`), and formatted when the report is written."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import Store
    from .determinism_report import DeterminismRow
    from .people import People


@dataclass(frozen=True)
class OtherRows:
    certifications: list[dict[str, Any]]
    people: People
    determinism: list[DeterminismRow]


def read_other_rows(store: Store) -> OtherRows:
    from ..certify.store import certifications
    from .determinism_report import read_determinism
    from .people import read_people

    with store.one_moment():
        return OtherRows(certifications(store), read_people(store), read_determinism(store.db.conn))


def other_sections_lines(rows: OtherRows) -> list[str]:
    """Sections from the other workflows (markdown, one each)."""
    from ..certify.report import certification_section
    from .determinism_report import determinism_lines
    from .people import people_lines

    return [certification_section(rows.certifications), "", *people_lines(rows.people),
            *determinism_lines(rows.determinism)]


def other_sections(db: Path) -> list[str]:
    """:func:`other_sections_lines` of the store at ``db``, read at one moment."""
    from ..store import Store

    store = Store.open_existing(db)
    try:
        return other_sections_lines(read_other_rows(store))
    finally:
        store.close()
