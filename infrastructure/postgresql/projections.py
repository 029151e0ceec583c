"""Projection tables and their tracking rows in a log's PostgreSQL schema.

Every write takes a transaction-scoped advisory lock of the schema's
projections first, so two processes moving projections take turns (and
their ``CREATE TABLE IF NOT EXISTS`` never race in the catalog). A load is
one ``REPEATABLE READ`` transaction: one snapshot of the tracking row and
the rows, whatever commits meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from eventsourcing.persistence import Tracking
from eventsourcing.postgres import PostgresDatastore
from psycopg import Cursor
from psycopg.rows import DictRow, tuple_row
from psycopg.sql import SQL, Identifier

from nenjim.infrastructure.log.closing import ClosableRecorder
from nenjim.infrastructure.store.errors import RebuildLostError
from nenjim.infrastructure.store.log_projections import (
    TRACKING_TABLE,
    Persisted,
    ProjectionRecorder,
    ProjectionState,
    ProjectionTable,
    Row,
    RowsAfter,
    checked_position,
    checked_rows,
    generation_numbers,
    missing_generation,
    next_generation,
)

_Cursor = Cursor[DictRow]
# Distinct from the log's DDL lock: a projection write never waits for a log's creation.
_LOCK_SALT = "nenjim_projections:"


class PostgresProjectionRecorder(ProjectionRecorder):
    """The projections kept in the PostgreSQL schema of one log (``log`` guards its closing)."""

    def __init__(self, datastore: PostgresDatastore, log: ClosableRecorder) -> None:
        self._datastore = datastore
        self._log = log
        self._schema = datastore.schema
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
            # Plain tuples from the driver, in the same transaction: a start loads 10,000s
            # of rows, and a dict each would be built only to be copied.
            with c.connection.cursor(row_factory=tuple_row) as plain:
                plain.execute(SQL("SELECT {} FROM {} ORDER BY position").format(names, rows))
                return checked_rows(table, state, plain.fetchall())

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
        with (
            self._log.while_open(),
            self._datastore.get_connection() as conn,
            conn.transaction(force_rollback=True),
            conn.cursor() as c,
        ):
            c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield c

    @contextmanager
    def _writing(self) -> Iterator[_Cursor]:
        with (
            self._log.while_open(),
            self._datastore.get_connection() as conn,
            conn.transaction(),
            conn.cursor() as c,
        ):
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
        return row is not None and row["found"] is not None

    def _state(self, c: _Cursor, name: str) -> ProjectionState | None:
        c.execute(SQL("{} WHERE name = %s").format(self._select_state()), (name,))
        row = c.fetchone()
        return None if row is None else _state_of(row)

    def _create(self, c: _Cursor, table: ProjectionTable, generation: int) -> None:
        name = self._name(table.generation_table(generation))
        columns = SQL(", ").join(
            SQL("{} {} {}").format(
                Identifier(column),
                SQL("bigint" if kind == "integer" else "text"),
                SQL("PRIMARY KEY" if i == 0 else "NOT NULL"),
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
        return generation_numbers(table, (row["tablename"] for row in c.fetchall()))


def _state_of(row: DictRow) -> ProjectionState:
    return ProjectionState(
        str(row["name"]), int(row["position"]), int(row["version"]), int(row["generation"])
    )
