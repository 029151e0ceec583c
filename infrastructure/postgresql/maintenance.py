"""The maintenance store of a PostgreSQL schema (imports psycopg: PostgreSQL stores only).

Compacting (:meth:`PostgresStore.compact`) runs ``VACUUM FULL`` on every
table of the schema (the storage tables, the Journal's, projections' and any
other table there), one at a time on an autocommit connection (``VACUUM``
cannot run in a transaction). Each table is rewritten into new files with its
live rows only, its TOAST table and indexes with it; the old files are
emptied when its ``VACUUM`` commits. It holds an ``ACCESS EXCLUSIVE`` lock on
the table while it rewrites it: reads and writes of that table wait. It waits
at most ``LOCK_TIMEOUT`` for that lock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import IsolationLevel, sql

from nenjim.infrastructure.postgresql.connect import connect
from nenjim.infrastructure.postgresql.dialect import PostgresDialect
from nenjim.infrastructure.postgresql.storage import PostgresDriver, PostgresSettings
from nenjim.infrastructure.storage.audit.compaction import CompactedPart, CompactionReport
from nenjim.infrastructure.storage.audit.sessions import SqlStore, locked_tables
from nenjim.infrastructure.storage.sql.driver import SqlDriver
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.errors import StoreUnavailableError
from nenjim.infrastructure.store.progress import Progress
from nenjim.infrastructure.store.urls import StoreLocation

LOCK_TIMEOUT = "30s"
"""How long a compaction waits for each table's lock (SQLite's busy timeout)."""


class PostgresStore(SqlStore):
    """One schema of a PostgreSQL database, on direct connections of its own (no pool)."""

    def __init__(self, location: StoreLocation) -> None:
        settings = PostgresSettings.from_url(location.url)
        self.schema = settings.schema
        super().__init__(
            location, f"PostgreSQL schema {settings.schema!r}", PostgresDialect(settings.schema)
        )

    @classmethod
    def of_driver(cls, driver: SqlDriver) -> PostgresStore:
        assert isinstance(driver, PostgresDriver)
        return cls(driver.settings.location)

    @contextmanager
    def exclusive(self) -> Iterator[Session]:
        with connect(self.location) as connection:
            connection.isolation_level = IsolationLevel.READ_COMMITTED
            with connection.transaction():
                session = Session(connection, self.dialect)
                self._require_storage(session)
                tables = ", ".join(locked_tables(self))
                # Writers wait until the repair commits; plain reads go on.
                session.execute_ddl(f"LOCK TABLE {tables} IN EXCLUSIVE MODE")
                yield session

    def compact(self, progress: Progress) -> CompactionReport:
        """``VACUUM FULL`` of each table of the schema: see the module's docstring.

        A table whose lock is not granted within ``LOCK_TIMEOUT`` is a
        ``StoreUnavailableError``; the tables compacted before it stay compacted.
        """
        with connect(self.location) as connection:
            with connection.transaction():
                self._require_storage(Session(connection, self.dialect))
            tables = connection.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind IN ('r', 'm') ORDER BY c.relname",
                (self.schema,),
            ).fetchall()
            names = [str(name) for (name,) in tables]
            connection.execute(sql.SQL("SET lock_timeout = {}").format(LOCK_TIMEOUT))
            parts: list[CompactedPart] = []
            progress("compacting tables", 0, len(names))
            for done, name in enumerate(names, 1):
                table = sql.Identifier(self.schema, name)
                before = self._size(connection, table)
                try:
                    connection.execute(sql.SQL("VACUUM FULL {}").format(table))
                except psycopg.errors.LockNotAvailable:
                    raise StoreUnavailableError(
                        f"cannot compact {self.description}: table {name} stayed locked for "
                        f"{LOCK_TIMEOUT}; try again when it is idle"
                    ) from None
                parts.append(CompactedPart(name, before, self._size(connection, table)))
                progress("compacting tables", done, len(names))
        return CompactionReport(self.description, "table", tuple(parts))

    @staticmethod
    def _size(connection: psycopg.Connection[Any], table: sql.Identifier) -> int:
        """The table's bytes with its TOAST table and indexes (``pg_total_relation_size``)."""
        query = sql.SQL("SELECT pg_total_relation_size({}::regclass)").format(
            sql.Literal(table.as_string(connection))
        )
        row = connection.execute(query).fetchone()
        return int(row[0]) if row is not None and row[0] is not None else 0

    def _has_table(self, session: Session, table: str) -> bool:
        row = session.connection.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
        return row is not None and row[0] is True
