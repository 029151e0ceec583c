"""The maintenance store of a PostgreSQL schema (imports psycopg: PostgreSQL stores only)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from psycopg import IsolationLevel

from nenjim.infrastructure.postgresql.connect import connect
from nenjim.infrastructure.postgresql.dialect import PostgresDialect
from nenjim.infrastructure.postgresql.storage import PostgresDriver, PostgresSettings
from nenjim.infrastructure.storage.audit.sessions import SqlStore, locked_tables
from nenjim.infrastructure.storage.sql.driver import SqlDriver
from nenjim.infrastructure.storage.sql.session import Session
from nenjim.infrastructure.store.urls import StoreLocation


class PostgresStore(SqlStore):
    """One schema of a PostgreSQL database, on direct connections of its own (no pool)."""

    def __init__(self, location: StoreLocation) -> None:
        settings = PostgresSettings.from_url(location.url)
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

    def _has_table(self, session: Session, table: str) -> bool:
        row = session.connection.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
        return row is not None and row[0] is True
