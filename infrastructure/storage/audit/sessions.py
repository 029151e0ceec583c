"""Maintenance connections to an SQL store: a read-only snapshot and an exclusive writer.

The audit and the repair open connections of their own instead of a
backend: opening a backend creates a missing store and brings its schema up
to date, while maintenance must find the store exactly as it is. A store
"exists" when its storage tables and its ``nenjim_schema`` row do; anything
less is a :class:`StoreNotFoundError` and nothing is created; a PostgreSQL
server that cannot be reached is a ``StoreUnavailableError`` naming the store
and libpq's reason.

- :meth:`SqlStore.snapshot` reads one consistent state without blocking
  writers (SQLite: a deferred read transaction on a read-only connection;
  PostgreSQL: ``REPEATABLE READ READ ONLY``).
- :meth:`SqlStore.exclusive` is one transaction no other writer can enter
  (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: ``LOCK TABLE ... IN EXCLUSIVE
  MODE`` on the storage tables, which readers pass); it commits on a normal
  exit and rolls back on any exception.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infrastructure.log.errors import StoreUnavailableError
from infrastructure.log.schema import check_schema_version
from infrastructure.log.urls import UnsupportedStoreError, resolve_store_url
from infrastructure.storage.backend import Backend
from infrastructure.storage.errors import StorageError, UnsupportedBackendError
from infrastructure.storage.sql.dialect import Dialect, SQLiteDialect
from infrastructure.storage.sql.schema import COMPONENT
from infrastructure.storage.sql.session import Session
from infrastructure.storage.sqlite import DEFAULT_BUSY_TIMEOUT, SQLiteDriver

if TYPE_CHECKING:  # PostgreSQL support loads only for a PostgreSQL store (psycopg is optional)
    import psycopg

    from infrastructure.storage.postgres import PostgresSettings

STORAGE_TABLES = ("events", "records", "heads", "ids", "blobs", "versions")
"""The dialect's table keys every storage schema has."""
WRITTEN_TABLES = ("events", "records", "heads", "ids", "blobs")
"""The tables storage writers write (and a repair locks)."""


class StoreNotFoundError(StorageError):
    """The URL names no storage: no file, no schema, or no storage tables in it."""


