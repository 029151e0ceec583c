"""The maintenance store of a PostgreSQL schema (imports psycopg: PostgreSQL stores only)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import IsolationLevel

from nenjim.infrastructure.postgresql.connect import one_line
from nenjim.infrastructure.postgresql.dialect import PostgresDialect
from nenjim.infrastructure.postgresql.storage import PostgresDriver, PostgresSettings
from nenjim.infrastructure.storage.audit.sessions import SqlStore, locked_tables
from nenjim.infrastructure.storage.sql.driver import SqlDriver
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.errors import StoreUnavailableError
from nenjim.infrastructure.store.urls import StoreLocation


class PostgresStore(SqlStore):
    """One schema of a PostgreSQL database, on direct connections of its own (no pool)."""

    def __init__(self, settings: PostgresSettings) -> None:
        super().__init__(f"PostgreSQL schema {settings.schema!r}", PostgresDialect(settings.schema))
        self.settings = settings

    @classmethod
    def at(cls, location: StoreLocation) -> PostgresStore:
        return cls(PostgresSettings.from_url(location.url))

    @classmethod
    def of_driver(cls, driver: SqlDriver) -> PostgresStore:
        assert isinstance(driver, PostgresDriver)
        return cls(driver.settings)

    @contextmanager
    def snapshot(self) -> Iterator[Session]:
        with self._connection() as connection:
            connection.isolation_level = IsolationLevel.REPEATABLE_READ
            connection.read_only = True
            with connection.transaction():
                session = Session(connection, self.dialect)
                self._require_storage(session)
                yield session

    @contextmanager
    def exclusive(self) -> Iterator[Session]:
        with self._connection() as connection:
            connection.isolation_level = IsolationLevel.READ_COMMITTED
            with connection.transaction():
                session = Session(connection, self.dialect)
                self._require_storage(session)
                tables = ", ".join(locked_tables(self))
                # Writers wait until the repair commits; plain reads go on.
                session.execute_ddl(f"LOCK TABLE {tables} IN EXCLUSIVE MODE")
                yield session

    def _connection(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(self.settings.conninfo, autocommit=True)
        except psycopg.OperationalError as error:
            # libpq's reason (refused, unknown database, authentication), with the store.
            raise StoreUnavailableError(
                f"cannot connect to {self.settings.where}: {one_line(error)}"
            ) from None

    def _has_table(self, session: Session, table: str) -> bool:
        row = session.connection.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
        return row is not None and row[0] is True
