"""Projection tables and their tracking rows in a PostgreSQL schema.

Every write takes a transaction-scoped advisory lock of the schema's
projections first, so two processes moving projections take turns (and
their ``CREATE TABLE IF NOT EXISTS`` never race in the catalog). A load is
one ``REPEATABLE READ`` transaction: one snapshot of the tracking row and
the rows, whatever commits meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, ClassVar, cast

import psycopg
from psycopg.rows import TupleRow, tuple_row
from psycopg.sql import Identifier

from nenjim.infrastructure.log.application import LogApplication
from nenjim.infrastructure.postgresql.storage import PostgresDriver
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
    Transactions,
)

_Cursor = psycopg.Cursor[TupleRow]
# Distinct from the log's DDL lock: a projection write never waits for a log's creation.
_LOCK_SALT = "nenjim_projections:"


def recorder_for(log: LogApplication | Backend) -> ProjectionRecorder:
    """The projections of the PostgreSQL schema of a Journal log or of a storage backend."""
    if isinstance(log, Backend):
        schema = cast(PostgresDriver, log.driver).settings.schema
        return PostgresProjectionRecorder(SessionTransactions(log), schema)
    transactions = _LogTransactions(log)
    return PostgresProjectionRecorder(transactions, transactions.datastore.schema)


class _LogTransactions(LogTransactions):
    @contextmanager
    def reading(self) -> Iterator[psycopg.Connection[Any]]:
        with (
            self._log.while_open(),
            self.datastore.get_connection() as conn,
            conn.transaction(force_rollback=True),
        ):
            yield conn

    @contextmanager
    def writing(self) -> Iterator[psycopg.Connection[Any]]:
        with self._log.while_open(), self.datastore.get_connection() as conn, conn.transaction():
            yield conn


class PostgresProjectionRecorder(SqlProjectionRecorder[_Cursor]):
    """The projections kept in one PostgreSQL ``schema``, reached through ``transactions``."""

    mark = "%s"
    quote = '"'
    duplicate_errors = (psycopg.errors.UniqueViolation,)
    types: ClassVar[Mapping[str, str]] = {
        "key": "bigint PRIMARY KEY",
        "integer": "bigint NOT NULL",
        "text": "text NOT NULL",
        "optional text": "text",
    }
    tracking_ddl = (
        "CREATE TABLE IF NOT EXISTS {} (name text PRIMARY KEY, version integer NOT NULL, "
        "generation integer NOT NULL, position bigint NOT NULL)"
    )

    code_points = ' COLLATE "C"'

    def __init__(self, transactions: Transactions, schema: str) -> None:
        self._schema = schema
        super().__init__(transactions)

    @contextmanager
    def _cursor(self, connection: psycopg.Connection[Any], write: bool) -> Iterator[_Cursor]:
        with connection.cursor(row_factory=tuple_row) as c:
            if write:
                c.execute(
                    "SELECT pg_advisory_xact_lock(hashtext(%s))", (_LOCK_SALT + self._schema,)
                )
            else:
                c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield c

    def _name(self, table: str) -> str:
        return Identifier(self._schema, table).as_string(None)

    # The catalog as a statement finds a table in it now, not pg_tables in this snapshot.
    def _has(self, c: _Cursor, table: str) -> bool:
        c.execute("SELECT to_regclass(%s)", (self._name(table),))
        row = c.fetchone()
        return row is not None and row[0] is not None

    def _has_index(
        self, c: _Cursor, table: ProjectionTable, state: ProjectionState, number: int
    ) -> bool:
        return self._has(c, table.index_name(state.generation, number))

    def _quoted(self, index: str) -> str:
        return Identifier(index).as_string(None)

    def _tables(self, c: _Cursor, prefix: str) -> list[str]:
        c.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s AND left(tablename, %s) = %s",
            (self._schema, len(prefix), prefix),
        )
        return [name for (name,) in c.fetchall()]

    def _insert(
        self, c: _Cursor, table: ProjectionTable, generation: int, rows: Iterable[Row]
    ) -> None:
        name = self._name(table.generation_table(generation))
        with c.copy(f"COPY {name} ({self._columns(table)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
