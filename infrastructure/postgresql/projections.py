"""Projection tables and their tracking rows in a PostgreSQL schema.

Every write takes a transaction-scoped advisory lock of the schema's
projections first, so two processes moving projections take turns (and
their ``CREATE TABLE IF NOT EXISTS`` never race in the catalog). A load is
one ``REPEATABLE READ`` transaction: one snapshot of the tracking row and
the rows, whatever commits meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import psycopg
from eventsourcing.persistence import Tracking
from eventsourcing.postgres import PostgresDatastore
from psycopg.rows import TupleRow, tuple_row
from psycopg.sql import SQL, Identifier

from nenjim.infrastructure.log.application import LogApplication
from nenjim.infrastructure.log.closing import ClosableRecorder
from nenjim.infrastructure.postgresql.storage import PostgresDriver
from nenjim.infrastructure.storage.backend import Backend
from nenjim.infrastructure.store.errors import RebuildLostError
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
)

_Cursor = psycopg.Cursor[TupleRow]
# Distinct from the log's DDL lock: a projection write never waits for a log's creation.
_LOCK_SALT = "nenjim_projections:"
_DDL = {"integer": "bigint NOT NULL", "text": "text NOT NULL", "optional text": "text"}


def recorder_for(log: LogApplication | Backend) -> ProjectionRecorder:
    """The projections of the PostgreSQL schema of a Journal log or of a storage backend."""
    if isinstance(log, Backend):
        schema = cast(PostgresDriver, log.driver).settings.schema
        return PostgresProjectionRecorder(SessionTransactions(log), schema)
    datastore = cast(Any, log.factory).datastore
    transactions = _LogTransactions(datastore, cast(ClosableRecorder, log.recorder))
    return PostgresProjectionRecorder(transactions, datastore.schema)


class _LogTransactions:
    """The transactions of a Journal log's datastore, refused once the log is closed."""

    def __init__(self, datastore: PostgresDatastore, log: ClosableRecorder) -> None:
        self._datastore = datastore
        self._log = log

    @contextmanager
    def reading(self) -> Iterator[psycopg.Connection[Any]]:
        with (
            self._log.while_open(),
            self._datastore.get_connection() as conn,
            conn.transaction(force_rollback=True),
        ):
            yield conn

    @contextmanager
    def writing(self) -> Iterator[psycopg.Connection[Any]]:
        with self._log.while_open(), self._datastore.get_connection() as conn, conn.transaction():
            yield conn


