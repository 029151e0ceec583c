"""Projection tables and their tracking rows in an SQLite store.

Every write starts with ``BEGIN IMMEDIATE``: it holds SQLite's one write
lock before it reads the stored position, so two processes moving one
projection take turns instead of one failing on a stale snapshot. A load is
one read transaction: in WAL mode it reads one snapshot of the tracking row
and the rows, whatever commits meanwhile.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import ClassVar

from nenjim.infrastructure.log.application import LogApplication
from nenjim.infrastructure.sqlite.files import retry_when_locked
from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.tracking.projections import (
    ProjectionRecorder,
    ProjectionState,
    ProjectionTable,
    Row,
)
from nenjim.infrastructure.tracking.sql import (
    LogTransactions,
    SessionTransactions,
    SqlProjectionRecorder,
)


def recorder_for(log: LogApplication | Backend) -> ProjectionRecorder:
    """The projections of the SQLite store of a Journal log or of a storage backend."""
    if isinstance(log, Backend):
        return SQLiteProjectionRecorder(SessionTransactions(log))
    return SQLiteProjectionRecorder(_LogTransactions(log))


class _LogTransactions(LogTransactions):
    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        with self._log.while_open(), self.datastore.transaction(commit=False) as c:
            yield c.sqlite_cursor.connection

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        with self._log.while_open(), self.datastore.get_connection(commit=True) as conn:
            cursor = conn.cursor()
            retry_when_locked(lambda: cursor.execute("BEGIN IMMEDIATE"))
            try:
                yield cursor.sqlite_cursor.connection
            except BaseException:
                conn.rollback()
                raise
            conn.commit()


class SQLiteProjectionRecorder(SqlProjectionRecorder[sqlite3.Cursor]):
    """The projections kept in one SQLite file, reached through ``transactions``."""

    mark = "?"
    quote = ""
    duplicate_errors = (sqlite3.IntegrityError,)
    types: ClassVar[Mapping[str, str]] = {
        "key": "INTEGER PRIMARY KEY",
        "integer": "INTEGER NOT NULL",
        "text": "TEXT NOT NULL",
        "optional text": "TEXT",
    }
    tracking_ddl = (
        "CREATE TABLE IF NOT EXISTS {} (name TEXT PRIMARY KEY, version INTEGER NOT NULL, "
        "generation INTEGER NOT NULL, position INTEGER NOT NULL) WITHOUT ROWID"
    )

    def _cursor(
        self, connection: sqlite3.Connection, write: bool
    ) -> AbstractContextManager[sqlite3.Cursor]:
        # A write's transaction began with BEGIN IMMEDIATE, holding the write lock.
        cursor = connection.cursor()
        cursor.row_factory = None
        return nullcontext(cursor)

    def _tables(self, c: sqlite3.Cursor, prefix: str) -> list[str]:
        c.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, ?) = ?",
            (len(prefix), prefix),
        )
        return [name for (name,) in c.fetchall()]

    def _has_index(
        self, c: sqlite3.Cursor, table: ProjectionTable, state: ProjectionState, number: int
    ) -> bool:
        c.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?",
            (table.index_name(state.generation, number),),
        )
        return c.fetchone() is not None

    def _insert(
        self, c: sqlite3.Cursor, table: ProjectionTable, generation: int, rows: Iterable[Row]
    ) -> None:
        marks = ", ".join("?" * len(table.columns))
        c.executemany(f"INSERT INTO {table.generation_table(generation)} VALUES ({marks})", rows)
