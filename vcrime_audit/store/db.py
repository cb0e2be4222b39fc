"""The Store: runs, turns, calls, judgments and patches in one SQLite file.

A recorded turn is written in one transaction, so a crash loses at most the turn in flight (a
replay, which derives every turn again from the first whenever it runs, writes up to 16 in one).

Write-ahead log with ``synchronous=NORMAL``: a commit survives the process being killed at any
point (what the crash tests kill); only an operating-system crash or power loss can roll back the
last commits, never corrupt the file. The store's rows are derived from the cassette journal,
which is fsynced before each commit, so a store rolled back that way lags its cassette and a
resume re-derives the missing turns from it. ``FULL`` would add an fsync of the log to every
turn's commit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..canonical import rows_content_hash
from ..collector import release_frames
from ..regular_files import not_regular, not_writable
from .connection import IN_MEMORY, connect
from .errors import StoreError, opening_errors, store_error
from .migrations import applied_migrations, migrate, pending_migrations
from .schema import schema_problems
from .sqlite_utils_without_numpy import sqlite_utils

if TYPE_CHECKING:  # the store writes what the engine returns; it never runs the engine
    from ..engine import TurnRecord
    from .writer import StoreWriter

T = TypeVar("T")

HASHED_TABLES = ("turns", "calls", "judgments", "patches")
LEGACY_HASHED_TABLES = ("turns", "judgments", "patches")
"""What format-1 cassettes' turn-rows hash covered (before the calls table joined it)."""
RUN_TABLES = ("runs", "turns", "calls", "judgments", "patches", "harm")  # written with each turn
FOLLOWUP_RUN_TABLES = ("rejudged_turns", "annotations", "annotation_results", "interrogations")


ROW_ORDER = {"turns": "turn", "calls": "turn, seq", "judgments": "turn, judge", "patches": "turn, seq",
             "harm": "turn"}
"""The order a run's rows of each table are read in (other tables: as inserted)."""


BEHIND_AUTOCHECKPOINT_PAGES = 16384
"""Pages (of 4 KiB: 64 MiB) in the write-ahead log before a connection whose jobs' checkpoints run
behind (:meth:`Store.fold_jobs_behind`) folds it in itself, on the thread that commits."""


def _is_file(path: Path) -> bool:
    """``path.is_file()``, raising :class:`StoreError` where the path cannot even be looked up (a
    name too long for the file system, say), which ``is_file`` lets through as an OSError."""
    try:
        return path.is_file()
    except OSError as exc:
        raise StoreError(f"{path}: cannot be looked up ({exc.strerror}); fix: pass --db the path "
                         "of a store written by vcrime-audit") from None