class PostgresProjectionRecorder(ProjectionRecorder):
    """The projections kept in one PostgreSQL ``schema``, reached through ``transactions``."""

    def __init__(self, transactions: Transactions, schema: str) -> None:
        self._transactions = transactions
        self._schema = schema
        self._tracking = self._name(TRACKING_TABLE)

    def states(self) -> list[ProjectionState]:
        with self._reading() as c:
            if not self._has_tracking(c):
                return []
            c.execute(SQL("{} ORDER BY name").format(self._select_state()))
            return [_state_of(row) for row in c.fetchall()]

    def load(self, table: ProjectionTable) -> Persisted:
        with self._reading() as c:
            state = self._state(c, table.name) if self._has_tracking(c) else None
            if state is None or state.version != table.version:
                return Persisted(0, [])
            rows = self._name(table.generation_table(state.generation))
            if not self._exists(c, rows):
                raise missing_generation(table, state)
            names = SQL(", ").join(Identifier(column) for column, _ in table.columns)
            c.execute(SQL("SELECT {} FROM {} ORDER BY position").format(names, rows))
            return checked_rows(table, state, c.fetchall())

    def write(self, table: ProjectionTable, rows_after: RowsAfter, tracking: Tracking) -> bool:
        position = checked_position(table, tracking)
        with self._writing() as c:
            state = self._state(c, table.name)
            if state is not None and state.version > table.version:
                return False
            if state is None or state.version < table.version:
                generation = next_generation(state, self._generations(c, table))
                self._create(c, table, generation)
                self._insert(c, table, generation, rows_after(0))
                state = ProjectionState(table.name, position, table.version, generation)
                self._swap(c, table, state)
                return True
            if state.position >= position:
                return False
            self._insert(c, table, state.generation, rows_after(state.position))
            c.execute(
                SQL("UPDATE {} SET position = %s WHERE name = %s").format(self._tracking),
                (position, table.name),
            )
            return True

    def rebuild(
        self, table: ProjectionTable, batches: Iterable[tuple[Sequence[Row], int]]
    ) -> ProjectionState:
        with self._writing() as c:
            generation = next_generation(self._state(c, table.name), self._generations(c, table))
            self._create(c, table, generation)
        position = 0
        for rows, after in batches:
            with self._writing() as c:
                self._insert(c, table, generation, rows)
            position = after
        state = ProjectionState(table.name, position, table.version, generation)
        with self._writing() as c:
            now = self._state(c, table.name)
            if now is not None and now.generation >= generation:
                raise RebuildLostError(
                    f"projection {table.name}: another rebuild swapped in generation "
                    f"{now.generation} first; nothing of this one was kept"
                )
            self._swap(c, table, state)
        return state

    def _name(self, table: str) -> SQL | Any:
        return SQL("{}.{}").format(Identifier(self._schema), Identifier(table))

    def _select_state(self) -> Any:
        return SQL("SELECT name, position, version, generation FROM {}").format(self._tracking)

    @contextmanager
    def _reading(self) -> Iterator[_Cursor]:
        # Plain tuples: a start loads 10,000s of rows, and a dict each would be built only
        # to be copied.
        with self._transactions.reading() as conn, conn.cursor(row_factory=tuple_row) as c:
            c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield c

    @contextmanager
    def _writing(self) -> Iterator[_Cursor]:
        with self._transactions.writing() as conn, conn.cursor(row_factory=tuple_row) as c:
            c.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (_LOCK_SALT + self._schema,))
            c.execute(
                SQL(
                    "CREATE TABLE IF NOT EXISTS {} (name text PRIMARY KEY, "
                    "version integer NOT NULL, generation integer NOT NULL, "
                    "position bigint NOT NULL)"
                ).format(self._tracking)
            )
            yield c

    def _has_tracking(self, c: _Cursor) -> bool:
        return self._exists(c, self._tracking)

    def _exists(self, c: _Cursor, table: Any) -> bool:
        c.execute("SELECT to_regclass(%s) AS found", (table.as_string(c.connection),))
        row = c.fetchone()
        return row is not None and row[0] is not None

    def _state(self, c: _Cursor, name: str) -> ProjectionState | None:
        c.execute(SQL("{} WHERE name = %s").format(self._select_state()), (name,))
        row = c.fetchone()
        return None if row is None else _state_of(row)

    def _create(self, c: _Cursor, table: ProjectionTable, generation: int) -> None:
        name = self._name(table.generation_table(generation))
        columns = SQL(", ").join(
            SQL("{} {}").format(
                Identifier(column), SQL("bigint PRIMARY KEY" if i == 0 else _DDL[kind])
            )
            for i, (column, kind) in enumerate(table.columns)
        )
        c.execute(SQL("CREATE TABLE {} ({})").format(name, columns))

    def _insert(
        self, c: _Cursor, table: ProjectionTable, generation: int, rows: Iterable[Row]
    ) -> None:
        name = self._name(table.generation_table(generation))
        columns = SQL(", ").join(Identifier(column) for column, _ in table.columns)
        with c.copy(SQL("COPY {} ({}) FROM STDIN").format(name, columns)) as copy:
            for row in rows:
                copy.write_row(row)

    def _swap(self, c: _Cursor, table: ProjectionTable, state: ProjectionState) -> None:
        """Point the tracking row at ``state``'s generation; drop all but it and the one before.

        The one before stays: a reader that read the tracking row just before
        this commit still reads its rows.
        """
        c.execute(
            SQL(
                "INSERT INTO {} VALUES (%s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET "
                "version = excluded.version, generation = excluded.generation, "
                "position = excluded.position"
            ).format(self._tracking),
            (state.name, state.version, state.generation, state.position),
        )
        for generation in self._generations(c, table):
            if generation < state.generation - 1:
                c.execute(
                    SQL("DROP TABLE {}").format(self._name(table.generation_table(generation)))
                )

    def _generations(self, c: _Cursor, table: ProjectionTable) -> list[int]:
        prefix = f"{table.table}_g"
        c.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s AND left(tablename, %s) = %s",
            (self._schema, len(prefix), prefix),
        )
        return generation_numbers(table, (row[0] for row in c.fetchall()))


def _state_of(row: TupleRow) -> ProjectionState:
    name, position, version, generation = row
    return ProjectionState(str(name), int(position), int(version), int(generation))
