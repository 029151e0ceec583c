"""Moving the logs of a PostgreSQL database (imports psycopg: PostgreSQL stores only)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from psycopg import IsolationLevel, sql

from nenjim.infrastructure.log.transfer.format import LoggedEvent
from nenjim.infrastructure.log.transfer.stores import LogFilling, LogStore
from nenjim.infrastructure.log.transfer.tables import EventTable
from nenjim.infrastructure.postgresql.connect import connect
from nenjim.infrastructure.postgresql.log import log_table_statements, run_log_ddl

_COLUMNS = "originator_id, originator_version, topic, state, notification_id"


class _PostgresLogs(LogFilling):
    mark = "%s"

    def _exists(self, table: EventTable, name: str) -> bool:
        qualified = self._name(table, name)
        row = self.connection.execute("SELECT to_regclass(%s) IS NOT NULL", (qualified,)).fetchone()
        return row is not None and row[0] is True

    def _name(self, table: EventTable, name: str) -> str:
        return sql.Identifier(table.schema, name).as_string(self.connection)

    def _id_column(self, table: EventTable) -> str:
        return "notification_id"

    def _exclude_writers(self, table: EventTable, name: str) -> str:
        # Writers of this table wait until the import commits; readers go on.
        self.connection.execute(f"LOCK TABLE {self._name(table, name)} IN EXCLUSIVE MODE")
        return f"{table.schema}.{name}"

    def create_log(self, table: EventTable) -> None:
        env = {**self.location.env, "POSTGRES_SCHEMA": table.schema}
        run_log_ddl(self.connection, log_table_statements(env, table.log))

    def insert_events(self, table: EventTable, events: Iterable[LoggedEvent]) -> int:
        copy_sql = f"COPY {self._name(table, table.table)} ({_COLUMNS}) FROM STDIN"
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
        qualified = self._name(table, table.table)
        self.connection.execute(
            "SELECT setval(pg_get_serial_sequence(%s, 'notification_id'), "
            f"max(notification_id)) FROM {qualified} HAVING max(notification_id) IS NOT NULL",
            (qualified,),
        )


class PostgresLogStore(LogStore):
    """One PostgreSQL database, on a direct connection of its own (no pool)."""

    logs = _PostgresLogs

    @property
    def schema(self) -> str | None:
        return self.location.env.get("POSTGRES_SCHEMA")

    @contextmanager
    def filling(self) -> Iterator[LogFilling]:
        with connect(self.location) as connection:
            connection.isolation_level = IsolationLevel.READ_COMMITTED
            with connection.transaction():
                yield _PostgresLogs(connection, self.location)
