"""A store in memory whose turns' rows stay Python rows: what ``verify`` derives, compares, drops.

``verify`` replays each run into a store in memory only to read its rows back. Inserting a run's
turn rows into SQLite and reading them back was ~8 % of a verifying process's CPU (py-spy,
960-run corpus). :class:`KeptTurnRows` keeps them instead, each value as SQLite would give it
back (:func:`stored_value`), and answers :meth:`Store.row_tuples` for them in the store's order.
Where it cannot say what SQLite would do (a value of another type than its column's, a row out
of order, a query it does not know), it inserts what it kept and goes on as a plain store:
SQLite then answers, or raises, as it always did. ``tests/store/test_kept.py`` compares the two
on generated rows.
"""

from __future__ import annotations

import math
import re
import sqlite3
from operator import itemgetter
from typing import Any, ClassVar

from .connection import IN_MEMORY
from .db import ROW_ORDER, RUN_TABLES, Store

KEPT_TABLES = RUN_TABLES[1:]
"""The tables a turn writes (:meth:`Store.insert_turn_rows`); the ``runs`` row stays in SQLite."""
_FILTERS: dict[str, tuple[str, str] | None] = {"": None, "source = 'live'": ("source", "live")}
"""The ``where`` clauses :meth:`KeptTurnRows.row_tuples` answers: a run's rows, or its live ones."""
_REAL_INTS = 2**53
_INT64 = 2**63


class CannotTell(Exception):
    """What SQLite would store is not :func:`stored_value`'s to say: let SQLite do it."""


def stored_value(value: Any, affinity: str) -> Any:
    """What SQLite gives back for ``value`` bound by Python's sqlite3 into a column of type
    ``affinity`` (``TEXT``, ``INTEGER`` or ``REAL``), for the values whose storage is plain:
    text as it is (valid UTF-8), an integer in an INTEGER column (a bool as 0 or 1), a float or
    an integer up to 2**53 in a REAL column as a float (``-0.0`` as ``0.0``), None as None. Raises
    :class:`CannotTell` for anything else (text in a number's column, NaN, an integer that
    SQLite would round or refuse, another type): SQLite converts those its own way."""
    kind = type(value)
    if value is None:
        return None
    if affinity == "TEXT":
        if kind is str and (value.isascii() or _encodes(value)):
            return value
    elif affinity == "INTEGER":
        if (kind is int or kind is bool) and -_INT64 <= value < _INT64:
            return int(value)
    elif affinity == "REAL":
        if kind is float and not math.isnan(value):
            return value if value else 0.0
        if (kind is int or kind is bool) and -_REAL_INTS <= value <= _REAL_INTS:
            return float(value)
    raise CannotTell(f"{kind.__name__} in a {affinity} column")


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: sqlite3 refuses to bind it
        return False
    return True


class _Table:
    """What :class:`KeptTurnRows` keeps of one table: its columns, their types, and its rows in
    the store's order (``run_id``, then :data:`ROW_ORDER`'s columns)."""

    def __init__(self, name: str, columns: list[str], affinities: list[str], order: list[str]) -> None:
        self.name, self.columns, self.affinities = name, columns, affinities
        self.names = frozenset(columns)
        self.every_column = itemgetter(*columns)
        self.texts = frozenset(i for i, a in enumerate(affinities) if a == "TEXT")
        self.integers = frozenset(i for i, a in enumerate(affinities) if a == "INTEGER")
        self.key = [columns.index(c) for c in ["run_id", *order]]
        self.key_of = itemgetter(*self.key)
        self.rows: list[tuple[Any, ...]] = []

    def keep(self, row: dict[str, Any]) -> None:
        """Keep the row's values as SQLite would give them back, in the columns' order; raises
        :class:`CannotTell` for a row with a column the table lacks (SQLite raises), or a row
        not after the last one in the table's order (a duplicate key is not; a NULL beside a
        value cannot say)."""
        if len(row) == len(self.columns):  # every column, or one the table lacks instead
            try:
                given = self.every_column(row)
            except KeyError:
                raise CannotTell("a column the table lacks") from None
        elif row.keys() <= self.names:
            given = tuple(map(row.get, self.columns))
        else:
            raise CannotTell("a column the table lacks")
        texts, integers = self.texts, self.integers  # stored_value's two commonest cases, inline
        values = tuple([v if v is None or (type(v) is str and v.isascii() and i in texts)
                        or (type(v) is int and i in integers and -_INT64 <= v < _INT64)
                        else stored_value(v, self.affinities[i]) for i, v in enumerate(given)])
        key = self.key_of(values)
        if self.rows:
            last = self.key_of(self.rows[-1])
            try:
                later = key > last
            except TypeError:
                raise CannotTell("a key of mixed types") from None
            if not later:
                raise CannotTell("a row out of order")
        self.rows.append(values)

    def insert(self, store: Store) -> None:
        if self.rows:
            store.db.conn.executemany(
                f"INSERT INTO [{self.name}] ({', '.join(f'[{c}]' for c in self.columns)}) "
                f"VALUES ({', '.join('?' for _ in self.columns)})", self.rows)

    def tuples(self, run_id: str, only: tuple[str, str] | None, without: tuple[str, ...]
               ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """:meth:`Store.row_tuples` of the kept rows."""
        rows = [r for r in self.rows if r[self.key[0]] == run_id]
        if only is not None:
            at = self.columns.index(only[0])
            rows = [r for r in rows if r[at] == only[1]]
        if not without:
            return list(self.columns), rows
        chosen = [i for i, c in enumerate(self.columns) if c not in without]
        if not chosen:
            return [], []
        return [self.columns[i] for i in chosen], [tuple([r[i] for i in chosen]) for r in rows]


TableSpec = tuple[str, list[str], list[str], list[str]]
"""A kept table's name, columns, their types and its :data:`ROW_ORDER` columns."""


def keepable(conn: sqlite3.Connection) -> list[TableSpec] | None:
    """The tables :class:`KeptTurnRows` keeps, if every one is as plain as :func:`stored_value`
    and the order check assume: foreign keys not enforced, no trigger, default, NOT NULL, CHECK,
    collation, generated column or unique index but its key, which is ``run_id`` and
    :data:`ROW_ORDER`'s columns."""
    if conn.execute("PRAGMA foreign_keys").fetchone()[0]:
        return None
    specs = []
    for table in KEPT_TABLES:
        info = conn.execute(f"PRAGMA table_xinfo([{table}])").fetchall()
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                           [table]).fetchone()
        triggers = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND "
                                "tbl_name = ?", [table]).fetchone()
        unique = [i for i in conn.execute(f"PRAGMA index_list([{table}])") if i[2] and i[3] != "pk"]
        order = [c.strip() for c in ROW_ORDER[table].split(",")]
        key = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]
        plain = all(not notnull and default is None and not hidden and kind in _AFFINITIES
                    for _, _, kind, notnull, default, _, hidden in info)
        if (sql is None or triggers or unique or not plain or key != ["run_id", *order]
                or _CONSTRAINED.search(sql[0])):
            return None
        specs.append((table, [r[1] for r in info], [r[2] for r in info], order))
    return specs