class Store:
    """A store on disk. ``readonly=True`` (or :meth:`open_existing`) opens an existing store
    for reading only: it creates no file or folder and never migrates. :meth:`in_memory` makes
    a scratch store that no file holds."""

    def __init__(self, path: Path | str, readonly: bool = False, *, memory: bool = False) -> None:
        """``memory``: the store :meth:`in_memory` makes (``path`` is then :data:`IN_MEMORY`)."""
        self._memory = memory
        self._columns: dict[str, list[str]] = {}
        self.path = Path(path)
        self.readonly = readonly
        self._writer: StoreWriter | None = None
        self._behind: Future[None] | None = None
        self._jobs_behind = False
        if "\x00" in str(path):
            raise StoreError(f"{str(path)!r}: a store path cannot hold a NUL character; fix: give "
                             "the store a file path such as runs/store.sqlite")
        if str(path) == IN_MEMORY and not memory:
            raise StoreError(f"{IN_MEMORY}: SQLite would keep this store in memory and lose every "
                             "row when the command ends; fix: give the store a file path (--db, "
                             "or db: in a study file), such as runs/store.sqlite")
        if readonly and not _is_file(self.path):
            what = ("is a folder, not a store" if self.path.is_dir() else
                    not_regular(self.path) or "no such store")
            raise StoreError(f"{self.path}: {what}; fix: pass --db with a store written by "
                             "`vcrime-audit run`, `replay` or `study`")
        if not readonly and not self._memory:
            if odd := not_regular(self.path):
                raise StoreError(f"{self.path}: {odd}; fix: point --db at a vcrime-audit store or a "
                                 "new file such as runs/store.sqlite")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"{self.path}: cannot create its folder ({exc.strerror}); fix: "
                                 "point --db at a writable place") from None
            if why := not_writable(self.path):
                raise StoreError(f"{self.path}: cannot be written here ({why}), and this command "
                                 "writes to the store; fix: copy the store to a writable folder and "
                                 "point --db at the copy")
        if self._memory:  # a copy of this process's template: migrated and checked once
            self.db = sqlite_utils.Database(connect(self.path, readonly, self._memory))
            self.migrated = []
            return
        with opening_errors(self.path):
            self.db = sqlite_utils.Database(connect(self.path, readonly, self._memory))
        try:
            with opening_errors(self.path):
                problems = self._migrate_and_check(readonly)
            if problems:
                raise StoreError(f"{self.path}: damaged store: {problems[0]}"
                                 + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
                                 + "; fix: restore the store from a copy, or replay its cassettes "
                                 "into a new store (vcrime-audit replay CASSETTE --db NEW)")
        except BaseException as exc:  # a store refused is closed here: no caller holds it
            self.__exit__(type(exc), exc, exc.__traceback__)
            raise

    def _migrate_and_check(self, readonly: bool) -> list[str]:
        """Apply the pending migrations (none when ``readonly``); the schema's problems."""
        # one read snapshot: another process may commit a new store's schema in between
        self.db.conn.execute("BEGIN")
        try:
            applied = applied_migrations(self.db.conn)
            tables = set(self.db.table_names()) - {"_migrations"}
        finally:
            self.db.conn.commit()
        if not applied and (readonly or tables):
            raise StoreError(f"{self.path}: not a vcrime-audit store (no migration is recorded in "
                             "a _migrations table); fix: point --db at a store written by "
                             "vcrime-audit, or at a new file")
        pending_migrations(applied)
        self.migrated = [] if readonly else migrate(self.db)
        return schema_problems(self.db.conn)

    @classmethod
    def open_existing(cls, path: Path | str) -> Store:
        """An existing store, read-only (see :class:`Store`)."""
        return cls(path, readonly=True)

    @classmethod
    def in_memory(cls) -> Store:
        """A new, empty store in this process's memory, gone when closed: for rows that are
        derived, compared and dropped (``verify`` re-deriving a run). It has one connection, so
        no writer thread (:meth:`commit_off_loop`); what a replay writes it writes on the loop."""
        return cls(IN_MEMORY, memory=True)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        """Close. When ``exc`` is propagating, clear the locals of the frames it left first (a
        cursor one of them holds keeps the file open after ``close``: SQLite closes a connection
        whose statements are not finalized only once they are, and with the cycle collector off
        (:mod:`vcrime_audit.collector`) the exception's frames outlive the command); and raise
        what SQLite raised as one line naming this store (:func:`store_error`)."""
        if exc is not None:
            release_frames(exc)
        self.close()
        if isinstance(exc, sqlite3.DatabaseError) and not self._memory:
            raise store_error(self.path, exc) from None

    def close(self) -> None:
        """Close the connection(s); the last one to close folds the write-ahead log into the file.
        Waits for a checkpoint sent behind (:meth:`fold_jobs_behind`) and raises what it raised."""
        try:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
            self._raise_behind()
        finally:
            self.db.conn.close()

    async def commit_off_loop(self, write: Callable[[Store], None], transaction: bool = True) -> None:
        """Run ``write(store)`` (in one transaction unless ``transaction`` is false) on this
        store's writer thread (its own connection), so the event loop does not wait for the
        commit's fsync."""
        await self._writer_thread().commit(write, transaction)

    def _writer_thread(self) -> StoreWriter:
        if self._writer is None:
            if self._memory:
                raise StoreError("a store in memory has one connection, so no writer thread; "
                                 "fix: write to it on the loop, or use a store on disk")
            from .writer import StoreWriter  # asyncio: not imported by a store that only reads

            self._writer = StoreWriter(self.path)
        return self._writer

    async def read_off_loop(self, read: Callable[[Store], T]) -> T:
        """``read(store)`` on this store's writer thread, after the transactions sent before it:
        it sees what they wrote, and the event loop runs meanwhile."""
        if self._writer is None:
            return read(self)
        return await self._writer.commit(read, transaction=False)

    @contextmanager
    def immediate(self) -> Iterator[None]:
        """One write transaction taken at once (``BEGIN IMMEDIATE``): reads inside it see no
        other writer's changes until it commits."""
        conn = self.db.conn
        if conn.in_transaction:
            conn.commit()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            conn.rollback()
            raise
        conn.commit()

    @contextmanager
    def one_moment(self) -> Iterator[None]:
        """Every read inside sees the store as committed at one moment, while other processes go
        on writing it: one read transaction, or where this store writes, one taken at once
        (``BEGIN IMMEDIATE``) whose commits inside are held back to its end. Within a transaction
        already open, that one's moment."""
        conn = self.db.conn
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN" if self.readonly else "BEGIN IMMEDIATE")
        held, conn.hold = conn.hold, True
        try:
            yield
        except BaseException:
            conn.hold = held
            conn.rollback()
            raise
        conn.hold = held
        conn.commit()

    def copy_to(self, path: Path | str) -> None:
        """A compact copy of the store as committed now, at ``path`` (``VACUUM INTO``), also of a
        read-only store: its connection refuses writes to it, and this one writes another file."""
        conn = self.db.conn
        if self.readonly:
            conn.execute("PRAGMA query_only=OFF")
        try:
            conn.execute("VACUUM INTO ?", [str(path)])
        finally:
            if self.readonly:
                conn.execute("PRAGMA query_only=ON")

    def insert_rows(self, table: str, rows: list[dict[str, Any]], replace: bool = False,
                    ignore: bool = False) -> None:
        self._insert(table, rows, replace, ignore)

    def _insert(self, table: str, rows: list[dict[str, Any]], replace: bool = False,
                ignore: bool = False) -> None:
        if not rows:
            return
        columns = list(rows[0])
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE" if ignore else "INSERT"
        sql = (f"{verb} INTO [{table}] ({', '.join(f'[{c}]' for c in columns)}) "
               f"VALUES ({', '.join('?' for _ in columns)})")
        self.db.conn.executemany(sql, [[row[c] for c in columns] for row in rows])

    def start_run(self, run: dict[str, Any], models: list[dict[str, str]] = ()) -> None:
        """Insert the run row, and the family/vendor of its models for the audits."""
        with self.db.conn:
            self._insert("runs", [run], replace=True)
            self._insert("models", list(models), replace=True)

    def write_turn(self, run_id: str, record: TurnRecord, judge_model: str) -> None:
        """All rows of one turn and the run's turn count (call inside a transaction). The status
        stays ``running`` until the run's finish writes its outcome with its hashes."""
        from .rows import turn_rows  # the agents and the lexicon: not imported by a store that reads

        self.insert_turn_rows(run_id, record.turn, turn_rows(run_id, record, judge_model))

    def insert_turn_rows(self, run_id: str, turn: int, rows: dict[str, list[dict[str, Any]]]) -> None:
        """:meth:`write_turn` of rows already made (``store.rows.turn_rows``): what a replay
        commits, its rows made before the transaction so that the write lock, which processes
        replaying into one store share, is held only while they are inserted."""
        for table in RUN_TABLES[1:]:
            self._insert(table, rows[table])
        self.db.conn.execute("UPDATE runs SET turns = ? WHERE run_id = ?", [turn, run_id])

    def commit_turn(self, run_id: str, record: TurnRecord, judge_model: str) -> None:
        """:meth:`write_turn` in its own transaction."""
        with self.db.conn:
            self.write_turn(run_id, record, judge_model)

    def clear_run(self, run_id: str) -> None:
        """Delete a run's rows but its ``runs`` row (call inside a transaction)."""
        for table in (*FOLLOWUP_RUN_TABLES, *RUN_TABLES[1:]):
            self.db.conn.execute(f"DELETE FROM [{table}] WHERE run_id = ?", [run_id])

    def finish_run(self, run_id: str, **fields: Any) -> None:
        with self.db.conn:
            sets = ", ".join(f"[{k}] = ?" for k in fields)
            self.db.conn.execute(f"UPDATE runs SET {sets} WHERE run_id = ?", [*fields.values(), run_id])
        self.checkpoint()

    def checkpoint(self) -> None:
        """Copy the write-ahead log into the store file (when no reader holds it back), so a
        copy of the file alone holds every finished run."""
        if not self.readonly:
            self.db.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def fold_jobs_behind(self) -> None:
        """From now on, a replayed job's checkpoint (:meth:`job_replayed`) runs on the writer
        thread, after what was sent to it before, and is not waited for: the next job plays
        meanwhile. For an owner that plays many jobs into this store and closes it when done
        (``study``'s ``play_runs``): :meth:`close` waits for the last checkpoint and raises what
        it raised, so a copy of the file alone holds every run once the store is closed (and a
        finished run once its checkpoint has run). A checkpoint waits for two fsyncs (the log's,
        then the file's); in place, after every run and every 1000 pages of log, they held each
        worker of ``study --replay --processes 2`` on the 960-run grid blocked for 1.6-1.7 s,
        ~5 % of its wall time (``perf trace -s``).

        This connection's own checkpoint (SQLite's, on the thread that commits) then waits for
        :data:`BEHIND_AUTOCHECKPOINT_PAGES` of log, not 1000: the log is folded behind each job,
        and the bound holds should that fall behind. A store in memory has no log."""
        if self.readonly or self._memory or self._jobs_behind:
            return
        self.db.conn.execute(f"PRAGMA wal_autocheckpoint={BEHIND_AUTOCHECKPOINT_PAGES}")
        self._jobs_behind = True

    def job_replayed(self) -> None:
        """The checkpoint after a replayed job: in place (:meth:`checkpoint`), or behind it
        (:meth:`fold_jobs_behind`); raises what the previous one behind raised."""
        if not self._jobs_behind:
            self.checkpoint()
            return
        self._raise_behind()
        self._behind = self._writer_thread().submit(Store.checkpoint, transaction=False)

    def _raise_behind(self) -> None:
        behind = self._behind
        if behind is not None and behind.done():
            behind.result()

    def delete_run(self, run_id: str) -> None:
        with self.db.conn:
            for table in (*FOLLOWUP_RUN_TABLES, *RUN_TABLES[1:], "runs"):
                self.db.conn.execute(f"DELETE FROM [{table}] WHERE run_id = ?", [run_id])

    def select(self, table: str, where: str, args: list[Any], order_by: str,
               without: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """Rows of ``table`` as dicts, like sqlite-utils' ``rows_where`` (nothing for a table the
        store lacks) without its query of the schema per call; ``without``: columns left out."""
        columns, rows = self.select_tuples(table, where, args, order_by, without)
        return [dict(zip(columns, row, strict=True)) for row in rows]

    def select_tuples(self, table: str, where: str, args: list[Any], order_by: str,
                      without: tuple[str, ...] = ()) -> tuple[list[str], list[tuple[Any, ...]]]:
        """:meth:`select` as its columns and its rows' values, as SQLite gives them (no dict is
        made per row)."""
        selected = "*"
        if without:
            columns = [c for c in self.columns(table) if c not in without]
            if not columns:
                return [], []
            selected = ", ".join(f"[{c}]" for c in columns)
        try:
            cursor = self.db.conn.execute(
                f"SELECT {selected} FROM [{table}] WHERE {where} ORDER BY {order_by}", args)
        except sqlite3.OperationalError as exc:
            if str(exc).startswith("no such table"):
                return [], []
            raise
        return [c[0] for c in cursor.description], cursor.fetchall()

    def run(self, run_id: str) -> dict[str, Any] | None:
        rows = self.select("runs", "run_id = ?", [run_id], "rowid")
        return rows[0] if rows else None

    def runs(self) -> list[dict[str, Any]]:
        return self.select("runs", "1", [], "started_at, run_id")

    def rows(self, table: str, run_id: str, where: str = "", without: tuple[str, ...] = ()
             ) -> list[dict[str, Any]]:
        columns, rows = self.row_tuples(table, run_id, where, without)
        return [dict(zip(columns, row, strict=True)) for row in rows]

    def row_tuples(self, table: str, run_id: str, where: str = "", without: tuple[str, ...] = ()
                   ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """:meth:`rows` as its columns and its rows' values (:meth:`select_tuples`)."""
        clause = "run_id = ?" + (f" AND {where}" if where else "")
        return self.select_tuples(table, clause, [run_id], ROW_ORDER.get(table, "rowid"), without)

    def columns(self, table: str) -> list[str]:
        """The table's columns in order (none for a table the store lacks), read once per table
        that exists: a store's tables are as its migrations left them when it was opened (only
        they alter a table), and a missing one is looked up again."""
        known = self._columns.get(table)
        if known is None:
            known = [row[1] for row in self.db.conn.execute(f"PRAGMA table_info([{table}])")]
            if known:
                self._columns[table] = known
        return known


def trajectory_rows(store: Store, run_id: str,
                    tables: tuple[str, ...] = HASHED_TABLES) -> dict[str, list[dict[str, Any]]]:
    """Everything a run's trajectory consists of (live judgments only; re-judging does not
    change a trajectory), without its run id."""
    live = {"judgments": "source = 'live'"}
    return {table: store.rows(table, run_id, live.get(table, ""), without=("run_id",))
            for table in tables}


WALL_CLOCK_COLUMNS = {"calls": ("seconds",)}


def decision_rows(store: Store, run_id: str) -> dict[str, list[dict[str, Any]]]:
    """:func:`trajectory_rows` without how long each call took: what two live runs of the same
    configuration on the same build must agree on (a replay agrees on the times too)."""
    return {table: [{k: v for k, v in row.items() if k not in WALL_CLOCK_COLUMNS.get(table, ())}
                    for row in rows]
            for table, rows in trajectory_rows(store, run_id).items()}


def turn_rows_hash(store: Store, run_id: str, tables: tuple[str, ...] = HASHED_TABLES) -> str:
    """Hash of :func:`trajectory_rows`: turns, the calls (finish reasons, token counts, times),
    judgments and patches."""
    return rows_content_hash(trajectory_rows(store, run_id, tables))


__all__ = ["Store", "StoreError", "turn_rows_hash"]
