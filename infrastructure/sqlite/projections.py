"""Projection tables and their tracking rows in an SQLite store.

Every write starts with ``BEGIN IMMEDIATE``: it holds SQLite's one write
lock before it reads the stored position, so two processes moving one
projection take turns instead of one failing on a stale snapshot. A load is
one read transaction: in WAL mode it reads one snapshot of the tracking row
and the rows, whatever commits meanwhile.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

from eventsourcing.persistence import Tracking
from eventsourcing.sqlite import SQLiteDatastore

from nenjim.infrastructure.log.application import LogApplication
from nenjim.infrastructure.log.closing import ClosableRecorder
from nenjim.infrastructure.sqlite.files import retry_when_locked
from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.store.errors import ProjectionDamagedError, RebuildLostError
from nenjim.infrastructure.tracking.projections import (
    TRACKING_TABLE,
    Persisted,
    ProjectionRecorder,
    ProjectionState,
    ProjectionTable,
    Row,
    RowsAfter,
    SessionTransactions,
    Transactions,
    checked_position,
    checked_rows,
    generation_numbers,
    missing_generation,
    next_generation,
    tracked_state,
)

_TRACKING_DDL = (
    f"CREATE TABLE IF NOT EXISTS {TRACKING_TABLE} (name TEXT PRIMARY KEY, "
    "version INTEGER NOT NULL, generation INTEGER NOT NULL, position INTEGER NOT NULL) "
    "WITHOUT ROWID"
)
_DDL = {"integer": "INTEGER NOT NULL", "text": "TEXT NOT NULL", "optional text": "TEXT"}
_STATE = f"SELECT name, position, version, generation FROM {TRACKING_TABLE}"


def recorder_for(log: LogApplication | Backend) -> ProjectionRecorder:
    """The projections of the SQLite store of a Journal log or of a storage backend."""
    if isinstance(log, Backend):
        return SQLiteProjectionRecorder(SessionTransactions(log))
    datastore = cast(Any, log.factory).datastore
    return SQLiteProjectionRecorder(
        _LogTransactions(datastore, cast(ClosableRecorder, log.recorder))
    )


class _LogTransactions:
    """The transactions of a Journal log's datastore, refused once the log is closed."""

    def __init__(self, datastore: SQLiteDatastore, log: ClosableRecorder) -> None:
        self._datastore = datastore
        self._log = log

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        with self._log.while_open(), self._datastore.transaction(commit=False) as c:
            yield c.sqlite_cursor.connection

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        with self._log.while_open(), self._datastore.get_connection(commit=True) as conn:
            cursor = conn.cursor()
            retry_when_locked(lambda: cursor.execute("BEGIN IMMEDIATE"))
            try:
                yield cursor.sqlite_cursor.connection
            except BaseException:
                conn.rollback()
                raise
            conn.commit()