class KeptTurnRows(Store):
    """:meth:`Store.in_memory`, whose turns' rows (:data:`KEPT_TABLES`) are kept, not inserted,
    while it can tell what SQLite would give back (see the module). Only for rows derived to be
    read with :meth:`row_tuples` or :meth:`rows` and dropped: a reader of its SQLite connection
    (``store.db``) sees no kept row, and a transaction rolled back keeps what it kept."""

    _specs: ClassVar[list[TableSpec] | None] = None
    _specs_read: ClassVar[bool] = False
    """:func:`keepable` of this process's stores in memory, read by the first one (0.25 ms a
    store): each is a copy of one template (``store.connection``), so all have its tables."""

    def __init__(self) -> None:
        super().__init__(IN_MEMORY, memory=True)
        cls = type(self)
        if not cls._specs_read:
            cls._specs, cls._specs_read = keepable(self.db.conn), True
        self._kept: dict[str, _Table] | None = (
            None if cls._specs is None else {spec[0]: _Table(*spec) for spec in cls._specs})

    def insert_turn_rows(self, run_id: str, turn: int, rows: dict[str, list[dict[str, Any]]]) -> None:
        if self._kept is not None and self._keep(rows):
            self.db.conn.execute("UPDATE runs SET turns = ? WHERE run_id = ?", [turn, run_id])
            return
        super().insert_turn_rows(run_id, turn, rows)

    def _keep(self, rows: dict[str, list[dict[str, Any]]]) -> bool:
        """Keep a turn's rows, all or none; False once it can no longer keep them (what it kept
        is then in SQLite, and the turn's rows are the caller's to insert)."""
        assert self._kept is not None
        before = {table: len(kept.rows) for table, kept in self._kept.items()}
        try:
            for table in KEPT_TABLES:
                kept = self._kept[table]
                for row in rows[table]:
                    kept.keep(row)
        except BaseException as exc:
            for table, kept in self._kept.items():
                del kept.rows[before[table]:]
            if not isinstance(exc, CannotTell):
                raise
            self._insert_kept()
            return False
        return True

    def _insert_kept(self) -> None:
        """Put every kept row in SQLite, in its order, and keep no more."""
        kept, self._kept = self._kept, None
        for table in (kept or {}).values():
            table.insert(self)

    def _insert(self, table: str, rows: list[dict[str, Any]], replace: bool = False,
                ignore: bool = False) -> None:
        if self._kept is not None and table in self._kept:
            self._insert_kept()
        super()._insert(table, rows, replace, ignore)

    def clear_run(self, run_id: str) -> None:
        self._drop(run_id)
        super().clear_run(run_id)

    def delete_run(self, run_id: str) -> None:
        self._drop(run_id)
        super().delete_run(run_id)

    def _drop(self, run_id: str) -> None:
        for kept in (self._kept or {}).values():
            kept.rows = [r for r in kept.rows if r[kept.key[0]] != run_id]

    def select_tuples(self, table: str, where: str, args: list[Any], order_by: str,
                      without: tuple[str, ...] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        if self._kept is not None and table in self._kept:
            self._insert_kept()
        return super().select_tuples(table, where, args, order_by, without)

    def row_tuples(self, table: str, run_id: str, where: str = "", without: tuple[str, ...] = ()
                   ) -> tuple[list[str], list[tuple[Any, ...]]]:
        kept = self._kept.get(table) if self._kept is not None else None
        if kept is None or where not in _FILTERS:
            return super().row_tuples(table, run_id, where, without)
        return kept.tuples(run_id, _FILTERS[where], without)


_AFFINITIES = ("TEXT", "INTEGER", "REAL")
_CONSTRAINED = re.compile(r"\bCHECK\s*\(|\bCOLLATE\b", re.IGNORECASE)
