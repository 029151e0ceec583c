"""Moving the logs of a PostgreSQL database (imports psycopg: PostgreSQL stores only)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import IsolationLevel, sql

from nenjim.infrastructure.log.claims import Claim
from nenjim.infrastructure.log.transfer.format import LoggedEvent
from nenjim.infrastructure.log.transfer.stores import (
    PAGE,
    LogFilling,
    LogSnapshot,
    LogStore,
    decode_row,
)
from nenjim.infrastructure.log.transfer.tables import EventTable
from nenjim.infrastructure.postgresql.connect import connect
from nenjim.infrastructure.postgresql.log import log_table_statements, run_log_ddl
from nenjim.infrastructure.store.versions import IDENTITY_TABLE, SCHEMA_TABLE

_COLUMNS = "originator_id, originator_version, topic, state, notification_id"


class PostgresLogStore(LogStore):
    """One PostgreSQL database, on a direct connection of its own (no pool)."""

    @property
    def schema(self) -> str | None:
        return self.location.env.get("POSTGRES_SCHEMA")

    def _snapshot(self, connection: psycopg.Connection[Any]) -> LogSnapshot:
        return _PostgresSnapshot(connection)

    @contextmanager
    def filling(self) -> Iterator[LogFilling]:
        with connect(self.location) as connection:
            connection.isolation_level = IsolationLevel.READ_COMMITTED
            with connection.transaction():
                yield _PostgresFilling(connection, self.location.env)


def _table(schema: str, name: str) -> sql.Identifier:
    return sql.Identifier(schema, name)


def _exists(connection: psycopg.Connection[Any], schema: str, name: str) -> bool:
    qualified = _table(schema, name).as_string(connection)
    row = connection.execute("SELECT to_regclass(%s) IS NOT NULL", (qualified,)).fetchone()
    return row is not None and row[0] is True


def _identity(connection: psycopg.Connection[Any], table: EventTable) -> str | None:
    if table.identity_component is None or not _exists(connection, table.schema, IDENTITY_TABLE):
        return None
    row = connection.execute(
        sql.SQL("SELECT identity FROM {} WHERE component = %s").format(
            _table(table.schema, IDENTITY_TABLE)
        ),
        (table.identity_component,),
    ).fetchone()
    return None if row is None else str(row[0])


class _PostgresSnapshot(LogSnapshot):
    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self.connection = connection

    def holds(self, table: EventTable) -> bool:
        return _exists(self.connection, table.schema, table.table)

    def schema_version(self, table: EventTable) -> int | None:
        if not _exists(self.connection, table.schema, SCHEMA_TABLE):
            return None
        row = self.connection.execute(
            sql.SQL("SELECT version FROM {} WHERE component = %s").format(
                _table(table.schema, SCHEMA_TABLE)
            ),
            (table.version_component,),
        ).fetchone()
        return None if row is None else int(row[0])

    def identity(self, table: EventTable) -> str | None:
        return _identity(self.connection, table)

    def count(self, table: EventTable) -> int:
        row = self.connection.execute(
            sql.SQL("SELECT count(*) FROM {}").format(_table(table.schema, table.table))
        ).fetchone()
        return 0 if row is None else int(row[0])

    def events(self, table: EventTable, after: int = 0) -> Iterator[LoggedEvent]:
        query = sql.SQL(
            "SELECT notification_id, originator_id, originator_version, topic, state FROM {} "
            "WHERE notification_id > %s ORDER BY notification_id LIMIT %s"
        ).format(_table(table.schema, table.table))
        while True:
            rows = self.connection.execute(query, (after, PAGE)).fetchall()
            for row in rows:
                yield decode_row(table, row)
            if len(rows) < PAGE:
                return
            after = int(rows[-1][0])


class _PostgresFilling(LogFilling):
    def __init__(self, connection: psycopg.Connection[Any], env: dict[str, str]) -> None:
        self.connection = connection
        self._env = env

    def occupied(self, table: EventTable) -> str | None:
        connection = self.connection
        for name in (table.table, *table.companions):
            if not _exists(connection, table.schema, name):
                continue
            qualified = _table(table.schema, name)
            # Writers of this table wait until the import commits; readers go on.
            connection.execute(sql.SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(qualified))
            row = connection.execute(
                sql.SQL("SELECT count(*) FROM {}").format(qualified)
            ).fetchone()
            if row is not None and row[0]:
                return f"{table.schema}.{name} holds {row[0]} rows"
        identity = _identity(connection, table)
        if identity is not None:
            return f"its {table.log} log belongs to {identity!r}"
        return None

    def create_log(self, table: EventTable) -> None:
        env = {**self._env, "POSTGRES_SCHEMA": table.schema}
        run_log_ddl(self.connection, log_table_statements(env, table.log))

    def insert_events(self, table: EventTable, events: Iterable[LoggedEvent]) -> int:
        copy_sql = sql.SQL("COPY {} (" + _COLUMNS + ") FROM STDIN").format(
            _table(table.schema, table.table)
        )
        inserted = 0
        with self.connection.cursor() as cursor, cursor.copy(copy_sql) as copy:
            copy.set_types(["uuid", "int8", "text", "bytea", "int8"])
            for event in events:
                copy.write_row(
                    (
                        event.originator_id,
                        event.originator_version,
                        event.topic,
                        event.state,
                        event.id,
                    )
                )
                inserted += 1
        return inserted

    def finish_events(self, table: EventTable) -> None:
        qualified = _table(table.schema, table.table)
        self.connection.execute(
            sql.SQL(
                "SELECT setval(pg_get_serial_sequence(%s, 'notification_id'), "
                "max(notification_id)) FROM {} HAVING max(notification_id) IS NOT NULL"
            ).format(qualified),
            (qualified.as_string(self.connection),),
        )

    def insert_claims(self, table: EventTable, claims: Sequence[Claim]) -> None:
        (claims_table,) = table.companions
        with self.connection.cursor() as cursor:
            cursor.executemany(
                sql.SQL("INSERT INTO {} (namespace, key, owner) VALUES (%s, %s, %s)").format(
                    _table(table.schema, claims_table)
                ),
                [(claim.namespace, claim.key, claim.owner) for claim in claims],
            )

    def record_identity(self, table: EventTable, identity: str) -> None:
        self.connection.execute(
            sql.SQL("INSERT INTO {} (component, identity) VALUES (%s, %s)").format(
                _table(table.schema, IDENTITY_TABLE)
            ),
            (table.identity_component, identity),
        )