@dataclass(frozen=True, slots=True)
class SqlStore:
    """An SQLite file or PostgreSQL schema holding (or said to hold) storage tables."""

    description: str
    """How messages name the store, e.g. ``SQLite database /var/state.db``."""
    dialect: Dialect
    _path: Path | None = None
    _settings: PostgresSettings | None = None

    @classmethod
    def from_url(cls, url: str) -> SqlStore:
        """The store a URL names; ``UnsupportedBackendError`` for ``memory:`` or a bad URL."""
        try:
            location = resolve_store_url(url)
        except UnsupportedStoreError as error:
            raise UnsupportedBackendError(str(error)) from error
        if location.kind == "memory":
            raise UnsupportedBackendError(
                "memory: keeps nothing between processes, so it has no log to audit or repair; "
                "name an sqlite: or postgresql:// store"
            )
        if location.kind == "sqlite":
            return cls._sqlite(Path(location.env["SQLITE_DBNAME"]))
        from infrastructure.storage.postgres import PostgresSettings  # noqa: PLC0415 - the postgres extra

        return cls._postgres(PostgresSettings.from_url(url))

    @classmethod
    def of_backend(cls, backend: Backend) -> SqlStore:
        """The store an open SQL backend works on (the in-memory backend has none)."""
        driver = backend.driver
        if isinstance(driver, SQLiteDriver):
            return cls._sqlite(driver.path)
        postgres = sys.modules.get("infrastructure.storage.postgres")
        if postgres is not None and isinstance(driver, postgres.PostgresDriver):
            return cls._postgres(driver.settings)
        raise UnsupportedBackendError(
            f"{type(backend).__name__} keeps no log and no inline tables to audit or repair"
        )

    @classmethod
    def _sqlite(cls, path: Path) -> SqlStore:
        return cls(f"SQLite database {path}", SQLiteDialect(), _path=path)

    @classmethod
    def _postgres(cls, settings: PostgresSettings) -> SqlStore:
        from infrastructure.storage.sql.postgres_dialect import PostgresDialect  # noqa: PLC0415 - the postgres extra

        where = f"PostgreSQL schema {settings.schema!r}"
        return cls(where, PostgresDialect(settings.schema), _settings=settings)

    @contextmanager
    def snapshot(self) -> Iterator[Session]:
        """A read-only session on one consistent state of the store."""
        if self._path is not None:
            with closing(self._sqlite_connection("ro")) as connection:
                connection.execute("BEGIN")
                try:
                    session = Session(connection, self.dialect)
                    self._require_storage(session)
                    yield session
                finally:
                    connection.execute("ROLLBACK")
            return
        from psycopg import IsolationLevel  # noqa: PLC0415 - the postgres extra

        with self._postgres_connection() as connection:
            connection.isolation_level = IsolationLevel.REPEATABLE_READ
            connection.read_only = True
            with connection.transaction():
                session = Session(connection, self.dialect)
                self._require_storage(session)
                yield session

    @contextmanager
    def exclusive(self) -> Iterator[Session]:
        """One transaction that excludes every other writer; commits on a normal exit."""
        if self._path is not None:
            with closing(self._sqlite_connection("rw")) as connection:
                connection.execute("BEGIN IMMEDIATE")
                try:
                    session = Session(connection, self.dialect)
                    self._require_storage(session)
                    yield session
                except BaseException:
                    connection.execute("ROLLBACK")
                    raise
                connection.execute("COMMIT")
            return
        from psycopg import IsolationLevel  # noqa: PLC0415 - the postgres extra

        with self._postgres_connection() as connection:
            connection.isolation_level = IsolationLevel.READ_COMMITTED
            with connection.transaction():
                session = Session(connection, self.dialect)
                self._require_storage(session)
                tables = ", ".join(self.dialect.tables[name] for name in WRITTEN_TABLES)
                # Writers wait until the repair commits; plain reads go on.
                session.execute_ddl(f"LOCK TABLE {tables} IN EXCLUSIVE MODE")
                yield session

    def _sqlite_connection(self, mode: str) -> sqlite3.Connection:
        assert self._path is not None
        if not self._path.is_file():
            reason = "it is a directory" if self._path.is_dir() else "the file does not exist"
            raise StoreNotFoundError(f"no {self.description}: {reason}")
        # A URI with mode=ro/rw never creates the file.
        uri = f"{self._path.absolute().as_uri()}?mode={mode}"
        try:
            return sqlite3.connect(
                uri, uri=True, isolation_level=None, timeout=DEFAULT_BUSY_TIMEOUT
            )
        except sqlite3.Error as error:
            raise StoreNotFoundError(f"cannot open {self.description}: {error}") from error

    def _postgres_connection(self) -> psycopg.Connection[Any]:
        import psycopg  # noqa: PLC0415 - the postgres extra

        from infrastructure.log.postgres_connect import one_line  # noqa: PLC0415 - psycopg

        settings = self._settings
        assert settings is not None
        try:
            return psycopg.connect(settings.conninfo, autocommit=True)
        except psycopg.OperationalError as error:
            # libpq's reason (refused, unknown database, authentication), with the store.
            raise StoreUnavailableError(
                f"cannot connect to {settings.where}: {one_line(error)}"
            ) from None

    def _require_storage(self, session: Session) -> None:
        missing = [name for name in STORAGE_TABLES if not self._has_table(session, name)]
        if len(missing) == len(STORAGE_TABLES):
            raise StoreNotFoundError(f"no storage in {self.description}: no storage tables")
        if missing:
            names = ", ".join(self.dialect.tables[name].split(".")[-1] for name in missing)
            raise StoreNotFoundError(f"incomplete storage in {self.description}: no {names}")
        row = session.one("SELECT version FROM {versions} WHERE component = ?", (COMPONENT,))
        if row is None:
            raise StoreNotFoundError(f"no storage in {self.description}: no schema version row")
        check_schema_version(self.description, int(row[0]))

    def _has_table(self, session: Session, name: str) -> bool:
        table = self.dialect.tables[name]
        if self._path is not None:
            query, found = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", 1
        else:
            query, found = "SELECT to_regclass(%s) IS NOT NULL", True
        row = session.connection.execute(query, (table,)).fetchone()
        return row is not None and row[0] == found