class SQLiteProjectionRecorder(ProjectionRecorder):
    """The projections kept in one SQLite file, reached through ``transactions``."""

    def __init__(self, transactions: Transactions) -> None:
        self._transactions = transactions

    def states(self) -> list[ProjectionState]:
        with self._reading() as c:
            if not _has_tracking(c):
                return []
            c.execute(f"{_STATE} ORDER BY name")
            return [tracked_state(TRACKING_TABLE, row) for row in c.fetchall()]

    def load(self, table: ProjectionTable) -> Persisted:
        with self._reading() as c:
            state = _state(c, table.name) if _has_tracking(c) else None
            if state is None or state.version != table.version:
                return Persisted(0, [])
            name = table.generation_table(state.generation)
            if not _has_table(c, name):
                raise missing_generation(table, state)
            c.execute(f"SELECT * FROM {name} ORDER BY position")
            return checked_rows(table, state, c.fetchall())

    def write(self, table: ProjectionTable, rows_after: RowsAfter, tracking: Tracking) -> bool:
        position = checked_position(table, tracking)
        with self._writing() as c:
            state = _state(c, table.name)
            if state is not None and state.version > table.version:
                return False
            if state is None or state.version < table.version:
                generation = next_generation(state, _generations(c, table))
                _create(c, table, generation)
                _insert(c, table, generation, rows_after(0))
                _swap(c, table, ProjectionState(table.name, position, table.version, generation))
                return True
            if state.position >= position:
                return False
            _insert(c, table, state.generation, rows_after(state.position))
            c.execute(
                f"UPDATE {TRACKING_TABLE} SET position = ? WHERE name = ?", (position, table.name)
            )
            return True

    def rebuild(
        self, table: ProjectionTable, batches: Iterable[tuple[Sequence[Row], int]]
    ) -> ProjectionState:
        with self._writing() as c:
            generation = next_generation(_replaced_state(c, table.name), _generations(c, table))
            _create(c, table, generation)
        position = 0
        for rows, after in batches:
            with self._writing() as c:
                _insert(c, table, generation, rows)
            position = after
        state = ProjectionState(table.name, position, table.version, generation)
        with self._writing() as c:
            now = _replaced_state(c, table.name)
            if now is not None and now.generation >= generation:
                raise RebuildLostError(
                    f"projection {table.name}: another rebuild swapped in generation "
                    f"{now.generation} first; nothing of this one was kept"
                )
            _swap(c, table, state)
        return state

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Cursor]:
        with self._transactions.reading() as connection:
            yield _plain(connection)

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Cursor]:
        with self._transactions.writing() as connection:
            cursor = _plain(connection)
            cursor.execute(_TRACKING_DDL)
            yield cursor


def _plain(connection: sqlite3.Connection) -> sqlite3.Cursor:
    """A cursor of plain tuples, as a Row is: a start loads 10,000s of rows, and a
    sqlite3.Row each would be built only to be copied."""
    cursor = connection.cursor()
    cursor.row_factory = None
    return cursor


def _has_tracking(c: sqlite3.Cursor) -> bool:
    return _has_table(c, TRACKING_TABLE)


def _has_table(c: sqlite3.Cursor, name: str) -> bool:
    c.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
    return c.fetchone() is not None


def _state(c: sqlite3.Cursor, name: str) -> ProjectionState | None:
    c.execute(f"{_STATE} WHERE name = ?", (name,))
    row = c.fetchone()
    return None if row is None else tracked_state(TRACKING_TABLE, tuple(row))


def _replaced_state(c: sqlite3.Cursor, name: str) -> ProjectionState | None:
    """The tracking row a rebuild replaces; one edited into another type counts as none
    (the rebuild writes it anew)."""
    try:
        return _state(c, name)
    except ProjectionDamagedError:
        return None


def _create(c: sqlite3.Cursor, table: ProjectionTable, generation: int) -> None:
    name = table.generation_table(generation)
    columns = ", ".join(
        f"{column} {'INTEGER PRIMARY KEY' if i == 0 else _DDL[kind]}"
        for i, (column, kind) in enumerate(table.columns)
    )
    c.execute(f"CREATE TABLE {name} ({columns})")


def _insert(
    c: sqlite3.Cursor, table: ProjectionTable, generation: int, rows: Iterable[Row]
) -> None:
    marks = ", ".join("?" * len(table.columns))
    c.executemany(f"INSERT INTO {table.generation_table(generation)} VALUES ({marks})", rows)


def _swap(c: sqlite3.Cursor, table: ProjectionTable, state: ProjectionState) -> None:
    """Point the tracking row at ``state``'s generation; drop all but it and the one before.

    The one before stays for a reader that read the tracking row just
    before this commit (on PostgreSQL it could not read a dropped table).
    """
    c.execute(
        f"INSERT INTO {TRACKING_TABLE} VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
        "version = excluded.version, generation = excluded.generation, "
        "position = excluded.position",
        (state.name, state.version, state.generation, state.position),
    )
    for generation in _generations(c, table):
        if generation < state.generation - 1:
            c.execute(f"DROP TABLE {table.generation_table(generation)}")


def _generations(c: sqlite3.Cursor, table: ProjectionTable) -> list[int]:
    c.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, ?) = ?",
        (len(table.table) + 2, f"{table.table}_g"),
    )
    return generation_numbers(table, (name for (name,) in c.fetchall()))
